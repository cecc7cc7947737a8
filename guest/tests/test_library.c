/* Libraries and kernels on the guest side, against the in-process fake server: images shared
 * with modules (sent once), files read and sent, library options, kernels enumerated in pieces
 * that fit the response area, names copied once, launches with attributes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"

CUresult cuInit(unsigned);
CUresult cuModuleLoadData(CUmodule *, const void *);
CUresult cuModuleLoad(CUmodule *, const char *);
CUresult cuLibraryLoadData(CUlibrary *, const void *, CUjit_option *, void **, unsigned, CUlibraryOption *, void **,
                           unsigned);
CUresult cuLibraryLoadFromFile(CUlibrary *, const char *, CUjit_option *, void **, unsigned, CUlibraryOption *,
                               void **, unsigned);
CUresult cuLibraryEnumerateKernels(CUkernel *, unsigned, CUlibrary);
CUresult cuLibraryGetUnifiedFunction(void **, CUlibrary, const char *);
CUresult cuKernelGetName(const char **, CUkernel);

static void test_images_are_shared_with_modules(void)
{
    static const char ptx[] = "//ptx library test\n.version 8.0\n";
    CUmodule module = NULL;
    CHECK(cuModuleLoadData(&module, ptx) == CUDA_SUCCESS);
    int received = fake.images_received;
    CUlibrary library = NULL;
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS);
    CHECK(library != NULL && (uint64_t)(uintptr_t)library >> 56 == 30);
    CHECK(fake.images_received == received); /* named by its hash: not sent again */
    CHECK(fake.library_loads == 1);
}

static void test_library_options(void)
{
    static const char ptx[] = "//ptx options\n";
    CUlibrary library = NULL;
    CUlibraryOption preserved = CU_LIBRARY_BINARY_IS_PRESERVED, unknown = 7,
                    table = CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE;
    void *one = (void *)1;
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, &preserved, &one, 1) == CUDA_SUCCESS);
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, &table, &one, 1) == CUDA_SUCCESS);
    /* as cuBLASLt loads its unpacked kernel images: the option without an array of values */
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, &preserved, NULL, 1) == CUDA_SUCCESS);
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, &table, NULL, 1) == CUDA_SUCCESS);
    int loads = fake.library_loads;
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, &unknown, &one, 1) == CUDA_ERROR_INVALID_VALUE);
    CHECK(cuLibraryLoadData(&library, ptx, NULL, NULL, 0, NULL, NULL, 1) == CUDA_ERROR_INVALID_VALUE);
    CHECK(fake.library_loads == loads); /* refused in the guest */
    void *fn = NULL;
    CHECK(cuLibraryGetUnifiedFunction(&fn, library, "f") == CUDA_ERROR_NOT_SUPPORTED);
}

static void test_files(void)
{
    char path[] = "/tmp/ivcuda-library-XXXXXX";
    int fd = mkstemp(path);
    static const char text[] = "//ptx from a file\n.version 8.0\n";
    CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    int received = fake.images_received;
    CUlibrary library = NULL;
    CHECK(cuLibraryLoadFromFile(&library, path, NULL, NULL, 0, NULL, NULL, 0) == CUDA_SUCCESS);
    CHECK(fake.images_received == received + 1 && fake.last_image_size == strlen(text) + 1);
    CUmodule module = NULL;
    CHECK(cuModuleLoad(&module, path) == CUDA_SUCCESS && module != NULL);
    CHECK(fake.images_received == received + 1); /* the same bytes: named by hash */
    unlink(path);
    CHECK(cuModuleLoad(&module, path) == 301); /* CUDA_ERROR_FILE_NOT_FOUND */
}

static void test_enumerate_and_names(void)
{
    static CUkernel kernels[600];
    CHECK(cuLibraryEnumerateKernels(kernels, 600, (CUlibrary)(uintptr_t)0x00001E0010000010ULL) == CUDA_SUCCESS);
    CHECK(fake.enumerate_calls == 2); /* 600 handles do not fit one response area */
    CHECK((uint64_t)(uintptr_t)kernels[0] == FAKE_FUNCTION && (uint64_t)(uintptr_t)kernels[599] == FAKE_FUNCTION + 599);
    const char *a = NULL, *b = NULL;
    CHECK(cuKernelGetName(&a, kernels[3]) == CUDA_SUCCESS && a != NULL && strcmp(a, "_Z4funcv") == 0);
    CHECK(cuKernelGetName(&b, kernels[3]) == CUDA_SUCCESS && b == a);
    CHECK(fake.name_calls == 1); /* kept */
}

CUresult cuLaunchCooperativeKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   CUstream, void **);
CUresult cuLaunchKernelEx(const CUlaunchConfig *, CUfunction, void **, void **);
CUresult cuCtxGetDevice(CUdevice *);

