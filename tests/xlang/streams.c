/*
 * Cross-language check of streams and host functions (api/graphs.api) through the real guest
 * library and the Java server's host-memory backend: host functions and stream callbacks run
 * in this process, in stream order, on the library's host-function thread; stream queries
 * answer what the stream was created with; stream value writes land in device memory.
 * Prints "ok" or what went wrong. Built with the guest's own cuda.h (through check.h).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>

#include "check.h"

/* beyond check.h's cuda.h (the types are the guest's: ivc_cuda_graph_types.h) */
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags);
CUresult cuStreamGetPriority(CUstream hStream, int *priority);
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx);
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags);
CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags);
CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags);
CUresult cuIpcGetEventHandle(void *pHandle, void *event);

static int order[16];
static int ran;
static pthread_t main_thread;
static int on_main_thread;

static void host_fn(void *data)
{
    if (pthread_equal(pthread_self(), main_thread))
        on_main_thread = 1;
    order[ran++] = (int)(intptr_t)data;
}

static CUstream seen_stream;
static void callback(CUstream stream, CUresult status, void *data)
{
    seen_stream = stream;
    order[ran++] = status == 0 ? (int)(intptr_t)data : -1;
}

int main(void)
{
    main_thread = pthread_self();
    CUcontext stream_ctx;
    CUstream stream;
    CUcontext ctx = xlang_primary_context(xlang_device());
    CK(cuStreamCreateWithPriority(&stream, 1, 0));
    unsigned flags = 99;
    int priority = 99;
    CK(cuStreamGetFlags(stream, &flags));
    CK(cuStreamGetPriority(stream, &priority));
    CK(cuStreamGetCtx(stream, &stream_ctx));
    if (flags != 1 || priority != 0 || stream_ctx != ctx) {
        printf("stream queries: flags %u priority %d ctx %p (expected 1, 0, %p)\n", flags, priority, (void *)stream_ctx,
               (void *)ctx);
        return 1;
    }
    for (int i = 1; i <= 3; i++)
        CK(cuLaunchHostFunc(stream, host_fn, (void *)(intptr_t)i));
    CK(cuStreamAddCallback(stream, callback, (void *)(intptr_t)4, 0));
    CK(cuLaunchHostFunc(stream, host_fn, (void *)(intptr_t)5));
    CK(cuStreamSynchronize(stream));
    if (ran != 5 || seen_stream != stream || on_main_thread) {
        printf("host functions: %d ran (expected 5), stream %p (expected %p), on the main thread %d\n", ran,
               (void *)seen_stream, (void *)stream, on_main_thread);
        return 1;
    }
    for (int i = 0; i < 5; i++)
        if (order[i] != i + 1) {
            printf("host functions ran out of order: position %d ran %d\n", i, order[i]);
            return 1;
        }
    if (cuStreamAddCallback(stream, callback, NULL, 1) != CUDA_ERROR_INVALID_VALUE) {
        printf("cuStreamAddCallback with flags 1 was not refused\n");
        return 1;
    }
    CUdeviceptr d;
    unsigned value = 0;
    CK(cuMemAlloc_v2(&d, 4096));
    CK(cuStreamWriteValue32_v2(stream, d + 64, 0x5eed, 0));
    CK(cuStreamWaitValue32_v2(stream, d + 64, 0x5eed, 1));
    CK(cuStreamSynchronize(stream));
    CK(cuMemcpyDtoH_v2(&value, d + 64, 4));
    if (value != 0x5eed) {
        printf("cuStreamWriteValue32: read 0x%x\n", value);
        return 1;
    }
    char handle[64];
    if (cuIpcGetEventHandle(handle, NULL) != CUDA_ERROR_NOT_SUPPORTED) {
        printf("cuIpcGetEventHandle was not refused with CUDA_ERROR_NOT_SUPPORTED\n");
        return 1;
    }
    CK(cuStreamDestroy_v2(stream));
    printf("ok\n");
    return 0;
}
