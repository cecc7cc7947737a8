/* The guest NVML's session: it reaches the server through the guest libcuda.so.1's transport (the
 * private export table of include/ivc_nvml_table.h), never through one of its own, so the region,
 * channels, hello and reclaim are libcuda's. nvmlInit calls cuInit(0) (libcuda's calls need it);
 * no context is made. The device's strings are asked once, at the first nvmlInit. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml_session.h"

/* CUresult values the transport may answer (cuda.h) */
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_DEVICE_UNAVAILABLE 46
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_NOT_SUPPORTED 801

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int opened;            /* nvmlInit calls not yet shut down */
static unsigned device_count; /* 0 or 1 */
static const struct ivc_nvml_table *table;
static struct nvmlDevice_st the_device;

static void debug(const char *what, int code)
{
    const char *d = getenv("IVCUDA_DEBUG");
    if (d != NULL && d[0] != '\0' && strcmp(d, "0") != 0)
        fprintf(stderr, "ivcuda-nvml: %s (%d)\n", what, code);
}

/* The nearest NVML answer to a transport failure. */
static nvmlReturn_t from_transport(int cu)
{
    switch (cu) {
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_NO_DEVICE:
        return NVML_ERROR_DRIVER_NOT_LOADED;
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
        return NVML_ERROR_GPU_IS_LOST;
    case CUDA_ERROR_NOT_SUPPORTED: /* a server without these operations */
        return NVML_ERROR_NOT_SUPPORTED;
    default:
        return NVML_ERROR_UNKNOWN;
    }
}

