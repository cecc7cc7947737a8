// The smallest runtime-API program that shows whether cudart's initialisation, and with it
// its integrity check, passed: cudaGetDeviceCount's result (103 =
// cudaErrorSoftwareValidityNotEstablished when the check failed), then an allocation, a
// kernel and a copy back. Built with nvcc's defaults (static cudart) or -cudart shared.
// Exit status: 0 all well, 2 initialisation failed, 3 a later step failed.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void twice(int *p) { p[threadIdx.x] = 2 * (int)threadIdx.x; }

int main()
{
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    int count = -1;
    cudaError_t e = cudaGetDeviceCount(&count);
    std::printf("cudart %d: cudaGetDeviceCount rc=%d (%s) count=%d\n", runtime, (int)e, cudaGetErrorName(e), count);
    if (e != cudaSuccess) return 2;
    cudaDriverGetVersion(&driver);
    std::printf("driver %d\n", driver);
    int *d = nullptr;
    int h[32] = {0};
    e = cudaMalloc(&d, sizeof h);
    if (e == cudaSuccess) {
        twice<<<1, 32>>>(d);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    bool right = e == cudaSuccess;
    for (int i = 0; i < 32 && right; i++) right = h[i] == 2 * i;
    std::printf("kernel rc=%d (%s) %s\n", (int)e, cudaGetErrorName(e), right ? "right" : "WRONG");
    return right ? 0 : 3;
}
