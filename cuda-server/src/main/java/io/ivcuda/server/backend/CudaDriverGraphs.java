package io.ivcuda.server.backend;

import com.sun.jna.Native;
import com.sun.jna.NativeLibrary;

/**
 * The driver's stream, capture and graph functions (api/graphs.api), registered apart from
 * {@link CudaDriver} so that a host driver older than one of them disables only these calls
 * (they answer CUDA_ERROR_NOT_SUPPORTED), never the server.
 */
final class CudaDriverGraphs {
    static {
        Native.register(CudaDriverGraphs.class, NativeLibrary.getInstance("libcuda.so.1"));
    }

    private CudaDriverGraphs() {
    }

    static native int cuStreamGetFlags(long stream, long pflags);
    static native int cuStreamGetPriority(long stream, long ppriority);
    static native int cuStreamGetCtx(long stream, long pctx);
    static native int cuStreamGetId(long stream, long pid);
    static native int cuStreamGetAttribute(long stream, int attr, long value);
    static native int cuStreamSetAttribute(long stream, int attr, long value);
    static native int cuStreamCopyAttributes(long dst, long src);
    static native int cuStreamWaitValue32_v2(long stream, long addr, int value, int flags);
    static native int cuStreamWaitValue64_v2(long stream, long addr, long value, int flags);
    static native int cuStreamWriteValue32_v2(long stream, long addr, int value, int flags);
    static native int cuStreamWriteValue64_v2(long stream, long addr, long value, int flags);
    static native int cuStreamBatchMemOp_v2(long stream, int count, long params, int flags);
    static native int cuLaunchHostFunc(long stream, long fn, long userData);
    static native int cuStreamAddCallback(long stream, long callback, long userData, int flags);
    static native int cuStreamIsCapturing(long stream, long pstatus);
    static native int cuStreamBeginCapture_v2(long stream, int mode);
    static native int cuStreamBeginCaptureToGraph(long stream, long graph, long deps, long edges, long n, int mode);
    static native int cuStreamEndCapture(long stream, long pgraph);
    static native int cuStreamGetCaptureInfo_v3(long stream, long pstatus, long pid, long pgraph, long pdeps, long pedges,
                                                long pn);
    static native int cuStreamUpdateCaptureDependencies_v2(long stream, long deps, long edges, long n, int flags);
    static native int cuThreadExchangeStreamCaptureMode(long pmode);
    static native int cuGraphCreate(long pgraph, int flags);
    static native int cuGraphDestroy(long graph);
    static native int cuGraphClone(long pclone, long graph);
    static native int cuGraphInstantiateWithFlags(long pexec, long graph, long flags);
    static native int cuGraphLaunch(long exec, long stream);
    static native int cuGraphUpload(long exec, long stream);
    static native int cuGraphExecDestroy(long exec);
    static native int cuGraphExecGetFlags(long exec, long pflags);
    static native int cuGraphGetNodes(long graph, long nodes, long pn);
    static native int cuGraphGetRootNodes(long graph, long nodes, long pn);
    static native int cuGraphNodeGetType(long node, long ptype);
    static native int cuGraphAddEmptyNode(long pnode, long graph, long deps, long n);
    static native int cuGraphAddEventRecordNode(long pnode, long graph, long deps, long n, long event);
    static native int cuGraphAddEventWaitNode(long pnode, long graph, long deps, long n, long event);
    static native int cuGraphAddChildGraphNode(long pnode, long graph, long deps, long n, long child);
    static native int cuGraphDestroyNode(long node);
    static native int cuGraphAddDependencies_v2(long graph, long from, long to, long edges, long n);
    static native int cuGraphRemoveDependencies_v2(long graph, long from, long to, long edges, long n);
    static native int cuGraphExecUpdate_v2(long exec, long graph, long resultInfo);
    static native int cuDeviceGraphMemTrim(int device);
    static native int cuDeviceGetGraphMemAttribute(int device, int attr, long value);
    static native int cuDeviceSetGraphMemAttribute(int device, int attr, long value);
}
