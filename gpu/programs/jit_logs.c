/* jit_logs: the JIT logs and wall time of cuModuleLoadDataEx and cuLibraryLoadData (issue 12,
 * docs/kernels.md "JIT logs"), which through ivcuda are written by the server's driver and copied
 * into the program's buffers after the call.
 *   1. a PTX module with CU_JIT_INFO/ERROR_LOG_BUFFER (+ sizes), CU_JIT_LOG_VERBOSE and
 *      CU_JIT_WALL_TIME: the info log's lines (ptxas's report on the entry function), whether the
 *      info size option holds the bytes written (text + NUL), whether the error log is empty;
 *   2. a PTX with an error: CUDA_ERROR_INVALID_PTX and the error log's lines;
 *   3. the first PTX as a library (cuLibraryLoadData): its info log equals the module's.
 * Each PTX carries a comment with a value of this run, so the driver's JIT cache never answers
 * it: ptxas's lines are written only when ptxas runs. The wall time is an info: line.
 *
 *   jit_logs <kernel-dir (unused)>
 */
#include "common.h"

#include <unistd.h>

enum { LOG_BYTES = 4096 };

static const char *const GOOD_PTX = ".version 8.0\n.target sm_90\n.address_size 64\n// run %ld\n"
                                    ".visible .entry jit_logs_fill(.param .u64 out)\n{\n"
                                    "    .reg .b64 %%rd<2>;\n    .reg .b32 %%r<2>;\n"
                                    "    ld.param.u64 %%rd1, [out];\n    mov.u32 %%r1, 42;\n"
                                    "    st.global.u32 [%%rd1], %%r1;\n    ret;\n}\n";
/* the same entry with an instruction ptxas does not know */
static const char *const BAD_PTX = ".version 8.0\n.target sm_90\n.address_size 64\n// run %ld\n"
                                   ".visible .entry jit_logs_bad()\n{\n    frobnicate.u32 %%r1;\n    ret;\n}\n";

struct logs {
    char info[LOG_BYTES], error[LOG_BYTES];
    CUjit_option options[6];
    void *values[6];
};

static void ask(struct logs *l)
{
    memset(l, 0, sizeof *l);
    CUjit_option o[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                        CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_LOG_VERBOSE, CU_JIT_WALL_TIME};
    void *v[] = {l->info, (void *)(uintptr_t)LOG_BYTES, l->error, (void *)(uintptr_t)LOG_BYTES, (void *)(uintptr_t)1,
                 NULL};
    memcpy(l->options, o, sizeof o);
    memcpy(l->values, v, sizeof v);
}

static void print_lines(const char *what, const char *text)
{
    const char *p = text;
    while (*p != '\0') {
        const char *end = strchr(p, '\n');
        int n = end != NULL ? (int)(end - p) : (int)strlen(p);
        /* ptxas's "Compile time = 1.726 ms" is a timing: an info: line, which the comparison leaves out */
        const char *timing = strstr(p, "Compile time");
        printf("%s%s: %.*s\n", timing != NULL && timing < p + n ? "info: " : "", what, n, p);
        p += n + (end != NULL);
    }
}

static void report(const char *what, const struct logs *l)
{
    float wall = 0;
    memcpy(&wall, &l->values[5], sizeof wall);
    printf("%s: info size holds the bytes written: %s\n", what,
           (uintptr_t)l->values[1] == strlen(l->info) + 1 ? "yes" : "no");
    printf("%s: error log empty: %s\n", what, l->error[0] == '\0' ? "yes" : "no");
    printf("info: %s wall time %.3f ms\n", what, wall);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    create_context(NULL);
    long run = (long)getpid() ^ (long)time(NULL);
    char ptx[1024];

    struct logs module_logs;
    ask(&module_logs);
    snprintf(ptx, sizeof ptx, GOOD_PTX, run);
    CUmodule module;
    CK(cuModuleLoadDataEx(&module, ptx, 6, module_logs.options, module_logs.values));
    print_lines("module info log", module_logs.info);
    report("module", &module_logs);
    CUfunction fn;
    CK(cuModuleGetFunction(&fn, module, "jit_logs_fill"));
    CK(cuModuleUnload(module));

    struct logs bad;
    ask(&bad);
    snprintf(ptx, sizeof ptx, BAD_PTX, run);
    CUresult r = cuModuleLoadDataEx(&module, ptx, 6, bad.options, bad.values);
    printf("bad PTX: %s\n", result_name(r));
    print_lines("bad PTX error log", bad.error);
    printf("bad PTX: error size holds the bytes written: %s\n",
           (uintptr_t)bad.values[3] == strlen(bad.error) + 1 ? "yes" : "no");

    struct logs library_logs;
    ask(&library_logs);
    snprintf(ptx, sizeof ptx, GOOD_PTX, run + 1); /* another text: compiled again, not found in a cache */
    CUlibrary library;
    CK(cuLibraryLoadData(&library, ptx, library_logs.options, library_logs.values, 6, NULL, NULL, 0));
    report("library", &library_logs);
    printf("library info log equals the module's: %s\n", strcmp(library_logs.info, module_logs.info) == 0 ? "yes" : "no");
    CK(cuLibraryUnload(library));
    printf("jit_logs: done\n");
    return 0;
}
