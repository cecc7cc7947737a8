/* Pointer attributes (cuPointerGetAttribute(s)): a pointer into the pool is pinned host
 * memory and is answered here from what the guest knows of it (pinned.c); any other goes
 * to the server, which answers from the process's device allocations. Attributes this
 * library does not carry answer CUDA_ERROR_NOT_SUPPORTED with a log line. The booleans
 * IS_MANAGED and MAPPED are written as 4 bytes, as MEMORY_TYPE is (callers read them as
 * unsigned int or int). A pinned block's CONTEXT is the context that was current when it was
 * allocated; its MEMPOOL_HANDLE is NULL (cuda.h: NULL unless allocated from a mempool).
 * Memory registered with cuMemHostRegister (hostreg.c) is answered here too, as host memory
 * of the context current at registration, except DEVICE_POINTER: the GPU cannot reach a
 * guest's pages (docs/memory.md), so there is no address kernels could use it through, and
 * cuda.h says to answer CUDA_ERROR_INVALID_VALUE then (NULL from cuPointerGetAttributes). A
 * device allocation's MEMPOOL_HANDLE is the server's to answer (the pool it came from). */
#include "channel.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "pinned.h"

/* The byte size of an attribute's value; 0 for attributes this library does not carry. */
static uint32_t attribute_size(int attribute)
{
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case 7: /* BUFFER_ID */
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        return 8;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_MAPPED:
        return 4;
    default:
        return 0;
    }
}

static CUresult pool_attribute(void *data, int attribute, CUdeviceptr ptr)
{
    struct ivc_range block;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: {
        unsigned type = CU_MEMORYTYPE_HOST;
        memcpy(data, &type, sizeof type);
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: { /* the VM's one device (cuDeviceGetCount: 1) */
        int ordinal = 0;
        memcpy(data, &ordinal, sizeof ordinal);
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: /* pinned memory is not managed memory */
    case CU_POINTER_ATTRIBUTE_MAPPED: {
        unsigned value = attribute == CU_POINTER_ATTRIBUTE_MAPPED && ivc_pinned_find((const void *)(uintptr_t)ptr, &block);
        memcpy(data, &value, sizeof value);
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        memcpy(data, &ptr, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_CONTEXT: /* the context current at its cuMemAllocHost/cuMemHostAlloc */
        if (!ivc_pinned_find((const void *)(uintptr_t)ptr, &block) || block.context == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(data, &block.context, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: { /* pinned host memory is never a mempool's */
        uint64_t none = 0;
        memcpy(data, &none, 8);
        return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: {
        CUdeviceptr device = 0;
        CUresult r = ivc_host_device_pointer(&device, ivc_pool_offset((void *)(uintptr_t)ptr), 0);
        if (r == CUDA_SUCCESS)
            memcpy(data, &device, 8);
        return r;
    }
    case 7: /* BUFFER_ID: the block's address, as the server answers its allocation's for device memory */
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        if (!ivc_pinned_find((const void *)(uintptr_t)ptr, &block))
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(data, attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE ? &block.size : &block.base, 8);
        return CUDA_SUCCESS;
    default:
        ivc_log("cuPointerGetAttribute: attribute %d of pinned host memory is not supported", attribute);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

/* Guest memory registered with cuMemHostRegister: range is its registration. */
static CUresult registered_attribute(void *data, int attribute, CUdeviceptr ptr, const struct ivc_range *range)
{
    uint64_t value8;
    unsigned value4;
    switch (attribute) {
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        value4 = CU_MEMORYTYPE_HOST;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: /* the VM's one device */
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
        value4 = 0;
        break;
    case CU_POINTER_ATTRIBUTE_MAPPED: /* a valid range backed by memory: the registered pages */
        value4 = 1;
        break;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        memcpy(data, &ptr, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: /* no address kernels could reach it through */
        return CUDA_ERROR_INVALID_VALUE;
    case CU_POINTER_ATTRIBUTE_CONTEXT: /* the context current at its cuMemHostRegister */
        if (range->context == NULL)
            return CUDA_ERROR_INVALID_VALUE;
        memcpy(data, &range->context, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: /* registered memory is never a mempool's */
        value8 = 0;
        memcpy(data, &value8, 8);
        return CUDA_SUCCESS;
    case 7: /* BUFFER_ID: the range's address, as for pinned blocks */
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
        memcpy(data, attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE ? &range->size : &range->base, 8);
        return CUDA_SUCCESS;
    default:
        ivc_log("cuPointerGetAttribute: attribute %d of registered host memory is not supported", attribute);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    memcpy(data, &value4, sizeof value4);
    return CUDA_SUCCESS;
}

IVC_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (data == NULL)
        return ivc_null_argument("cuPointerGetAttribute", "data");
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (ivc_in_pool((void *)(uintptr_t)ptr, 1))
        return pool_attribute(data, attribute, ptr);
    struct ivc_range registration;
    if (ivc_registered_find((const void *)(uintptr_t)ptr, &registration))
        return registered_attribute(data, attribute, ptr, &registration);
    uint32_t size = attribute_size(attribute);
    if (size == 0) {
        ivc_log("cuPointerGetAttribute: attribute %d is not supported", attribute);
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    return ivc_pointer_attribute(data, size, attribute, ptr);
}
IVC_ALIASES_cuPointerGetAttribute

IVC_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                           CUdeviceptr ptr)
{
    if (numAttributes > 0 && (attributes == NULL || data == NULL))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++) {
        if (data[i] == NULL)
            continue;
        CUresult r = cuPointerGetAttribute(data[i], attributes[i], ptr);
        if (r == CUDA_ERROR_NOT_SUPPORTED || r == CUDA_ERROR_DEVICE_UNAVAILABLE || r == CUDA_ERROR_NOT_INITIALIZED)
            return r;
        if (r != CUDA_SUCCESS) /* like CUDA: no error for a pointer it does not know, zeroes */
            memset(data[i], 0, attribute_size(attributes[i]) ? attribute_size(attributes[i]) : 4);
    }
    return CUDA_SUCCESS;
}
IVC_ALIASES_cuPointerGetAttributes
