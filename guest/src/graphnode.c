/* Graph nodes and edges made by hand, executable-graph updates and graph memory
 * attributes (api/graphs.api, docs/graphs.md): the calls whose C signatures pass arrays,
 * structs or in/out pointers. Node lists travel as node handles with their edge data. */
#include <string.h>

#include "call.h"
#include "ivc_api.h"
#include "log.h"

#define MAX_DEPENDENCIES IVC_CAPTURE_MAX_DEPENDENCIES
/* (from, to, edge data) triples per call: the server's limit */
#define MAX_EDGES 160

static CUresult add_node(CUgraphNode *node, CUgraph graph, const CUgraphNode *dependencies, size_t count,
                         uint32_t kind, CUevent event, CUgraph child, const char *name)
{
    if (node == NULL)
        return ivc_null_argument(name, "phGraphNode");
    if (count > MAX_DEPENDENCIES)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (count > 0 && dependencies == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t entries[2 * MAX_DEPENDENCIES];
    for (size_t i = 0; i < count; i++) {
        entries[2 * i] = (uint64_t)(uintptr_t)dependencies[i];
        entries[2 * i + 1] = 0;
    }
    return ivc_graph_add_simple_node(node, graph, (uint32_t)count, entries, (uint32_t)(16 * count), kind, event,
                                     child);
}

IVC_EXPORT CUresult cuGraphAddEmptyNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                        size_t numDependencies)
{
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, 0, NULL, NULL, "cuGraphAddEmptyNode");
}
IVC_ALIASES_cuGraphAddEmptyNode

IVC_EXPORT CUresult cuGraphAddEventRecordNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                              const CUgraphNode *dependencies, size_t numDependencies, CUevent event)
{
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, 1, event, NULL, "cuGraphAddEventRecordNode");
}
IVC_ALIASES_cuGraphAddEventRecordNode

IVC_EXPORT CUresult cuGraphAddEventWaitNode(CUgraphNode *phGraphNode, CUgraph hGraph, const CUgraphNode *dependencies,
                                            size_t numDependencies, CUevent event)
{
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, 2, event, NULL, "cuGraphAddEventWaitNode");
}
IVC_ALIASES_cuGraphAddEventWaitNode

IVC_EXPORT CUresult cuGraphAddChildGraphNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                             const CUgraphNode *dependencies, size_t numDependencies,
                                             CUgraph childGraph)
{
    return add_node(phGraphNode, hGraph, dependencies, numDependencies, 3, NULL, childGraph,
                    "cuGraphAddChildGraphNode");
}
IVC_ALIASES_cuGraphAddChildGraphNode

static CUresult edges(CUgraph graph, uint32_t remove, const CUgraphNode *from, const CUgraphNode *to,
                      const CUgraphEdgeData *edge_data, size_t count)
{
    if (count > MAX_EDGES)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (count > 0 && (from == NULL || to == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t entries[3 * MAX_EDGES];
    for (size_t i = 0; i < count; i++) {
        entries[3 * i] = (uint64_t)(uintptr_t)from[i];
        entries[3 * i + 1] = (uint64_t)(uintptr_t)to[i];
        entries[3 * i + 2] = 0;
        if (edge_data != NULL)
            memcpy(&entries[3 * i + 2], &edge_data[i], sizeof edge_data[i]);
    }
    return ivc_graph_edges(graph, remove, (uint32_t)count, entries, (uint32_t)(24 * count), edge_data != NULL);
}

IVC_EXPORT CUresult cuGraphAddDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                           size_t numDependencies)
{
    return edges(hGraph, 0, from, to, NULL, numDependencies);
}
IVC_ALIASES_cuGraphAddDependencies

IVC_EXPORT CUresult cuGraphAddDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                              const CUgraphEdgeData *edgeData, size_t numDependencies)
{
    return edges(hGraph, 0, from, to, edgeData, numDependencies);
}
IVC_ALIASES_cuGraphAddDependencies_v2

IVC_EXPORT CUresult cuGraphRemoveDependencies(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                              size_t numDependencies)
{
    return edges(hGraph, 1, from, to, NULL, numDependencies);
}
IVC_ALIASES_cuGraphRemoveDependencies

IVC_EXPORT CUresult cuGraphRemoveDependencies_v2(CUgraph hGraph, const CUgraphNode *from, const CUgraphNode *to,
                                                 const CUgraphEdgeData *edgeData, size_t numDependencies)
{
    return edges(hGraph, 1, from, to, edgeData, numDependencies);
}
IVC_ALIASES_cuGraphRemoveDependencies_v2

/* CUgraphExecUpdateResultInfo (cuda.h 13.0): result, errorNode, errorFromNode */
struct update_result_info {
    int result;
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
};

IVC_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, struct update_result_info *resultInfo)
{
    int result = 0;
    CUgraphNode error_node = NULL, error_from = NULL;
    CUresult r = ivc_graph_exec_update(hGraphExec, hGraph, &result, &error_node, &error_from);
    /* a refusal (a handle that is not the process's) carries no result info: cuda.h's result for
     * "passed an invalid value" is CU_GRAPH_EXEC_UPDATE_ERROR, never SUCCESS beside an error */
    if (r != CUDA_SUCCESS && result == 0)
        result = 1;
    if (resultInfo != NULL) {
        resultInfo->result = result;
        resultInfo->errorNode = error_node;
        resultInfo->errorFromNode = error_from;
    }
    return r;
}
IVC_ALIASES_cuGraphExecUpdate_v2

/* The CUDA 10.2 form. */
IVC_EXPORT CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out,
                                      int *updateResult_out)
{
    struct update_result_info info = {0, NULL, NULL};
    CUresult r = cuGraphExecUpdate_v2(hGraphExec, hGraph, &info);
    if (hErrorNode_out != NULL)
        *hErrorNode_out = info.errorNode;
    if (updateResult_out != NULL)
        *updateResult_out = info.result;
    return r;
}
IVC_ALIASES_cuGraphExecUpdate

/* Every graph memory attribute is a cuuint64_t. */
IVC_EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice device, int attr, void *value)
{
    if (value == NULL)
        return ivc_null_argument("cuDeviceSetGraphMemAttribute", "value");
    uint64_t v;
    memcpy(&v, value, sizeof v);
    return ivc_set_graph_mem_attribute(device, attr, v);
}
IVC_ALIASES_cuDeviceSetGraphMemAttribute
