package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * The driver's calls for graph nodes with parameters (api/graphs.api section graphbuild),
 * registered apart from {@link CudaDriverGraphs}: conditional nodes came with CUDA 12.3, and a
 * host driver without one of these disables only these calls (CUDA_ERROR_NOT_SUPPORTED).
 */
final class CudaDriverGraphNodes {
    static {
        Native.register(CudaDriverGraphNodes.class, NativeLibrary.getInstance("libcuda.so.1"));
    }

    private CudaDriverGraphNodes() {
    }

    static native int cuGraphAddKernelNode_v2(long pnode, long graph, long deps, long n, long params);
    static native int cuGraphKernelNodeSetParams_v2(long node, long params);
    static native int cuGraphExecKernelNodeSetParams_v2(long exec, long node, long params);
    static native int cuGraphAddMemsetNode(long pnode, long graph, long deps, long n, long params, long ctx);
    static native int cuGraphMemsetNodeSetParams(long node, long params);
    static native int cuGraphExecMemsetNodeSetParams(long exec, long node, long params, long ctx);
    static native int cuGraphAddMemcpyNode(long pnode, long graph, long deps, long n, long params, long ctx);
    static native int cuGraphMemcpyNodeSetParams(long node, long params);
    static native int cuGraphExecMemcpyNodeSetParams(long exec, long node, long params, long ctx);
    static native int cuGraphAddHostNode(long pnode, long graph, long deps, long n, long params);
    static native int cuGraphHostNodeSetParams(long node, long params);
    static native int cuGraphExecHostNodeSetParams(long exec, long node, long params);
    static native int cuGraphConditionalHandleCreate(long phandle, long graph, long ctx, int defaultValue, int flags);
    static native int cuGraphAddNode(long pnode, long graph, long deps, long n, long params);
    static native int cuGraphAddMemAllocNode(long pnode, long graph, long deps, long n, long params);
    static native int cuGraphAddMemFreeNode(long pnode, long graph, long deps, long n, long dptr);
    static native int cuGraphMemAllocNodeGetParams(long node, long params);
    static native int cuGraphMemFreeNodeGetParams(long node, long pdptr);
}
