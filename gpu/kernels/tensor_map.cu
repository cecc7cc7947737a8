// gpu/programs/tensor_map.c's kernel: one 16x16 tile of floats loaded by the TMA unit through a
// tensor map the host encoded (cuTensorMapEncodeTiled), passed by value as a __grid_constant__
// parameter, then written out by the block's threads. sm_90 (cp.async.bulk.tensor).

// CUtensorMap's bytes (cuda.h: 16 qwords, 64-byte aligned), without including cuda.h here
struct __align__(64) tensor_map_bytes {
    unsigned long long opaque[16];
};

#define TILE 16

extern "C" __global__ void tma_load_tile(const __grid_constant__ tensor_map_bytes map, float *out, int x, int y)
{
    __shared__ __align__(128) float tile[TILE * TILE];
    __shared__ __align__(8) unsigned long long barrier;
    unsigned bar = (unsigned)__cvta_generic_to_shared(&barrier);
    unsigned dst = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(bar));
        // the barrier's initialisation visible to the TMA unit (the async proxy)
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(TILE * TILE * 4)
                     : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];" ::"r"(dst),
                     "l"((unsigned long long)&map), "r"(x), "r"(y), "r"(bar)
                     : "memory");
    }
    // every thread waits for phase 0 of the barrier: the tile's bytes have landed
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "wait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], 0;\n"
                 "@!done bra wait_%=;\n"
                 "}" ::"r"(bar)
                 : "memory");
    for (int i = threadIdx.x; i < TILE * TILE; i += blockDim.x)
        out[i] = tile[i];
}
