/* share_job: one "VM's" compute-bound job for gpu/sharing.sh. Waits until the
 * wall-clock instant START (so that two jobs in two processes start together), then
 * launches share_burn over 8 blocks per SM for SECONDS, one launch after another
 * (each synchronised), and prints how many it finished: the job's throughput. Under
 * MPS with CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=p in its cuda-server's environment, a
 * job should reach about p % of what it reaches alone with the whole GPU.
 *
 *   share_job <kernel-dir> <seconds> [<start, seconds since the epoch>]
 */
#include "common.h"

#include <unistd.h>

enum { THREADS = 256, BLOCKS_PER_SM = 8, ITERATIONS = 200000 };

static double wall_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    double seconds = argc > 2 ? atof(argv[2]) : 10.0;
    double start = argc > 3 ? atof(argv[3]) : 0.0;
    if (seconds <= 0 || seconds > 300) die("seconds must be in (0, 300]");
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    int sms = 0;
    CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    void *cubin = read_kernel(dir, "share_burn", "cubin", NULL);
    CUmodule module;
    CUfunction fn;
    CK(cuModuleLoadData(&module, cubin));
    CK(cuModuleGetFunction(&fn, module, "share_burn"));
    unsigned grid = (unsigned)(sms * BLOCKS_PER_SM);
    CUdeviceptr out;
    CK(cuMemAlloc(&out, (size_t)grid * sizeof(float)));
    int iterations = ITERATIONS;
    void *args[] = { &out, &iterations };
    /* one launch before the clock starts: module upload and first-launch costs stay out */
    CK(cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    while (start > 0 && wall_seconds() < start) {
        usleep(1000);
    }
    long kernels = 0;
    double t0 = now_seconds(), t = t0;
    while (t - t0 < seconds) {
        CK(cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
        CK(cuCtxSynchronize());
        kernels++;
        t = now_seconds();
    }
    printf("share_job sms=%d grid=%u kernels=%ld seconds=%.3f rate=%.3f\n", sms, grid, kernels, t - t0,
           (double)kernels / (t - t0));
    CK(cuMemFree(out));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(cubin);
    return 0;
}
