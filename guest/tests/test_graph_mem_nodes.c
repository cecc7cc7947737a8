/* Graph memory nodes made by hand (api/graphs.api section graphmem) against the in-process fake
 * server: the allocation node's address comes back in nodeParams->dptr and joins the process's
 * map of device memory until its free node; pool properties and access descriptors other than
 * the guest's device 0 are refused here (CUDA_ERROR_INVALID_VALUE) before any request; the
 * generic cuGraphAddNode takes both kinds; the parameters come back, the access descriptors in
 * memory that stays the node's. */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "memory.h"

CUresult cuInit(unsigned);
CUresult cuGraphAddMemAllocNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUDA_MEM_ALLOC_NODE_PARAMS *);
CUresult cuGraphAddMemFreeNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr);
CUresult cuGraphMemAllocNodeGetParams(CUgraphNode, CUDA_MEM_ALLOC_NODE_PARAMS *);
CUresult cuGraphAddNode(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraphNodeParams *);

#define GRAPH ((CUgraph)(uintptr_t)0x3200000100000002ULL)

static CUDA_MEM_ALLOC_NODE_PARAMS params(const CUmemAccessDesc *descs, size_t count)
{
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = 0;
    p.accessDescs = descs;
    p.accessDescCount = count;
    p.bytesize = 4096;
    return p;
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
                          .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUgraphNode node = NULL;

    /* refused here, by name, before any request */
    CUDA_MEM_ALLOC_NODE_PARAMS p = params(&rw, 1);
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_HOST;
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
    p = params(&rw, 1);
    p.poolProps.location.id = 1;
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
    p = params(&rw, 1);
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_MANAGED;
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
    p = params(&rw, 1);
    p.poolProps.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
    p = params(&rw, (size_t)1 << 40);
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
    CUmemAccessDesc other = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 2}, .flags = 3};
    p = params(&other, 1);
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
    p = params(NULL, 1);
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_ERROR_INVALID_VALUE);
    CHECK(atomic_load(&fake.mem_node_calls) == 0);

    /* the address comes back and is device memory of the process */
    p = params(&rw, 1);
    CHECK(cuGraphAddMemAllocNode(&node, GRAPH, NULL, 0, &p) == CUDA_SUCCESS);
    CHECK(p.dptr == FAKE_GRAPH_ALLOC);
    CHECK((uint64_t)(uintptr_t)node == FAKE_ALLOC_NODE);
    CHECK(fake.last_alloc[0] == 1 && fake.last_alloc[1] == 0 && fake.last_alloc[2] == 1 && fake.last_alloc[3] == 0);
    CHECK(fake.last_alloc[4] == 4096 && fake.last_alloc[5] == 12);
    CHECK(fake.last_alloc_desc[0] == 1 && fake.last_alloc_desc[1] == 0 && fake.last_alloc_desc[2] == 3);
    CHECK(ivc_memory_is_device(FAKE_GRAPH_ALLOC + 100));

    /* its parameters, the descriptors in memory that stays */
    CUDA_MEM_ALLOC_NODE_PARAMS got, again;
    CHECK(cuGraphMemAllocNodeGetParams(node, &got) == CUDA_SUCCESS);
    CHECK(got.poolProps.allocType == CU_MEM_ALLOCATION_TYPE_PINNED);
    CHECK(got.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE && got.poolProps.location.id == 0);
    CHECK(got.bytesize == 4096 && got.dptr == FAKE_GRAPH_ALLOC);
    CHECK(got.accessDescCount == 1 && got.accessDescs != NULL);
    CHECK(got.accessDescs != NULL && got.accessDescs[0].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    CHECK(cuGraphMemAllocNodeGetParams(node, &again) == CUDA_SUCCESS);
    CHECK(again.accessDescs == got.accessDescs);
    CHECK(cuGraphMemAllocNodeGetParams(node, NULL) == CUDA_ERROR_INVALID_VALUE);

    /* the free node; then the address is no longer the process's */
    CUgraphNode free_node = NULL;
    CHECK(cuGraphAddMemFreeNode(&free_node, GRAPH, &node, 1, FAKE_GRAPH_ALLOC) == CUDA_SUCCESS);
    CHECK((uint64_t)(uintptr_t)free_node == FAKE_FREE_NODE);
    CHECK(!ivc_memory_is_device(FAKE_GRAPH_ALLOC + 100));
    CUdeviceptr freed = 0;
    CHECK(cuGraphMemFreeNodeGetParams(free_node, &freed) == CUDA_SUCCESS && freed == FAKE_GRAPH_ALLOC);
    CHECK(cuGraphAddMemFreeNode(&free_node, GRAPH, NULL, 0, 0x1234) == CUDA_ERROR_INVALID_VALUE);

    /* the generic form takes both kinds */
    CUgraphNodeParams g;
    memset(&g, 0, sizeof g);
    g.type = IVC_NODE_MEM_ALLOC;
    g.u.alloc.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    g.u.alloc.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    g.u.alloc.bytesize = 8192;
    CHECK(cuGraphAddNode(&node, GRAPH, NULL, 0, &g) == CUDA_SUCCESS);
    CHECK(g.u.alloc.dptr == FAKE_GRAPH_ALLOC && fake.last_alloc[4] == 8192 && fake.last_alloc[5] == 0);
    CHECK(ivc_memory_is_device(FAKE_GRAPH_ALLOC + 8000));
    memset(&g, 0, sizeof g);
    g.type = IVC_NODE_MEM_FREE;
    g.u.free.dptr = FAKE_GRAPH_ALLOC;
    CHECK(cuGraphAddNode(&node, GRAPH, NULL, 0, &g) == CUDA_SUCCESS);
    CHECK(fake.last_free_dptr == FAKE_GRAPH_ALLOC && !ivc_memory_is_device(FAKE_GRAPH_ALLOC + 8000));

    unlink(path);
    return check_summary("test_graph_mem_nodes");
}
