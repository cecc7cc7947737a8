/* IVCUDA_STATS's call profile (call_profile.c) against the in-process fake server: a call the
 * server answers, one the cache answers and records queued on the ring each land in their
 * function's line, and nothing is counted while the setting is off. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "call_profile.h"
#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"

CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr, const void *, size_t, CUstream);
CUresult cuMemcpyDtoH_v2(void *, CUdeviceptr, size_t);

static char text[16384];

static const char *line_of(const char *name)
{
    ivc_profile_format(text, sizeof text, 100);
    static char line[512];
    for (char *at = text; at != NULL && *at != '\0';) {
        char *end = strchr(at, '\n');
        size_t n = end == NULL ? strlen(at) : (size_t)(end - at);
        if (strncmp(at, name, strlen(name)) == 0 && at[strlen(name)] == ':') {
            memcpy(line, at, n < sizeof line - 1 ? n : sizeof line - 1);
            line[n < sizeof line - 1 ? n : sizeof line - 1] = '\0';
            return line;
        }
        at = end == NULL ? NULL : end + 1;
    }
    return "";
}

int main(void)
{
    const char *path = fake_region_start();
    ivc_profile_on = 0;
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(line_of("cuInit")[0] == '\0'); /* off: nothing counted */

    ivc_profile_on = 1;
    int value = 0;
    CHECK(cuDeviceGetAttribute(&value, 5, 0) == CUDA_SUCCESS);
    CHECK(cuDeviceGetAttribute(&value, 5, 0) == CUDA_SUCCESS);
    const char *attribute = line_of("cuDeviceGetAttribute");
    CHECK(strstr(attribute, ": 1 answered by the server") != NULL);
    CHECK(strstr(attribute, "; 1 from the cache") != NULL);

    CUdeviceptr d = 0;
    unsigned char bytes[64] = {1}, back[64];
    CHECK(cuMemAlloc_v2(&d, sizeof bytes) == CUDA_SUCCESS);
    for (int i = 0; i < 3; i++)
        CHECK(cuMemcpyHtoDAsync_v2(d, bytes, sizeof bytes, NULL) == CUDA_SUCCESS);
    CHECK(cuMemcpyDtoH_v2(back, d, sizeof back) == CUDA_SUCCESS);
    CHECK(strstr(line_of("ivc_memcpy_htod_inline_async"), ": 3 queued") != NULL);
    CHECK(strstr(line_of("ivc_mem_alloc"), ": 1 answered by the server") != NULL);

    /* the most waited-for first: the first line's total is at least the second's */
    ivc_profile_format(text, sizeof text, 2);
    CHECK(strchr(text, '\n') != NULL && strchr(strchr(text, '\n') + 1, '\n') != NULL);
    unlink(path);
    return check_summary("test_call_profile");
}
