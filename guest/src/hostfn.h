/* What hostfn.c offers the graph code: the process's host-function thread, which runs the
 * guest's host functions, stream callbacks and user-object destructors when the server
 * hands them over (docs/graphs.md). */
#ifndef IVC_HOSTFN_H
#define IVC_HOSTFN_H

#include "ivc_internal.h"

/* Starts this process's host-function thread unless it runs (again in a forked child).
 * CUDA_ERROR_NOT_INITIALIZED before cuInit. */
CUresult ivc_hostfn_start(void);

#endif
