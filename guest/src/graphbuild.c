/* Graph nodes with parameters, made by hand (api/graphs.api section graphbuild,
 * docs/graphs.md): kernel, memset, memcpy, host and conditional nodes, the setters of their
 * parameters on a node and on an executable graph's node, and the generic CUgraphNodeParams
 * forms (cuGraphAddNode, cuGraphNodeSetParams, cuGraphExecNodeSetParams), which the CUDA 13
 * runtime uses. Every form reduces to one wire call per node kind with the same head: the
 * operation (add, set, set on an executable graph), the handles it names and the dependencies
 * as (node handle, edge data) pairs. A kernel's parameters are packed as a launch packs them;
 * a copy's sides are reduced as the strided copies reduce them, host sides in pinned memory by
 * pool offset and pageable ones staged (staged_copy.c). Memory nodes (section graphmem):
 * an allocation node's address joins the process's map of device memory until a free node of
 * it is added, as a cuMemAllocAsync's does until its cuMemFreeAsync. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "channel.h"
#include "hostfn.h"
#include "ivc_api.h"
#include "launch.h"
#include "log.h"
#include "memory.h"
#include "staged_copy.h"
#include "strided.h"

#define MAX_DEPENDENCIES IVC_CAPTURE_MAX_DEPENDENCIES
/* the wire's operations */
#define OP_ADD 0
#define OP_SET 1
#define OP_EXEC_SET 2
/* the most body graphs one conditional node may have here (the server's bound) */
#define MAX_BODIES 64

struct head {
    uint32_t op;
    CUgraph graph;
    CUgraphNode node;
    CUgraphExec exec;
    CUgraphNode *out; /* the new node (a scratch word for the setters) */
    CUgraphNode scratch;
    uint32_t count;
    uint64_t entries[2 * MAX_DEPENDENCIES];
};

