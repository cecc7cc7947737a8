/* The CUDA 12/13 kernel-path types (libraries, kernels, launch attributes): layouts and values
 * of NVIDIA's cuda.h (CUDA 13.0), declared here so that the guest builds without the toolkit.
 * Included by ivc_cuda_types.h. */
#ifndef IVC_CUDA_KERNEL_TYPES_H
#define IVC_CUDA_KERNEL_TYPES_H

#include <stddef.h>

typedef struct CUlib_st *CUlibrary;
typedef struct CUkern_st *CUkernel;
typedef struct CUlinkState_st *CUlinkState;
typedef int CUlibraryOption;
typedef int CUjitInputType;
typedef int CUsharedconfig;
typedef int CUdevice_P2PAttribute;

#define CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE 0
#define CU_LIBRARY_BINARY_IS_PRESERVED 1

/* CUlaunchAttributeID */
#define CU_LAUNCH_ATTRIBUTE_IGNORE 0
#define CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW 1
#define CU_LAUNCH_ATTRIBUTE_COOPERATIVE 2
#define CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION 4
#define CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE 5
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION 6
#define CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT 7
#define CU_LAUNCH_ATTRIBUTE_PRIORITY 8
#define CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP 9
#define CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN 10
#define CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION 11
#define CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT 12
#define CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE 13
#define CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT 14

/* CUlaunchAttribute: the id, padding to 8, a 64-byte value union (cuda.h). The guest reads the
 * scalar members it passes on through these. */
typedef union CUlaunchAttributeValue_union {
    char pad[64];
    void *alignment; /* the union holds pointers in cuda.h */
    int cooperative;
    struct {
        unsigned int x;
        unsigned int y;
        unsigned int z;
    } clusterDim;
    int clusterSchedulingPolicyPreference;
    int programmaticStreamSerializationAllowed;
    int priority;
    int memSyncDomain;
    unsigned int sharedMemCarveout;
} CUlaunchAttributeValue;

struct CUlaunchAttribute_st {
    int id;
    char pad[4];
    CUlaunchAttributeValue value;
};

#endif
