/*
 * Cross-language check of the NVIDIA simpleCallback pattern: threads that each make a stream,
 * queue copies and a stream callback on it and then exit at once; the callback (on the
 * library's host-function thread) starts a new thread that makes CUDA calls (a new channel,
 * a new hello) and frees what the exited thread made. Several rounds in one process: every
 * hello of the process must be answered, none refused as if the process had exited.
 * usage: callback_threads [rounds] [threads]. Prints "ok" or what went wrong.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

/* beyond check.h's cuda.h */
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);
CUresult cuStreamAddCallback(CUstream hStream, CUstreamCallback callback, void *userData, unsigned int flags);

#define WORDS 4096

struct workload {
    int id;
    CUstream stream;
    CUdeviceptr d;
    unsigned *h;
    int success;
};

static CUcontext ctx;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int finished;

static void *postprocess(void *arg)
{
    struct workload *w = arg;
    CK(cuCtxSetCurrent(ctx));
    w->success = 1;
    for (int i = 0; i < WORDS; i++)
        w->success &= w->h[i] == (unsigned)(w->id + 1);
    CK(cuMemFree(w->d));
    CK(cuMemFreeHost(w->h));
    CK(cuStreamDestroy(w->stream));
    pthread_mutex_lock(&lock);
    finished++;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    return NULL;
}

static void callback(CUstream stream, CUresult status, void *data)
{
    (void)stream;
    if (status != CUDA_SUCCESS) {
        printf("callback: status %d\n", status);
        exit(1);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, postprocess, data) != 0) {
        printf("callback: pthread_create failed\n");
        exit(1);
    }
    pthread_detach(t);
}

static void *launch(void *arg)
{
    struct workload *w = arg;
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&w->stream, 0));
    CK(cuMemAlloc(&w->d, WORDS * sizeof(unsigned)));
    CK(cuMemAllocHost((void **)&w->h, WORDS * sizeof(unsigned)));
    for (int i = 0; i < WORDS; i++)
        w->h[i] = (unsigned)w->id;
    CK(cuMemcpyHtoDAsync(w->d, w->h, WORDS * sizeof(unsigned), w->stream));
    CK(cuMemsetD32Async(w->d, (unsigned)(w->id + 1), WORDS, w->stream));
    CK(cuMemcpyDtoHAsync(w->h, w->d, WORDS * sizeof(unsigned), w->stream));
    CK(cuStreamAddCallback(w->stream, callback, w, 0));
    return NULL; /* the thread ends; the stream goes on */
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    int n = argc > 2 ? atoi(argv[2]) : 8;
    ctx = xlang_primary_context(xlang_device());
    struct workload *w = calloc((size_t)n, sizeof *w);
    pthread_t *threads = calloc((size_t)n, sizeof *threads);
    for (int round = 0; round < rounds; round++) {
        finished = 0;
        for (int i = 0; i < n; i++) {
            memset(&w[i], 0, sizeof w[i]);
            w[i].id = round * n + i;
            if (pthread_create(&threads[i], NULL, launch, &w[i]) != 0) {
                printf("pthread_create failed\n");
                return 1;
            }
            pthread_detach(threads[i]);
        }
        pthread_mutex_lock(&lock);
        while (finished < n)
            pthread_cond_wait(&cond, &lock);
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < n; i++)
            if (!w[i].success) {
                char what[64];
                snprintf(what, sizeof what, "round %d workload %d: wrong results", round, i);
                expect(0, what);
            }
    }
    return xlang_report("callback_threads");
}
