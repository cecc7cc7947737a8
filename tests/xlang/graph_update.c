/*
 * cuGraphExecUpdate_v2 and its CUDA 10.2 form through the guest library and the real server,
 * for what reaches the server on the host-memory backend (it has no graphs: cuGraphCreate
 * answers NOT_SUPPORTED, so no handle here is the process's): handles the server refuses, and
 * the result info the library then writes. cuda.h, cuGraphExecUpdate: the result is
 * CU_GRAPH_EXEC_UPDATE_ERROR "if passed an invalid value", and the error nodes NULL. The update
 * itself and the result info of a refused update (the error nodes as the process's handles) are
 * GraphExecUpdateTest's, over a stand-in of the driver's graphs.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"

/* beyond check.h's cuda.h */
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct {
    int result;
    CUgraphNode errorNode;
    CUgraphNode errorFromNode;
} CUgraphExecUpdateResultInfo;
CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags);
CUresult cuGraphExecUpdate_v2(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphExecUpdateResultInfo *resultInfo);
CUresult cuGraphExecUpdate(CUgraphExec hGraphExec, CUgraph hGraph, CUgraphNode *hErrorNode_out, int *updateResult_out);

#define UPDATE_ERROR 1 /* CU_GRAPH_EXEC_UPDATE_ERROR */
#define JUNK ((CUgraphNode)(uintptr_t)0x5a5a5a5a)

int main(void)
{
    CUdevice dev = xlang_device();
    xlang_primary_context(dev);
    CUgraph graph = NULL;
    expect(cuGraphCreate(&graph, 0) == CUDA_ERROR_NOT_SUPPORTED, "the host-memory backend has no graphs");

    /* handles nobody was given, NULL ones, and a graph handle's shape (kind 50) as an executable graph */
    uintptr_t made_up[][2] = {
        {(51ull << 56) | (1ull << 32) | 7, (50ull << 56) | (1ull << 32) | 5},
        {0, 0},
        {(50ull << 56) | (1ull << 32) | 5, (50ull << 56) | (1ull << 32) | 5},
        {0x1000, 0x2000},
    };
    for (unsigned i = 0; i < sizeof made_up / sizeof made_up[0]; i++) {
        CUgraphExec exec = (CUgraphExec)made_up[i][0];
        CUgraph g = (CUgraph)made_up[i][1];
        char what[96];
        CUgraphExecUpdateResultInfo info = {-7, JUNK, JUNK};
        snprintf(what, sizeof what, "_v2, handles %#lx %#lx: INVALID_VALUE", (unsigned long)made_up[i][0],
                 (unsigned long)made_up[i][1]);
        expect(cuGraphExecUpdate_v2(exec, g, &info) == CUDA_ERROR_INVALID_VALUE, what);
        if (info.result != UPDATE_ERROR || info.errorNode != NULL || info.errorFromNode != NULL)
            printf("  result info: %d %p %p\n", info.result, (void *)info.errorNode, (void *)info.errorFromNode);
        expect(info.result == UPDATE_ERROR, "_v2: result CU_GRAPH_EXEC_UPDATE_ERROR");
        expect(info.errorNode == NULL && info.errorFromNode == NULL, "_v2: no error nodes");

        CUgraphNode node = JUNK;
        int result = -7;
        expect(cuGraphExecUpdate(exec, g, &node, &result) == CUDA_ERROR_INVALID_VALUE, "10.2 form: INVALID_VALUE");
        expect(result == UPDATE_ERROR && node == NULL, "10.2 form: CU_GRAPH_EXEC_UPDATE_ERROR, no error node");
    }
    /* no place for the result info: the answer all the same, nothing written anywhere */
    CUgraphExec exec = (CUgraphExec)(uintptr_t)((51ull << 56) | (1ull << 32) | 7);
    expect(cuGraphExecUpdate_v2(exec, (CUgraph)exec, NULL) == CUDA_ERROR_INVALID_VALUE, "_v2 without result info");
    expect(cuGraphExecUpdate(exec, (CUgraph)exec, NULL, NULL) == CUDA_ERROR_INVALID_VALUE, "10.2 form without outputs");

    /* the server still answers */
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 64));
    CK(cuMemFree(d));
    return xlang_report("graph_update");
}
