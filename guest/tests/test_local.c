/* Calls answered without a server: error texts, the driver version, image sizes; and which
 * names the built libcuda.so.1 exports. (cuGetProcAddress: test_proc_address.c.) */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "module.h"

CUresult cuGetErrorName(CUresult, const char **);
CUresult cuGetErrorString(CUresult, const char **);
CUresult cuDriverGetVersion(int *);
CUresult cuCtxCreate_v3(CUcontext *, CUexecAffinityParam *, int, unsigned, CUdevice);
CUresult cuCtxCreate_v4(CUcontext *, CUctxCreateParams *, unsigned, CUdevice);

static void test_errors_and_version(void)
{
    const char *text = NULL;
    CHECK(cuGetErrorName(801, &text) == 0 && strcmp(text, "CUDA_ERROR_NOT_SUPPORTED") == 0);
    CHECK(cuGetErrorName(46, &text) == 0 && strcmp(text, "CUDA_ERROR_DEVICE_UNAVAILABLE") == 0);
    CHECK(cuGetErrorName(999, &text) == 0 && strcmp(text, "CUDA_ERROR_UNKNOWN") == 0);
    CHECK(cuGetErrorString(0, &text) == 0 && strcmp(text, "no error") == 0);
    CHECK(cuGetErrorName(12345, &text) == CUDA_ERROR_INVALID_VALUE && text == NULL);
    int version = 0;
    CHECK(cuDriverGetVersion(&version) == 0 && version == IVC_API_VERSION);
    CHECK(cuDriverGetVersion(NULL) == CUDA_ERROR_INVALID_VALUE);
    CUcontext context;
    /* cuCtxCreate_v4: CIG or execution affinity cannot work remotely; both at once is invalid */
    CUctxCigParam cig = {1, &version};
    CUctxCreateParams with_cig = {NULL, 0, &cig}, with_affinity = {(CUexecAffinityParam *)&version, 1, NULL},
                      with_both = {(CUexecAffinityParam *)&version, 1, &cig};
    CHECK(cuCtxCreate_v4(&context, &with_cig, 0, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(cuCtxCreate_v4(&context, &with_affinity, 0, 0) == CUDA_ERROR_NOT_SUPPORTED);
    CHECK(cuCtxCreate_v4(&context, &with_both, 0, 0) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuCtxCreate_v3(&context, (CUexecAffinityParam *)&version, 1, 0, 0) == CUDA_ERROR_NOT_SUPPORTED);
}

static void test_image_sizes(void)
{
    CHECK(ivc_image_size("// ptx\n.version 8.0\n") == strlen("// ptx\n.version 8.0\n") + 1);
    uint8_t fatbin[200] = {0};
    uint32_t magic = 0xBA55ED50u;
    uint16_t version = 1, header = 16;
    uint64_t fat = 123;
    memcpy(fatbin, &magic, 4);
    memcpy(fatbin + 4, &version, 2);
    memcpy(fatbin + 6, &header, 2);
    memcpy(fatbin + 8, &fat, 8);
    CHECK(ivc_image_size(fatbin) == 139);
    struct {
        uint32_t magic, version;
        const void *data;
        void *unused;
    } wrapper = {0x466243b1u, 1, fatbin, NULL};
    CHECK(ivc_image_size(&wrapper) == 139);

    /* ELF64: 2 program headers at 64, 3 section headers at 1000, a section reaching 1500 */
    static uint8_t elf[4096];
    memset(elf, 0, sizeof elf);
    memcpy(elf, "\x7f" "ELF", 4);
    elf[4] = 2;
    uint64_t phoff = 64, shoff = 1000;
    uint16_t phentsize = 56, phnum = 2, shentsize = 64, shnum = 3;
    memcpy(elf + 0x20, &phoff, 8);
    memcpy(elf + 0x28, &shoff, 8);
    memcpy(elf + 0x36, &phentsize, 2);
    memcpy(elf + 0x38, &phnum, 2);
    memcpy(elf + 0x3a, &shentsize, 2);
    memcpy(elf + 0x3c, &shnum, 2);
    CHECK(ivc_image_size(elf) == 1000 + 3 * 64); /* the section header table's end */
    uint64_t offset = 1300, size = 200;
    uint32_t progbits = 1, nobits = 8;
    memcpy(elf + 1000 + 64 + 4, &progbits, 4);
    memcpy(elf + 1000 + 64 + 0x18, &offset, 8);
    memcpy(elf + 1000 + 64 + 0x20, &size, 8);
    CHECK(ivc_image_size(elf) == 1500);
    uint64_t big = 100000; /* NOBITS sections occupy no file bytes */
    memcpy(elf + 1000 + 128 + 4, &nobits, 4);
    memcpy(elf + 1000 + 128 + 0x18, &offset, 8);
    memcpy(elf + 1000 + 128 + 0x20, &big, 8);
    CHECK(ivc_image_size(elf) == 1500);
    uint64_t segment_offset = 0, segment_size = 2000; /* a segment reaching 2000 */
    memcpy(elf + 64 + 56 + 0x08, &segment_offset, 8);
    memcpy(elf + 64 + 56 + 0x20, &segment_size, 8);
    CHECK(ivc_image_size(elf) == 2000);
    CHECK(ivc_image_size(NULL) == 0);
}

static void test_exported_names(const char *library)
{
    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    CHECK(handle != NULL);
    if (handle == NULL) {
        fprintf(stderr, "%s\n", dlerror());
        return;
    }
    const char *present[] = {"cuInit", "cuMemAlloc", "cuMemAlloc_v2", "cuMemcpyHtoD_v2_ptds", "cuMemcpyAsync_ptsz",
                             "cuLaunchKernel_ptsz", "cuStreamSynchronize_ptsz", "cuMemsetD8_v2_ptds",
                             "cuGetProcAddress", "cuGetProcAddress_v2", "cuArrayCreate", "cuCtxCreate_v4",
                             "cuTensorMapEncodeTiled", "cuGetExportTable"};
    for (size_t i = 0; i < sizeof present / sizeof present[0]; i++) {
        int found = dlsym(handle, present[i]) != NULL;
        CHECK(found);
        if (!found)
            fprintf(stderr, "  missing %s\n", present[i]);
    }
    CHECK(dlsym(handle, "ivc_region_check") == NULL);
    CHECK(dlsym(handle, "ivc_begin") == NULL);
    CHECK(dlsym(handle, "cuMemAlloc") == dlsym(handle, "cuMemAlloc_v2"));
    dlclose(handle);
}

int main(int argc, char **argv)
{
    test_errors_and_version();
    test_image_sizes();
    test_exported_names(argc > 1 ? argv[1] : "target/libcuda.so.1");
    return check_summary("test_local");
}
