// a global the program reaches with cuModuleGetGlobal and cuMemcpy (unified addressing)
extern "C" {
__device__ float vector_add_bias[4];
}

// c[i] = a[i] + b[i]
extern "C" __global__ void vector_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
