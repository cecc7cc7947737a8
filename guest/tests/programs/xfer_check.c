/* xfer_check <bytes> <threads> [pinned]: every thread allocates device memory, copies a
 * pattern host→device and back, and verifies it; prints "ok" when all did.
 * With "pinned" the host buffers come from cuMemAllocHost (the region's pool). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

static CUcontext context;
static size_t bytes;
static int pinned;

static int failed(const char *what, CUresult r)
{
    const char *name = "?";
    cuGetErrorName(r, &name);
    fprintf(stderr, "xfer_check: %s: %s (%d)\n", what, name, r);
    return 1;
}

static void *transfer(void *argument)
{
    unsigned seed = (unsigned)(uintptr_t)argument;
    intptr_t bad = 0;
    CUresult r = cuCtxSetCurrent(context);
    if (r != CUDA_SUCCESS)
        return (void *)(intptr_t)failed("cuCtxSetCurrent", r);
    uint8_t *out, *back;
    if (pinned) {
        void *a = NULL, *b = NULL;
        if ((r = cuMemAllocHost(&a, bytes)) != CUDA_SUCCESS || (r = cuMemAllocHost(&b, bytes)) != CUDA_SUCCESS)
            return (void *)(intptr_t)failed("cuMemAllocHost", r);
        out = a;
        back = b;
    } else {
        out = malloc(bytes);
        back = malloc(bytes);
    }
    for (size_t i = 0; i < bytes; i++)
        out[i] = (uint8_t)(i * 7 + seed + (i >> 12));
    memset(back, 0, bytes);
    CUdeviceptr device = 0;
    if ((r = cuMemAlloc(&device, bytes)) != CUDA_SUCCESS)
        bad = failed("cuMemAlloc", r);
    else if ((r = cuMemcpyHtoD(device, out, bytes)) != CUDA_SUCCESS)
        bad = failed("cuMemcpyHtoD", r);
    else if ((r = cuMemcpyDtoH(back, device, bytes)) != CUDA_SUCCESS)
        bad = failed("cuMemcpyDtoH", r);
    else if (memcmp(out, back, bytes) != 0) {
        size_t i = 0;
        while (out[i] == back[i])
            i++;
        fprintf(stderr, "xfer_check: thread %u: byte %zu differs (%u, expected %u)\n", seed, i, back[i], out[i]);
        bad = 1;
    }
    if (device != 0)
        cuMemFree(device);
    if (pinned) {
        cuMemFreeHost(out);
        cuMemFreeHost(back);
    } else {
        free(out);
        free(back);
    }
    return (void *)bad;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: xfer_check <bytes> <threads> [pinned]\n");
        return 2;
    }
    bytes = strtoull(argv[1], NULL, 0);
    int threads = atoi(argv[2]);
    pinned = argc > 3 && strcmp(argv[3], "pinned") == 0;
    if (bytes == 0 || threads < 1 || threads > 1024) {
        fprintf(stderr, "xfer_check: bytes must be > 0 and threads 1..1024\n");
        return 2;
    }
    CUresult r;
    CUdevice device;
    if ((r = cuInit(0)) != CUDA_SUCCESS)
        return failed("cuInit", r);
    if ((r = cuDeviceGet(&device, 0)) != CUDA_SUCCESS)
        return failed("cuDeviceGet", r);
    if ((r = cuDevicePrimaryCtxRetain(&context, device)) != CUDA_SUCCESS)
        return failed("cuDevicePrimaryCtxRetain", r);
    pthread_t *ids = calloc((size_t)threads, sizeof *ids);
    for (int i = 0; i < threads; i++)
        pthread_create(&ids[i], NULL, transfer, (void *)(uintptr_t)i);
    int bad = 0;
    for (int i = 0; i < threads; i++) {
        void *result;
        pthread_join(ids[i], &result);
        bad |= result != NULL;
    }
    cuDevicePrimaryCtxRelease(device);
    if (bad)
        return 1;
    printf("ok\n");
    return 0;
}
