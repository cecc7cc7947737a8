/* What the driver says about itself and each device, for relating what export-table calls
 * compute (the integrity check) to the machine they ran on: driver version, and per device
 * name, UUID, PCI bus id and domain/bus/device numbers, compute capability, memory, SM
 * count. It loads libcuda.so.1 with dlopen, so under cuda-trace (or ivcuda) it reaches the
 * driver the same way a program does. Prints `key value` lines; exits 1 if cuInit fails. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*fn_int_p)(int *);
typedef int (*fn_init)(unsigned);
typedef int (*fn_get)(int *, int);
typedef int (*fn_name)(char *, int, int);
typedef int (*fn_uuid)(unsigned char *, int);
typedef int (*fn_attr)(int *, int, int);
typedef int (*fn_mem)(size_t *, int);

/* CUdevice_attribute values from cuda.h (stable across releases). */
static const struct {
    const char *name;
    int id;
} attributes[] = {
    { "compute_capability_major", 75 }, { "compute_capability_minor", 76 }, { "multiprocessor_count", 16 },
    { "pci_domain_id", 50 },            { "pci_bus_id", 33 },               { "pci_device_id", 34 },
    { "clock_rate_khz", 13 },           { "memory_clock_rate_khz", 36 },    { "ecc_enabled", 32 },
    { "unified_addressing", 41 },       { "compute_mode", 20 },
};

static void *need(void *lib, const char *name)
{
    void *f = dlsym(lib, name);
    if (!f) printf("missing %s\n", name);
    return f;
}

int main(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) {
        printf("dlopen libcuda.so.1: %s\n", dlerror());
        return 1;
    }
    Dl_info info;
    void *init_sym = dlsym(lib, "cuInit");
    if (init_sym && dladdr(init_sym, &info)) printf("library %s\n", info.dli_fname);
    fn_int_p version = (fn_int_p)need(lib, "cuDriverGetVersion");
    fn_init init = (fn_init)init_sym;
    fn_int_p count = (fn_int_p)need(lib, "cuDeviceGetCount");
    fn_get get = (fn_get)need(lib, "cuDeviceGet");
    fn_name name = (fn_name)need(lib, "cuDeviceGetName");
    fn_uuid uuid = (fn_uuid)need(lib, "cuDeviceGetUuid_v2");
    fn_name pci = (fn_name)need(lib, "cuDeviceGetPCIBusId");
    fn_attr attr = (fn_attr)need(lib, "cuDeviceGetAttribute");
    fn_mem total = (fn_mem)need(lib, "cuDeviceTotalMem_v2");
    if (!version || !init || !count || !get || !name || !uuid || !pci || !attr || !total) return 1;

    int v = 0, n = 0;
    int rc = version(&v);
    printf("driver_version %d rc=%d\n", v, rc);
    rc = init(0);
    printf("cuInit rc=%d\n", rc);
    if (rc != 0) return 1;
    rc = count(&n);
    printf("device_count %d rc=%d\n", n, rc);
    for (int ordinal = 0; ordinal < n; ordinal++) {
        int dev = -1;
        if (get(&dev, ordinal) != 0) continue;
        char text[256] = "";
        unsigned char id[16] = { 0 };
        size_t bytes = 0;
        name(text, sizeof text, dev);
        printf("device %d name %s\n", ordinal, text);
        if (uuid(id, dev) == 0) {
            printf("device %d uuid ", ordinal);
            for (int i = 0; i < 16; i++) printf("%02x", id[i]);
            printf("\n");
        }
        if (pci(text, sizeof text, dev) == 0) printf("device %d pci_bus_id_string %s\n", ordinal, text);
        for (size_t i = 0; i < sizeof attributes / sizeof attributes[0]; i++) {
            int value = 0;
            if (attr(&value, attributes[i].id, dev) == 0) printf("device %d %s %d\n", ordinal, attributes[i].name, value);
        }
        if (total(&bytes, dev) == 0) printf("device %d total_memory %zu\n", ordinal, bytes);
    }
    return 0;
}
