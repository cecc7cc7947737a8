// The runtime's view of the device: count, properties, attributes, memory information,
// versions, an invalid device, cudaDeviceReset. No kernel.
#include <cstring>

#include "check.h"

int main()
{
    int count = 0;
    CHECK(cudaGetDeviceCount(&count));
    std::printf("devices: %d\n", count);
    EXPECT(count >= 1);
    int driver = 0, runtime = 0;
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));
    std::printf("info: driver %d, runtime %d\n", driver, runtime);
    EXPECT(driver >= runtime / 1000 * 1000);

    cudaDeviceProp p;
    std::memset(&p, 0, sizeof p);
    CHECK(cudaGetDeviceProperties(&p, 0));
    std::printf("name: %s\n", p.name);
    std::printf("compute capability: %d.%d\n", p.major, p.minor);
    std::printf("global memory: %zu\n", p.totalGlobalMem);
    std::printf("multiprocessors: %d, warp %d, threads per block %d, shared per block %zu\n",
                p.multiProcessorCount, p.warpSize, p.maxThreadsPerBlock, p.sharedMemPerBlock);
    std::printf("grid max: %d %d %d\n", p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]);
    EXPECT(p.warpSize == 32 && p.multiProcessorCount > 0 && p.totalGlobalMem > 0);

    CHECK(cudaSetDevice(0));
    int device = -1, sms = 0, major = 0;
    CHECK(cudaGetDevice(&device));
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0));
    EXPECT(device == 0 && sms == p.multiProcessorCount && major == p.major);
    std::printf("attributes agree with the properties\n");

    size_t free_bytes = 0, total_bytes = 0;
    CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    EXPECT(total_bytes > 0 && free_bytes <= total_bytes);
    std::printf("info: %zu of %zu bytes free\n", free_bytes, total_bytes);

    CHECK_FAILS(cudaGetDeviceProperties(&p, count), cudaErrorInvalidDevice);
    CHECK_FAILS(cudaSetDevice(count), cudaErrorInvalidDevice);
    std::printf("invalid device refused\n");

    CHECK(cudaDeviceSynchronize());
    CHECK(cudaDeviceReset());
    CHECK(cudaGetDeviceCount(&count)); // the runtime comes back after a reset
    std::printf("reset, then %d devices\n", count);
    std::printf("PASSED\n");
    return 0;
}
