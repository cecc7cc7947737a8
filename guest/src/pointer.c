/* Pointer attributes (cuPointerGetAttribute(s)): a pointer into the pool is pinned host
 * memory and is answered here from what the guest knows of it (pinned.c); any other goes
 * to the server, which answers from the process's device allocations. Attributes this
 * library does not carry answer CUDA_ERROR_NOT_SUPPORTED with a log line. The booleans
 * IS_MANAGED and MAPPED are written as 4 bytes, as MEMORY_TYPE is (callers read them as
 * unsigned int or int). */
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

IVC_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    if (data == NULL)
        return ivc_null_argument("cuPointerGetAttribute", "data");
    CUresult r = ivc_need_region();
    if (r != CUDA_SUCCESS)
        return r;
    if (ivc_in_pool((void *)(uintptr_t)ptr, 1))
        return pool_attribute(data, attribute, ptr);
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
