// Kernels of graphs_streams.

// x[i] += a
extern "C" __global__ void add_scalar(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += a;
}

// out[i] = base + i
extern "C" __global__ void fill_index(unsigned *out, unsigned base, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = base + (unsigned)i;
}
