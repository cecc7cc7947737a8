/* The JIT logs on the guest side, against the in-process fake server: the log sizes and the wall
 * time travel as options, the program's buffers are filled after each call of the link state, and
 * after a cuModuleLoadDataEx or cuLibraryLoadData (cut to their sizes, NUL-terminated), and the size
 * and wall-time options are set as the driver sets them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"

CUresult cuInit(unsigned);
CUresult cuLinkCreate_v2(unsigned, CUjit_option *, void **, CUlinkState *);
CUresult cuLinkAddData_v2(CUlinkState, CUjitInputType, void *, size_t, const char *, unsigned, CUjit_option *,
                          void **);
CUresult cuLinkComplete(CUlinkState, void **, size_t *);
CUresult cuLinkDestroy(CUlinkState);
CUresult cuModuleLoadDataEx(CUmodule *, const void *, unsigned, CUjit_option *, void **);
CUresult cuLibraryLoadData(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,
                           unsigned);

/* a scalar option that passes (LOG_VERBOSE in NVIDIA's cuda.h) */
#define LOG_VERBOSE ((CUjit_option)12)

static int sent(uint64_t option, uint64_t value)
{
    for (unsigned k = 0; k < fake.link_option_pairs; k++)
        if (fake.link_options[2 * k] == option && fake.link_options[2 * k + 1] == value)
            return 1;
    return 0;
}

static void test_logs_and_wall_time(void)
{
    char info[64] = "stale", error[8] = "stale";
    float unset = -1.0f;
    CUjit_option options[] = {CU_JIT_WALL_TIME, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                              CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, LOG_VERBOSE};
    void *values[] = {NULL, info, (void *)(uintptr_t)sizeof info, error, (void *)(uintptr_t)sizeof error,
                      (void *)(uintptr_t)1};
    memcpy(&values[0], &unset, sizeof unset);
    CUlinkState state = NULL;
    CHECK(cuLinkCreate_v2(6, options, values, &state) == CUDA_SUCCESS);
    CHECK(fake.link_option_pairs == 4);
    CHECK(sent(LOG_VERBOSE, 1) && sent(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, sizeof info) &&
          sent(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, sizeof error) && sent(CU_JIT_WALL_TIME, 0));
    CHECK(info[0] == '\0' && error[0] == '\0'); /* empty until the driver writes */

    strcpy(fake.link_log[0], "info    : 0 bytes gmem");
    strcpy(fake.link_log[1], "error   : far too long for eight bytes");
    static char ptx[100];
    memset(ptx, 'p', sizeof ptx);
    CHECK(cuLinkAddData_v2(state, 1, ptx, sizeof ptx, "a.ptx", 0, NULL, NULL) == CUDA_SUCCESS);
    CHECK(strcmp(info, "info    : 0 bytes gmem") == 0);
    CHECK(strcmp(error, "error  ") == 0); /* cut to the program's 8 bytes with the NUL */
    CHECK((uintptr_t)values[2] == strlen(fake.link_log[0]) + 1);
    CHECK((uintptr_t)values[4] == sizeof error); /* the driver's count, within the buffer */
    float wall = 0;
    memcpy(&wall, &values[0], sizeof wall);
    CHECK(wall == 2.5f); /* the float over the option's value, as cuda.h says */

    strcpy(fake.link_log[0], "info    : linked");
    void *cubin = NULL;
    size_t size = 0;
    CHECK(cuLinkComplete(state, &cubin, &size) == CUDA_SUCCESS);
    CHECK(strcmp(info, "info    : linked") == 0);
    CHECK(cuLinkDestroy(state) == CUDA_SUCCESS);
    strcpy(fake.link_log[0], "after destroy");
    memset(info, 'z', sizeof info);
    CHECK(cuLinkAddData_v2(state, 1, ptx, sizeof ptx, "b.ptx", 0, NULL, NULL) == CUDA_SUCCESS);
    CHECK(info[0] == 'z'); /* forgotten with the state: nothing written into the program's buffer */
}

