/* share_job: one "VM's" compute-bound job for gpu/sharing.sh. Waits until the
 * wall-clock instant START (so that two jobs in two processes start together), then
 * launches share_burn for SECONDS, one launch after another (each synchronised), and
 * prints how many it finished: the job's throughput. Under MPS with
 * CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=p in its cuda-server's environment, a job should
 * reach about p % of what it reaches alone with the whole GPU.
 *
 * The grid is a fixed BLOCKS, not a multiple of the SM count the device reports: an MPS
 * client may be told fewer SMs than the card has, and a grid sized to that count does the
 * same work per SM whatever the share, so its rate does not move (the first H200 run: the
 * 25 % job at 98 % of native, a 25/75 pair at 1:1). BLOCKS is many waves of resident blocks
 * on the whole H200 (132 SMs x 8 blocks of 256 threads = 1056 at once, so 8 waves), so a
 * launch's time is set by how many SMs run it: 4 times the waves on a quarter of them.
 *
 *   share_job <kernel-dir> <seconds> [<start, seconds since the epoch>]
 */
#include "common.h"

#include <unistd.h>

/* ITERATIONS: the first H200 run finished 266 launches a second of 1056 blocks x 200000 iterations;
 * 8 x the blocks at a quarter of the iterations should take about 8 ms a launch on the whole card,
 * about 30 ms on a quarter of it: enough launches in a few seconds to tell the rates apart */
enum { THREADS = 256, BLOCKS = 8448, ITERATIONS = 50000 };

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
    unsigned grid = BLOCKS;
    CUdeviceptr out;
    CK(cuMemAlloc(&out, (size_t)grid * sizeof(float)));
    int iterations = ITERATIONS;
    void *args[] = { &out, &iterations };
    /* one launch before the clock starts: module upload and first-launch costs stay out */
    CK(cuLaunchKernel(fn, grid, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    double late = start > 0 ? wall_seconds() - start : 0;
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
    /* sms: what this job's driver reports (an MPS client may be told its share); late: seconds the
     * job was ready after START (> 0: it started late, the pair's comparison is off by that much) */
    printf("share_job sms=%d grid=%u kernels=%ld seconds=%.3f rate=%.3f late=%.3f\n", sms, grid, kernels, t - t0,
           (double)kernels / (t - t0), late > 0 ? late : 0.0);
    CK(cuMemFree(out));
    CK(cuModuleUnload(module));
    CK(cuCtxDestroy(ctx));
    free(cubin);
    return 0;
}
