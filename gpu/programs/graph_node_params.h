/* Node parameters of the programs that build graphs node by node (graph_nodes, graph_mem_nodes):
 * a 1-D memset, 1-D copies to and from the device, a 1-D kernel launch, and the short name of a
 * node's type that they print. */
#ifndef IVCUDA_GPU_GRAPH_NODE_PARAMS_H
#define IVCUDA_GPU_GRAPH_NODE_PARAMS_H

#include "common.h"

/* width 4-byte elements of dst set to value (its bits: 0.0f is a zero fill). */
static inline CUDA_MEMSET_NODE_PARAMS memset_node_params(CUdeviceptr dst, float value, size_t width)
{
    CUDA_MEMSET_NODE_PARAMS ms;
    memset(&ms, 0, sizeof ms);
    memcpy(&ms.value, &value, sizeof value);
    ms.dst = dst;
    ms.elementSize = 4;
    ms.width = width;
    ms.height = 1;
    return ms;
}

/* bytes in one row from host memory to the device, and back; the fields not named are zero. */
static inline CUDA_MEMCPY3D copy_to_device_params(CUdeviceptr dst, const void *src, size_t bytes)
{
    return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_HOST, .srcHost = src,
                            .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                            .WidthInBytes = bytes, .Height = 1, .Depth = 1 };
}

static inline CUDA_MEMCPY3D copy_to_host_params(void *dst, CUdeviceptr src, size_t bytes)
{
    return (CUDA_MEMCPY3D){ .srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src,
                            .dstMemoryType = CU_MEMORYTYPE_HOST, .dstHost = dst,
                            .WidthInBytes = bytes, .Height = 1, .Depth = 1 };
}

/* f over blocks x threads, one-dimensional, no shared memory. */
static inline CUDA_KERNEL_NODE_PARAMS kernel_node_params(CUfunction f, void **args, unsigned blocks, unsigned threads)
{
    CUDA_KERNEL_NODE_PARAMS k;
    memset(&k, 0, sizeof k);
    k.func = f;
    k.gridDimX = blocks;
    k.gridDimY = k.gridDimZ = 1;
    k.blockDimX = threads;
    k.blockDimY = k.blockDimZ = 1;
    k.kernelParams = args;
    return k;
}

static inline const char *node_type_name(CUgraphNode node)
{
    CUgraphNodeType t;
    CK(cuGraphNodeGetType(node, &t));
    switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "alloc";
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return "free";
    default: return "other";
    }
}

#endif