static void test_wall_time_alone(void)
{
    CUjit_option options[] = {CU_JIT_WALL_TIME};
    void *values[] = {NULL};
    CUlinkState state = NULL;
    CHECK(cuLinkCreate_v2(1, options, values, &state) == CUDA_SUCCESS);
    CHECK(fake.link_option_pairs == 1 && sent(CU_JIT_WALL_TIME, 0));
    static char ptx[16] = "ptx";
    CHECK(cuLinkAddData_v2(state, 1, ptx, sizeof ptx, "c.ptx", 0, NULL, NULL) == CUDA_SUCCESS);
    float wall = 0;
    memcpy(&wall, &values[0], sizeof wall);
    CHECK(wall == 2.5f);
    CHECK(cuLinkDestroy(state) == CUDA_SUCCESS);
}

static int load_sent(uint64_t option, uint64_t value)
{
    for (unsigned k = 0; k < fake.load_option_pairs; k++)
        if (fake.load_options[2 * k] == option && fake.load_options[2 * k + 1] == value)
            return 1;
    return 0;
}

static void test_module_and_library_load_logs(void)
{
    char info[64] = "stale", error[8] = "stale";
    float unset = -1.0f;
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_WALL_TIME, LOG_VERBOSE};
    void *values[] = {info, (void *)(uintptr_t)sizeof info, error, (void *)(uintptr_t)sizeof error, NULL,
                      (void *)(uintptr_t)1};
    memcpy(&values[4], &unset, sizeof unset);
    strcpy(fake.load_log[0], "ptxas info    : Compiling entry function 'k' for 'sm_90a'");
    strcpy(fake.load_log[1], "ptxas error   : longer than eight bytes");
    static const char ptx[] = ".version 8.0\n.target sm_90\n// the module's PTX";
    CUmodule module = NULL;
    CHECK(cuModuleLoadDataEx(&module, ptx, 6, options, values) == CUDA_SUCCESS && module != NULL);
    CHECK(fake.load_option_pairs == 4);
    CHECK(load_sent(LOG_VERBOSE, 1) && load_sent(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, sizeof info) &&
          load_sent(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, sizeof error) && load_sent(CU_JIT_WALL_TIME, 0));
    CHECK(strcmp(info, "ptxas info    : Compiling entry function 'k' for 'sm_90a'") == 0);
    CHECK(strcmp(error, "ptxas e") == 0); /* cut to the program's 8 bytes with the NUL */
    CHECK((uintptr_t)values[1] == strlen(fake.load_log[0]) + 1);
    CHECK((uintptr_t)values[3] == sizeof error);
    float wall = 0;
    memcpy(&wall, &values[4], sizeof wall);
    CHECK(wall == 2.5f);

    /* the same options to cuLibraryLoadData, the second load of the image (its hash only) */
    strcpy(fake.load_log[0], "library info");
    fake.load_log[1][0] = '\0';
    values[1] = (void *)(uintptr_t)sizeof info;
    values[3] = (void *)(uintptr_t)sizeof error;
    CUlibrary library = NULL;
    CHECK(cuLibraryLoadData(&library, ptx, options, values, 6, NULL, NULL, 0) == CUDA_SUCCESS && library != NULL);
    CHECK(strcmp(info, "library info") == 0 && error[0] == '\0');
    CHECK((uintptr_t)values[1] == strlen("library info") + 1 && (uintptr_t)values[3] == 1);

    /* a load refused before it reached the server reads no logs: not the last load's */
    memset(info, 'z', sizeof info);
    info[sizeof info - 1] = '\0';
    CHECK(cuModuleLoadDataEx(&module, NULL, 6, options, values) == CUDA_ERROR_INVALID_VALUE);
    CHECK(info[0] == '\0' && info[1] == 'z'); /* answered empty, as before, and nothing read */
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_logs_and_wall_time();
    test_wall_time_alone();
    test_module_and_library_load_logs();
    unlink(path);
    return check_summary("test_jit_logs");
}
