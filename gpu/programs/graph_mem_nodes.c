/* graph_mem_nodes: graph memory nodes made by hand (issue 12, item 4; docs/graphs.md "Memory
 * nodes"): an allocation node, a memset and a kernel writing into its memory, a copy of it to
 * pinned memory and a free node, launched three times; the nodes' parameters read back; the same
 * with the generic cuGraphAddNode; an allocation that outlives its graph's launch, read with
 * cuMemcpyDtoH and freed with cuMemFreeAsync; and, for comparison, the same kind of graph by stream
 * capture of cuMemAllocAsync/cuMemFreeAsync. Every line it prints is the same on NVIDIA's driver
 * and through ivcuda (addresses are printed only as comparisons). Kernels: graph_nodes'. */
#include "graph_node_params.h"

enum { N = 4096, THREADS = 256, LAUNCHES = 3 };

static CUDA_MEM_ALLOC_NODE_PARAMS alloc_params(size_t bytes, const CUmemAccessDesc *desc)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.accessDescs = desc;
    p.accessDescCount = desc != NULL ? 1 : 0;
    p.bytesize = bytes;
    return p;
}

/* How many of out's N values are expect. */
static int count_equal(const float *out, float expect)
{
    int same = 0;
    for (int i = 0; i < N; i++) same += out[i] == expect;
    return same;
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    void *fatbin = read_kernel(dir, "graph_nodes", "fatbin", NULL);
    CUmodule module;
    CUfunction add;
    CK(cuModuleLoadData(&module, fatbin));
    CK(cuModuleGetFunction(&add, module, "add_scalar"));
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    size_t bytes = N * sizeof(float);
    float *out;
    CK(cuMemHostAlloc((void **)&out, bytes, 0));
    int n = N;

    /* ---- by hand: alloc -> memset 1.0 -> kernel +2.0 -> copy to pinned -> free ---- */
    CUgraph graph;
    CK(cuGraphCreate(&graph, 0));
    CUDA_MEM_ALLOC_NODE_PARAMS ap = alloc_params(bytes, NULL);
    CUgraphNode alloc_node, set_node, add_node, copy_node, free_node;
    CK(cuGraphAddMemAllocNode(&alloc_node, graph, NULL, 0, &ap));
    CUdeviceptr a = ap.dptr;
    CUDA_MEMSET_NODE_PARAMS ms = memset_node_params(a, 1.0f, N);
    CK(cuGraphAddMemsetNode(&set_node, graph, &alloc_node, 1, &ms, ctx));
    float two = 2.0f;
    void *add_args[] = { &a, &two, &n };
    CUDA_KERNEL_NODE_PARAMS k = kernel_node_params(add, add_args, N / THREADS, THREADS);
    CK(cuGraphAddKernelNode(&add_node, graph, &set_node, 1, &k));
    CUDA_MEMCPY3D c = copy_to_host_params(out, a, bytes);
    CK(cuGraphAddMemcpyNode(&copy_node, graph, &add_node, 1, &c, ctx));
    CK(cuGraphAddMemFreeNode(&free_node, graph, &copy_node, 1, a));

    CUDA_MEM_ALLOC_NODE_PARAMS got;
    CK(cuGraphMemAllocNodeGetParams(alloc_node, &got));
    CUdeviceptr freed = 0;
    CK(cuGraphMemFreeNodeGetParams(free_node, &freed));
    printf("alloc node dptr_set=%d bytesize=%zu alloc_type=%d location=%d/%d access_count=%zu dptr_same=%d\n",
           a != 0, got.bytesize, (int)got.poolProps.allocType, (int)got.poolProps.location.type,
           got.poolProps.location.id, got.accessDescCount, got.dptr == a);
    printf("free node dptr_same=%d\n", freed == a);
    size_t nodes = 0;
    CK(cuGraphGetNodes(graph, NULL, &nodes));
    printf("by hand nodes=%d types=%s,%s,%s,%s,%s\n", (int)nodes, node_type_name(alloc_node), node_type_name(set_node),
           node_type_name(add_node), node_type_name(copy_node), node_type_name(free_node));

    CUgraphExec exec;
    CK(cuGraphInstantiate(&exec, graph, 0));
    int all = 1;
    for (int i = 0; i < LAUNCHES; i++) {
        memset(out, 0, bytes);
        CK(cuGraphLaunch(exec, stream));
        CK(cuStreamSynchronize(stream));
        all &= count_equal(out, 3.0f) == N;
    }
    printf("launches=%d value=%.1f all_equal=%d fnv=%016llx\n", LAUNCHES, out[N - 1], all,
           (unsigned long long)fnv1a(out, bytes));
    cuuint64_t reserved = 0;
    CK(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved));
    printf("graph memory reserved_at_least_one_allocation=%d\n", reserved >= bytes);
    CK(cuGraphExecDestroy(exec));
    CK(cuGraphDestroy(graph));

    /* ---- an access descriptor of the device itself: whatever the driver answers, the same both ways;
     * a location other than the device is refused (natively too) ---- */
    CUgraph bad;
    CK(cuGraphCreate(&bad, 0));
    CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUDA_MEM_ALLOC_NODE_PARAMS self = alloc_params(bytes, &rw);
    CUgraphNode self_node;
    CUresult self_result = cuGraphAddMemAllocNode(&self_node, bad, NULL, 0, &self);
    int self_count = -1, self_flags = -1;
    if (self_result == CUDA_SUCCESS) {
        CK(cuGraphMemAllocNodeGetParams(self_node, &got));
        self_count = (int)got.accessDescCount;
        self_flags = got.accessDescCount > 0 && got.accessDescs != NULL ? (int)got.accessDescs[0].flags : -1;
    }
    printf("self access result=%d access_count=%d flags=%d\n", (int)self_result, self_count, self_flags);
    CUDA_MEM_ALLOC_NODE_PARAMS wrong = alloc_params(bytes, NULL);
    wrong.poolProps.location.id = 4096;
    CUgraphNode wrong_node;
    printf("bad location refused=%d\n", cuGraphAddMemAllocNode(&wrong_node, bad, NULL, 0, &wrong) != CUDA_SUCCESS);
    CK(cuGraphDestroy(bad));

    /* ---- the generic form: alloc -> memset 5.0 -> copy -> free ---- */
    CUgraph generic;
    CK(cuGraphCreate(&generic, 0));
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
    p.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.alloc.bytesize = bytes;
    CUgraphNode g_alloc, g_set, g_copy, g_free;
    CK(cuGraphAddNode(&g_alloc, generic, NULL, NULL, 0, &p));
    CUdeviceptr b = p.alloc.dptr;
    ms = memset_node_params(b, 5.0f, N);
    CK(cuGraphAddMemsetNode(&g_set, generic, &g_alloc, 1, &ms, ctx));
    c = copy_to_host_params(out, b, bytes);
    CK(cuGraphAddMemcpyNode(&g_copy, generic, &g_set, 1, &c, ctx));
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_MEM_FREE;
    p.free.dptr = b;
    CK(cuGraphAddNode(&g_free, generic, &g_copy, NULL, 1, &p));
    CUgraphExec generic_exec;
    CK(cuGraphInstantiate(&generic_exec, generic, 0));
    all = 1;
    for (int i = 0; i < 2; i++) {
        memset(out, 0, bytes);
        CK(cuGraphLaunch(generic_exec, stream));
        CK(cuStreamSynchronize(stream));
        all &= count_equal(out, 5.0f) == N;
    }
    printf("generic dptr_set=%d types=%s,%s,%s,%s launches=2 value=%.1f all_equal=%d\n", b != 0,
           node_type_name(g_alloc), node_type_name(g_set), node_type_name(g_copy), node_type_name(g_free), out[0], all);
    CK(cuGraphExecDestroy(generic_exec));
    CK(cuGraphDestroy(generic));

    /* ---- an allocation that outlives its graph: read after the launch, freed by the program ---- */
    CUgraph outlives;
    CK(cuGraphCreate(&outlives, 0));
    ap = alloc_params(bytes, NULL);
    CUgraphNode o_alloc, o_set;
    CK(cuGraphAddMemAllocNode(&o_alloc, outlives, NULL, 0, &ap));
    CUdeviceptr kept = ap.dptr;
    ms = memset_node_params(kept, 7.0f, N);
    CK(cuGraphAddMemsetNode(&o_set, outlives, &o_alloc, 1, &ms, ctx));
    CUgraphExec outlives_exec;
    CK(cuGraphInstantiate(&outlives_exec, outlives, 0));
    CK(cuGraphLaunch(outlives_exec, stream));
    CK(cuStreamSynchronize(stream));
    memset(out, 0, bytes);
    CK(cuMemcpyDtoH(out, kept, bytes));
    CK(cuMemFreeAsync(kept, stream));
    CK(cuStreamSynchronize(stream));
    printf("outlives value=%.1f all_equal=%d freed=1\n", out[N / 2], count_equal(out, 7.0f) == N);
    CK(cuGraphExecDestroy(outlives_exec));
    CK(cuGraphDestroy(outlives));

    /* ---- the same by capture: cuMemAllocAsync, a kernel, a copy, cuMemFreeAsync ---- */
    CUdeviceptr d;
    CK(cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
    CK(cuMemAllocAsync(&d, bytes, stream));
    CK(cuMemsetD32Async(d, 0x40800000u /* 4.0f */, N, stream));
    float half = 0.5f;
    void *half_args[] = { &d, &half, &n };
    CK(cuLaunchKernel(add, N / THREADS, 1, 1, THREADS, 1, 1, 0, stream, half_args, NULL));
    CK(cuMemcpyDtoHAsync(out, d, bytes, stream));
    CK(cuMemFreeAsync(d, stream));
    CUgraph captured;
    CK(cuStreamEndCapture(stream, &captured));
    size_t captured_nodes = 0;
    CK(cuGraphGetNodes(captured, NULL, &captured_nodes));
    CUgraphNode list[8];
    size_t listed = captured_nodes < 8 ? captured_nodes : 8;
    CK(cuGraphGetNodes(captured, list, &listed));
    int allocs = 0, frees = 0;
    for (size_t i = 0; i < listed; i++) {
        allocs += strcmp(node_type_name(list[i]), "alloc") == 0;
        frees += strcmp(node_type_name(list[i]), "free") == 0;
    }
    CUgraphExec captured_exec;
    CK(cuGraphInstantiate(&captured_exec, captured, 0));
    all = 1;
    for (int i = 0; i < 2; i++) {
        memset(out, 0, bytes);
        CK(cuGraphLaunch(captured_exec, stream));
        CK(cuStreamSynchronize(stream));
        all &= count_equal(out, 4.5f) == N;
    }
    printf("captured nodes=%d allocs=%d frees=%d launches=2 value=%.1f all_equal=%d\n", (int)captured_nodes, allocs,
           frees, out[1], all);
    CK(cuGraphExecDestroy(captured_exec));
    CK(cuGraphDestroy(captured));

    CK(cuDeviceGraphMemTrim(0));
    CK(cuMemFreeHost(out));
    CK(cuStreamDestroy(stream));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    printf("ok\n");
    return 0;
}
