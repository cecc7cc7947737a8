// Kernels of the benchmarks.

// Does nothing: the launch rate is all there is to measure.
extern "C" __global__ void empty_kernel()
{
}

// Spins for ns nanoseconds of %globaltimer: NVBench's sleep kernel, so the time per
// task minus this is the launch-and-synchronise overhead.
extern "C" __global__ void sleep_kernel(unsigned long long ns)
{
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    } while (now - start < ns);
}
