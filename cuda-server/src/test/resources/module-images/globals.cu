// Module-scope device variables for ModuleFootprintTest (README.md says how the images were made).
// The sm_90 and compute_90 builds get a 2 MiB array, the others 1 MiB, so that the test can tell
// which entry of a fat binary was measured.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ char big[2 << 20];
#else
__device__ char big[1 << 20];
#endif
__device__ int initialised[1024] = {1, 2, 3};
__constant__ float table[256] = {1.0f};
__device__ double scalar;

extern "C" __global__ void touch(int i) {
    big[i] = (char) initialised[i % 1024] + (char) table[i % 256];
    scalar = i;
}
