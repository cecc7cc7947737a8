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

#endif
