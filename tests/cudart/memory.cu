// Device memory through the runtime: cudaMalloc, cudaMemset, cudaMemcpy in every direction
// (cudaMemcpyDefault included), odd sizes, an allocation that must fail. No kernel.
#include <cstdint>
#include <vector>

#include "check.h"

static void round_trip(size_t n)
{
    std::vector<uint8_t> out(n), back(n);
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(i * 7 + n);
    void *a = nullptr, *b = nullptr;
    CHECK(cudaMalloc(&a, n));
    CHECK(cudaMalloc(&b, n));
    CHECK(cudaMemset(a, 0x5a, n));
    CHECK(cudaMemcpy(back.data(), a, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        EXPECT(back[i] == 0x5a);
    CHECK(cudaMemcpy(a, out.data(), n, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice));
    std::fill(back.begin(), back.end(), 0);
    CHECK(cudaMemcpy(back.data(), b, n, cudaMemcpyDefault));
    EXPECT(back == out);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    std::printf("%zu bytes: set, up, across, down: equal\n", n);
}

int main()
{
    for (size_t n : {(size_t)1, (size_t)4097, (size_t)1 << 20, ((size_t)8 << 20) + 3})
        round_trip(n);
    void *huge = nullptr;
    CHECK_FAILS(cudaMalloc(&huge, (size_t)1 << 50), cudaErrorMemoryAllocation);
    std::printf("1 PiB refused, not sticky\n");
    CHECK(cudaFree(nullptr));
    std::printf("PASSED\n");
    return 0;
}
