/* Module loading: the image's size is found from its format (fat binary wrapper, fat
 * binary, ELF cubin, PTX text), its FNV-1a 64 hash names it, and each image travels to
 * the server once per process (streamed through the window like a host→device copy). */
#include <pthread.h>
#include <stdlib.h>

#include "hash.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "jit_logs.h"
#include "log.h"
#include "memory.h"
#include "module.h"

#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define FATBIN_MAGIC 0xBA55ED50u
#define MAX_IMAGE_SIZE (1ULL << 32)

static size_t fatbin_size(const uint8_t *p)
{
    uint16_t header_size;
    uint64_t fat_size;
    memcpy(&header_size, p + 6, 2);
    memcpy(&fat_size, p + 8, 8);
    if (fat_size > MAX_IMAGE_SIZE)
        return 0;
    return (size_t)header_size + (size_t)fat_size;
}

static uint64_t max64(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* The end of the furthest of: the section header table, the program header table,
 * every section with file bytes, every segment. */
static size_t elf_size(const uint8_t *p)
{
    if (p[4] != 2) /* ELFCLASS64 only: cubins are 64-bit */
        return 0;
    uint64_t phoff = ivc_read64(p + 0x20), shoff = ivc_read64(p + 0x28);
    uint16_t phentsize, phnum, shentsize, shnum;
    memcpy(&phentsize, p + 0x36, 2);
    memcpy(&phnum, p + 0x38, 2);
    memcpy(&shentsize, p + 0x3a, 2);
    memcpy(&shnum, p + 0x3c, 2);
    if (phoff > MAX_IMAGE_SIZE || shoff > MAX_IMAGE_SIZE || (phnum && phentsize < 0x38) || (shnum && shentsize < 0x40))
        return 0;
    uint64_t end = 0x40;
    end = max64(end, phoff + (uint64_t)phnum * phentsize);
    end = max64(end, shoff + (uint64_t)shnum * shentsize);
    for (uint16_t i = 0; i < shnum; i++) {
        const uint8_t *sh = p + shoff + (uint64_t)i * shentsize;
        uint32_t type = ivc_read32(sh + 4);
        uint64_t offset = ivc_read64(sh + 0x18), size = ivc_read64(sh + 0x20);
        if (type != 8 /* SHT_NOBITS */ && offset <= MAX_IMAGE_SIZE && size <= MAX_IMAGE_SIZE)
            end = max64(end, offset + size);
    }
    for (uint16_t i = 0; i < phnum; i++) {
        const uint8_t *ph = p + phoff + (uint64_t)i * phentsize;
        uint64_t offset = ivc_read64(ph + 0x08), size = ivc_read64(ph + 0x20);
        if (offset <= MAX_IMAGE_SIZE && size <= MAX_IMAGE_SIZE)
            end = max64(end, offset + size);
    }
    return end > MAX_IMAGE_SIZE ? 0 : (size_t)end;
}

/* Images whose pointer this returns get sent from: for a wrapper, the fat binary. */
static const void *image_bytes(const void *image)
{
    const uint8_t *p = image;
    if (ivc_read32(p) == FATBIN_WRAPPER_MAGIC) {
        const void *data;
        memcpy(&data, p + 8, sizeof data);
        return data;
    }
    return image;
}

size_t ivc_image_size(const void *image)
{
    if (image == NULL)
        return 0;
    const uint8_t *p = image_bytes(image);
    if (p == NULL)
        return 0;
    if (ivc_read32(p) == FATBIN_MAGIC)
        return fatbin_size(p);
    if (p[0] == 0x7f && p[1] == 'E' && p[2] == 'L' && p[3] == 'F')
        return elf_size(p);
    return strlen((const char *)p) + 1;
}

/* ---- hashes this process already sent ---- */

static pthread_mutex_t sent_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *sent;
static size_t sent_count, sent_capacity;

static int was_sent(uint64_t hash)
{
    pthread_mutex_lock(&sent_lock);
    int found = 0;
    for (size_t i = 0; i < sent_count && !found; i++)
        found = sent[i] == hash;
    pthread_mutex_unlock(&sent_lock);
    return found;
}

static void mark_sent(uint64_t hash)
{
    pthread_mutex_lock(&sent_lock);
    if (sent_count == sent_capacity) {
        size_t capacity = sent_capacity ? sent_capacity * 2 : 16;
        uint64_t *grown = realloc(sent, capacity * sizeof *grown);
        if (grown != NULL) {
            sent = grown;
            sent_capacity = capacity;
        }
    }
    if (sent_count < sent_capacity)
        sent[sent_count++] = hash;
    pthread_mutex_unlock(&sent_lock);
}

void ivc_module_forget_process(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    sent_lock = fresh;
    free(sent);
    sent = NULL;
    sent_count = sent_capacity = 0;
}

/* library: ivc_library_load instead of ivc_module_load (the same request, the same images). */
static CUresult send_image(int library, void **handle, uint64_t hash, const void *bytes, size_t size,
                           const uint64_t *jit, size_t jit_size)
{
    struct ivc_call call;
    CUresult r = library ? ivc_begin(&call, IVC_OP_ivc_library_load, "ivc_library_load")
                         : ivc_begin(&call, IVC_OP_ivc_module_load, "ivc_module_load");
    if (r != CUDA_SUCCESS)
        return r;
    ivc_put_u64(&call, hash);
    ivc_put_u64(&call, size);
    ivc_put_u64(&call, 1);
    ivc_put_buf(&call, jit, jit_size);
    ivc_put_u64(&call, jit_size);
    r = ivc_publish(&call);
    if (r == CUDA_SUCCESS)
        r = ivc_stream_to_server(&call, bytes, size);
    if (r == CUDA_SUCCESS)
        r = ivc_await(&call);
    if (ivc_response(&call)) {
        ivc_get_handle(&call, handle);
        r = ivc_finish(&call, r);
    }
    return r;
}

CUresult ivc_load_image(int library, void **handle, const void *image, const uint64_t *jit, size_t jit_size,
                        const char *name, const struct ivc_jit_logs *logs, void **values)
{
    if (handle == NULL || image == NULL)
        return ivc_null_argument(name, handle == NULL ? (library ? "library" : "module") : "image");
    size_t size = ivc_image_size(image);
    if (size == 0) {
        ivc_log("%s: cannot tell the size of the image (not a fat binary, 64-bit ELF or PTX)", name);
        return CUDA_ERROR_INVALID_IMAGE;
    }
    const void *bytes = image_bytes(image);
    uint64_t hash = ivc_fnv1a64(bytes, size);
    void *loaded = NULL;
    if (was_sent(hash)) {
        CUresult r = library ? ivc_library_load((CUlibrary *)&loaded, hash, size, 0, jit, jit_size)
                             : ivc_module_load((CUmodule *)&loaded, hash, size, 0, jit, jit_size);
        if (r != CUDA_ERROR_NOT_FOUND) {
            if (r == CUDA_SUCCESS)
                *handle = loaded;
            if (logs != NULL)
                ivc_jit_logs_after_load(logs, values);
            return r;
        }
    }
    CUresult r = send_image(library, &loaded, hash, bytes, size, jit, jit_size);
    if (r == CUDA_SUCCESS) {
        mark_sent(hash);
        *handle = loaded;
    }
    if (logs != NULL && r != CUDA_ERROR_DEVICE_UNAVAILABLE) /* unavailable: the server may not have answered */
        ivc_jit_logs_after_load(logs, values);
    ivc_trace("%s: %zu-byte image %016llx -> %d", name, size, (unsigned long long)hash, r);
    return r;
}

IVC_EXPORT CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    return ivc_load_image(0, (void **)module, image, NULL, 0, "cuModuleLoadData", NULL, NULL);
}
IVC_ALIASES_cuModuleLoadData

