/*
 * Idle and wake-up costs of a cuda-server, through the guest library over a region file
 * (IVCUDA_REGION; in doorbell mode run it under qemu_peer.py, which hands it the server's
 * vector eventfds as QEMU would get them).
 *
 *   idle_bench <server pid> <channels> <idle seconds> <wake samples> <busy calls>
 *
 * 1. <channels> threads each make one call (each claims a channel, so the server has that many
 *    workers) and then sleep: the VM is idle.
 * 2. After 2 s to settle, the server's CPU time over <idle seconds>: utime+stime from
 *    /proc/<pid>/stat (clock ticks) and the sum of /proc/<pid>/task/ * /schedstat run time (ns).
 * 3. Wake-up: <wake samples> times, sleep 200 ms (the worker parks), then time one call.
 * 4. Busy round trip: <busy calls> back-to-back calls on a warm channel.
 * The call is cuCtxSynchronize on the primary context: it always reaches the server.
 * Prints "key value" lines.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice *device, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuCtxSynchronize(void);

static CUcontext context;
static volatile int stop_idle;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void check(CUresult r, const char *what)
{
    if (r != 0) {
        fprintf(stderr, "idle_bench: %s failed: %d\n", what, r);
        exit(1);
    }
}

static pthread_barrier_t attached;

static void *idle_thread(void *unused)
{
    (void)unused;
    check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
    check(cuCtxSynchronize(), "cuCtxSynchronize (idle thread)");
    pthread_barrier_wait(&attached);
    while (!stop_idle)
        sleep(1);
    return NULL;
}

static long long stat_ticks(int pid)
{
    char path[64], line[2048];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL || fgets(line, sizeof line, f) == NULL) {
        fprintf(stderr, "idle_bench: cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    char *p = strrchr(line, ')') + 2; /* field 3 */
    unsigned long long utime = 0, stime = 0;
    /* fields 3..13 skipped, 14 utime, 15 stime */
    sscanf(p, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime);
    return (long long)(utime + stime);
}

static long long schedstat_ns(int pid)
{
    char dir_path[64];
    snprintf(dir_path, sizeof dir_path, "/proc/%d/task", pid);
    DIR *dir = opendir(dir_path);
    if (dir == NULL)
        return -1;
    long long total = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s/schedstat", dir_path, e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        long long run = 0;
        if (fscanf(f, "%lld", &run) == 1)
            total += run;
        fclose(f);
    }
    closedir(dir);
    return total;
}

/* Per-thread run time of the server, to say where an idle server's CPU goes. */
struct task_time {
    int tid;
    char comm[32];
    long long ns;
    long long slices; /* times it ran (schedstat's third field): its wake-ups, near enough */
};

static int task_times(int pid, struct task_time *out, int capacity)
{
    char dir_path[64];
    snprintf(dir_path, sizeof dir_path, "/proc/%d/task", pid);
    DIR *dir = opendir(dir_path);
    if (dir == NULL)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dir)) != NULL && n < capacity) {
        if (e->d_name[0] == '.')
            continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s/schedstat", dir_path, e->d_name);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        long long run = 0, waited = 0, slices = 0;
        int ok = fscanf(f, "%lld %lld %lld", &run, &waited, &slices) == 3;
        fclose(f);
        snprintf(path, sizeof path, "%s/%s/comm", dir_path, e->d_name);
        f = fopen(path, "r");
        out[n].comm[0] = '\0';
        if (f != NULL) {
            if (fgets(out[n].comm, sizeof out[n].comm, f) != NULL)
                out[n].comm[strcspn(out[n].comm, "\n")] = '\0';
            fclose(f);
        }
        for (char *c = out[n].comm; *c; c++)
            if (*c == ' ')
                *c = '_';
        if (ok) {
            out[n].tid = atoi(e->d_name);
            out[n].ns = run;
            out[n].slices = slices;
            n++;
        }
    }
    closedir(dir);
    return n;
}

static int compare(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, uint64_t *ns, int n)
{
    qsort(ns, (size_t)n, sizeof *ns, compare);
    printf("%s_p50_us %.1f\n%s_p90_us %.1f\n%s_max_us %.1f\n", name, ns[n / 2] / 1000.0, name,
           ns[(n * 9) / 10] / 1000.0, name, ns[n - 1] / 1000.0);
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: idle_bench <server pid> <channels> <idle seconds> <wake samples> <busy calls>\n");
        return 2;
    }
    int pid = atoi(argv[1]), channels = atoi(argv[2]), seconds = atoi(argv[3]);
    int wakes = atoi(argv[4]), busy = atoi(argv[5]);
    pthread_t *threads = NULL;
    if (channels == 0) { /* no guest process at all: only the idle window */
        wakes = 0;
        busy = 0;
    } else {
        CUdevice device;
        check(cuInit(0), "cuInit");
        check(cuDeviceGet(&device, 0), "cuDeviceGet");
        check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
        check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
        check(cuCtxSynchronize(), "cuCtxSynchronize");

        pthread_barrier_init(&attached, NULL, (unsigned)channels);
        threads = calloc((size_t)channels, sizeof *threads);
        for (int i = 1; i < channels; i++)
            pthread_create(&threads[i], NULL, idle_thread, NULL);
        pthread_barrier_wait(&attached); /* this thread is channel 0 */
    }
    printf("channels %d\n", channels);
    fflush(stdout);

    sleep(2);
    static struct task_time before[512], after[512];
    int n_before = task_times(pid, before, 512);
    long long ticks0 = stat_ticks(pid), run0 = schedstat_ns(pid);
    uint64_t t0 = now_ns();
    sleep((unsigned)seconds);
    long long ticks1 = stat_ticks(pid), run1 = schedstat_ns(pid);
    int n_after = task_times(pid, after, 512);
    double wall = (now_ns() - t0) / 1e9;
    long hz = sysconf(_SC_CLK_TCK);
    printf("idle_seconds %.1f\n", wall);
    printf("idle_cpu_stat_percent %.3f\n", 100.0 * (double)(ticks1 - ticks0) / (double)hz / wall);
    printf("idle_cpu_schedstat_percent %.4f\n", 100.0 * (double)(run1 - run0) / 1e9 / wall);
    for (int i = 0; i < n_after; i++)
        for (int j = 0; j < n_before; j++)
            if (after[i].tid == before[j].tid && after[i].slices != before[j].slices)
                printf("idle_thread_ms %s %.2f %lld\n", after[i].comm, (after[i].ns - before[j].ns) / 1e6,
                       after[i].slices - before[j].slices);
    fflush(stdout);

    uint64_t *ns = calloc((size_t)(wakes > busy ? wakes : busy) + 1, sizeof *ns);
    for (int i = 0; i < wakes; i++) {
        struct timespec pause = {0, 200 * 1000 * 1000};
        nanosleep(&pause, NULL);
        uint64_t a = now_ns();
        check(cuCtxSynchronize(), "cuCtxSynchronize (wake)");
        ns[i] = now_ns() - a;
    }
    if (wakes > 0)
        report("wake", ns, wakes);
    for (int i = 0; i < 1000 && i < busy; i++)
        check(cuCtxSynchronize(), "cuCtxSynchronize (warm-up)");
    for (int i = 0; i < busy; i++) {
        uint64_t a = now_ns();
        check(cuCtxSynchronize(), "cuCtxSynchronize (busy)");
        ns[i] = now_ns() - a;
    }
    if (busy > 0)
        report("busy", ns, busy);
    stop_idle = 1;
    for (int i = 1; i < channels; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
