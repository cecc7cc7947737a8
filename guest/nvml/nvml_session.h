/* The guest NVML's way to the server and its state: nvmlInit's count, the libcuda transport's
 * table (include/ivc_nvml_table.h) and the one device the VM sees. */
#ifndef IVC_NVML_SESSION_H
#define IVC_NVML_SESSION_H

#include <stdint.h>

#include "ivc_nvml_table.h"
#include "nvml_types.h"

#define NVML_EXPORT __attribute__((visibility("default")))

/* The device the VM sees; its strings never change while NVML is initialised. */
struct nvmlDevice_st {
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    char bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* NVML's form: dddddddd:bb:dd.f */
    unsigned domain, bus, device, function;
};

/* nvmlInitWithFlags: the first reaches the server (through libcuda.so.1), later ones count. */
nvmlReturn_t ivc_nvml_open(unsigned flags);
/* nvmlShutdown: the last one ends NVML's use (the transport stays libcuda's). */
nvmlReturn_t ivc_nvml_close(void);
/* NVML_SUCCESS while initialised, else NVML_ERROR_UNINITIALIZED. */
nvmlReturn_t ivc_nvml_ready(void);
/* How many devices the VM sees (0 or 1). */
unsigned ivc_nvml_device_count(void);
/* The device record, NULL when not initialised or there is no device. */
struct nvmlDevice_st *ivc_nvml_the_device(void);
/* NVML_SUCCESS when device is ours and NVML is initialised; else what to answer. */
nvmlReturn_t ivc_nvml_check(nvmlDevice_t device);

/* The server's operations (api/sharing.api), each answering NVML's status or, when the transport
 * failed, the nearest NVML error. */
nvmlReturn_t ivc_nvml_get_string(uint32_t what, char *value, unsigned capacity);
nvmlReturn_t ivc_nvml_get_value(uint32_t what, uint32_t arg, uint64_t *value);
nvmlReturn_t ivc_nvml_get_memory(uint64_t *total, uint64_t *reserved, uint64_t *free, uint64_t *used);
/* (pid, bytes) pairs into entries (2 * capacity words); *count: how many processes there are. */
nvmlReturn_t ivc_nvml_get_processes(uint32_t *count, uint64_t *entries, unsigned capacity);

/* Parses dddd[dddd]:bb:dd[.f] (hex, any case); 0 when it is not one. */
int ivc_nvml_parse_bus_id(const char *text, unsigned *domain, unsigned *bus, unsigned *device, unsigned *function);

#endif