/* An add: the dependencies with their edge data (NULL: the default edges). */
static CUresult head_add(struct head *h, CUgraphNode *out, CUgraph graph, const CUgraphNode *deps,
                         const CUgraphEdgeData *edges, size_t count, const char *name)
{
    if (out == NULL)
        return ivc_null_argument(name, "phGraphNode");
    if (count > MAX_DEPENDENCIES) {
        ivc_log("%s: %zu dependencies, more than the %d one call carries", name, count, MAX_DEPENDENCIES);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (count > 0 && deps == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *h = (struct head){.op = OP_ADD, .graph = graph, .out = out, .count = (uint32_t)count};
    for (size_t i = 0; i < count; i++) {
        h->entries[2 * i] = (uint64_t)(uintptr_t)deps[i];
        h->entries[2 * i + 1] = 0;
        if (edges != NULL)
            memcpy(&h->entries[2 * i + 1], &edges[i], sizeof edges[i]);
        /* the server adds nodes with the default edges: other edge data is not remoted yet */
        if (h->entries[2 * i + 1] != 0) {
            ivc_log("%s: edge data other than the default is not remoted by this ivcuda version", name);
            return CUDA_ERROR_NOT_SUPPORTED;
        }
    }
    return CUDA_SUCCESS;
}

/* A setter: on the node (exec NULL) or on the executable graph's node. */
static void head_set(struct head *h, CUgraphExec exec, CUgraphNode node)
{
    *h = (struct head){.op = exec == NULL ? OP_SET : OP_EXEC_SET, .node = node, .exec = exec, .count = 0};
    h->out = &h->scratch;
}

#define HEAD(h) (h)->out, (h)->op, (h)->graph, (h)->node, (h)->exec, (h)->count, (h)->entries, 16 * (h)->count

/* ---- kernel nodes ---- */

static CUresult kernel_node(struct head *h, const CUDA_KERNEL_NODE_PARAMS_v2 *p)
{
    CUfunction f = p->func != NULL ? p->func : (CUfunction)p->kern;
    if (f == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    const void *params = NULL;
    size_t size = 0;
    CUresult r = ivc_launch_pack(f, p->kernelParams, p->extra, &params, &size);
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_graph_kernel_node(HEAD(h), f, p->gridDimX, p->gridDimY, p->gridDimZ, p->blockDimX, p->blockDimY,
                                 p->blockDimZ, p->sharedMemBytes, params, (uint32_t)size);
}

/* The CUDA 10-11 struct: the _v2 one without kern and ctx. */
static CUDA_KERNEL_NODE_PARAMS_v2 kernel_v2(const CUDA_KERNEL_NODE_PARAMS_v1 *p)
{
    return (CUDA_KERNEL_NODE_PARAMS_v2){.func = p->func, .gridDimX = p->gridDimX, .gridDimY = p->gridDimY,
                                        .gridDimZ = p->gridDimZ, .blockDimX = p->blockDimX, .blockDimY = p->blockDimY,
                                        .blockDimZ = p->blockDimZ, .sharedMemBytes = p->sharedMemBytes,
                                        .kernelParams = p->kernelParams, .extra = p->extra};
}

IVC_EXPORT CUresult cuGraphAddKernelNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                            size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams)
{
    struct head h;
    CUresult r = head_add(&h, phGraphNode, hGraph, dependencies, NULL, numDependencies, "cuGraphAddKernelNode");
    if (r == CUDA_SUCCESS && nodeParams == NULL)
        r = ivc_null_argument("cuGraphAddKernelNode", "nodeParams");
    return r == CUDA_SUCCESS ? kernel_node(&h, nodeParams) : r;
}
IVC_ALIASES_cuGraphAddKernelNode_v2

IVC_EXPORT CUresult cuGraphAddKernelNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                         size_t numDependencies, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    if (nodeParams == NULL)
        return ivc_null_argument("cuGraphAddKernelNode", "nodeParams");
    CUDA_KERNEL_NODE_PARAMS_v2 p = kernel_v2(nodeParams);
    return cuGraphAddKernelNode_v2(phGraphNode, hGraph, dependencies, numDependencies, &p);
}
IVC_ALIASES_cuGraphAddKernelNode

static CUresult set_kernel(CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS_v2 *p, const char *name)
{
    if (p == NULL)
        return ivc_null_argument(name, "nodeParams");
    struct head h;
    head_set(&h, exec, node);
    return kernel_node(&h, p);
}

IVC_EXPORT CUresult cuGraphKernelNodeSetParams_v2(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams)
{
    return set_kernel(NULL, hNode, nodeParams, "cuGraphKernelNodeSetParams");
}
IVC_ALIASES_cuGraphKernelNodeSetParams_v2

IVC_EXPORT CUresult cuGraphKernelNodeSetParams(CUgraphNode hNode, const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    if (nodeParams == NULL)
        return ivc_null_argument("cuGraphKernelNodeSetParams", "nodeParams");
    CUDA_KERNEL_NODE_PARAMS_v2 p = kernel_v2(nodeParams);
    return set_kernel(NULL, hNode, &p, "cuGraphKernelNodeSetParams");
}
IVC_ALIASES_cuGraphKernelNodeSetParams

IVC_EXPORT CUresult cuGraphExecKernelNodeSetParams_v2(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                      const CUDA_KERNEL_NODE_PARAMS_v2 *nodeParams)
{
    if (hGraphExec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_kernel(hGraphExec, hNode, nodeParams, "cuGraphExecKernelNodeSetParams");
}
IVC_ALIASES_cuGraphExecKernelNodeSetParams_v2

IVC_EXPORT CUresult cuGraphExecKernelNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_KERNEL_NODE_PARAMS_v1 *nodeParams)
{
    if (nodeParams == NULL)
        return ivc_null_argument("cuGraphExecKernelNodeSetParams", "nodeParams");
    CUDA_KERNEL_NODE_PARAMS_v2 p = kernel_v2(nodeParams);
    return cuGraphExecKernelNodeSetParams_v2(hGraphExec, hNode, &p);
}
IVC_ALIASES_cuGraphExecKernelNodeSetParams

/* ---- memset nodes ---- */

static CUresult memset_node(struct head *h, const CUDA_MEMSET_NODE_PARAMS *p, const char *name)
{
    if (p == NULL)
        return ivc_null_argument(name, "memsetParams");
    if (p->elementSize != 1 && p->elementSize != 2 && p->elementSize != 4)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t row, span;
    if (p->width == 0 || p->height == 0 || __builtin_mul_overflow((uint64_t)p->width, p->elementSize, &row))
        return CUDA_ERROR_INVALID_VALUE;
    if (p->height > 1 && p->pitch < row)
        return CUDA_ERROR_INVALID_VALUE;
    if (__builtin_mul_overflow((uint64_t)(p->height - 1), (uint64_t)p->pitch, &span) ||
        __builtin_add_overflow(span, row, &span))
        return CUDA_ERROR_INVALID_VALUE;
    return ivc_graph_memset_node(HEAD(h), p->dst, span, p->pitch, p->value, p->elementSize, p->width, p->height);
}

/* The context is the current one on the server: one device, and the runtime's context is current. */
IVC_EXPORT CUresult cuGraphAddMemsetNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                         size_t numDependencies, const CUDA_MEMSET_NODE_PARAMS *memsetParams,
                                         CUcontext ctx)
{
    (void)ctx;
    struct head h;
    CUresult r = head_add(&h, phGraphNode, hGraph, dependencies, NULL, numDependencies, "cuGraphAddMemsetNode");
    return r == CUDA_SUCCESS ? memset_node(&h, memsetParams, "cuGraphAddMemsetNode") : r;
}
IVC_ALIASES_cuGraphAddMemsetNode

