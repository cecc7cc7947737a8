/* Graphs (api/graphs.api, docs/graphs.md): the calls whose C signatures pass in/out
 * counts or structs. Nodes are the process's handles, as the server names them. */
#include <string.h>

#include "call.h"
#include "ivc_api.h"
#include "log.h"

/* The legacy forms (CUDA 10.0, 11.0) report an error node and a log: there is none to
 * report here beyond the result. */
IVC_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                          char *logBuffer, size_t bufferSize)
{
    if (phErrorNode != NULL)
        *phErrorNode = NULL;
    if (logBuffer != NULL && bufferSize > 0)
        logBuffer[0] = '\0';
    return cuGraphInstantiateWithFlags(phGraphExec, hGraph, 0);
}
IVC_ALIASES_cuGraphInstantiate_v2

/* The upload flag is an upload after the instantiation, on the given stream. */
IVC_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams)
{
    if (instantiateParams == NULL)
        return ivc_null_argument("cuGraphInstantiateWithParams", "instantiateParams");
    cuuint64_t flags = instantiateParams->flags;
    CUresult r = cuGraphInstantiateWithFlags(phGraphExec, hGraph, flags & ~(cuuint64_t)CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD);
    if (r == CUDA_SUCCESS && (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD))
        r = cuGraphUpload(*phGraphExec, instantiateParams->hUploadStream);
    instantiateParams->hErrNode_out = NULL;
    instantiateParams->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    return r;
}
IVC_ALIASES_cuGraphInstantiateWithParams

/* CUDA: nodes NULL → the count; else up to *count handles, the rest of the array NULL and
 * *count lowered to what there is (at most what one response carries). */
static CUresult get_nodes(CUgraph graph, uint32_t roots, CUgraphNode *nodes, size_t *count, const char *name)
{
    if (count == NULL)
        return ivc_null_argument(name, "numNodes");
    size_t capacity = nodes == NULL ? 0 : *count;
    uint32_t asked = capacity > 4096 ? 4096 : (uint32_t)capacity;
    uint64_t total = 0;
    uint64_t handles[4096];
    CUresult r = ivc_graph_get_nodes(graph, roots, &total, handles, asked);
    if (r != CUDA_SUCCESS)
        return r;
    if (nodes == NULL) {
        *count = total;
        return CUDA_SUCCESS;
    }
    size_t got = total < asked ? total : asked;
    for (size_t i = 0; i < capacity; i++)
        nodes[i] = i < got ? (CUgraphNode)(uintptr_t)handles[i] : NULL;
    /* fewer than asked: all there are, or all one response carries (docs/graphs.md) */
    if (got < capacity)
        *count = got;
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    return get_nodes(hGraph, 0, nodes, numNodes, "cuGraphGetNodes");
}
IVC_ALIASES_cuGraphGetNodes

IVC_EXPORT CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode *rootNodes, size_t *numRootNodes)
{
    return get_nodes(hGraph, 1, rootNodes, numRootNodes, "cuGraphGetRootNodes");
}
IVC_ALIASES_cuGraphGetRootNodes
