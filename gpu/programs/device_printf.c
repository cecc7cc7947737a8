/* device_printf: what a kernel prints (device printf) reaches the program's stdout at the
 * synchronisation point that flushes it, in order with the program's own (buffered) stdout lines —
 * after cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize, a blocking cuMemcpyDtoH and
 * cuCtxDestroy, and 1000 lines at once (more than one response area through ivcuda); and the
 * linker's info log (JIT logs) in the program's buffer. The driver
 * flushes a context's printf buffer only at those points, so every line's place is deterministic:
 * native and ivcuda output must be equal. */
#include "common.h"

static CUfunction print_kernel;

static void launch(int n, int lines, CUstream stream)
{
    void *args[] = {&n, &lines};
    CK(cuLaunchKernel(print_kernel, 1, 1, 1, 1, 1, 1, 0, stream, args, NULL));
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUcontext ctx = create_context(NULL);
    void *fatbin = read_kernel(dir, "device_printf", "fatbin", NULL);
    CUmodule module;
    CK(cuModuleLoadData(&module, fatbin));
    CK(cuModuleGetFunction(&print_kernel, module, "dp_print"));

    launch(1, 3, NULL);
    printf("host: launched 1, not synchronised yet\n");
    CK(cuCtxSynchronize());
    printf("host: after cuCtxSynchronize\n");

    CUstream stream;
    CK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    launch(2, 2, stream);
    CK(cuStreamSynchronize(stream));
    printf("host: after cuStreamSynchronize\n");

    CUevent event;
    CK(cuEventCreate(&event, CU_EVENT_DEFAULT));
    launch(3, 2, stream);
    CK(cuEventRecord(event, stream));
    CK(cuEventSynchronize(event));
    printf("host: after cuEventSynchronize\n");

    CUdeviceptr d;
    int back = 0;
    CK(cuMemAlloc(&d, sizeof back));
    CK(cuMemsetD32(d, 7, 1));
    launch(4, 2, NULL);
    CK(cuMemcpyDtoH(&back, d, sizeof back));
    printf("host: after a blocking cuMemcpyDtoH (%d)\n", back);

    launch(5, 1000, NULL);
    CK(cuCtxSynchronize());
    printf("host: after 1000 lines\n");

    /* The linker's info log (CU_JIT_LOG_VERBOSE: ptxas's lines) comes back into the program's
     * buffer, and its size option is the driver's count; a kernel of the linked image prints too. */
    char info[8192] = "", error[8192] = "";
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE};
    void *values[] = {info, (void *)(uintptr_t)sizeof info, error, (void *)(uintptr_t)sizeof error, (void *)1};
    CUlinkState link;
    CK(cuLinkCreate(5, options, values, &link));
    char ptx_path[4096];
    snprintf(ptx_path, sizeof ptx_path, "%s/device_printf.ptx", dir);
    CK(cuLinkAddFile(link, CU_JIT_INPUT_PTX, ptx_path, 0, NULL, NULL));
    void *cubin = NULL;
    size_t cubin_size = 0;
    CK(cuLinkComplete(link, &cubin, &cubin_size));
    /* the log's length follows ptxas's "Compile time = 8.227 ms", a timing: the size is checked, not
     * printed, and that line is an info: line, which the comparison leaves out */
    printf("host: linker info log (its size option holds the bytes written: %s):\n",
           (size_t)(uintptr_t)values[1] == strlen(info) + 1 ? "yes" : "no");
    for (const char *line = info; *line != '\0';) {
        const char *end = strchr(line, '\n');
        int n = end != NULL ? (int)(end - line) : (int)strlen(line);
        const char *timing = strstr(line, "Compile time");
        printf("%s%.*s\n", timing != NULL && timing < line + n ? "info: " : "", n, line);
        line += n + (end != NULL);
    }
    printf("\n");
    printf("host: linker error log: \"%s\"\n", error);
    CUmodule linked;
    CK(cuModuleLoadData(&linked, cubin));
    CK(cuLinkDestroy(link));
    CUfunction linked_print;
    CK(cuModuleGetFunction(&linked_print, linked, "dp_print"));
    int seven = 7, two = 2;
    void *args[] = {&seven, &two};
    CK(cuLaunchKernel(linked_print, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
    CK(cuCtxSynchronize());
    CK(cuModuleUnload(linked));
    printf("host: after the linked module's kernel\n");

    CK(cuEventDestroy(event));
    CK(cuStreamDestroy(stream));
    CK(cuMemFree(d));
    launch(6, 2, NULL);
    CK(cuCtxDestroy(ctx));
    printf("host: after cuCtxDestroy\n");
    free(fatbin);
    return 0;
}
