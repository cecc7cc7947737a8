/* busy_reclaim: a process killed while its kernel runs gives its GPU memory back, and a new
 * process is not held up meanwhile (issue 13: reclaim waits for the worker that is inside a
 * driver call, and only that process's reclaim waits). A child allocates ALLOC_MIB of device
 * memory, launches a kernel that spins SPIN_S seconds and synchronises on it; once the kernel
 * runs the parent SIGKILLs the child, then — a process that had not touched CUDA before —
 * initialises CUDA, allocates, runs a tiny kernel and checks its result, and waits (at most
 * WAIT_S) until the device's free memory shows the child's allocation given back.
 * Natively the driver frees it at the child's death; through ivcuda the server reclaims the
 * dead process once its heartbeat stopped, after the worker's synchronisation returns. The
 * times are info: lines (not compared): how long the parent's first work took after the kill,
 * and when the memory came back. */
#include "common.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

enum { ALLOC_MIB = 1024, N = 4096, THREADS = 256 };
static const double SPIN_S = 3.0;
static const double WAIT_S = 15.0;

static CUfunction spin_kernel(const char *dir)
{
    char *ptx = read_kernel(dir, "streams", "ptx", NULL);
    CUmodule module;
    CUfunction fn;
    CK(cuModuleLoadData(&module, ptx));
    CK(cuModuleGetFunction(&fn, module, "spin_then_fill"));
    free(ptx);
    return fn;
}

/* Sends the device's free bytes after its allocation, once the kernel is launched; then waits on it. */
static int child(const char *dir, int report)
{
    create_context(NULL);
    CUfunction spin = spin_kernel(dir);
    CUdeviceptr big, out; /* a device allocation is backed when made */
    CK(cuMemAlloc(&big, (size_t)ALLOC_MIB << 20));
    CK(cuMemAlloc(&out, N * sizeof(int)));
    size_t free_bytes, total;
    CK(cuMemGetInfo(&free_bytes, &total));
    int value = 1, n = N;
    unsigned long long ns = (unsigned long long)(SPIN_S * 1e9);
    void *args[] = {&out, &value, &n, &ns};
    CK(cuLaunchKernel(spin, N / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
    if (write(report, &free_bytes, sizeof free_bytes) != (ssize_t)sizeof free_bytes)
        die("write");
    CK(cuCtxSynchronize()); /* killed in here on a GPU */
    sleep(60);                /* and here where the "kernel" ran at its launch (the CPU mock) */
    return 1;
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    int pipefd[2];
    if (pipe(pipefd) != 0)
        die("pipe");
    fflush(stdout);
    pid_t pid = fork(); /* before any CUDA call: each process initialises its own */
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        close(pipefd[0]);
        int status = child(dir, pipefd[1]);
        fflush(stdout);
        _exit(status);
    }
    close(pipefd[1]);
    size_t child_free = 0;
    if (read(pipefd[0], &child_free, sizeof child_free) != (ssize_t)sizeof child_free)
        die("the child did not launch its kernel");
    printf("child: allocated %d MiB and launched a %.0f s kernel\n", ALLOC_MIB, SPIN_S);
    usleep(300000); /* the kernel runs */
    if (kill(pid, SIGKILL) != 0)
        die("kill");
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        die("waitpid");
    double killed = now_seconds();
    printf("parent: the child was killed (SIGKILL): %s\n", WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL ? "yes" : "no");

    /* a fresh process's first work: it must not wait for the dead child's kernel or reclaim */
    create_context(NULL);
    CUfunction spin = spin_kernel(dir);
    CUdeviceptr out;
    CK(cuMemAlloc(&out, N * sizeof(int)));
    int value = 42, n = N;
    unsigned long long ns = 0;
    void *args[] = {&out, &value, &n, &ns};
    CK(cuLaunchKernel(spin, N / THREADS, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    static int host[N];
    CK(cuMemcpyDtoH(host, out, sizeof host));
    double first = now_seconds() - killed;
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += host[i] != value;
    printf("parent: a fresh process's cuInit, cuMemAlloc and kernel: %s\n", bad ? "WRONG" : "ok");
    printf("info: the fresh process's first work took %.2f s after the kill (the child's kernel would have run "
           "%.2f s more)\n", first, SPIN_S - 0.3);

    /* the child's allocation back: free memory at least 3/4 of it above what the child saw */
    size_t want = child_free + ((size_t)ALLOC_MIB << 20) / 4 * 3, free_bytes = 0, total;
    double back = -1;
    for (;;) {
        CK(cuMemGetInfo(&free_bytes, &total));
        if (free_bytes >= want) {
            back = now_seconds() - killed;
            break;
        }
        if (now_seconds() - killed > WAIT_S)
            break;
        usleep(50000);
    }
    printf("parent: the killed child's %d MiB came back: %s\n", ALLOC_MIB, back >= 0 ? "yes" : "no");
    if (back >= 0)
        printf("info: it came back %.2f s after the kill\n", back);
    else
        printf("info: free %zu MiB after %.0f s, the child saw %zu MiB free with its allocation\n", free_bytes >> 20,
               WAIT_S, child_free >> 20);
    CK(cuMemFree(out));
    return bad != 0 || back < 0 || !WIFSIGNALED(status);
}
