// Streams and events: asynchronous copies and memsets on two non-blocking streams, one waiting
// for the other's event; event queries, timing, synchronisation. No kernel.
#include <cstdint>
#include <vector>

#include "check.h"

int main()
{
    const size_t n = 4 << 20;
    std::vector<uint8_t> out(n), back(n);
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)(i ^ (i >> 8));
    void *a = nullptr, *b = nullptr;
    CHECK(cudaMalloc(&a, n));
    CHECK(cudaMalloc(&b, n));
    cudaStream_t first, second;
    CHECK(cudaStreamCreateWithFlags(&first, cudaStreamNonBlocking));
    CHECK(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
    cudaEvent_t start, copied, end;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&end));
    CHECK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));

    CHECK(cudaEventRecord(start, first));
    CHECK(cudaMemsetAsync(a, 0, n, first));
    CHECK(cudaMemcpyAsync(a, out.data(), n, cudaMemcpyHostToDevice, first));
    CHECK(cudaEventRecord(copied, first));
    CHECK(cudaStreamWaitEvent(second, copied, 0)); // the copy across waits for the copy up
    CHECK(cudaMemcpyAsync(b, a, n, cudaMemcpyDeviceToDevice, second));
    CHECK(cudaMemsetAsync(b, 0xff, 16, second));
    CHECK(cudaEventRecord(end, second));
    CHECK(cudaEventSynchronize(end));
    CHECK(cudaEventQuery(end));
    CHECK(cudaStreamQuery(second));
    CHECK(cudaMemcpy(back.data(), b, n, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < 16; i++)
        EXPECT(back[i] == 0xff);
    for (size_t i = 16; i < n; i++)
        EXPECT(back[i] == out[i]);
    std::printf("ordered across streams by an event: equal\n");

    float ms = -1;
    CHECK(cudaEventElapsedTime(&ms, start, end));
    EXPECT(ms >= 0);
    std::printf("time: %.3f ms\n", ms);
    CHECK_FAILS(cudaEventElapsedTime(&ms, start, copied), cudaErrorInvalidResourceHandle);
    std::printf("timing a no-timing event refused\n");

    CHECK(cudaStreamSynchronize(first));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaEventDestroy(start));
    CHECK(cudaEventDestroy(copied));
    CHECK(cudaEventDestroy(end));
    CHECK(cudaStreamDestroy(first));
    CHECK(cudaStreamDestroy(second));
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    std::printf("PASSED\n");
    return 0;
}
