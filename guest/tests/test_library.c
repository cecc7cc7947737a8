/* Libraries and kernels on the guest side, against the in-process fake server: images shared
 * with modules (sent once), files read and sent, library options, kernels enumerated in pieces
 * that fit the response area, names copied once. */
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
    CHECK(cuLibraryEnumerateKernels(kernels, 600, (CUlibrary)(uintptr_t)0x1E00000100000001ULL) == CUDA_SUCCESS);
    CHECK(fake.enumerate_calls == 2); /* 600 handles do not fit one response area */
    CHECK((uint64_t)(uintptr_t)kernels[0] == FAKE_FUNCTION && (uint64_t)(uintptr_t)kernels[599] == FAKE_FUNCTION + 599);
    const char *a = NULL, *b = NULL;
    CHECK(cuKernelGetName(&a, kernels[3]) == CUDA_SUCCESS && a != NULL && strcmp(a, "_Z4funcv") == 0);
    CHECK(cuKernelGetName(&b, kernels[3]) == CUDA_SUCCESS && b == a);
    CHECK(fake.name_calls == 1); /* kept */
}

int main(void)
{
    char path[] = "/tmp/ivcuda-test-XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    fake_server_start(path);
    setenv("IVCUDA_REGION", path, 1);
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_images_are_shared_with_modules();
    test_library_options();
    test_files();
    test_enumerate_and_names();
    unlink(path);
    return check_summary("test_library");
}
