// Kernels of graph_nodes.

// x[i] += a
extern "C" __global__ void add_scalar(float *x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += a;
}

// y[i] += x[i]
extern "C" __global__ void accumulate(float *y, const float *x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += x[i];
}

// The body of a while node: one more step; the loop goes on while the count is below limit.
extern "C" __global__ void loop_step(int *count, cudaGraphConditionalHandle handle, int limit)
{
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        *count += 1;
        cudaGraphSetConditional(handle, *count < limit ? 1u : 0u);
    }
}
