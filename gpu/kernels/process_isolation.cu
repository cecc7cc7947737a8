// A kernel that faults on purpose: a store through a pointer the program never allocated
// (CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronisation), and one that works.
extern "C" __global__ void store_to(int *where, int value)
{
    *where = value;
}

extern "C" __global__ void fill(int *out, int value, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value + i;
}
