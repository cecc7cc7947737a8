/* Stream capture (api/graphs.api, docs/graphs.md): the calls whose C signatures pass arrays
 * or in/out pointers. Dependency lists travel as (node handle, edge data) pairs. The arrays
 * cuStreamGetCaptureInfo returns are this thread's, valid until its next such call (CUDA:
 * until the next call on the stream). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "staged_copy.h"
#include "call.h"
#include "ivc_api.h"
#include "log.h"

#define MAX IVC_CAPTURE_MAX_DEPENDENCIES

static _Thread_local CUgraphNode info_nodes[MAX];
static _Thread_local CUgraphEdgeData info_edges[MAX];

static CUstream per_thread(CUstream stream)
{
    return stream == NULL ? CU_STREAM_PER_THREAD : stream;
}

static CUresult capture_info(CUstream stream, int *status_out, cuuint64_t *id_out, CUgraph *graph_out,
                             const CUgraphNode **dependencies_out, const CUgraphEdgeData **edges_out,
                             size_t *count_out)
{
    static atomic_int logged;
    if (status_out == NULL)
        return ivc_null_argument("cuStreamGetCaptureInfo", "captureStatus_out");
    uint64_t entries[2 * MAX];
    int status = 0;
    uint64_t id = 0;
    CUgraph graph = NULL;
    uint32_t count = 0;
    CUresult r = ivc_stream_capture_info(stream, &status, &id, &graph, &count, entries, 2 * MAX);
    if (r != CUDA_SUCCESS)
        return r;
    size_t got = count < MAX ? count : MAX;
    if (count > MAX && atomic_exchange(&logged, 1) == 0)
        ivc_log("cuStreamGetCaptureInfo: the capture has %u dependencies, only %d are returned", count, MAX);
    for (size_t i = 0; i < got; i++) {
        info_nodes[i] = (CUgraphNode)(uintptr_t)entries[2 * i];
        memcpy(&info_edges[i], &entries[2 * i + 1], sizeof info_edges[i]);
    }
    int active = status == IVC_CAPTURE_ACTIVE;
    *status_out = status;
    if (id_out != NULL)
        *id_out = id;
    if (graph_out != NULL)
        *graph_out = active ? graph : NULL;
    if (dependencies_out != NULL)
        *dependencies_out = active && got > 0 ? info_nodes : NULL;
    if (edges_out != NULL)
        *edges_out = active && got > 0 ? info_edges : NULL;
    if (count_out != NULL)
        *count_out = active ? got : 0;
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, int *captureStatus_out, cuuint64_t *id_out,
                                              CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                              size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, NULL, numDependencies_out);
}
IVC_ALIASES_cuStreamGetCaptureInfo_v2

IVC_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, int *captureStatus_out, cuuint64_t *id_out,
                                                   CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                                   size_t *numDependencies_out)
{
    return capture_info(per_thread(hStream), captureStatus_out, id_out, graph_out, dependencies_out, NULL,
                        numDependencies_out);
}

IVC_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, int *captureStatus_out, cuuint64_t *id_out,
                                              CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                              const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return capture_info(hStream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                        numDependencies_out);
}
IVC_ALIASES_cuStreamGetCaptureInfo_v3

IVC_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, int *captureStatus_out, cuuint64_t *id_out,
                                                   CUgraph *graph_out, const CUgraphNode **dependencies_out,
                                                   const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return capture_info(per_thread(hStream), captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                        numDependencies_out);
}

/* (node handle, edge data) pairs; edges NULL: zero edge data (the default edge). */
static CUresult pack(const CUgraphNode *nodes, const CUgraphEdgeData *edges, size_t count, uint64_t *entries)
{
    if (count > MAX)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (count > 0 && nodes == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        entries[2 * i] = (uint64_t)(uintptr_t)nodes[i];
        entries[2 * i + 1] = 0;
        if (edges != NULL)
            memcpy(&entries[2 * i + 1], &edges[i], sizeof edges[i]);
    }
    return CUDA_SUCCESS;
}