/* libcuda.so.1 (ours: only it answers the table's UUID) and its table. */
static nvmlReturn_t find_table(void)
{
    if (table != NULL)
        return NVML_SUCCESS;
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (cuda == NULL) {
        debug("libcuda.so.1 cannot be loaded", 0);
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    }
    int (*cu_init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
    int (*get_table)(const void **, const void *) = (int (*)(const void **, const void *))dlsym(cuda, "cuGetExportTable");
    if (cu_init == NULL || get_table == NULL) {
        debug("libcuda.so.1 lacks cuInit or cuGetExportTable", 0);
        return NVML_ERROR_LIBRARY_NOT_FOUND;
    }
    int r = cu_init(0);
    if (r != 0) {
        debug("cuInit failed", r);
        return from_transport(r);
    }
    static const unsigned char uuid[16] = IVC_NVML_TABLE_UUID;
    const void *t = NULL;
    r = get_table(&t, uuid);
    if (r != 0 || t == NULL || ((const struct ivc_nvml_table *)t)->size < sizeof(struct ivc_nvml_table)) {
        debug("libcuda.so.1 is not ivcuda's (no NVML table)", r);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    table = t;
    return NVML_SUCCESS;
}

/* Called with the transport's result once the call has returned (so that status is its out-value). */
static nvmlReturn_t answer(int cu, const int *status)
{
    return cu != 0 ? from_transport(cu) : (nvmlReturn_t)*status;
}

nvmlReturn_t ivc_nvml_get_string(uint32_t what, char *value, unsigned capacity)
{
    if (capacity > IVC_NVML_MAX_STRING)
        capacity = IVC_NVML_MAX_STRING;
    if (capacity == 0)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memset(value, 0, capacity);
    int status = NVML_ERROR_UNKNOWN;
    nvmlReturn_t r = answer(table->string(&status, what, value, capacity), &status);
    value[capacity - 1] = '\0'; /* whatever came, a C string */
    return r;
}

nvmlReturn_t ivc_nvml_get_value(uint32_t what, uint32_t arg, uint64_t *value)
{
    int status = NVML_ERROR_UNKNOWN;
    *value = 0;
    return answer(table->value(&status, value, what, arg), &status);
}

nvmlReturn_t ivc_nvml_get_memory(uint64_t *total, uint64_t *reserved, uint64_t *free, uint64_t *used)
{
    int status = NVML_ERROR_UNKNOWN;
    return answer(table->memory(&status, total, reserved, free, used), &status);
}

nvmlReturn_t ivc_nvml_get_processes(uint32_t *count, uint64_t *entries, unsigned capacity)
{
    int status = NVML_ERROR_UNKNOWN;
    unsigned words = 2 * capacity > IVC_NVML_MAX_PROCESS_WORDS ? IVC_NVML_MAX_PROCESS_WORDS : 2 * capacity;
    memset(entries, 0, sizeof(uint64_t) * 2 * capacity);
    *count = 0;
    return answer(table->processes(&status, count, entries, words), &status);
}

int ivc_nvml_parse_bus_id(const char *text, unsigned *domain, unsigned *bus, unsigned *device, unsigned *function)
{
    unsigned d = 0, b = 0, v = 0, f = 0;
    char tail = 0;
    int n = sscanf(text, "%x:%x:%x.%x%c", &d, &b, &v, &f, &tail);
    if (n < 3 || n > 4) {
        /* bus:device.function without a domain */
        n = sscanf(text, "%x:%x.%x%c", &b, &v, &f, &tail);
        if (n != 3)
            return 0;
        d = 0;
    }
    if (b > 0xff || v > 0x1f || f > 7)
        return 0;
    *domain = d;
    *bus = b;
    *device = v;
    *function = f;
    return 1;
}

/* The device's strings, once (they identify it; they do not change). */
static nvmlReturn_t describe_device(void)
{
    struct nvmlDevice_st d;
    memset(&d, 0, sizeof d);
    nvmlReturn_t r = ivc_nvml_get_string(IVC_NVML_NAME, d.name, sizeof d.name);
    if (r == NVML_SUCCESS)
        r = ivc_nvml_get_string(IVC_NVML_UUID, d.uuid, sizeof d.uuid);
    if (r == NVML_SUCCESS)
        r = ivc_nvml_get_string(IVC_NVML_PCI_BUS_ID, d.bus_id, sizeof d.bus_id);
    if (r != NVML_SUCCESS)
        return r;
    if (!ivc_nvml_parse_bus_id(d.bus_id, &d.domain, &d.bus, &d.device, &d.function)) {
        debug("the server's PCI bus id is not one", 0);
        return NVML_ERROR_UNKNOWN;
    }
    the_device = d;
    return NVML_SUCCESS;
}

nvmlReturn_t ivc_nvml_open(unsigned flags)
{
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = NVML_SUCCESS;
    if (opened == 0) {
        r = find_table();
        int status = NVML_ERROR_UNKNOWN;
        uint32_t count = 0;
        if (r == NVML_SUCCESS)
            r = answer(table->init(&status, &count), &status);
        if (r == NVML_SUCCESS) {
            device_count = count > 0 ? 1 : 0;
            if (device_count == 1)
                r = describe_device();
        }
        /* NVML_INIT_FLAG_NO_GPUS: initialised even where the server has no NVML device */
        if (r != NVML_SUCCESS && (flags & NVML_INIT_FLAG_NO_GPUS) != 0 && table != NULL) {
            device_count = 0;
            r = NVML_SUCCESS;
        }
    }
    if (r == NVML_SUCCESS)
        opened++;
    pthread_mutex_unlock(&lock);
    return r;
}

nvmlReturn_t ivc_nvml_close(void)
{
    pthread_mutex_lock(&lock);
    nvmlReturn_t r = opened > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    if (opened > 0)
        opened--;
    pthread_mutex_unlock(&lock);
    return r;
}

nvmlReturn_t ivc_nvml_ready(void)
{
    pthread_mutex_lock(&lock);
    int ready = opened > 0;
    pthread_mutex_unlock(&lock);
    return ready ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

unsigned ivc_nvml_device_count(void)
{
    return ivc_nvml_ready() == NVML_SUCCESS ? device_count : 0;
}

struct nvmlDevice_st *ivc_nvml_the_device(void)
{
    return ivc_nvml_device_count() == 1 ? &the_device : NULL;
}

nvmlReturn_t ivc_nvml_check(nvmlDevice_t device)
{
    if (ivc_nvml_ready() != NVML_SUCCESS)
        return NVML_ERROR_UNINITIALIZED;
    if (device == NULL || device != ivc_nvml_the_device())
        return NVML_ERROR_INVALID_ARGUMENT;
    return NVML_SUCCESS;
}
