// Kernels of gpu/programs/kernel_path.c: loaded as a CUDA 12 library (cuLibraryLoadData and
// cuLibraryLoadFromFile) and launched as CUkernels, with cluster and cooperative launches and
// CUDA 12.1's large kernel parameters. Each writes results the CPU can check exactly.

// a library global the program reaches with cuLibraryGetGlobal and the copy calls
extern "C" {
__device__ int kp_counter[4];
}

// x[i] = x[i] * s + i
extern "C" __global__ void kp_scale(float *x, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s + (float)i;
}

// kp_counter[i] = v + i (one block of 4 threads)
extern "C" __global__ void kp_fill_global(int v)
{
    if (threadIdx.x < 4) kp_counter[threadIdx.x] = v + (int)threadIdx.x;
}

// out[block] = the block's rank in its cluster (launched with a cluster dimension)
extern "C" __global__ void kp_cluster_rank(unsigned *out)
{
    unsigned rank;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
    if (threadIdx.x == 0) out[blockIdx.x] = rank;
}

// Every block adds its index to out[0], waits for the whole grid (co-residency is what a
// cooperative launch guarantees), then block 0 copies the total to out[1].
extern "C" __global__ void kp_grid_sum(unsigned *out, unsigned *arrived)
{
    if (threadIdx.x == 0) {
        atomicAdd(&out[0], blockIdx.x);
        __threadfence();
        atomicAdd(arrived, 1u);
        while (atomicAdd(arrived, 0u) < gridDim.x) {
        }
        if (blockIdx.x == 0) out[1] = atomicAdd(&out[0], 0u);
    }
}

// a parameter of 32000 bytes (CUDA 12.1+ allows up to 32764 bytes of parameters)
struct kp_big {
    unsigned v[8000];
};

// out[0] = sum of p.v
extern "C" __global__ void kp_large_param(kp_big p, unsigned long long *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        unsigned long long s = 0;
        for (int i = 0; i < 8000; i++) s += p.v[i];
        out[0] = s;
    }
}
