/* Libraries and kernels (CUDA 12+; cudart 12/13 loads its fat binaries with cuLibraryLoadData):
 * images take the modules' path (module.c: sent once per process, kept by hash), files are read
 * here and loaded as data, globals count as device memory until the library goes, and the
 * driver's name strings are copied once per function and kept for the process's life. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "channel.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "jit_logs.h"
#include "log.h"
#include "memory.h"
#include "module.h"

/* A file is read whole before it is sent: the same bound as an image (the server's is lower). */
#define MAX_FILE_SIZE (1ULL << 31)
#define MAX_NAME 4096
#define IVC_FILE_NOT_FOUND 301 /* CUDA_ERROR_FILE_NOT_FOUND */

/* Library options: CU_LIBRARY_BINARY_IS_PRESERVED is a hint the server does not need (it keeps
 * its own copy of the image). The values array may be NULL: cuBLASLt loads its lazily unpacked
 * kernel images with {CU_LIBRARY_BINARY_IS_PRESERVED} and no values, and driver 580 takes that
 * (the H200 trace of PyTorch's bf16 GEMMs; refused, cuBLASLt kept the unpacked image without a
 * library and then looked its kernels up in a NULL one). CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE points into this
 * process, so the server's driver cannot be given it: it is left out (logged once), as is what it
 * serves (cuLibraryGetUnifiedFunction answers CUDA_ERROR_NOT_SUPPORTED); refusing it would refuse
 * every load of a runtime that passes one. Any other option: CUDA_ERROR_INVALID_VALUE. */
static CUresult check_library_options(CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                      unsigned int numLibraryOptions, const char *name)
{
    static atomic_int table_logged;
    if (numLibraryOptions > 0 && libraryOptions == NULL) {
        ivc_trace("%s: %u library options and no array of them -> CUDA_ERROR_INVALID_VALUE", name, numLibraryOptions);
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (unsigned i = 0; i < numLibraryOptions; i++) {
        if (libraryOptions[i] == CU_LIBRARY_BINARY_IS_PRESERVED)
            continue;
        if (libraryOptions[i] == CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE) {
            if (libraryOptionValues != NULL && libraryOptionValues[i] != NULL && atomic_exchange(&table_logged, 1) == 0)
                ivc_log("%s: the host universal function and data table stays in the guest (unified functions "
                        "are not remoted)", name);
            continue;
        }
        ivc_log("%s: library option %d is unknown (CUDA_ERROR_INVALID_VALUE)", name, libraryOptions[i]);
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

static CUresult load_library(CUlibrary *library, const void *code, CUjit_option *jitOptions, void **jitOptionsValues,
                             unsigned int numJitOptions, CUlibraryOption *libraryOptions, void **libraryOptionValues,
                             unsigned int numLibraryOptions, const char *name)
{
    uint64_t jit[2 * IVC_MAX_JIT_OPTIONS];
    size_t pairs = 0;
    CUresult r = check_library_options(libraryOptions, libraryOptionValues, numLibraryOptions, name);
    if (r != CUDA_SUCCESS)
        return r;
    /* read before ivc_jit_pairs answers the outputs empty in the program's arrays */
    struct ivc_jit_logs logs;
    int asked = ivc_jit_logs_scan(&logs, numJitOptions, jitOptions, jitOptionsValues);
    r = ivc_jit_pairs(jit, &pairs, numJitOptions, jitOptions, jitOptionsValues);
    if (r != CUDA_SUCCESS)
        return r;
    ivc_jit_logs_pairs(&logs, jit, &pairs, IVC_MAX_JIT_OPTIONS);
    return ivc_load_image(1, (void **)library, code, jit, pairs * 16, name, asked ? &logs : NULL, jitOptionsValues);
}

IVC_EXPORT CUresult cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                      void **jitOptionsValues, unsigned int numJitOptions,
                                      CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                      unsigned int numLibraryOptions)
{
    return load_library(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions,
                         libraryOptionValues, numLibraryOptions, "cuLibraryLoadData");
}
IVC_ALIASES_cuLibraryLoadData

/* The whole file, NUL-terminated (a PTX file is text): free()d by the caller. */
static CUresult read_file(const char *path, void **bytes, const char *name)
{
    if (path == NULL)
        return ivc_null_argument(name, "fileName");
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        ivc_log("%s: cannot open %s", name, path);
        return IVC_FILE_NOT_FOUND;
    }
    struct stat st;
    CUresult r = CUDA_SUCCESS;
    uint8_t *data = NULL;
    if (fstat(fileno(f), &st) != 0 || st.st_size <= 0 || (unsigned long long)st.st_size > MAX_FILE_SIZE) {
        ivc_log("%s: %s is empty, not a regular file or larger than %llu bytes", name, path, MAX_FILE_SIZE);
        r = CUDA_ERROR_INVALID_IMAGE;
    } else if ((data = malloc((size_t)st.st_size + 1)) == NULL) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else if (fread(data, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
        ivc_log("%s: cannot read %s", name, path);
        r = IVC_FILE_NOT_FOUND;
    }
    fclose(f);
    if (r != CUDA_SUCCESS) {
        free(data);
        return r;
    }
    data[st.st_size] = 0;
    *bytes = data;
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
                                          void **jitOptionsValues, unsigned int numJitOptions,
                                          CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                          unsigned int numLibraryOptions)
{
    void *code = NULL;
    CUresult r = read_file(fileName, &code, "cuLibraryLoadFromFile");
    if (r != CUDA_SUCCESS)
        return r;
    r = load_library(library, code, jitOptions, jitOptionsValues, numJitOptions, libraryOptions, libraryOptionValues,
                     numLibraryOptions, "cuLibraryLoadFromFile");
    free(code); /* the server keeps its own copy */
    return r;
}
IVC_ALIASES_cuLibraryLoadFromFile

IVC_EXPORT CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
    void *image = NULL;
    CUresult r = read_file(fname, &image, "cuModuleLoad");
    if (r != CUDA_SUCCESS)
        return r;
    r = ivc_load_image(0, (void **)module, image, NULL, 0, "cuModuleLoad", NULL, NULL);
    free(image);
    return r;
}
IVC_ALIASES_cuModuleLoad

IVC_EXPORT CUresult cuLibraryUnload(CUlibrary library)
{
    CUresult r = ivc_library_unload(library);
    if (r == CUDA_SUCCESS)
        ivc_memory_forget_module((CUmodule)library); /* its globals (handle ids are unique across kinds) */
    return r;
}
IVC_ALIASES_cuLibraryUnload

IVC_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUlibrary library, const char *name)
{
    if (name == NULL)
        return ivc_null_argument("cuLibraryGetGlobal", "name");
    CUdeviceptr address = 0;
    size_t size = 0;
    CUresult r = ivc_library_get_global(&address, &size, library, name);
    if (r == CUDA_SUCCESS) {
        ivc_memory_add_global((CUmodule)library, address, size);
        if (dptr != NULL)
            *dptr = address;
        if (bytes != NULL)
            *bytes = size;
    }
    return r;
}
IVC_ALIASES_cuLibraryGetGlobal

