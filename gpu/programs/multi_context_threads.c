/* multi_context_threads: four threads, each with its own context (cuCtxCreate),
 * module, memory and kernel, verifying its own results while the others run; each
 * also pops, pushes and sets its context. Then the device's primary context:
 * retain, state, use, release. */
#include "common.h"
#include <pthread.h>

enum { THREADS_N = 4, N = 1 << 18, BLOCK = 256 };

struct worker {
    int index;
    CUdevice dev;
    const char *ptx;
    int ok;
    uint64_t checksum;
    char note[256];
};

/* A failing call in a worker must not exit() under the others' feet with half a
 * line printed; it records the failure and the main thread reports it. */
#define WCK(w, call)                                                                       \
    do {                                                                                   \
        CUresult r_ = (call);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                          \
            snprintf((w)->note, sizeof (w)->note, "FAIL %s -> %s", #call, result_name(r_)); \
            return NULL;                                                                   \
        }                                                                                  \
    } while (0)

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    CUcontext ctx, current, popped;
    WCK(w, cuCtxCreate(&ctx, NULL, 0, w->dev));
    WCK(w, cuCtxGetCurrent(&current));
    if (current != ctx) {
        snprintf(w->note, sizeof w->note, "created context is not current");
        return NULL;
    }
    CUmodule module;
    CUfunction fn;
    WCK(w, cuModuleLoadData(&module, w->ptx));
    WCK(w, cuModuleGetFunction(&fn, module, "vector_add"));

    float *a = malloc(N * sizeof(float)), *b = malloc(N * sizeof(float)), *c = malloc(N * sizeof(float));
    if (!a || !b || !c) {
        snprintf(w->note, sizeof w->note, "malloc");
        return NULL;
    }
    for (int i = 0; i < N; i++) {
        a[i] = (float)(i % 100 + w->index * 1000);
        b[i] = (float)(w->index + 1) * 0.5f;
    }
    CUdeviceptr da, db, dc;
    WCK(w, cuMemAlloc(&da, N * sizeof(float)));
    WCK(w, cuMemAlloc(&db, N * sizeof(float)));
    WCK(w, cuMemAlloc(&dc, N * sizeof(float)));

    /* Pop the context: nothing is current; push it back and carry on. */
    WCK(w, cuCtxPopCurrent(&popped));
    WCK(w, cuCtxGetCurrent(&current));
    int pop_ok = popped == ctx && current == NULL;
    WCK(w, cuCtxPushCurrent(ctx));

    int n = N, bad = 0;
    for (int round = 0; round < 20; round++) {
        WCK(w, cuMemcpyHtoD(da, a, N * sizeof(float)));
        WCK(w, cuMemcpyHtoD(db, b, N * sizeof(float)));
        void *args[] = { &da, &db, &dc, &n };
        WCK(w, cuLaunchKernel(fn, N / BLOCK, 1, 1, BLOCK, 1, 1, 0, NULL, args, NULL));
        WCK(w, cuMemcpyDtoH(c, dc, N * sizeof(float)));
        for (int i = 0; i < N; i++) bad += c[i] != a[i] + b[i];
        for (int i = 0; i < N; i++) a[i] = c[i];
    }
    /* cuCtxSetCurrent(NULL) then back: the thread's stack top is replaced, not pushed. */
    WCK(w, cuCtxSetCurrent(NULL));
    WCK(w, cuCtxGetCurrent(&current));
    int set_ok = current == NULL;
    WCK(w, cuCtxSetCurrent(ctx));
    CUdevice ctx_dev;
    WCK(w, cuCtxGetDevice(&ctx_dev));
    set_ok = set_ok && ctx_dev == w->dev;

    w->checksum = fnv1a(c, N * sizeof(float));
    WCK(w, cuMemFree(da));
    WCK(w, cuMemFree(db));
    WCK(w, cuMemFree(dc));
    WCK(w, cuModuleUnload(module));
    WCK(w, cuCtxDestroy(ctx));
    WCK(w, cuCtxGetCurrent(&current));
    w->ok = !bad && pop_ok && set_ok && current == NULL;
    snprintf(w->note, sizeof w->note, "bad=%d pop=%s set=%s current_after_destroy=%s", bad, pop_ok ? "ok" : "WRONG",
             set_ok ? "ok" : "WRONG", current == NULL ? "null" : "WRONG");
    free(a);
    free(b);
    free(c);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    char *ptx = read_kernel(dir, "vector_add", "ptx", NULL);
    CUdevice dev;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));

    double t0 = now_seconds();
    pthread_t threads[THREADS_N];
    struct worker workers[THREADS_N];
    for (int i = 0; i < THREADS_N; i++) {
        workers[i] = (struct worker){ .index = i, .dev = dev, .ptx = ptx };
        if (pthread_create(&threads[i], NULL, worker_main, &workers[i]) != 0) die("pthread_create");
    }
    int all_ok = 1;
    for (int i = 0; i < THREADS_N; i++) {
        pthread_join(threads[i], NULL);
        printf("multi_context_threads thread=%d %s %s checksum=%016llx\n", i, workers[i].ok ? "ok" : "WRONG",
               workers[i].note, (unsigned long long)workers[i].checksum);
        all_ok = all_ok && workers[i].ok;
    }
    printf("time: threads %.3f ms\n", (now_seconds() - t0) * 1e3);

    /* The primary context: inactive in a fresh process, active while retained. */
    unsigned flags;
    int active;
    CK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    printf("multi_context_threads primary before_retain active=%d\n", active);
    CUcontext primary, current;
    CK(cuDevicePrimaryCtxRetain(&primary, dev));
    CK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    printf("multi_context_threads primary retained active=%d\n", active);
    CK(cuCtxSetCurrent(primary));
    CK(cuCtxGetCurrent(&current));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, 1 << 20));
    CK(cuMemsetD32(d, 0x11223344u, (1 << 20) / 4));
    uint32_t probe[4];
    CK(cuMemcpyDtoH(probe, d + 4096, sizeof probe));
    int primary_ok = current == primary && probe[0] == 0x11223344u && probe[3] == 0x11223344u;
    printf("multi_context_threads primary use %s\n", primary_ok ? "ok" : "WRONG");
    CK(cuMemFree(d));
    CK(cuCtxSetCurrent(NULL));
    CK(cuDevicePrimaryCtxRelease(dev));
    CK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
    printf("multi_context_threads primary released active=%d\n", active);
    free(ptx);
    return all_ok && primary_ok ? 0 : 1;
}
