package io.ivcuda.server.handler;

/**
 * Device attributes that describe memory features ivcuda does not give a guest
 * (docs/memory.md): they answer 0 whatever the GPU can do, so that programs which ask first
 * take their other path instead of failing later. Managed memory and pageable-memory access
 * need pages shared between the guest and the GPU, which the VM boundary does not allow (so does
 * using a registered host pointer on the device); sparse arrays and the export handle types (file
 * descriptors, DMA-BUF, RDMA) are not remoted: a shareable handle is the server host's and cannot
 * cross the VM boundary. An entry leaves this list when its feature is remoted: virtual memory
 * management (attribute 102, api/vmm.api) is, for device memory.
 */
final class MemoryAttributes {
    static final int MANAGED_MEMORY = 83;
    static final int PAGEABLE_MEMORY_ACCESS = 88;
    static final int CONCURRENT_MANAGED_ACCESS = 89;
    static final int CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM = 91;
    static final int PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100;
    static final int DIRECT_MANAGED_MEM_ACCESS_FROM_HOST = 101;
    static final int HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED = 103;
    static final int HANDLE_TYPE_WIN32_HANDLE_SUPPORTED = 104;
    static final int HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED = 105;
    static final int GENERIC_COMPRESSION_SUPPORTED = 107;
    static final int SPARSE_CUDA_ARRAY_SUPPORTED = 112;
    static final int GPU_DIRECT_RDMA_SUPPORTED = 116;
    static final int MEMPOOL_SUPPORTED_HANDLE_TYPES = 119;
    static final int DMA_BUF_SUPPORTED = 124;
    static final int HOST_MEMORY_POOLS_SUPPORTED = 144;
    static final int HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED = 145;
    static final int HOST_ALLOC_DMA_BUF_SUPPORTED = 146;

    private MemoryAttributes() {
    }

    /** Whether {@code attribute} (a CUdevice_attribute) answers 0 through ivcuda. */
    static boolean answersZero(int attribute) {
        return switch (attribute) {
            case MANAGED_MEMORY, PAGEABLE_MEMORY_ACCESS, CONCURRENT_MANAGED_ACCESS,
                    CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM,
                    PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, DIRECT_MANAGED_MEM_ACCESS_FROM_HOST,
                    HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                    HANDLE_TYPE_WIN32_HANDLE_SUPPORTED, HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED,
                    GENERIC_COMPRESSION_SUPPORTED, SPARSE_CUDA_ARRAY_SUPPORTED,
                    GPU_DIRECT_RDMA_SUPPORTED, MEMPOOL_SUPPORTED_HANDLE_TYPES,
                    DMA_BUF_SUPPORTED, HOST_MEMORY_POOLS_SUPPORTED, HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                    HOST_ALLOC_DMA_BUF_SUPPORTED -> true;
            default -> false;
        };
    }
}
