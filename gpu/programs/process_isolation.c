/* process_isolation: one process's GPU fault must not reach another process. A child process
 * launches a kernel that stores through an address it never allocated and synchronises
 * (CUDA_ERROR_ILLEGAL_ADDRESS, which CUDA documents as leaving that process unusable); then the
 * parent, a process of its own that had not touched CUDA before, initialises CUDA and computes.
 * Natively the parent's work is unaffected. Through ivcuda both are guest processes of one VM
 * served by one cuda-server: the parent passes only if the server keeps the child's fault to
 * the child (docs/compatibility.md, "Inside a TCG VM"). Prints one line per process. */
#include "common.h"

#include <sys/wait.h>
#include <unistd.h>

enum { N = 4096 };

static CUfunction load(const char *dir, const char *name, CUmodule *module)
{
    size_t size;
    void *image = read_kernel(dir, "process_isolation", "fatbin", &size);
    CUfunction fn;
    CK(cuModuleLoadData(module, image));
    CK(cuModuleGetFunction(&fn, *module, name));
    free(image);
    return fn;
}

static int child(const char *dir)
{
    CUcontext ctx = create_context(NULL);
    CUmodule module;
    CUfunction store = load(dir, "store_to", &module);
    CUdeviceptr nowhere = 0x10; /* never allocated: the store faults */
    int value = 7;
    void *args[] = {&nowhere, &value};
    CK(cuLaunchKernel(store, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CUresult r = cuCtxSynchronize();
    printf("child: the faulting kernel's synchronisation -> %s\n", result_name(r));
    (void)ctx;
    return r == CUDA_ERROR_ILLEGAL_ADDRESS ? 0 : 1;
}

static int parent(const char *dir)
{
    create_context(NULL);
    CUmodule module;
    CUfunction fill = load(dir, "fill", &module);
    CUdeviceptr out;
    CK(cuMemAlloc(&out, N * sizeof(int)));
    int value = 1000, n = N;
    void *args[] = {&out, &value, &n};
    CK(cuLaunchKernel(fill, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    static int host[N];
    CK(cuMemcpyDtoH(host, out, sizeof host));
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += host[i] != value + i;
    printf("parent: after the child's fault, its own kernel %s\n", bad ? "WRONG" : "ok");
    CK(cuMemFree(out));
    return bad != 0;
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    fflush(stdout);
    pid_t pid = fork(); /* before any CUDA call: each process initialises its own */
    if (pid < 0)
        die("fork");
    if (pid == 0) {
        int status = child(dir);
        fflush(stdout); /* _exit flushes nothing, and stdout is a file in the validation */
        _exit(status);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid)
        die("waitpid");
    printf("child: exit status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    return parent(dir) || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
