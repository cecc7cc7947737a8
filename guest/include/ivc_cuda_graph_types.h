/* The CUDA driver API's stream, capture, graph and host-function types that the guest
 * library needs (docs/graphs.md), declared here so that the guest builds without NVIDIA's
 * toolkit. Layouts and enum values are those of cuda.h (CUDA 13.0). Owned by the graphs
 * helper; other guest code includes it through ivc_cuda_types.h. */
#ifndef IVC_CUDA_GRAPH_TYPES_H
#define IVC_CUDA_GRAPH_TYPES_H

#include <stdint.h>

/* A 64-byte opaque value on the wire: CUstreamAttrValue (CUlaunchAttributeValue),
 * CUipcEventHandle. Copied whole, never interpreted by the guest. */
typedef struct ivc_value64 {
    unsigned char bytes[64];
} ivc_value64;

typedef void (*CUhostFn)(void *userData);
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);

/* ivc_host_next's kinds (api/graphs.api) */
#define IVC_HOST_KIND_FN 0
#define IVC_HOST_KIND_STREAM_CALLBACK 1
#define IVC_HOST_KIND_DESTRUCTOR 2

/* CUstreamBatchMemOpParams: a 48-byte union whose first word is the operation */
#define IVC_BATCH_MEM_OP_SIZE 48
#define IVC_BATCH_MEM_OP_MAX 256

typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUuserObject_st *CUuserObject;

/* CUgraphEdgeData: 8 bytes (from_port, to_port, type, 5 reserved) */
typedef struct CUgraphEdgeData_st {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
} CUgraphEdgeData;

/* CUDA_GRAPH_INSTANTIATE_PARAMS (cuda.h 13.0) */
typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
    cuuint64_t flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    int result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

#define CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD 2
#define CUDA_GRAPH_INSTANTIATE_SUCCESS 0
#define CUDA_GRAPH_INSTANTIATE_ERROR 1

/* CU_STREAM_CAPTURE_STATUS_ACTIVE */
#define IVC_CAPTURE_ACTIVE 1
/* Dependencies one capture call carries (the server's limit) */
#define IVC_CAPTURE_MAX_DEPENDENCIES 240

_Static_assert(sizeof(CUgraphEdgeData) == 8, "CUgraphEdgeData is 8 bytes in cuda.h");
_Static_assert(sizeof(CUDA_GRAPH_INSTANTIATE_PARAMS) == 32, "CUDA_GRAPH_INSTANTIATE_PARAMS is 32 bytes in cuda.h");

/* ---- nodes with parameters (cuda.h 13.0 layouts) ---- */

/* CUDA_KERNEL_NODE_PARAMS (CUDA 10-11): the _v2/_v3 form without kern and ctx */
typedef struct CUDA_KERNEL_NODE_PARAMS_st {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
} CUDA_KERNEL_NODE_PARAMS_v1;

typedef struct CUDA_KERNEL_NODE_PARAMS_v2_st {
    CUfunction func;
    unsigned int gridDimX, gridDimY, gridDimZ;
    unsigned int blockDimX, blockDimY, blockDimZ;
    unsigned int sharedMemBytes;
    void **kernelParams;
    void **extra;
    CUkernel kern;
    CUcontext ctx;
} CUDA_KERNEL_NODE_PARAMS_v2;
typedef CUDA_KERNEL_NODE_PARAMS_v2 CUDA_KERNEL_NODE_PARAMS;

typedef struct CUDA_HOST_NODE_PARAMS_st {
    CUhostFn fn;
    void *userData;
} CUDA_HOST_NODE_PARAMS;

typedef cuuint64_t CUgraphConditionalHandle;

typedef struct CUDA_CONDITIONAL_NODE_PARAMS {
    CUgraphConditionalHandle handle;
    int type; /* CUgraphConditionalNodeType: 0 if, 1 while, 2 switch */
    unsigned int size;
    CUgraph *phGraph_out; /* the driver's array of size body graphs (here: this process's handles) */
    CUcontext ctx;
} CUDA_CONDITIONAL_NODE_PARAMS;

/* CUgraphNodeType values this library takes in CUgraphNodeParams */
#define IVC_NODE_KERNEL 0
#define IVC_NODE_MEMCPY 1
#define IVC_NODE_MEMSET 2
#define IVC_NODE_HOST 3
#define IVC_NODE_GRAPH 4
#define IVC_NODE_EMPTY 5
#define IVC_NODE_WAIT_EVENT 6
#define IVC_NODE_EVENT_RECORD 7
#define IVC_NODE_MEM_ALLOC 10
#define IVC_NODE_MEM_FREE 11
#define IVC_NODE_CONDITIONAL 13

/* CUgraphNodeParams: the type, 3 reserved ints, a 232-byte union, a reserved word */
typedef struct CUgraphNodeParams_st {
    int type;
    int reserved0[3];
    union {
        long long reserved1[29];
        CUDA_KERNEL_NODE_PARAMS_v2 kernel;
        CUDA_HOST_NODE_PARAMS host;
        CUDA_CONDITIONAL_NODE_PARAMS conditional;
        CUgraph graph;  /* CUDA_CHILD_GRAPH_NODE_PARAMS: the graph first */
        CUevent event;  /* CUDA_EVENT_RECORD/WAIT_NODE_PARAMS */
        CUDA_MEMCPY_NODE_PARAMS memcpy;
        CUDA_MEMSET_NODE_PARAMS_v2 memset;
        CUDA_MEM_ALLOC_NODE_PARAMS_v2 alloc;
        CUDA_MEM_FREE_NODE_PARAMS free;
    } u;
    long long reserved2;
} CUgraphNodeParams;

_Static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v1) == 56, "CUDA_KERNEL_NODE_PARAMS (v1) is 56 bytes in cuda.h");
_Static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS_v2) == 72, "CUDA_KERNEL_NODE_PARAMS_v2 is 72 bytes in cuda.h");
_Static_assert(sizeof(CUDA_CONDITIONAL_NODE_PARAMS) == 32, "CUDA_CONDITIONAL_NODE_PARAMS is 32 bytes in cuda.h");
_Static_assert(sizeof(CUgraphNodeParams) == 256, "CUgraphNodeParams is 256 bytes in cuda.h");

#endif
