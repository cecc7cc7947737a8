/* graphs_streams: stream queries, host functions and stream callbacks (run in this
 * process, in stream order: each one reads what the work before it on the stream wrote
 * into pinned memory), stream memory operations, and a graph made by stream capture
 * (memset, two kernels, a device-to-device and a device-to-pinned copy, a host function),
 * checked node by node, instantiated, launched three times, cloned and launched again.
 * Every line it prints is the same on NVIDIA's driver and through ivcuda. */
#include "common.h"

enum { N = 4096, THREADS = 256 };

static float *pinned;         /* cuMemHostAlloc: where copies land for the host functions */
static int order[8];
static int ran;
static float seen[8];
static int host_calls;

static void record(void *data)
{
    order[ran] = (int)(intptr_t)data;
    seen[ran] = pinned[N - 1];
    ran++;
}

static CUresult callback_status = (CUresult)-1;
static CUstream callback_stream;
static void on_stream(CUstream stream, CUresult status, void *data)
{
    callback_stream = stream;
    callback_status = status;
    record(data);
}

static void count_call(void *data)
{
    (void)data;
    host_calls++;
}

static void launch_add(CUfunction add, CUstream stream, CUdeviceptr x, float a)
{
    int n = N;
    void *args[] = { &x, &a, &n };
    CK(cuLaunchKernel(add, N / THREADS, 1, 1, THREADS, 1, 1, 0, stream, args, NULL));
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    char *ptx = read_kernel(dir, "graphs_streams", "ptx", NULL);
    CUmodule module;
    CUfunction add, fill;
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&add, module, "add_scalar"));
    CK(cuModuleGetFunction(&fill, module, "fill_index"));

    /* ---- stream queries ---- */
    int least, greatest;
    CK(cuCtxGetStreamPriorityRange(&least, &greatest));
    CUstream stream;
    CK(cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, greatest));
    unsigned flags = 0;
    int priority = 0;
    CUcontext stream_ctx = NULL;
    CUdevice stream_dev = -1;
    unsigned long long id1 = 0, id2 = 0;
    CK(cuStreamGetFlags(stream, &flags));
    CK(cuStreamGetPriority(stream, &priority));
    CK(cuStreamGetCtx(stream, &stream_ctx));
    CK(cuStreamGetDevice(stream, &stream_dev));
    CK(cuStreamGetId(stream, &id1));
    CK(cuStreamGetId(CU_STREAM_LEGACY, &id2));
    printf("stream flags=%u priority_is_greatest=%d ctx_matches=%d device=%d ids_differ=%d\n", flags,
           priority == greatest, stream_ctx == ctx, (int)stream_dev, id1 != id2);
    CUstreamAttrValue attr;
    memset(&attr, 0, sizeof attr);
    CK(cuStreamGetAttribute(stream, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &attr));
    attr.syncPolicy = CU_SYNC_POLICY_SPIN;
    CK(cuStreamSetAttribute(stream, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &attr));
    memset(&attr, 0, sizeof attr);
    CK(cuStreamGetAttribute(stream, CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY, &attr));
    printf("stream sync policy=%d\n", (int)attr.syncPolicy);

    /* ---- host functions in stream order ---- */
    size_t bytes = N * sizeof(float);
    CUdeviceptr x, y;
    CK(cuMemAlloc(&x, bytes));
    CK(cuMemAlloc(&y, bytes));
    CK(cuMemHostAlloc((void **)&pinned, bytes, 0));
    CK(cuMemsetD32(x, 0, N));
    for (int step = 1; step <= 3; step++) {
        launch_add(add, stream, x, 1.0f);
        CK(cuMemcpyDtoHAsync(pinned, x, bytes, stream));
        CK(cuLaunchHostFunc(stream, record, (void *)(intptr_t)step));
    }
    launch_add(add, stream, x, 0.5f);
    CK(cuMemcpyDtoHAsync(pinned, x, bytes, stream));
    CK(cuStreamAddCallback(stream, on_stream, (void *)(intptr_t)4, 0));
    CK(cuStreamSynchronize(stream));
    printf("host functions ran=%d order=%d,%d,%d,%d saw=%.1f,%.1f,%.1f,%.1f callback_status=%d callback_stream_matches=%d\n",
           ran, order[0], order[1], order[2], order[3], seen[0], seen[1], seen[2], seen[3], (int)callback_status,
           callback_stream == stream);

    /* ---- stream memory operations ---- */
    CUdeviceptr flag;
    CK(cuMemAlloc(&flag, 64));
    CK(cuMemsetD32(flag, 0, 16));
    CK(cuStreamWriteValue32(stream, flag, 0x5eed, 0));
    CK(cuStreamWaitValue32(stream, flag, 0x5eed, CU_STREAM_WAIT_VALUE_EQ));
    CK(cuStreamWriteValue64(stream, flag + 8, 0x1122334455667788ULL, 0));
    CUstreamBatchMemOpParams ops[2];
    memset(ops, 0, sizeof ops);
    ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
    ops[0].writeValue.address = flag + 16;
    ops[0].writeValue.value = 77;
    ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
    ops[1].waitValue.address = flag + 16;
    ops[1].waitValue.value = 77;
    ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
    CK(cuStreamBatchMemOp(stream, 2, ops, 0));
    CK(cuStreamSynchronize(stream));
    unsigned words[6];
    CK(cuMemcpyDtoH(words, flag, sizeof words));
    printf("memops value32=0x%x value64=0x%08x%08x batch=%u\n", words[0], words[3], words[2], words[4]);

    /* ---- capture ---- */
    CK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
    CK(cuStreamIsCapturing(stream, &status));
    CK(cuMemsetD32Async(x, 0, N, stream));
    launch_add(add, stream, x, 1.5f);
    launch_add(add, stream, x, 1.5f);
    CUstreamCaptureStatus info_status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t capture_id = 0;
    CUgraph during = NULL;
    const CUgraphNode *deps = NULL;
    size_t num_deps = 0;
    CK(cuStreamGetCaptureInfo(stream, &info_status, &capture_id, &during, &deps, NULL, &num_deps));
    CUgraphNodeType dep_type = CU_GRAPH_NODE_TYPE_EMPTY;
    if (num_deps == 1) CK(cuGraphNodeGetType(deps[0], &dep_type));
    CK(cuMemcpyDtoDAsync(y, x, bytes, stream));
    CK(cuMemcpyDtoHAsync(pinned, y, bytes, stream));
    CK(cuLaunchHostFunc(stream, count_call, NULL));
    CUgraph graph;
    CK(cuStreamEndCapture(stream, &graph));
    printf("capture status=%d info_status=%d id_nonzero=%d deps=%d last_is_kernel=%d same_graph=%d\n", (int)status,
           (int)info_status, capture_id != 0, (int)num_deps, dep_type == CU_GRAPH_NODE_TYPE_KERNEL, during == graph);

    size_t count = 0;
    CK(cuGraphGetNodes(graph, NULL, &count));
    CUgraphNode nodes[16];
    size_t got = 16;
    CK(cuGraphGetNodes(graph, nodes, &got));
    int kinds[16] = { 0 };
    for (size_t i = 0; i < got; i++) {
        CUgraphNodeType t;
        CK(cuGraphNodeGetType(nodes[i], &t));
        if ((int)t >= 0 && (int)t < 16) kinds[t]++;
    }
    size_t roots = 0;
    CK(cuGraphGetRootNodes(graph, NULL, &roots));
    printf("graph nodes=%d roots=%d kernel=%d memcpy=%d memset=%d host=%d\n", (int)count, (int)roots,
           kinds[CU_GRAPH_NODE_TYPE_KERNEL], kinds[CU_GRAPH_NODE_TYPE_MEMCPY], kinds[CU_GRAPH_NODE_TYPE_MEMSET],
           kinds[CU_GRAPH_NODE_TYPE_HOST]);

    CUgraphExec exec;
    CK(cuGraphInstantiate(&exec, graph, 0));
    cuuint64_t exec_flags = 99;
    CK(cuGraphExecGetFlags(exec, &exec_flags));
    memset(pinned, 0, bytes);
    CK(cuGraphUpload(exec, stream));
    for (int i = 0; i < 3; i++) CK(cuGraphLaunch(exec, stream));
    CK(cuStreamSynchronize(stream));
    uint64_t sum = fnv1a(pinned, bytes);
    printf("graph launches=3 host_calls=%d value=%.1f flags=%llu fnv=%016llx\n", host_calls, pinned[N / 2],
           (unsigned long long)exec_flags, (unsigned long long)sum);

    /* a clone, instantiated with parameters (and uploaded by them) */
    CUgraph clone;
    CK(cuGraphClone(&clone, graph));
    CUgraphExec clone_exec;
    CUDA_GRAPH_INSTANTIATE_PARAMS params;
    memset(&params, 0, sizeof params);
    params.flags = CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD;
    params.hUploadStream = stream;
    CK(cuGraphInstantiateWithParams(&clone_exec, clone, &params));
    memset(pinned, 0, bytes);
    CK(cuGraphLaunch(clone_exec, stream));
    CK(cuStreamSynchronize(stream));
    printf("clone result=%d host_calls=%d value=%.1f\n", (int)params.result_out, host_calls, pinned[N - 1]);

    /* the per-thread capture mode */
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    CK(cuThreadExchangeStreamCaptureMode(&mode));
    CUstreamCaptureMode back = mode;
    CK(cuThreadExchangeStreamCaptureMode(&back));
    printf("capture mode was=%d restored=%d\n", (int)mode, (int)back);

    CK(cuGraphExecDestroy(clone_exec));
    CK(cuGraphDestroy(clone));
    CK(cuGraphExecDestroy(exec));
    CK(cuGraphDestroy(graph));
    CK(cuMemFreeHost(pinned));
    CK(cuMemFree(flag));
    CK(cuMemFree(y));
    CK(cuMemFree(x));
    CK(cuStreamDestroy(stream));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    printf("ok\n");
    return 0;
}
