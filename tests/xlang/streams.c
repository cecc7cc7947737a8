/*
 * Cross-language check of streams and host functions (api/graphs.api) through the real guest
 * library and the Java server's host-memory backend: host functions and stream callbacks run
 * in this process, in stream order, on the library's host-function thread; stream queries
 * answer what the stream was created with; stream value writes land in device memory.
 * Prints "ok" or what went wrong. Declares the driver-API functions it uses itself.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef void (*CUhostFn)(void *userData);
typedef void (*CUstreamCallback)(CUstream hStream, CUresult status, void *userData);

CUresult cuInit(unsigned int flags);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority);
CUresult cuStreamGetFlags(CUstream hStream, unsigned int *flags);
CUresult cuStreamGetPriority(CUstream hStream, int *priority);
CUresult cuStreamGetCtx(CUstream hStream, CUcontext *pctx);
CUresult cuStreamSynchronize(CUstream hStream);
CUresult cuStreamDestroy_v2(CUstream hStream);
CUresult cuLaunchHostFunc(CUstream hStream, CUhostFn fn, void *userData);
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags);
CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n);
CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags);
CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, unsigned int value, unsigned int flags);
CUresult cuIpcGetEventHandle(void *pHandle, void *event);

#define CHECK(call)                                                                        \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != 0) {                                                                     \
            printf("%s failed: %d (line %d)\n", #call, r_, __LINE__);                      \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

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
    CUcontext ctx, stream_ctx;
    CUstream stream;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CHECK(cuStreamCreateWithPriority(&stream, 1, 0));
    unsigned flags = 99;
    int priority = 99;
    CHECK(cuStreamGetFlags(stream, &flags));
    CHECK(cuStreamGetPriority(stream, &priority));
    CHECK(cuStreamGetCtx(stream, &stream_ctx));
    if (flags != 1 || priority != 0 || stream_ctx != ctx) {
        printf("stream queries: flags %u priority %d ctx %p (expected 1, 0, %p)\n", flags, priority, (void *)stream_ctx,
               (void *)ctx);
        return 1;
    }
    for (int i = 1; i <= 3; i++)
        CHECK(cuLaunchHostFunc(stream, host_fn, (void *)(intptr_t)i));
    CHECK(cuStreamAddCallback(stream, callback, (void *)(intptr_t)4, 0));
    CHECK(cuLaunchHostFunc(stream, host_fn, (void *)(intptr_t)5));
    CHECK(cuStreamSynchronize(stream));
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
    if (cuStreamAddCallback(stream, callback, NULL, 1) != 1) {
        printf("cuStreamAddCallback with flags 1 was not refused\n");
        return 1;
    }
    CUdeviceptr d;
    unsigned value = 0;
    CHECK(cuMemAlloc_v2(&d, 4096));
    CHECK(cuStreamWriteValue32_v2(stream, d + 64, 0x5eed, 0));
    CHECK(cuStreamWaitValue32_v2(stream, d + 64, 0x5eed, 1));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuMemcpyDtoH_v2(&value, d + 64, 4));
    if (value != 0x5eed) {
        printf("cuStreamWriteValue32: read 0x%x\n", value);
        return 1;
    }
    char handle[64];
    if (cuIpcGetEventHandle(handle, NULL) != 801) {
        printf("cuIpcGetEventHandle was not refused with CUDA_ERROR_NOT_SUPPORTED\n");
        return 1;
    }
    CHECK(cuStreamDestroy_v2(stream));
    printf("ok\n");
    return 0;
}