/* cuLibraryEnumerateKernels and cuModuleEnumerateFunctions ask in pieces that fit the response
 * area: `piece_of` asks `n` handles from index `first` on. */
typedef CUresult (*enumeration_piece)(uint64_t *out, uint32_t n, uint32_t first, const void *owner);

static CUresult enumerate_in_pieces(uint64_t *out, unsigned count, const void *owner, enumeration_piece piece_of)
{
    const struct ivc_region *region;
    CUresult r;
    if ((region = ivc_region(&r)) == NULL)
        return r;
    uint32_t piece = (region->response_area_size - 64) / 8;
    for (unsigned done = 0; done < count;) {
        uint32_t n = count - done < piece ? count - done : piece;
        r = piece_of(out + done, n, done, owner);
        if (r != CUDA_SUCCESS)
            return r;
        done += n;
    }
    return CUDA_SUCCESS;
}

static CUresult kernels_piece(uint64_t *out, uint32_t n, uint32_t first, const void *library)
{
    return ivc_library_enumerate_kernels(out, n, first, (CUlibrary)library);
}

static CUresult functions_piece(uint64_t *out, uint32_t n, uint32_t first, const void *module)
{
    return ivc_module_enumerate_functions(out, n, first, (CUmodule)module);
}

IVC_EXPORT CUresult cuLibraryEnumerateKernels(CUkernel *kernels, unsigned int numKernels, CUlibrary lib)
{
    if (kernels == NULL)
        return ivc_null_argument("cuLibraryEnumerateKernels", "kernels");
    return enumerate_in_pieces((uint64_t *)kernels, numKernels, lib, kernels_piece);
}
IVC_ALIASES_cuLibraryEnumerateKernels

IVC_EXPORT CUresult cuModuleEnumerateFunctions(CUfunction *functions, unsigned int numFunctions, CUmodule mod)
{
    if (functions == NULL)
        return ivc_null_argument("cuModuleEnumerateFunctions", "functions");
    return enumerate_in_pieces((uint64_t *)functions, numFunctions, mod, functions_piece);
}
IVC_ALIASES_cuModuleEnumerateFunctions

IVC_EXPORT CUresult cuLibraryGetUnifiedFunction(void **fptr, CUlibrary library, const char *symbol)
{
    (void)library;
    if (fptr == NULL || symbol == NULL)
        return ivc_null_argument("cuLibraryGetUnifiedFunction", fptr == NULL ? "fptr" : "symbol");
    ivc_log("cuLibraryGetUnifiedFunction(%s): a host function of the server's process cannot run in the guest "
            "(CUDA_ERROR_NOT_SUPPORTED)", symbol);
    return CUDA_ERROR_NOT_SUPPORTED;
}
IVC_ALIASES_cuLibraryGetUnifiedFunction

/* ---- names: copied once per function handle, kept for the process's life ---- */

struct name {
    struct name *next;
    CUfunction function;
    char text[];
};

static pthread_mutex_t names_lock = PTHREAD_MUTEX_INITIALIZER;
static struct name *names;

static CUresult function_name(const char **out, CUfunction f, const char *caller)
{
    if (out == NULL)
        return ivc_null_argument(caller, "name");
    pthread_mutex_lock(&names_lock);
    for (struct name *n = names; n != NULL; n = n->next) {
        if (n->function == f) {
            *out = n->text;
            pthread_mutex_unlock(&names_lock);
            return CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&names_lock);
    char buffer[MAX_NAME];
    CUresult r = ivc_function_name(buffer, sizeof buffer, f);
    if (r != CUDA_SUCCESS)
        return r;
    buffer[sizeof buffer - 1] = 0;
    size_t length = strlen(buffer);
    struct name *n = malloc(sizeof *n + length + 1);
    if (n == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
    n->function = f;
    memcpy(n->text, buffer, length + 1);
    pthread_mutex_lock(&names_lock);
    n->next = names;
    names = n;
    pthread_mutex_unlock(&names_lock);
    *out = n->text;
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuKernelGetName(const char **name, CUkernel hfunc)
{
    return function_name(name, (CUfunction)hfunc, "cuKernelGetName");
}
IVC_ALIASES_cuKernelGetName

IVC_EXPORT CUresult cuFuncGetName(const char **name, CUfunction hfunc)
{
    return function_name(name, hfunc, "cuFuncGetName");
}
IVC_ALIASES_cuFuncGetName