static CUresult update(CUstream stream, CUgraphNode *nodes, const CUgraphEdgeData *edges, size_t count,
                       unsigned int flags)
{
    uint64_t entries[2 * MAX];
    CUresult r = pack(nodes, edges, count, entries);
    if (r != CUDA_SUCCESS)
        return r;
    return ivc_update_capture_dependencies(stream, (uint32_t)count, entries, (uint32_t)(16 * count), edges != NULL,
                                           flags);
}

IVC_EXPORT CUresult cuStreamUpdateCaptureDependencies(CUstream hStream, CUgraphNode *dependencies,
                                                      size_t numDependencies, unsigned int flags)
{
    return update(hStream, dependencies, NULL, numDependencies, flags);
}
IVC_ALIASES_cuStreamUpdateCaptureDependencies

IVC_EXPORT CUresult cuStreamUpdateCaptureDependencies_ptsz(CUstream hStream, CUgraphNode *dependencies,
                                                           size_t numDependencies, unsigned int flags)
{
    return update(per_thread(hStream), dependencies, NULL, numDependencies, flags);
}

IVC_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2(CUstream hStream, CUgraphNode *dependencies,
                                                         const CUgraphEdgeData *dependencyData,
                                                         size_t numDependencies, unsigned int flags)
{
    return update(hStream, dependencies, dependencyData, numDependencies, flags);
}
IVC_ALIASES_cuStreamUpdateCaptureDependencies_v2

IVC_EXPORT CUresult cuStreamUpdateCaptureDependencies_v2_ptsz(CUstream hStream, CUgraphNode *dependencies,
                                                              const CUgraphEdgeData *dependencyData,
                                                              size_t numDependencies, unsigned int flags)
{
    return update(per_thread(hStream), dependencies, dependencyData, numDependencies, flags);
}

IVC_EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                                const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                                int mode)
{
    uint64_t entries[2 * MAX];
    CUresult r = pack(dependencies, dependencyData, numDependencies, entries);
    if (r != CUDA_SUCCESS)
        return r;
    r = ivc_begin_capture_to_graph(hStream, hGraph, (uint32_t)numDependencies, entries,
                                   (uint32_t)(16 * numDependencies), dependencyData != NULL, mode);
    ivc_staged_capture_begun(r);
    return r;
}
IVC_ALIASES_cuStreamBeginCaptureToGraph

IVC_EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies,
                                                     const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                                     int mode)
{
    return cuStreamBeginCaptureToGraph(per_thread(hStream), hGraph, dependencies, dependencyData, numDependencies, mode);
}

/* The mode is per thread, in the guest as on the server: this thread's channel has a
 * server thread of its own. */
IVC_EXPORT CUresult cuThreadExchangeStreamCaptureMode(int *mode)
{
    if (mode == NULL)
        return ivc_null_argument("cuThreadExchangeStreamCaptureMode", "mode");
    int previous = 0;
    CUresult r = ivc_exchange_capture_mode(*mode, &previous);
    if (r == CUDA_SUCCESS)
        *mode = previous;
    return r;
}
IVC_ALIASES_cuThreadExchangeStreamCaptureMode

/* cuStreamIsCapturing of the default streams while no capture this process began runs: NONE,
 * without the server. The runtimes ask it around most allocations and copies (PyTorch's
 * transformer training: 5 round trips a step); no stream of a process captures unless the
 * process began a capture, and the default streams are valid in any context. Another stream's
 * handle may be stale, and a thread without a current context gets the driver's error: the server
 * answers those. */
CUresult ivc_local_cuStreamIsCapturing(CUstream hStream, int *captureStatus)
{
    if (hStream != NULL && hStream != CU_STREAM_LEGACY && hStream != CU_STREAM_PER_THREAD)
        return IVC_NOT_LOCAL;
    if (ivc_captures_running())
        return IVC_NOT_LOCAL;
    CUcontext current = NULL;
    if (cuCtxGetCurrent(&current) != CUDA_SUCCESS || current == NULL)
        return IVC_NOT_LOCAL;
    *captureStatus = 0; /* CU_STREAM_CAPTURE_STATUS_NONE */
    ivc_trace("cuStreamIsCapturing(%p) -> none (no capture runs in this process)", (void *)hStream);
    return CUDA_SUCCESS;
}
