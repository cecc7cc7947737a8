// fault_recovery's kernels: one that faults on purpose (a store through a pointer the program
// never allocated: CUDA_ERROR_ILLEGAL_ADDRESS at the next synchronisation), one whose result
// the next process checks.
extern "C" __global__ void poke(unsigned *where)
{
    *where = 0xdeadu;
}

extern "C" __global__ void squares(unsigned *out, unsigned n)
{
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = i * i;
}
