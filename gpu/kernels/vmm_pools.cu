// vmm_pools: a kernel that writes and then updates every word of a range, so that the program
// checks mapped virtual memory (several mappings, one range) and pool allocations from the GPU.
extern "C" __global__ void scale_add(unsigned int *words, unsigned long long n, unsigned int mul, unsigned int add)
{
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) words[i] = words[i] * mul + add + (unsigned int)i;
}
