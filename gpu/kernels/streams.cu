// Kernels of streams_events and pinned_async.

// x[i] = x[i] * s + add
extern "C" __global__ void scale_add(float *x, float s, float add, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * s + add;
}

__device__ unsigned long long global_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Spins spin_ns nanoseconds, then out[i] = value: a kernel that is surely still
// running when the host asks, so a missing stream dependency shows up as stale data.
extern "C" __global__ void spin_then_fill(int *out, int value, int n, unsigned long long spin_ns)
{
    unsigned long long start = global_ns();
    while (global_ns() - start < spin_ns) {
    }
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}

// out[0] = sum of in[0..n) (one block), reading wherever `in` points: mapped host memory.
extern "C" __global__ void sum_u32(const unsigned *in, int n, unsigned long long *out)
{
    __shared__ unsigned long long partial[256];
    unsigned long long s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += in[i];
    partial[threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long total = 0;
        for (int t = 0; t < blockDim.x; t++) total += partial[t];
        *out = total;
    }
}

// out[i] = i * 3 + 1, written wherever `out` points: mapped host memory.
extern "C" __global__ void fill_index(unsigned *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = (unsigned)i * 3u + 1u;
}
