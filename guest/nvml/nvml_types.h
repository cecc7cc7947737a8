/* Our own declarations of the NVML types and values the guest's libnvidia-ml.so.1 answers with
 * (numbers, struct layouts and buffer sizes are facts of NVIDIA's nvml.h; the names follow it so
 * that the code reads like the API it implements). Used by the library, ivcuda-smi and the tests;
 * programs keep using NVIDIA's nvml.h. */
#ifndef IVC_NVML_TYPES_H
#define IVC_NVML_TYPES_H

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_UNINITIALIZED = 1,
    NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3,
    NVML_ERROR_NO_PERMISSION = 4,
    NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_TIMEOUT = 10,
    NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12,
    NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14,
    NVML_ERROR_GPU_IS_LOST = 15,
    NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17,
    NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
    NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20,
    NVML_ERROR_NO_DATA = 21,
    NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
    NVML_ERROR_DEPRECATED = 26,
    NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28,
    NVML_ERROR_INVALID_STATE = 29,
    NVML_ERROR_UNKNOWN = 999,
};

/* The guest sees one device: a handle points at the library's record of it. */
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80

#define NVML_INIT_FLAG_NO_GPUS 1u
#define NVML_INIT_FLAG_NO_ATTACH 2u

typedef struct {
    char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
    unsigned int domain;
    unsigned int bus;
    unsigned int device;
    unsigned int pciDeviceId;
    unsigned int pciSubSystemId;
    char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total;
    unsigned long long reserved;
    unsigned long long free;
    unsigned long long used;
} nvmlMemory_v2_t;
/* NVML's struct versions: the size, and the version in the top byte */
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | (2u << 24)))

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

/* nvmlDeviceGetComputeRunningProcesses (v1) */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* _v2 and _v3 */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* gpuInstanceId / computeInstanceId of a process outside MIG */
#define NVML_VALUE_NOT_AVAILABLE_U32 0xFFFFFFFFu

typedef unsigned int nvmlTemperatureSensors_t; /* NVML_TEMPERATURE_GPU = 0 */
typedef unsigned int nvmlClockType_t;          /* GRAPHICS 0, SM 1, MEM 2, VIDEO 3 */
typedef unsigned int nvmlComputeMode_t;
typedef unsigned int nvmlEnableState_t;
#define NVML_TEMPERATURE_GPU 0u
#define NVML_CLOCK_GRAPHICS 0u
#define NVML_CLOCK_SM 1u
#define NVML_CLOCK_MEM 2u
#define NVML_CLOCK_VIDEO 3u
#define NVML_CLOCK_COUNT 4u

#endif
