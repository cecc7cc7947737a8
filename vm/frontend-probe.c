/*
 * Runs inside a front-end test guest (docs/backend-domains.md): proves, round after round, that
 * CUDA calls reach a server, and shows what a program sees while its back-end domain is away.
 *
 * Each round is a new process (fork), so that each starts from nothing, as a program started
 * after a back-end restart would: cuInit, a context, cuMemAlloc, cuMemcpyHtoD of a pattern
 * that changes every round, cuMemcpyDtoH, compare, cuMemFree. The parent prints one line per
 * round; a round that neither finishes nor fails within the round timeout is killed and
 * reported as a hang, a child killed by a signal as a crash, so that the host-side test sees
 * those as such and never waits on the guest.
 *
 * Once per boot, after the first good round, a child measures (the benchmark's figures):
 * the round trip of cuCtxSynchronize on an idle context (synchronous and answered by the
 * server every time: not among api/cuda-driver.api's `local` names nor `cached`), and
 * HtoD/DtoH bandwidth of 8 MiB copies from pageable memory.
 *
 * usage: frontend-probe [--rounds N] [--recovered-rounds M] [--pause-ms MS] [--round-timeout-s S] [--no-bench]
 *   --rounds N   stop after N rounds (0, the default: until the VM is destroyed)
 *   --recovered-rounds M  also stop once M rounds in a row were ok after a round that was not
 *                (a back-end restart seen through: vm/backend-doorbell.sh --restart-backend)
 *
 * A round or benchmark child that succeeded ends with exit(), as a program does, so that the
 * guest library's exit work runs (the process-exit notice; with IVCUDA_STATS=1 its
 * "interrupt waits: N, woken by an interrupt: M" line); one that failed ends with _exit().
 * Console lines (what tests and bench/backend-domains.sh grep for):
 *   IVCUDA-PROBE round=<n> ok us=<round's wall time>
 *   IVCUDA-PROBE round=<n> error=<CUDA error name> at=<call>
 *   IVCUDA-PROBE round=<n> mismatch at=<byte offset>
 *   IVCUDA-PROBE round=<n> hang seconds=<S>        (killed)
 *   IVCUDA-PROBE round=<n> crash signal=<n>
 *   IVCUDA-PROBE recovered after round=<n>          (--recovered-rounds: the M-th ok round)
 *   IVCUDA-BENCH roundtrip call=cuCtxSynchronize calls=<n> p50_us=<x> mean_us=<x>
 *   IVCUDA-BENCH bandwidth dir=HtoD|DtoH bytes=<n> reps=<n> MBps=<x>
 *   IVCUDA-BENCH error=<CUDA error name> at=<call>
 * The guest library's own messages (stderr) go to stdout too, in order with these lines.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { ROUND_BYTES = 1 << 20, BENCH_BYTES = 8 << 20, BENCH_REPS = 8, RT_CALLS = 2000, RT_WARMUP = 200 };

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static const char *name_of(CUresult r)
{
    const char *n = NULL;
    if (cuGetErrorName(r, &n) != CUDA_SUCCESS || n == NULL)
        return "CUDA_ERROR_UNKNOWN_CODE";
    return n;
}

/* The round's or benchmark's failure: the line, then the child's exit. */
#define TRY(prefix, call)                                                             \
    do {                                                                              \
        CUresult r_ = (call);                                                         \
        if (r_ != CUDA_SUCCESS) {                                                     \
            printf("%s error=%s at=%s\n", prefix, name_of(r_), #call);               \
            fflush(stdout);                                                           \
            _exit(1);                                                                 \
        }                                                                             \
    } while (0)

static void round_child(unsigned round)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, "IVCUDA-PROBE round=%u", round);
    double t0 = now_us();
    unsigned char *out = malloc(ROUND_BYTES), *back = malloc(ROUND_BYTES);
    if (out == NULL || back == NULL) {
        printf("%s error=out-of-guest-memory at=malloc\n", prefix);
        _exit(1);
    }
    for (size_t i = 0; i < ROUND_BYTES; i++)
        out[i] = (unsigned char)(i * 131u + round * 7u + 1u);
    memset(back, 0, ROUND_BYTES);
    CUdevice dev;
    CUcontext ctx;
    CUdeviceptr d;
    TRY(prefix, cuInit(0));
    TRY(prefix, cuDeviceGet(&dev, 0));
    TRY(prefix, cuCtxCreate(&ctx, 0, dev));
    TRY(prefix, cuMemAlloc(&d, ROUND_BYTES));
    TRY(prefix, cuMemcpyHtoD(d, out, ROUND_BYTES));
    TRY(prefix, cuMemcpyDtoH(back, d, ROUND_BYTES));
    for (size_t i = 0; i < ROUND_BYTES; i++) {
        if (back[i] != out[i]) {
            printf("%s mismatch at=%zu\n", prefix, i);
            fflush(stdout);
            _exit(1);
        }
    }
    TRY(prefix, cuMemFree(d));
    TRY(prefix, cuCtxDestroy(ctx));
    printf("%s ok us=%.0f\n", prefix, now_us() - t0);
    fflush(stdout);
    exit(0);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_child(void)
{
    static double samples[RT_CALLS];
    const char *prefix = "IVCUDA-BENCH";
    CUdevice dev;
    CUcontext ctx;
    TRY(prefix, cuInit(0));
    TRY(prefix, cuDeviceGet(&dev, 0));
    TRY(prefix, cuCtxCreate(&ctx, 0, dev));
    for (int i = 0; i < RT_WARMUP; i++)
        TRY(prefix, cuCtxSynchronize());
    double sum = 0;
    for (int i = 0; i < RT_CALLS; i++) {
        double t0 = now_us();
        TRY(prefix, cuCtxSynchronize());
        samples[i] = now_us() - t0;
        sum += samples[i];
    }
    qsort(samples, RT_CALLS, sizeof samples[0], compare_double);
    printf("IVCUDA-BENCH roundtrip call=cuCtxSynchronize calls=%d p50_us=%.1f mean_us=%.1f\n", RT_CALLS,
           samples[RT_CALLS / 2], sum / RT_CALLS);
    fflush(stdout);

    unsigned char *host = malloc(BENCH_BYTES);
    if (host == NULL) {
        printf("IVCUDA-BENCH error=out-of-guest-memory at=malloc\n");
        _exit(1);
    }
    memset(host, 0x5a, BENCH_BYTES);
    CUdeviceptr d;
    TRY(prefix, cuMemAlloc(&d, BENCH_BYTES));
    TRY(prefix, cuMemcpyHtoD(d, host, BENCH_BYTES)); /* first touch of both sides, untimed */
    double t0 = now_us();
    for (int i = 0; i < BENCH_REPS; i++)
        TRY(prefix, cuMemcpyHtoD(d, host, BENCH_BYTES));
    double htod = now_us() - t0;
    t0 = now_us();
    for (int i = 0; i < BENCH_REPS; i++)
        TRY(prefix, cuMemcpyDtoH(host, d, BENCH_BYTES));
    double dtoh = now_us() - t0;
    /* bytes per µs is MB/s (10^6 bytes per second) */
    printf("IVCUDA-BENCH bandwidth dir=HtoD bytes=%d reps=%d MBps=%.1f\n", BENCH_BYTES, BENCH_REPS,
           (double)BENCH_BYTES * BENCH_REPS / htod);
    printf("IVCUDA-BENCH bandwidth dir=DtoH bytes=%d reps=%d MBps=%.1f\n", BENCH_BYTES, BENCH_REPS,
           (double)BENCH_BYTES * BENCH_REPS / dtoh);
    fflush(stdout);
    TRY(prefix, cuMemFree(d));
    TRY(prefix, cuCtxDestroy(ctx));
    exit(0);
}

