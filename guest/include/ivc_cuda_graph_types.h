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

#endif
