/* cuStreamEndCapture against the in-process fake server: the captured graph comes back through
 * phGraph, and a NULL phGraph is accepted (cudart passes NULL to end a capture into an existing
 * graph, cudaStreamBeginCaptureToGraph, whose graph the program already has: the sample
 * graphConditionalNodes fills a conditional node's body that way). */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"

CUresult cuInit(unsigned);
CUresult cuStreamEndCapture(CUstream, CUgraph *);

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CUgraph graph = NULL;
    CHECK(cuStreamEndCapture(NULL, &graph) == CUDA_SUCCESS);
    CHECK((uint64_t)(uintptr_t)graph == FAKE_CAPTURED_GRAPH);
    CHECK(cuStreamEndCapture(NULL, NULL) == CUDA_SUCCESS); /* the graph is the program's already */
    unlink(path);
    return check_summary("test_end_capture");
}
