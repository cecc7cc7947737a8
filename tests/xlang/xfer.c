/*
 * Cross-language transfer checker: an ordinary driver-API program (linked with -lcuda,
 * run with LD_LIBRARY_PATH pointing at the ivcuda guest library and IVCUDA_REGION at a
 * server's region) that moves patterns through every copy path and verifies them.
 *
 *   xfer copy <bytes> <threads>   each thread: HtoD, DtoD, DtoH from pageable memory,
 *                                 then the same from cuMemHostAlloc memory (sync and
 *                                 Async + cuStreamSynchronize); verifies every byte
 *   xfer hold <bytes>             allocates <bytes> of device memory, prints "held",
 *                                 and sleeps (to be killed with SIGKILL)
 *   xfer free-equals <bytes> <s>  waits up to <s> seconds for cuMemGetInfo's free
 *                                 memory to equal <bytes>; prints "free=<n>"
 *   xfer meminfo                  prints "free=<n>"
 *
 * Built with the guest's own cuda.h (through check.h): it must build on a machine without
 * NVIDIA's toolkit, like the guest library.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* beyond check.h's cuda.h */
CUresult cuMemGetInfo_v2(size_t *free, size_t *total);
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n);

static size_t bytes;

static void fill(unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (unsigned char)(x >> 24);
    }
}

static int verify(const unsigned char *a, const unsigned char *b, size_t n, const char *what, int thread)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i]) {
            fprintf(stderr, "xfer: thread %d %s: byte %zu of %zu differs (%u != %u)\n", thread, what, i, n,
                    a[i], b[i]);
            return 1;
        }
    }
    return 0;
}

/* the device every thread binds its primary context of */
static CUdevice device;

static void *copy_thread(void *arg)
{
    int id = (int)(intptr_t)arg;
    xlang_primary_context(device);
    size_t n = bytes;
    unsigned char *src = malloc(n ? n : 1), *dst = malloc(n ? n : 1);
    if (!src || !dst) {
        fprintf(stderr, "xfer: out of host memory\n");
        exit(1);
    }
    CUdeviceptr d1, d2;
    CK(cuMemAlloc_v2(&d1, n ? n : 1));
    CK(cuMemAlloc_v2(&d2, n ? n : 1));
    int bad = 0;

    /* pageable */
    fill(src, n, (uint32_t)(id * 7919 + n));
    memset(dst, 0, n);
    CK(cuMemcpyHtoD_v2(d1, src, n));
    CK(cuMemcpyDtoD_v2(d2, d1, n));
    CK(cuMemcpyDtoH_v2(dst, d2, n));
    bad |= verify(src, dst, n, "pageable", id);

    /* pinned, synchronous and asynchronous */
    unsigned char *psrc, *pdst;
    CK(cuMemHostAlloc((void **)&psrc, n ? n : 1, 0));
    CK(cuMemHostAlloc((void **)&pdst, n ? n : 1, 0));
    fill(psrc, n, (uint32_t)(id * 104729 + n));
    memset(pdst, 0, n);
    CK(cuMemcpyHtoD_v2(d1, psrc, n));
    CK(cuMemcpyDtoH_v2(pdst, d1, n));
    bad |= verify(psrc, pdst, n, "pinned", id);

    CUstream s;
    CK(cuStreamCreate(&s, 0));
    fill(psrc, n, (uint32_t)(id * 31 + n + 5));
    memset(pdst, 0, n);
    CK(cuMemcpyHtoDAsync_v2(d2, psrc, n, s));
    CK(cuMemcpyDtoHAsync_v2(pdst, d2, n, s));
    CK(cuStreamSynchronize(s));
    bad |= verify(psrc, pdst, n, "pinned async", id);

    /* pageable Async (staged by the library) */
    fill(src, n, (uint32_t)(id * 17 + n + 9));
    memset(dst, 0, n);
    CK(cuMemcpyHtoDAsync_v2(d1, src, n, s));
    CK(cuMemcpyDtoHAsync_v2(dst, d1, n, s));
    CK(cuStreamSynchronize(s));
    bad |= verify(src, dst, n, "pageable async", id);

    CK(cuStreamDestroy_v2(s));
    CK(cuMemFreeHost(psrc));
    CK(cuMemFreeHost(pdst));
    CK(cuMemFree_v2(d1));
    CK(cuMemFree_v2(d2));
    free(src);
    free(dst);
    return (void *)(intptr_t)bad;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: xfer copy <bytes> <threads> | hold <bytes> | free-equals <bytes> <s> | meminfo\n");
        return 2;
    }
    device = xlang_device();
    if (strcmp(argv[1], "copy") == 0 && argc == 4) {
        bytes = strtoull(argv[2], NULL, 0);
        int threads = atoi(argv[3]);
        pthread_t t[64];
        if (threads < 1 || threads > 64) {
            return 2;
        }
        for (int i = 0; i < threads; i++) {
            pthread_create(&t[i], NULL, copy_thread, (void *)(intptr_t)i);
        }
        int bad = 0;
        for (int i = 0; i < threads; i++) {
            void *r;
            pthread_join(t[i], &r);
            bad |= (int)(intptr_t)r;
        }
        printf(bad ? "corrupt\n" : "ok\n");
        return bad;
    }
    xlang_primary_context(device);
    size_t free_b, total;
    if (strcmp(argv[1], "hold") == 0 && argc == 3) {
        CUdeviceptr d;
        CK(cuMemAlloc_v2(&d, strtoull(argv[2], NULL, 0)));
        printf("held\n");
        fflush(stdout);
        for (;;) {
            pause();
        }
    }
    if (strcmp(argv[1], "free-equals") == 0 && argc == 4) {
        size_t want = strtoull(argv[2], NULL, 0);
        double deadline = atof(argv[3]);
        struct timespec start, now;
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
            CK(cuMemGetInfo_v2(&free_b, &total));
            clock_gettime(CLOCK_MONOTONIC, &now);
            double waited = (double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9;
            if (free_b == want || waited > deadline) {
                break;
            }
            usleep(100000);
        }
        printf("free=%zu\n", free_b);
        return free_b == want ? 0 : 1;
    }
    if (strcmp(argv[1], "meminfo") == 0) {
        CK(cuMemGetInfo_v2(&free_b, &total));
        printf("free=%zu\n", free_b);
        return 0;
    }
    return 2;
}
