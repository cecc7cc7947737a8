// Compute-bound work for gpu/sharing.sh: each thread runs a chain of dependent
// multiply-adds, so a launch's time is set by how many SMs run its blocks (the VM's
// MPS share), not by memory. The store that can never happen keeps the loop alive.
extern "C" __global__ void share_burn(float *out, int iterations)
{
    float a = (float)threadIdx.x * 1e-3f;
    float b = 1.0001f;
    for (int i = 0; i < iterations; i++) {
        a = a * b + 0.5f;
        b = b * 0.99999f + 1e-6f;
    }
    if (a == 12345.678f) out[blockIdx.x] = a;
}
