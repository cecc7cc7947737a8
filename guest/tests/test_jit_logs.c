/* The linker's JIT logs on the guest side, against the in-process fake server: the log sizes and
 * the wall time travel as options, the program's buffers are filled after each call of the link
 * state (cut to their sizes, NUL-terminated), and the size and wall-time options are set as the
 * driver sets them. */
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

int main(void)
{
    char path[] = "/tmp/ivcuda-test-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    fake_server_start(path);
    setenv("IVCUDA_REGION", path, 1);
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_logs_and_wall_time();
    test_wall_time_alone();
    unlink(path);
    return check_summary("test_jit_logs");
}