IVC_EXPORT CUresult cuGraphMemsetNodeSetParams(CUgraphNode hNode, const CUDA_MEMSET_NODE_PARAMS *nodeParams)
{
    struct head h;
    head_set(&h, NULL, hNode);
    return memset_node(&h, nodeParams, "cuGraphMemsetNodeSetParams");
}
IVC_ALIASES_cuGraphMemsetNodeSetParams

IVC_EXPORT CUresult cuGraphExecMemsetNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_MEMSET_NODE_PARAMS *memsetParams, CUcontext ctx)
{
    (void)ctx;
    if (hGraphExec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct head h;
    head_set(&h, hGraphExec, hNode);
    return memset_node(&h, memsetParams, "cuGraphExecMemsetNodeSetParams");
}
IVC_ALIASES_cuGraphExecMemsetNodeSetParams

/* ---- memcpy nodes ---- */

/* A contiguous run of bytes: one row, or rows and slices without gaps. */
static int contiguous(const struct ivc_copy_geometry *g, size_t pitch, size_t rows)
{
    return (g->height == 1 || pitch == g->width) && (g->depth == 1 || rows == g->height);
}

static CUresult memcpy_node(struct head *h, const CUDA_MEMCPY3D *p, const char *name)
{
    struct ivc_copy_geometry g;
    CUresult r = ivc_strided_geometry(p, name, &g);
    if (r != CUDA_SUCCESS)
        return r;
    if ((r = ivc_need_region()) != CUDA_SUCCESS)
        return r;
    if (g.dst_type == CU_MEMORYTYPE_DEVICE && g.src_type == CU_MEMORYTYPE_DEVICE)
        return ivc_graph_copy_node_dtod(HEAD(h), g.dst, g.dst_span, g.dst_pitch, g.dst_rows, g.src, g.src_span,
                                        g.src_pitch, g.src_rows, g.width, g.height, g.depth);
    if (g.dst_type != CU_MEMORYTYPE_DEVICE && g.src_type != CU_MEMORYTYPE_DEVICE) {
        ivc_log("%s: a copy from host to host memory in a graph is not remoted by this ivcuda version", name);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    int to_host = g.dst_type == CU_MEMORYTYPE_HOST;
    void *host = (void *)(uintptr_t)(to_host ? g.dst : g.src);
    uint64_t host_span = to_host ? g.dst_span : g.src_span;
    if (ivc_in_pool(host, host_span)) {
        uint64_t offset = ivc_pool_offset(host);
        return to_host ? ivc_graph_copy_node_dtoh(HEAD(h), offset, g.dst_span, g.dst_pitch, g.dst_rows, g.src,
                                                  g.src_span, g.src_pitch, g.src_rows, g.width, g.height, g.depth)
                       : ivc_graph_copy_node_htod(HEAD(h), g.dst, g.dst_span, g.dst_pitch, g.dst_rows, offset,
                                                  g.src_span, g.src_pitch, g.src_rows, g.width, g.height, g.depth);
    }
    /* pageable: a staged copy, as one child-graph node; contiguous runs only, added only */
    size_t pitch = to_host ? g.dst_pitch : g.src_pitch, rows = to_host ? g.dst_rows : g.src_rows;
    size_t dpitch = to_host ? g.src_pitch : g.dst_pitch, drows = to_host ? g.src_rows : g.dst_rows;
    if (h->op != OP_ADD || !contiguous(&g, pitch, rows) || !contiguous(&g, dpitch, drows)) {
        ivc_log("%s: pageable host memory in a graph copy is remoted as a staged copy, added as a node of a "
                "contiguous run only (use pinned memory)",
                name);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    size_t size = g.width * g.height * g.depth;
    return ivc_staged_copy(h->out, h->graph, NULL, h->entries, h->count, to_host, to_host ? g.src : g.dst, host, size);
}

IVC_EXPORT CUresult cuGraphAddMemcpyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                         size_t numDependencies, const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    (void)ctx;
    struct head h;
    CUresult r = head_add(&h, phGraphNode, hGraph, dependencies, NULL, numDependencies, "cuGraphAddMemcpyNode");
    return r == CUDA_SUCCESS ? memcpy_node(&h, copyParams, "cuGraphAddMemcpyNode") : r;
}
IVC_ALIASES_cuGraphAddMemcpyNode

IVC_EXPORT CUresult cuGraphMemcpyNodeSetParams(CUgraphNode hNode, const CUDA_MEMCPY3D *nodeParams)
{
    struct head h;
    head_set(&h, NULL, hNode);
    return memcpy_node(&h, nodeParams, "cuGraphMemcpyNodeSetParams");
}
IVC_ALIASES_cuGraphMemcpyNodeSetParams

IVC_EXPORT CUresult cuGraphExecMemcpyNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                   const CUDA_MEMCPY3D *copyParams, CUcontext ctx)
{
    (void)ctx;
    if (hGraphExec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct head h;
    head_set(&h, hGraphExec, hNode);
    return memcpy_node(&h, copyParams, "cuGraphExecMemcpyNodeSetParams");
}
IVC_ALIASES_cuGraphExecMemcpyNodeSetParams

/* ---- host nodes: run by this library's host-function thread ---- */

static CUresult host_node(struct head *h, const CUDA_HOST_NODE_PARAMS *p, const char *name)
{
    if (p == NULL)
        return ivc_null_argument(name, "nodeParams");
    if (p->fn == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = ivc_hostfn_start();
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_graph_host_node(HEAD(h), (uint64_t)(uintptr_t)p->fn, (uint64_t)(uintptr_t)p->userData);
}

IVC_EXPORT CUresult cuGraphAddHostNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                       size_t numDependencies, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    struct head h;
    CUresult r = head_add(&h, phGraphNode, hGraph, dependencies, NULL, numDependencies, "cuGraphAddHostNode");
    return r == CUDA_SUCCESS ? host_node(&h, nodeParams, "cuGraphAddHostNode") : r;
}
IVC_ALIASES_cuGraphAddHostNode

IVC_EXPORT CUresult cuGraphHostNodeSetParams(CUgraphNode hNode, const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    struct head h;
    head_set(&h, NULL, hNode);
    return host_node(&h, nodeParams, "cuGraphHostNodeSetParams");
}
IVC_ALIASES_cuGraphHostNodeSetParams

IVC_EXPORT CUresult cuGraphExecHostNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode,
                                                 const CUDA_HOST_NODE_PARAMS *nodeParams)
{
    if (hGraphExec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    struct head h;
    head_set(&h, hGraphExec, hNode);
    return host_node(&h, nodeParams, "cuGraphExecHostNodeSetParams");
}
IVC_ALIASES_cuGraphExecHostNodeSetParams

/* ---- conditional nodes ---- */

/* The body graphs of the last conditional node each thread made: CUDA's phGraph_out is an
 * array the driver owns, valid while the node lives; this one is the thread's until its next
 * conditional node (programs read it right after the call, as CUDA's samples do). */
static _Thread_local CUgraph bodies[MAX_BODIES];

static CUresult conditional_node(struct head *h, CUDA_CONDITIONAL_NODE_PARAMS *p)
{
    if (p->size == 0 || p->size > MAX_BODIES) {
        ivc_log("a conditional node with %u bodies: 1 to %d are remoted", p->size, MAX_BODIES);
        return p->size == 0 ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_SUPPORTED;
    }
    uint64_t ids[MAX_BODIES] = {0};
    CUresult r = ivc_graph_conditional_node(h->out, h->graph, h->count, h->entries, 16 * h->count, p->handle,
                                            (uint32_t)p->type, p->size, p->ctx, ids, p->size);
    if (r != CUDA_SUCCESS)
        return r;
    for (unsigned i = 0; i < p->size; i++) {
        if (ids[i] == 0)
            return CUDA_ERROR_OUT_OF_MEMORY; /* the process holds as many handles as it may */
        bodies[i] = (CUgraph)(uintptr_t)ids[i];
    }
    p->phGraph_out = bodies;
    return CUDA_SUCCESS;
}

/* ---- memory nodes (section graphmem, docs/graphs.md "Memory nodes") ---- */

/* the most access descriptors one allocation node takes here (the server's bound) */
#define MAX_GRAPH_ACCESS_DESCS 8

static CUresult mem_alloc_node(struct head *h, CUDA_MEM_ALLOC_NODE_PARAMS_v1 *p, const char *name)
{
    const CUmemPoolProps *pool = &p->poolProps;
    if (pool->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) {
        ivc_log("%s: nodeParams->poolProps.allocType %d: only CU_MEM_ALLOCATION_TYPE_PINNED is remoted", name,
                (int)pool->allocType);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (pool->handleTypes != CU_MEM_HANDLE_TYPE_NONE) {
        ivc_log("%s: nodeParams->poolProps.handleTypes 0x%x: graph allocations take none", name,
                (unsigned)pool->handleTypes);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (pool->location.type != CU_MEM_LOCATION_TYPE_DEVICE || pool->location.id != 0) {
        ivc_log("%s: nodeParams->poolProps.location %d/%d: only device 0 (the guest's one device) is remoted", name,
                (int)pool->location.type, pool->location.id);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (p->accessDescCount > MAX_GRAPH_ACCESS_DESCS) {
        ivc_log("%s: nodeParams->accessDescCount %zu: at most %d here (the guest sees one device)", name,
                p->accessDescCount, MAX_GRAPH_ACCESS_DESCS);
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (p->accessDescCount > 0 && p->accessDescs == NULL)
        return ivc_null_argument(name, "nodeParams->accessDescs");
    int32_t wire[MAX_GRAPH_ACCESS_DESCS * 3];
    for (size_t i = 0; i < p->accessDescCount; i++) {
        const CUmemAccessDesc *d = &p->accessDescs[i];
        if (d->location.type != CU_MEM_LOCATION_TYPE_DEVICE || d->location.id != 0) {
            ivc_log("%s: nodeParams->accessDescs[%zu].location %d/%d: only device 0 is remoted", name, i,
                    (int)d->location.type, d->location.id);
            return CUDA_ERROR_INVALID_VALUE;
        }
        wire[3 * i] = d->location.type;
        wire[3 * i + 1] = d->location.id;
        wire[3 * i + 2] = (int32_t)d->flags;
    }
    CUdeviceptr dptr = 0;
    CUresult r = ivc_graph_mem_alloc_node(h->out, &dptr, h->graph, h->count, h->entries, 16 * h->count,
                                          (int)pool->allocType, (int)pool->handleTypes, (int)pool->location.type,
                                          pool->location.id, p->bytesize, wire,
                                          (uint32_t)(p->accessDescCount * 3 * sizeof(int32_t)));
    if (r == CUDA_SUCCESS) {
        p->dptr = dptr;
        ivc_memory_add_allocation(dptr, p->bytesize);
    }
    return r;
}

static CUresult mem_free_node(struct head *h, CUdeviceptr dptr)
{
    CUresult r = ivc_graph_mem_free_node(h->out, h->graph, h->count, h->entries, 16 * h->count, dptr);
    if (r == CUDA_SUCCESS)
        ivc_memory_remove_allocation(dptr);
    return r;
}

IVC_EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                           size_t numDependencies, CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
    struct head h;
    CUresult r = head_add(&h, phGraphNode, hGraph, dependencies, NULL, numDependencies, "cuGraphAddMemAllocNode");
    if (r == CUDA_SUCCESS && nodeParams == NULL)
        r = ivc_null_argument("cuGraphAddMemAllocNode", "nodeParams");
    return r == CUDA_SUCCESS ? mem_alloc_node(&h, nodeParams, "cuGraphAddMemAllocNode") : r;
}
IVC_ALIASES_cuGraphAddMemAllocNode

IVC_EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                          size_t numDependencies, CUdeviceptr dptr)
{
    struct head h;
    CUresult r = head_add(&h, phGraphNode, hGraph, dependencies, NULL, numDependencies, "cuGraphAddMemFreeNode");
    return r == CUDA_SUCCESS ? mem_free_node(&h, dptr) : r;
}
IVC_ALIASES_cuGraphAddMemFreeNode

/* The access descriptors cuGraphMemAllocNodeGetParams answers are the node's in CUDA, valid
 * while it lives: here a record per node asked about, kept until the process exits. */
struct alloc_node_record {
    CUgraphNode node;
    CUmemAccessDesc descs[MAX_GRAPH_ACCESS_DESCS];
    struct alloc_node_record *next;
};
static pthread_mutex_t alloc_records_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloc_node_record *alloc_records;

static const CUmemAccessDesc *keep_descs(CUgraphNode node, const int32_t *wire, size_t count)
{
    pthread_mutex_lock(&alloc_records_lock);
    struct alloc_node_record *rec = alloc_records;
    while (rec != NULL && rec->node != node)
        rec = rec->next;
    if (rec == NULL) {
        rec = calloc(1, sizeof *rec);
        if (rec != NULL) {
            rec->node = node;
            rec->next = alloc_records;
            alloc_records = rec;
        }
    }
    if (rec != NULL) {
        /* a node's parameters never change: rewriting them writes the same values */
        for (size_t i = 0; i < count; i++) {
            rec->descs[i].location.type = (CUmemLocationType)wire[3 * i];
            rec->descs[i].location.id = wire[3 * i + 1];
            rec->descs[i].flags = (CUmemAccess_flags)wire[3 * i + 2];
        }
    }
    pthread_mutex_unlock(&alloc_records_lock);
    return rec == NULL ? NULL : rec->descs;
}

IVC_EXPORT CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode, CUDA_MEM_ALLOC_NODE_PARAMS *params_out)
{
    if (params_out == NULL)
        return ivc_null_argument("cuGraphMemAllocNodeGetParams", "params_out");
    int alloc_type = 0, handle_types = 0, location_type = 0, location_id = 0;
    size_t bytesize = 0;
    CUdeviceptr dptr = 0;
    uint32_t count = 0;
    int32_t wire[MAX_GRAPH_ACCESS_DESCS * 3];
    CUresult r = ivc_graph_mem_alloc_node_params(hNode, &alloc_type, &handle_types, &location_type, &location_id,
                                                 &bytesize, &dptr, &count, (char *)wire, sizeof wire);
    if (r != CUDA_SUCCESS)
        return r;
    size_t n = count < MAX_GRAPH_ACCESS_DESCS ? count : MAX_GRAPH_ACCESS_DESCS;
    const CUmemAccessDesc *descs = n == 0 ? NULL : keep_descs(hNode, wire, n);
    if (n > 0 && descs == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    memset(params_out, 0, sizeof *params_out);
    params_out->poolProps.allocType = (CUmemAllocationType)alloc_type;
    params_out->poolProps.handleTypes = (CUmemAllocationHandleType)handle_types;
    params_out->poolProps.location.type = (CUmemLocationType)location_type;
    params_out->poolProps.location.id = location_id;
    params_out->accessDescs = descs;
    params_out->accessDescCount = n;
    params_out->bytesize = bytesize;
    params_out->dptr = dptr;
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuGraphMemAllocNodeGetParams

/* ---- the generic forms (CUDA 12.2+) ---- */

/* The kinds with parameters that can also be set; *handled 0 for the others. */
static CUresult params_node(struct head *h, CUgraphNodeParams *p, const char *name, int *handled)
{
    *handled = 1;
    switch (p->type) {
    case IVC_NODE_KERNEL:
        return kernel_node(h, &p->u.kernel);
    case IVC_NODE_MEMCPY:
        return memcpy_node(h, &p->u.memcpy.copyParams, name);
    case IVC_NODE_MEMSET: {
        const CUDA_MEMSET_NODE_PARAMS_v2 *m = &p->u.memset;
        CUDA_MEMSET_NODE_PARAMS v1 = {.dst = m->dst, .pitch = m->pitch, .value = m->value,
                                      .elementSize = m->elementSize, .width = m->width, .height = m->height};
        return memset_node(h, &v1, name);
    }
    case IVC_NODE_HOST:
        return host_node(h, &p->u.host, name);
    default:
        *handled = 0;
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

static CUresult add_node(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                         const CUgraphEdgeData *edges, size_t numDependencies, CUgraphNodeParams *p)
{
    const char *name = "cuGraphAddNode";
    if (p == NULL)
        return ivc_null_argument(name, "nodeParams");
    struct head h;
    CUresult r = head_add(&h, phGraphNode, hGraph, dependencies, edges, numDependencies, name);
    if (r != CUDA_SUCCESS)
        return r;
    int handled = 0;
    r = params_node(&h, p, name, &handled);
    if (handled)
        return r;
    switch (p->type) {
    case IVC_NODE_GRAPH:
        return ivc_graph_add_simple_node(phGraphNode, hGraph, h.count, h.entries, 16 * h.count, 3, NULL, p->u.graph);
    case IVC_NODE_EMPTY:
        return ivc_graph_add_simple_node(phGraphNode, hGraph, h.count, h.entries, 16 * h.count, 0, NULL, NULL);
    case IVC_NODE_WAIT_EVENT:
        return ivc_graph_add_simple_node(phGraphNode, hGraph, h.count, h.entries, 16 * h.count, 2, p->u.event, NULL);
    case IVC_NODE_EVENT_RECORD:
        return ivc_graph_add_simple_node(phGraphNode, hGraph, h.count, h.entries, 16 * h.count, 1, p->u.event, NULL);
    case IVC_NODE_CONDITIONAL:
        return conditional_node(&h, &p->u.conditional);
    case IVC_NODE_MEM_ALLOC: {
        /* the _v2 struct has the v1 one's fields (cuda.h 13.0); dptr is written back */
        CUDA_MEM_ALLOC_NODE_PARAMS_v1 a;
        memcpy(&a, &p->u.alloc, sizeof a);
        r = mem_alloc_node(&h, &a, name);
        if (r == CUDA_SUCCESS)
            p->u.alloc.dptr = a.dptr;
        return r;
    }
    case IVC_NODE_MEM_FREE:
        return mem_free_node(&h, p->u.free.dptr);
    default:
        ivc_log("%s: node type %d is not remoted by this ivcuda version", name, p->type);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

IVC_EXPORT CUresult cuGraphAddNode_v2(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                      const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                      CUgraphNodeParams *nodeParams)
{
    return add_node(phGraphNode, hGraph, dependencies, dependencyData, numDependencies, nodeParams);
}
IVC_ALIASES_cuGraphAddNode_v2

IVC_EXPORT CUresult cuGraphAddNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                   size_t numDependencies, CUgraphNodeParams *nodeParams)
{
    return add_node(phGraphNode, hGraph, dependencies, NULL, numDependencies, nodeParams);
}
IVC_ALIASES_cuGraphAddNode

static CUresult set_node(CUgraphExec exec, CUgraphNode node, CUgraphNodeParams *p, const char *name)
{
    if (p == NULL)
        return ivc_null_argument(name, "nodeParams");
    struct head h;
    head_set(&h, exec, node);
    int handled = 0;
    CUresult r = params_node(&h, p, name, &handled);
    if (!handled)
        ivc_log("%s: setting the parameters of node type %d is not remoted by this ivcuda version", name, p->type);
    return r;
}

IVC_EXPORT CUresult cuGraphNodeSetParams(CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
    return set_node(NULL, hNode, nodeParams, "cuGraphNodeSetParams");
}
IVC_ALIASES_cuGraphNodeSetParams

IVC_EXPORT CUresult cuGraphExecNodeSetParams(CUgraphExec hGraphExec, CUgraphNode hNode, CUgraphNodeParams *nodeParams)
{
    if (hGraphExec == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    return set_node(hGraphExec, hNode, nodeParams, "cuGraphExecNodeSetParams");
}
IVC_ALIASES_cuGraphExecNodeSetParams
