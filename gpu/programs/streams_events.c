/* streams_events: four streams each copy a chunk in from pinned memory, scale it
 * and copy it back, all asynchronously; stream 0 waits on the others' events and a
 * final event is synchronised before the host reads the results. Then a
 * cross-stream dependency: stream B copies a buffer that a slow kernel on stream A
 * writes, ordered only by cuStreamWaitEvent. */
#include "common.h"

enum { STREAMS = 4, CHUNK = 1 << 20, THREADS = 256 };

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    char *ptx = read_kernel(dir, "streams", "ptx", NULL);
    CUmodule module;
    CUfunction scale_add, spin_then_fill;
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&scale_add, module, "scale_add"));
    CK(cuModuleGetFunction(&spin_then_fill, module, "spin_then_fill"));

    /* ---- part 1: overlapped copy / compute / copy on four streams ---- */
    size_t chunk_bytes = (size_t)CHUNK * sizeof(float);
    float *in, *out;
    CK(cuMemHostAlloc((void **)&in, chunk_bytes * STREAMS, 0));
    CK(cuMemHostAlloc((void **)&out, chunk_bytes * STREAMS, 0));
    for (int i = 0; i < CHUNK * STREAMS; i++) {
        in[i] = (float)(i % 4099) * 0.125f;
        out[i] = -1.0f;
    }
    CUstream streams[STREAMS];
    CUevent chunk_done[STREAMS], start, done;
    CUdeviceptr dev[STREAMS];
    for (int s = 0; s < STREAMS; s++) {
        CK(cuStreamCreate(&streams[s], CU_STREAM_NON_BLOCKING));
        CK(cuEventCreate(&chunk_done[s], CU_EVENT_DISABLE_TIMING));
        CK(cuMemAlloc(&dev[s], chunk_bytes));
    }
    CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&done, CU_EVENT_DEFAULT));

    CK(cuEventRecord(start, streams[0]));
    for (int s = 0; s < STREAMS; s++) {
        float scale = 2.0f, add = (float)s;
        int n = CHUNK;
        void *args[] = { &dev[s], &scale, &add, &n };
        CK(cuMemcpyHtoDAsync(dev[s], in + (size_t)s * CHUNK, chunk_bytes, streams[s]));
        CK(cuLaunchKernel(scale_add, CHUNK / THREADS, 1, 1, THREADS, 1, 1, 0, streams[s], args, NULL));
        CK(cuMemcpyDtoHAsync(out + (size_t)s * CHUNK, dev[s], chunk_bytes, streams[s]));
        CK(cuEventRecord(chunk_done[s], streams[s]));
    }
    for (int s = 1; s < STREAMS; s++) CK(cuStreamWaitEvent(streams[0], chunk_done[s], 0));
    CK(cuEventRecord(done, streams[0]));
    CK(cuEventSynchronize(done));

    /* Everything the host reads now was ordered before `done` only through events. */
    int bad = 0;
    for (int s = 0; s < STREAMS; s++) {
        for (int i = 0; i < CHUNK; i++) {
            size_t k = (size_t)s * CHUNK + i;
            float want = in[k] * 2.0f + (float)s;
            if (out[k] != want) {
                if (bad < 3) printf("mismatch stream=%d i=%d got=%g want=%g\n", s, i, out[k], want);
                bad++;
            }
        }
    }
    int all_idle = 1;
    for (int s = 0; s < STREAMS; s++) {
        CUresult q = cuStreamQuery(streams[s]);
        if (q != CUDA_SUCCESS) {
            printf("stream %d query after the final event: %s\n", s, result_name(q));
            all_idle = 0;
        }
        CK(cuEventQuery(chunk_done[s]));
    }
    float ms = 0.0f;
    CK(cuEventElapsedTime(&ms, start, done));
    printf("streams_events overlap streams=%d chunk=%d %s idle_after_event=%s checksum=%016llx\n", STREAMS, CHUNK,
           bad ? "WRONG" : "ok", all_idle ? "yes" : "no", (unsigned long long)fnv1a(out, chunk_bytes * STREAMS));
    printf("time: overlap part %.3f ms (events)\n", ms);

    /* ---- part 2: stream B waits for a slow kernel on stream A ---- */
    enum { M = 1 << 16 };
    CUdeviceptr flags_dev;
    int *flags_host;
    CK(cuMemAlloc(&flags_dev, M * sizeof(int)));
    CK(cuMemAllocHost((void **)&flags_host, M * sizeof(int)));
    CK(cuMemsetD32(flags_dev, 7, M));
    CK(cuCtxSynchronize());
    CUevent a_begin, a_end;
    CK(cuEventCreate(&a_begin, CU_EVENT_DEFAULT));
    CK(cuEventCreate(&a_end, CU_EVENT_DEFAULT));
    int value = 42, m = M;
    unsigned long long spin_ns = 20ULL * 1000 * 1000;
    void *args[] = { &flags_dev, &value, &m, &spin_ns };
    CK(cuEventRecord(a_begin, streams[1]));
    CK(cuLaunchKernel(spin_then_fill, M / THREADS, 1, 1, THREADS, 1, 1, 0, streams[1], args, NULL));
    CK(cuEventRecord(a_end, streams[1]));
    CUresult busy = cuStreamQuery(streams[1]);
    printf("info: stream A query while the 20 ms kernel runs: %s\n", result_name(busy));
    if (busy != CUDA_SUCCESS && busy != CUDA_ERROR_NOT_READY) CK(busy);
    CK(cuStreamWaitEvent(streams[2], a_end, 0));
    CK(cuMemcpyDtoHAsync(flags_host, flags_dev, M * sizeof(int), streams[2]));
    CK(cuStreamSynchronize(streams[2]));
    int stale = 0;
    for (int i = 0; i < M; i++) stale += flags_host[i] != 42;
    CK(cuEventSynchronize(a_end));
    float spin_ms = 0.0f;
    CK(cuEventElapsedTime(&spin_ms, a_begin, a_end));
    printf("streams_events wait_event %s stale=%d elapsed_at_least_19ms=%s\n", stale ? "WRONG" : "ok", stale,
           spin_ms >= 19.0f ? "yes" : "no");
    printf("time: spin kernel %.3f ms (events)\n", spin_ms);

    for (int s = 0; s < STREAMS; s++) {
        CK(cuStreamDestroy(streams[s]));
        CK(cuEventDestroy(chunk_done[s]));
        CK(cuMemFree(dev[s]));
    }
    CK(cuEventDestroy(start));
    CK(cuEventDestroy(done));
    CK(cuEventDestroy(a_begin));
    CK(cuEventDestroy(a_end));
    CK(cuMemFree(flags_dev));
    CK(cuMemFreeHost(flags_host));
    CK(cuMemFreeHost(in));
    CK(cuMemFreeHost(out));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(ptx);
    return (bad || stale || !all_idle || spin_ms < 19.0f) ? 1 : 0;
}
