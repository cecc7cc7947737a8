/* bandwidth: host<->device copy bandwidth for 4 KiB .. 256 MiB (powers of 4), from
 * pageable memory (malloc, synchronous cuMemcpy) and from pinned memory
 * (cuMemHostAlloc, cuMemcpy*Async + cuStreamSynchronize), both directions. A size
 * whose buffer cannot be allocated is reported with its error instead. */
#include "bench_util.h"

enum { MIN_REPS = 3, MAX_REPS = 1000 };
static const size_t MAX_SIZE = (size_t)256 << 20;
static const size_t BYTES_PER_POINT = (size_t)512 << 20;

static int reps_for(size_t size)
{
    size_t reps = BYTES_PER_POINT / size;
    return reps < MIN_REPS ? MIN_REPS : reps > MAX_REPS ? MAX_REPS : (int)reps;
}

static void one_point(const char *memory, const char *direction, void *host, CUdeviceptr dev, size_t size,
                      CUstream stream)
{
    int pinned = strcmp(memory, "pinned") == 0, htod = strcmp(direction, "htod") == 0;
    int reps = reps_for(size);
    double t0 = 0.0;
    for (int i = -1; i < reps; i++) {  /* rep -1 warms up */
        if (i == 0) t0 = now_seconds();
        if (pinned) {
            if (htod) CK(cuMemcpyHtoDAsync(dev, host, size, stream));
            else CK(cuMemcpyDtoHAsync(host, dev, size, stream));
            CK(cuStreamSynchronize(stream));
        } else {
            if (htod) CK(cuMemcpyHtoD(dev, host, size));
            else CK(cuMemcpyDtoH(host, dev, size));
        }
    }
    double seconds = now_seconds() - t0;
    printf("{\"bench\":\"bandwidth\",\"memory\":\"%s\",\"direction\":\"%s\",\"bytes\":%zu,\"reps\":%d,"
           "\"gb_per_s\":%.3f,\"us_per_copy\":%.3f}\n",
           memory, direction, size, reps, (double)size * reps / seconds / 1e9, seconds * 1e6 / reps);
    fflush(stdout);
}

static void unavailable(const char *memory, size_t size, CUresult r)
{
    for (int d = 0; d < 2; d++) {
        printf("{\"bench\":\"bandwidth\",\"memory\":\"%s\",\"direction\":\"%s\",\"bytes\":%zu,\"error\":\"%s\"}\n",
               memory, d ? "dtoh" : "htod", size, result_name(r));
    }
}

int main(void)
{
    CUcontext ctx = create_context(NULL);
    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CUdeviceptr dev;
    CK(cuMemAlloc(&dev, MAX_SIZE));
    unsigned char *pageable = malloc(MAX_SIZE);
    if (pageable == NULL) die("malloc");
    memset(pageable, 0x3c, MAX_SIZE);

    for (size_t size = 4096; size <= MAX_SIZE; size *= 4) {
        one_point("pageable", "htod", pageable, dev, size, stream);
        one_point("pageable", "dtoh", pageable, dev, size, stream);
    }
    /* Pinned buffers per size: through ivcuda they come from the region's pool, which
     * may not hold the largest size. */
    for (size_t size = 4096; size <= MAX_SIZE; size *= 4) {
        void *pinned = NULL;
        CUresult r = cuMemHostAlloc(&pinned, size, 0);
        if (r != CUDA_SUCCESS) {
            unavailable("pinned", size, r);
            continue;
        }
        memset(pinned, 0x5a, size);
        one_point("pinned", "htod", pinned, dev, size, stream);
        one_point("pinned", "dtoh", pinned, dev, size, stream);
        CK(cuMemFreeHost(pinned));
    }
    free(pageable);
    CK(cuMemFree(dev));
    CK(cuStreamDestroy(stream));
    CK(cuCtxDestroy(ctx));
    return 0;
}
