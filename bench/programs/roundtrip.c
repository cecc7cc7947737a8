/* roundtrip: latency of synchronous calls that must reach the driver (through
 * ivcuda: the server) each time: cuStreamQuery on an idle stream and
 * cuCtxSynchronize on an idle context. cuDeviceGetAttribute, which ivcuda answers
 * from a guest-side cache, is measured as a floor for comparison. */
#include "bench_util.h"

enum { CALLS = 20000, WARMUP = 2000 };

static double samples[CALLS];

static void report(const char *name, size_t n)
{
    double avg = mean(samples, n);
    double p50 = percentile(samples, n, 50), p99 = percentile(samples, n, 99);
    printf("{\"bench\":\"roundtrip\",\"call\":\"%s\",\"calls\":%zu,\"p50_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f}\n",
           name, n, p50, p99, avg);
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));

    for (int i = 0; i < WARMUP; i++) CK(cuStreamQuery(stream));
    for (int i = 0; i < CALLS; i++) {
        double t0 = now_seconds();
        CUresult r = cuStreamQuery(stream);
        samples[i] = (now_seconds() - t0) * 1e6;
        if (r != CUDA_SUCCESS) CK(r);
    }
    report("cuStreamQuery", CALLS);

    for (int i = 0; i < WARMUP; i++) CK(cuCtxSynchronize());
    for (int i = 0; i < CALLS; i++) {
        double t0 = now_seconds();
        CUresult r = cuCtxSynchronize();
        samples[i] = (now_seconds() - t0) * 1e6;
        if (r != CUDA_SUCCESS) CK(r);
    }
    report("cuCtxSynchronize", CALLS);

    int value;
    for (int i = 0; i < CALLS; i++) {
        double t0 = now_seconds();
        CUresult r = cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
        samples[i] = (now_seconds() - t0) * 1e6;
        if (r != CUDA_SUCCESS) CK(r);
    }
    report("cuDeviceGetAttribute", CALLS);

    CK(cuStreamDestroy(stream));
    CK(cuCtxDestroy(ctx));
    return 0;
}