/* Runs fn in a child with a deadline; its status, or -1 for a kill at the deadline. */
static int run_child(void (*fn)(unsigned), unsigned arg, int timeout_s, int *signal_out)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("frontend-probe: fork");
        exit(2);
    }
    if (pid == 0) {
        dup2(STDOUT_FILENO, STDERR_FILENO); /* the library's messages, in order with ours */
        fn(arg);
        _exit(0);
    }
    double deadline = now_us() + timeout_s * 1e6;
    int status;
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid)
            break;
        if (now_us() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(50 * 1000);
    }
    *signal_out = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void bench_entry(unsigned unused)
{
    (void)unused;
    bench_child();
}

int main(int argc, char **argv)
{
    unsigned rounds = 0, recovered_rounds = 0, ok_in_a_row = 0;
    int failed_before = 0;
    int pause_ms = 500, timeout_s = 120, bench = 1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--recovered-rounds") == 0 && i + 1 < argc)
            recovered_rounds = (unsigned)strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--pause-ms") == 0 && i + 1 < argc)
            pause_ms = atoi(argv[++i]);
        else if (strcmp(argv[i], "--round-timeout-s") == 0 && i + 1 < argc)
            timeout_s = atoi(argv[++i]);
        else if (strcmp(argv[i], "--no-bench") == 0)
            bench = 0;
        else {
            fprintf(stderr, "usage: %s [--rounds N] [--recovered-rounds M] [--pause-ms MS] [--round-timeout-s S] [--no-bench]\n", argv[0]);
            return 2;
        }
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("IVCUDA-PROBE start pid=%d\n", (int)getpid());
    for (unsigned round = 1; rounds == 0 || round <= rounds; round++) {
        int sig = 0;
        int status = run_child(round_child, round, timeout_s, &sig);
        if (status == -1)
            printf("IVCUDA-PROBE round=%u hang seconds=%d\n", round, timeout_s);
        else if (sig != 0)
            printf("IVCUDA-PROBE round=%u crash signal=%d\n", round, sig);
        if (status == 0) {
            ok_in_a_row++;
        } else {
            ok_in_a_row = 0;
            failed_before = 1;
        }
        if (recovered_rounds != 0 && failed_before && ok_in_a_row == recovered_rounds) {
            printf("IVCUDA-PROBE recovered after round=%u\n", round);
            break;
        }
        if (status == 0 && bench) {
            bench = 0;
            status = run_child(bench_entry, 0, timeout_s * 4, &sig);
            if (status == -1)
                printf("IVCUDA-BENCH hang seconds=%d\n", timeout_s * 4);
            else if (sig != 0)
                printf("IVCUDA-BENCH crash signal=%d\n", sig);
        }
        usleep((useconds_t)pause_ms * 1000);
    }
    printf("IVCUDA-PROBE done\n");
    return 0;
}
