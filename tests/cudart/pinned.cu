// Pinned host memory: cudaMallocHost, cudaHostAlloc (portable, mapped), its device pointer and
// flags, asynchronous copies from and to it, pointer attributes of both kinds. No kernel.
#include <cstdint>
#include <cstring>

#include "check.h"

int main()
{
    const size_t n = 3 << 20;
    uint8_t *pinned = nullptr, *mapped = nullptr;
    CHECK(cudaMallocHost((void **)&pinned, n));
    CHECK(cudaHostAlloc((void **)&mapped, n, cudaHostAllocPortable | cudaHostAllocMapped));
    unsigned flags = 0;
    CHECK(cudaHostGetFlags(&flags, mapped));
    EXPECT((flags & cudaHostAllocMapped) != 0);
    void *mapped_device = nullptr;
    CHECK(cudaHostGetDevicePointer(&mapped_device, mapped, 0));
    EXPECT(mapped_device != nullptr);
    std::printf("mapped memory has a device pointer\n");

    for (size_t i = 0; i < n; i++)
        pinned[i] = (uint8_t)(i * 13);
    void *device = nullptr;
    CHECK(cudaMalloc(&device, n));
    cudaStream_t stream;
    CHECK(cudaStreamCreate(&stream));
    CHECK(cudaMemcpyAsync(device, pinned, n, cudaMemcpyHostToDevice, stream));
    CHECK(cudaMemcpyAsync(mapped, device, n, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaStreamSynchronize(stream));
    EXPECT(std::memcmp(pinned, mapped, n) == 0);
    std::printf("pinned up, mapped down: equal\n");

    cudaPointerAttributes attributes;
    CHECK(cudaPointerGetAttributes(&attributes, device));
    EXPECT(attributes.type == cudaMemoryTypeDevice && attributes.device == 0);
    CHECK(cudaPointerGetAttributes(&attributes, pinned));
    /* cudart 11.8 asks CONTEXT of pinned memory with the others: the guest answers the context
     * that was current at allocation (until 2026-12-02 NOT_SUPPORTED, which failed the call) */
    EXPECT(attributes.type == cudaMemoryTypeHost && attributes.device == 0 && attributes.hostPointer == pinned
           && attributes.devicePointer != nullptr);
    CHECK(cudaPointerGetAttributes(&attributes, mapped)); /* portable and mapped */
    EXPECT(attributes.type == cudaMemoryTypeHost && attributes.hostPointer == mapped);
    std::printf("pointer attributes: device and host\n");

    CHECK(cudaStreamDestroy(stream));
    CHECK(cudaFree(device));
    CHECK(cudaFreeHost(pinned));
    CHECK(cudaFreeHost(mapped));
    std::printf("PASSED\n");
    return 0;
}