IVC_EXPORT CUresult cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin)
{
    return ivc_load_image(0, (void **)module, fatCubin, NULL, 0, "cuModuleLoadFatBinary", NULL, NULL);
}
IVC_ALIASES_cuModuleLoadFatBinary

static int pointer_valued(CUjit_option option)
{
    switch (option) {
    case CU_JIT_WALL_TIME:
    case CU_JIT_INFO_LOG_BUFFER:
    case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
    case CU_JIT_ERROR_LOG_BUFFER:
    case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
    case CU_JIT_GLOBAL_SYMBOL_NAMES:
    case CU_JIT_GLOBAL_SYMBOL_ADDRESSES:
    case CU_JIT_REFERENCED_KERNEL_NAMES:
    case CU_JIT_REFERENCED_VARIABLE_NAMES:
        return 1;
    default:
        return 0;
    }
}

/* Scalar options travel as (option, value) pairs; log buffers get empty strings here. */
CUresult ivc_jit_pairs(uint64_t jit[2 * IVC_MAX_JIT_OPTIONS], size_t *count, unsigned int numOptions,
                       CUjit_option *options, void **optionValues)
{
    size_t pairs = 0;
    if (numOptions > 0 && (options == NULL || optionValues == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    if (numOptions > IVC_MAX_JIT_OPTIONS)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numOptions; i++) {
        if (options[i] == CU_JIT_INFO_LOG_BUFFER || options[i] == CU_JIT_ERROR_LOG_BUFFER) {
            if (optionValues[i] != NULL)
                ((char *)optionValues[i])[0] = '\0';
        } else if (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
                   || options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
            optionValues[i] = (void *)(uintptr_t)0; /* bytes written to the log: none */
        } else if (!pointer_valued(options[i])) {
            jit[2 * pairs] = (uint64_t)options[i];
            jit[2 * pairs + 1] = (uint64_t)(uintptr_t)optionValues[i];
            pairs++;
        }
    }
    *count = pairs;
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                       CUjit_option *options, void **optionValues)
{
    uint64_t jit[2 * IVC_MAX_JIT_OPTIONS];
    size_t pairs = 0;
    /* read before ivc_jit_pairs answers the outputs empty in the program's arrays */
    struct ivc_jit_logs logs;
    int asked = ivc_jit_logs_scan(&logs, numOptions, options, optionValues);
    CUresult r = ivc_jit_pairs(jit, &pairs, numOptions, options, optionValues);
    if (r != CUDA_SUCCESS)
        return r;
    ivc_jit_logs_pairs(&logs, jit, &pairs, IVC_MAX_JIT_OPTIONS);
    return ivc_load_image(0, (void **)module, image, jit, pairs * 16, "cuModuleLoadDataEx", asked ? &logs : NULL,
                          optionValues);
}
IVC_ALIASES_cuModuleLoadDataEx

/* A global's address is device memory: noted so that cuMemcpy (unified addressing) copies
 * to and from it as the driver does, until the module goes. */
IVC_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    if (name == NULL)
        return ivc_null_argument("cuModuleGetGlobal_v2", "name");
    CUdeviceptr address = 0;
    size_t size = 0;
    CUresult r = ivc_module_get_global(&address, &size, hmod, name);
    if (r == CUDA_SUCCESS) {
        ivc_memory_add_global(hmod, address, size);
        if (dptr != NULL)
            *dptr = address;
        if (bytes != NULL)
            *bytes = size;
    }
    return r;
}
IVC_ALIASES_cuModuleGetGlobal_v2

IVC_EXPORT CUresult cuModuleUnload(CUmodule hmod)
{
    CUresult r = ivc_module_unload(hmod);
    if (r == CUDA_SUCCESS)
        ivc_memory_forget_module(hmod);
    return r;
}
IVC_ALIASES_cuModuleUnload
