/* fault_recovery: after one process's GPU fault, the next process computes. A first child
 * launches a kernel that stores through an address it never allocated, synchronises
 * (CUDA_ERROR_ILLEGAL_ADDRESS: CUDA documents the process as unusable from then on) and exits
 * as a program does (exit: its atexit handlers run). Then a second child, a process that had
 * not touched CUDA before, initialises CUDA and computes. Natively each process has a CUDA
 * process of its own and the second is unaffected. Through ivcuda both are guest processes of
 * one VM served by one cuda-server, whose CUDA process the fault made unusable: the second
 * passes only if the server replaced its CUDA process once the first exited, and the guest
 * library waited for it (docs/architecture.md, "Fault recovery"). The concurrent case, a
 * process already holding CUDA state at the fault, is process_isolation's. Prints one line per
 * step. With a second argument, `fault` or `compute`, runs that one step in this process. */
#include "common.h"

#include <sys/wait.h>
#include <unistd.h>

enum { N = 8192 };

static CUfunction load(const char *dir, const char *name)
{
    size_t size;
    void *image = read_kernel(dir, "fault_recovery", "fatbin", &size);
    CUmodule module;
    CUfunction fn;
    CK(cuModuleLoadData(&module, image));
    CK(cuModuleGetFunction(&fn, module, name));
    free(image);
    return fn;
}

static int faulting_child(const char *dir)
{
    create_context(NULL);
    CUfunction poke = load(dir, "poke");
    CUdeviceptr nowhere = 0x40; /* never allocated: the store faults */
    void *args[] = {&nowhere};
    CK(cuLaunchKernel(poke, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CUresult r = cuCtxSynchronize();
    printf("first child: the faulting kernel's synchronisation -> %s\n", result_name(r));
    return r == CUDA_ERROR_ILLEGAL_ADDRESS ? 0 : 1;
}

static int computing_child(const char *dir)
{
    create_context(NULL);
    CUfunction squares = load(dir, "squares");
    CUdeviceptr out;
    CK(cuMemAlloc(&out, N * sizeof(unsigned)));
    unsigned n = N;
    void *args[] = {&out, &n};
    CK(cuLaunchKernel(squares, N / 128, 1, 1, 128, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    static unsigned host[N];
    CK(cuMemcpyDtoH(host, out, sizeof host));
    int bad = 0;
    for (unsigned i = 0; i < N; i++)
        bad += host[i] != i * i;
    printf("second child: its kernel after the first child's fault %s\n", bad ? "WRONG" : "ok");
    CK(cuMemFree(out));
    return bad != 0;
}

/* One child runs `body` and leaves through exit(), as a program returning from main does. */
static int run_child(const char *name, int (*body)(const char *), const char *dir)
{
    fflush(stdout);
    pid_t pid = fork(); /* before any CUDA call of this process: each child initialises its own */
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        int failed = body(dir);
        fflush(stdout);
        exit(failed);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        die("waitpid");
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    printf("%s: exit status %d\n", name, code);
    return code != 0;
}

/* `fault_recovery KERNELS fault` or `... compute`: one step alone, in this process (gpu/sharing.sh
 * faults in one VM while another VM works, then checks that each VM computes again) */
int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    if (argc > 2 && strcmp(argv[2], "fault") == 0)
        return faulting_child(dir);
    if (argc > 2 && strcmp(argv[2], "compute") == 0)
        return computing_child(dir);
    if (argc > 2) {
        fprintf(stderr, "usage: %s KERNELS [fault|compute]\n", argv[0]);
        return 2;
    }
    int failed = run_child("first child", faulting_child, dir);
    failed |= run_child("second child", computing_child, dir);
    return failed;
}
