/*
 * What the C checkers of tests/xlang built with the guest's own cuda.h (arrays.c, strided.c,
 * streams.c, vmm.c, xfer.c) share, so each file holds only what it checks: a call that must
 * succeed ends the program where it failed, naming the error (CK), a wrong result is counted
 * and the program goes on (expect), the device and context every checker starts with, and
 * the last line run.sh reads.
 * Header only, so run.sh builds each checker from its one .c file as before.
 */
#ifndef XLANG_CHECK_H
#define XLANG_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#include "cuda.h"

/* wrong results seen so far (expect) */
static int failures;

#define CK(call)                                                                                     \
    do {                                                                                             \
        CUresult r_ = (call);                                                                        \
        if (r_ != CUDA_SUCCESS) {                                                                    \
            const char *name_ = "?";                                                                 \
            cuGetErrorName(r_, &name_);                                                              \
            printf("%s:%d: %s → %d %s\n", __FILE__, __LINE__, #call, r_, name_);                      \
            exit(1);                                                                                 \
        }                                                                                            \
    } while (0)

static inline void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

/* cuInit and device 0: the server's first device is the one every checker uses. */
static inline CUdevice xlang_device(void)
{
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    return dev;
}

/* The device's primary context, current on this thread (as cudart would make it). */
static inline CUcontext xlang_primary_context(CUdevice dev)
{
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    return ctx;
}

/* "<name>: ok", or how many results were wrong; main's exit status (non-zero on failures). */
static inline int xlang_report(const char *name)
{
    if (failures) {
        printf("%s: %d failed\n", name, failures);
        return 1;
    }
    printf("%s: ok\n", name);
    return 0;
}

#endif