/* kernel(int a, double b, char c, void *p) in the fake server's layout */
static void test_launch_attributes(void)
{
    int a = 1;
    double b = 2;
    char c = 3;
    void *p = NULL;
    void *params[] = {&a, &b, &c, &p};
    CUdevice device;
    CUfunction f = (CUfunction)(uintptr_t)FAKE_FUNCTION;
    CHECK(cuLaunchCooperativeKernel(f, 5, 1, 1, 32, 1, 1, 0, NULL, params) == CUDA_SUCCESS);
    CHECK(cuCtxGetDevice(&device) == CUDA_SUCCESS); /* a sync call: the ring drains first */
    CHECK(fake.last_launch_grid_x == 5 && fake.last_launch_attrs == 1);
    CHECK(fake.last_launch_attr_id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && fake.last_launch_attr_value == 1);
    CHECK(fake.last_launch_size == 32 && fake.last_launch[0] == 1); /* packed as cuLaunchKernel packs */
    CUlaunchAttribute cluster[2];
    memset(cluster, 0, sizeof cluster);
    cluster[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    cluster[0].value.clusterDim.x = 2;
    cluster[0].value.clusterDim.y = cluster[0].value.clusterDim.z = 1;
    cluster[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    CUlaunchConfig config = {4, 1, 1, 64, 1, 1, 0, NULL, cluster, 2};
    CHECK(cuLaunchKernelEx(&config, f, params, NULL) == CUDA_SUCCESS);
    CHECK(cuCtxGetDevice(&device) == CUDA_SUCCESS); /* a sync call: the ring drains first */
    CHECK(fake.last_launch_attrs == 2 && fake.last_launch_attr_id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION);
    CHECK(fake.last_launch_attr_value == 2);
    config.numAttrs = 17; /* more than a launch may carry */
    CHECK(cuLaunchKernelEx(&config, f, params, NULL) == CUDA_ERROR_INVALID_VALUE);
    config.attrs = NULL;
    config.numAttrs = 1;
    CHECK(cuLaunchKernelEx(&config, f, params, NULL) == CUDA_ERROR_INVALID_VALUE);
}

CUresult cuLinkCreate_v2(unsigned, CUjit_option *, void **, CUlinkState *);
CUresult cuLinkAddData_v2(CUlinkState, CUjitInputType, void *, size_t, const char *, unsigned, CUjit_option *,
                          void **);
CUresult cuLinkAddFile_v2(CUlinkState, CUjitInputType, const char *, unsigned, CUjit_option *, void **);
CUresult cuLinkComplete(CUlinkState, void **, size_t *);
CUresult cuLinkDestroy(CUlinkState);

/* ptxjit's pattern: log buffers answered empty here, inputs sent, the image back in a buffer the
 * guest owns until cuLinkDestroy. */
static void test_linker(void)
{
    char info[64] = "x", error[64] = "x";
    CUjit_option options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER,
                              CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[] = {info, (void *)(uintptr_t)sizeof info, error, (void *)(uintptr_t)sizeof error};
    CUlinkState state = NULL;
    CHECK(cuLinkCreate_v2(4, options, values, &state) == CUDA_SUCCESS && state != NULL);
    CHECK(info[0] == 0 && error[0] == 0);
    static char first[10000];
    memset(first, 'p', sizeof first);
    CHECK(cuLinkAddData_v2(state, 1, first, sizeof first, "first.ptx", 0, NULL, NULL) == CUDA_SUCCESS);
    char path[] = "/tmp/ivcuda-link-XXXXXX";
    int fd = mkstemp(path);
    CHECK(write(fd, "qq", 2) == 2);
    close(fd);
    CHECK(cuLinkAddFile_v2(state, 1, path, 0, NULL, NULL) == CUDA_SUCCESS);
    unlink(path);
    void *cubin = NULL;
    size_t size = 0;
    CHECK(cuLinkComplete(state, &cubin, &size) == CUDA_SUCCESS);
    CHECK(size == sizeof first + 3 && cubin != NULL); /* the file travels NUL-terminated */
    CHECK(size == sizeof first + 3 && ((char *)cubin)[0] == 'p' && ((char *)cubin)[sizeof first] == 'q');
    CHECK(cuLinkDestroy(state) == CUDA_SUCCESS && fake.link_destroys == 1);
}

/* A function attribute read after its set is the new value: cuFuncGetAttribute is not answered
 * from the guest's cache of device facts (MAX_DYNAMIC_SHARED_SIZE_BYTES moves with a set). */
static void test_attribute_after_set(void)
{
    CUfunction f = (CUfunction)FAKE_FUNCTION;
    int v = 0;
    CHECK(cuFuncGetAttribute(&v, 8, f) == CUDA_SUCCESS && v == 1024);
    CHECK(cuFuncSetAttribute(f, 8, 2048) == CUDA_SUCCESS);
    CHECK(cuFuncGetAttribute(&v, 8, f) == CUDA_SUCCESS && v == 2048);
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_images_are_shared_with_modules();
    test_library_options();
    test_files();
    test_enumerate_and_names();
    test_launch_attributes();
    test_linker();
    test_attribute_after_set();
    unlink(path);
    return check_summary("test_library");
}
