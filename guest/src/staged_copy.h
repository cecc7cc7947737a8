/* What staged_copy.c offers: copies between device memory and pageable guest memory inside
 * graphs, through a pinned staging block and a host function of this library. */
#ifndef IVC_STAGED_COPY_H
#define IVC_STAGED_COPY_H

#include "ivc_internal.h"

/* Adds the staged copy as one node to graph after count (node handle, edge data) entries, or
 * (graph NULL, count 0) to the graph stream captures. to_host: device → host, else host → device. */
CUresult ivc_staged_copy(CUgraphNode *node, CUgraph graph, CUstream stream, const uint64_t *entries, uint32_t count,
                         int to_host, CUdeviceptr device, void *host, size_t size);

/* An async copy of pageable memory: 1 (and *result) when stream captures and the copy went into
 * its graph staged; 0 when the stream does not capture (the copy goes its usual way). */
int ivc_staged_capture_copy(CUstream stream, int to_host, CUdeviceptr device, void *host, size_t size,
                            CUresult *result);

/* Whether a capture this process began has not ended (failed ends and other doubts count as
 * running: the callers then ask the server). */
int ivc_captures_running(void);

/* A capture began (cuStreamBeginCaptureToGraph; the generated begin calls have hooks). */
void ivc_staged_capture_begun(CUresult r);

/* In a forked child: the parent's staging blocks and captures are not this process's. */
void ivc_staged_forget_process(void);

#endif
