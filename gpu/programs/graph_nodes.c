/* graph_nodes: a graph built by hand (memset, copies from pinned and to pageable memory,
 * kernels, a host node and a while loop as a conditional node), launched, its kernel's
 * parameters changed in the executable graph and launched again; a graph built with the
 * generic cuGraphAddNode; and a capture with copies of pageable memory, launched twice with
 * the pageable input changed between the launches. Every line it prints is the same on
 * NVIDIA's driver and through ivcuda (docs/graphs.md: node types of pageable copies differ,
 * so they are not printed). */
#include "graph_node_params.h"

enum { N = 4096, THREADS = 256, LIMIT = 5 };

static float pageable_out[N]; /* a by-hand copy node's pageable destination */
static float seen[4];
static int host_runs;

/* the host node: what the pageable copy before it brought */
static void look(void *data)
{
    const float *p = data;
    if (host_runs < 4) seen[host_runs] = p[N - 1];
    host_runs++;
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    void *fatbin = read_kernel(dir, "graph_nodes", "fatbin", NULL);
    CUmodule module;
    CUfunction add, acc, step;
    CK(cuModuleLoadData(&module, fatbin));
    CK(cuModuleGetFunction(&add, module, "add_scalar"));
    CK(cuModuleGetFunction(&acc, module, "accumulate"));
    CK(cuModuleGetFunction(&step, module, "loop_step"));
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    size_t bytes = N * sizeof(float);
    CUdeviceptr x, y, count;
    float *in;
    int *pinned_count;
    CK(cuMemAlloc(&x, bytes));
    CK(cuMemAlloc(&y, bytes));
    CK(cuMemAlloc(&count, sizeof(int)));
    CK(cuMemHostAlloc((void **)&in, bytes, 0));
    CK(cuMemHostAlloc((void **)&pinned_count, sizeof(int), 0));
    for (int i = 0; i < N; i++) in[i] = (float)i;

    /* ---- by hand ---- */
    CUgraph graph;
    CK(cuGraphCreate(&graph, 0));
    CUgraphNode clear_y, load_x, add_x, acc_y, out_y, look_node, clear_count, loop, out_count;
    CUDA_MEMSET_NODE_PARAMS ms = memset_node_params(y, 0.0f, N);
    CK(cuGraphAddMemsetNode(&clear_y, graph, NULL, 0, &ms, ctx));
    CUDA_MEMCPY3D c = copy_to_device_params(x, in, bytes);
    CK(cuGraphAddMemcpyNode(&load_x, graph, NULL, 0, &c, ctx));
    int n = N;
    float a = 2.0f;
    void *add_args[] = { &x, &a, &n };
    CUDA_KERNEL_NODE_PARAMS k = kernel_node_params(add, add_args, N / THREADS, THREADS);
    CK(cuGraphAddKernelNode(&add_x, graph, &load_x, 1, &k));
    void *acc_args[] = { &y, &x, &n };
    CUDA_KERNEL_NODE_PARAMS k2 = kernel_node_params(acc, acc_args, N / THREADS, THREADS);
    CUgraphNode both[2] = { clear_y, add_x };
    CK(cuGraphAddKernelNode(&acc_y, graph, both, 2, &k2));
    c = copy_to_host_params(pageable_out, y, bytes);
    CK(cuGraphAddMemcpyNode(&out_y, graph, &acc_y, 1, &c, ctx));
    CUDA_HOST_NODE_PARAMS host = { look, pageable_out };
    CK(cuGraphAddHostNode(&look_node, graph, &out_y, 1, &host));
    /* a while loop: its body steps a counter until LIMIT */
    ms = memset_node_params(count, 0.0f, 1);
    CK(cuGraphAddMemsetNode(&clear_count, graph, NULL, 0, &ms, ctx));
    CUgraphConditionalHandle handle;
    CK(cuGraphConditionalHandleCreate(&handle, graph, ctx, 1, CU_GRAPH_COND_ASSIGN_DEFAULT));
    CUgraphNodeParams cp;
    memset(&cp, 0, sizeof cp);
    cp.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
    cp.conditional.handle = handle;
    cp.conditional.type = CU_GRAPH_COND_TYPE_WHILE;
    cp.conditional.size = 1;
    cp.conditional.ctx = ctx;
    CUgraphNode before_loop[2] = { clear_count, acc_y };
    CK(cuGraphAddNode(&loop, graph, before_loop, NULL, 2, &cp));
    CUgraph body = cp.conditional.phGraph_out[0];
    int limit = LIMIT;
    void *step_args[] = { &count, &handle, &limit };
    CUDA_KERNEL_NODE_PARAMS k3 = kernel_node_params(step, step_args, 1, 32);
    CUgraphNode step_node;
    CK(cuGraphAddKernelNode(&step_node, body, NULL, 0, &k3));
    c = copy_to_host_params(pinned_count, count, sizeof(int));
    CK(cuGraphAddMemcpyNode(&out_count, graph, &loop, 1, &c, ctx));

    size_t nodes = 0, roots = 0, body_nodes = 0;
    CK(cuGraphGetNodes(graph, NULL, &nodes));
    CK(cuGraphGetRootNodes(graph, NULL, &roots));
    CK(cuGraphGetNodes(body, NULL, &body_nodes));
    printf("by hand nodes=%d roots=%d body_nodes=%d types=%s,%s,%s,%s,%s,%s\n", (int)nodes, (int)roots,
           (int)body_nodes, node_type_name(clear_y), node_type_name(load_x), node_type_name(add_x),
           node_type_name(look_node), node_type_name(loop), node_type_name(step_node));

    CUgraphExec exec;
    CK(cuGraphInstantiate(&exec, graph, 0));
    for (int i = 0; i < 2; i++) CK(cuGraphLaunch(exec, stream));
    CK(cuStreamSynchronize(stream));
    printf("launches=2 host_runs=%d seen=%.1f,%.1f loop_count=%d y_fnv=%016llx\n", host_runs, seen[0], seen[1],
           *pinned_count, (unsigned long long)fnv1a(pageable_out, bytes));

    /* the kernel's parameters changed in the executable graph alone */
    a = 3.0f;
    k = kernel_node_params(add, add_args, N / THREADS, THREADS);
    CK(cuGraphExecKernelNodeSetParams(exec, add_x, &k));
    *pinned_count = 0;
    CK(cuGraphLaunch(exec, stream));
    CK(cuStreamSynchronize(stream));
    printf("after exec set a=3: host_runs=%d seen=%.1f loop_count=%d\n", host_runs, seen[2], *pinned_count);

    /* ---- the generic form ---- */
    CUgraph generic;
    CK(cuGraphCreate(&generic, 0));
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEMSET;
    p.memset.dst = x;
    p.memset.value = 0x3f800000u; /* 1.0f */
    p.memset.elementSize = 4;
    p.memset.width = N;
    p.memset.height = 1;
    p.memset.ctx = ctx;
    CUgraphNode g_set, g_add, g_out;
    CK(cuGraphAddNode(&g_set, generic, NULL, NULL, 0, &p));
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_KERNEL;
    float half = 0.5f;
    void *half_args[] = { &x, &half, &n };
    p.kernel.func = add;
    p.kernel.gridDimX = N / THREADS;
    p.kernel.gridDimY = p.kernel.gridDimZ = 1;
    p.kernel.blockDimX = THREADS;
    p.kernel.blockDimY = p.kernel.blockDimZ = 1;
    p.kernel.kernelParams = half_args;
    CK(cuGraphAddNode(&g_add, generic, &g_set, NULL, 1, &p));
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
    p.memcpy.copyCtx = ctx;
    p.memcpy.copyParams = copy_to_host_params(in, x, bytes);
    CK(cuGraphAddNode(&g_out, generic, &g_add, NULL, 1, &p));
    CUgraphExec generic_exec;
    CK(cuGraphInstantiate(&generic_exec, generic, 0));
    CK(cuGraphLaunch(generic_exec, stream));
    CK(cuStreamSynchronize(stream));
    printf("generic types=%s,%s,%s value=%.1f fnv=%016llx\n", node_type_name(g_set), node_type_name(g_add),
           node_type_name(g_out), in[7], (unsigned long long)fnv1a(in, bytes));

    /* ---- capture of copies of pageable memory ---- */
    static float hin[N], hout[N];
    for (int i = 0; i < N; i++) hin[i] = 0.5f * (float)i;
    CK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuMemcpyHtoDAsync(x, hin, bytes, stream));
    float one = 1.0f;
    void *one_args[] = { &x, &one, &n };
    CK(cuLaunchKernel(add, N / THREADS, 1, 1, THREADS, 1, 1, 0, stream, one_args, NULL));
    CK(cuMemcpyDtoHAsync(hout, x, bytes, stream));
    CUgraph captured;
    CK(cuStreamEndCapture(stream, &captured));
    size_t captured_nodes = 0;
    CK(cuGraphGetNodes(captured, NULL, &captured_nodes));
    CUgraphExec captured_exec;
    CK(cuGraphInstantiate(&captured_exec, captured, 0));
    CK(cuGraphLaunch(captured_exec, stream));
    CK(cuStreamSynchronize(stream));
    float first = hout[10];
    hin[10] = 100.0f;
    CK(cuGraphLaunch(captured_exec, stream));
    CK(cuStreamSynchronize(stream));
    printf("captured nodes=%d first=%.1f second=%.1f fnv=%016llx\n", (int)captured_nodes, first, hout[10],
           (unsigned long long)fnv1a(hout, bytes));

    CK(cuGraphExecDestroy(captured_exec));
    CK(cuGraphDestroy(captured));
    CK(cuGraphExecDestroy(generic_exec));
    CK(cuGraphDestroy(generic));
    CK(cuGraphExecDestroy(exec));
    CK(cuGraphDestroy(graph));
    CK(cuMemFreeHost(pinned_count));
    CK(cuMemFreeHost(in));
    CK(cuMemFree(count));
    CK(cuMemFree(y));
    CK(cuMemFree(x));
    CK(cuStreamDestroy(stream));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    printf("ok\n");
    return 0;
}
