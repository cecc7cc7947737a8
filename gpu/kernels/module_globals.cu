// A module whose module-scope variable takes 256 MiB of device memory (gpu/programs/module_globals.c):
// the server must count it against the VM's memory quota from the load to the unload (issue 15).
__device__ char module_globals_big[256 << 20];

extern "C" __global__ void module_globals_touch(unsigned long long i)
{
    module_globals_big[i] = 1;
}
