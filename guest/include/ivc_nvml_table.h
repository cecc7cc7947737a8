/* The private export table through which the guest's libnvidia-ml.so.1 (guest/nvml/) reaches the
 * server over this library's transport (docs/sharing.md): asked with cuGetExportTable and the
 * UUID below, which only ivcuda's libcuda.so.1 answers (NVIDIA's answers it as unknown, so our
 * NVML on a real driver says the driver is not ivcuda's). Word 0 is the table's size in bytes;
 * the slots are the generated wire stubs of api/sharing.api, whose status out-value is NVML's
 * answer and whose CUresult is the transport's. */
#ifndef IVC_NVML_TABLE_H
#define IVC_NVML_TABLE_H

#include <stdint.h>

/* "ivcuda-nvml-v1\0\0": export_tables.inc has the same bytes (row "ivcuda NVML") */
#define IVC_NVML_TABLE_UUID                                                                         \
    {0x69, 0x76, 0x63, 0x75, 0x64, 0x61, 0x2d, 0x6e, 0x76, 0x6d, 0x6c, 0x2d, 0x76, 0x31, 0x00, 0x00}

/* The numbers of ivc_nvml_string's and ivc_nvml_value's `what` (the server's NvmlQuery). */
enum ivc_nvml_string_query {
    IVC_NVML_DRIVER_VERSION = 0,
    IVC_NVML_NVML_VERSION = 1,
    IVC_NVML_NAME = 2,
    IVC_NVML_UUID = 3,
    IVC_NVML_PCI_BUS_ID = 4,
};
enum ivc_nvml_value_query {
    IVC_NVML_TEMPERATURE = 1,
    IVC_NVML_POWER_USAGE = 2,
    IVC_NVML_CLOCK = 3,
    IVC_NVML_MAX_CLOCK = 4,
    IVC_NVML_UTILIZATION = 5,        /* gpu | memory << 32 */
    IVC_NVML_COMPUTE_CAPABILITY = 6, /* major | minor << 32 */
    IVC_NVML_MINOR_NUMBER = 7,
    IVC_NVML_COMPUTE_MODE = 8,
    IVC_NVML_PERSISTENCE_MODE = 9,
    IVC_NVML_CUDA_DRIVER_VERSION = 10,
    IVC_NVML_PCI_IDS = 11,           /* pciDeviceId | pciSubSystemId << 32 */
};

/* Longest string and most (pid, bytes) words one answer carries (within a response area). */
#define IVC_NVML_MAX_STRING 256
#define IVC_NVML_MAX_PROCESS_WORDS 256

/* The table as the caller sees it; CUresult is an int here, so that guest/nvml needs no cuda.h. */
struct ivc_nvml_table {
    uint64_t size;
    int (*init)(int *status, uint32_t *count);
    int (*string)(int *status, uint32_t what, char *value, uint32_t capacity);
    int (*value)(int *status, uint64_t *value, uint32_t what, uint32_t arg);
    int (*memory)(int *status, uint64_t *total, uint64_t *reserved, uint64_t *free, uint64_t *used);
    int (*processes)(int *status, uint32_t *count, uint64_t *entries, uint32_t capacity);
};

#endif
