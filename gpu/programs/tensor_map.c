/* tensor_map: tensor maps (docs/memory.md "Tensor maps"). The driver's encoding is deterministic,
 * so every map is printed as an FNV-1a of its 128 bytes, native and ivcuda alike: tiled maps of
 * ranks 1 to 5 (several data types, swizzles, L2 promotions, OOB fills, element strides), an
 * im2col and an im2col-wide map, cuTensorMapReplaceAddress (its map must equal a fresh encoding at
 * the new address). A map holds its global address: the maps are encoded over 16 MiB mapped at a
 * fixed address (cuMemAddressReserve's hint), the same natively and through ivcuda. Where the
 * driver maps the range elsewhere the program says so, finds the qwords that change with the
 * address alone (encodings at 20 addresses) and zeroes them before the checksums. Then the
 * arguments the driver refuses, by their CUresult names; and a kernel that loads 16x16 tiles through a map with the TMA
 * unit (cp.async.bulk.tensor, sm_90): inside the tensor, partly outside it (zeros), and after
 * cuTensorMapReplaceAddress onto another buffer, each compared with the CPU's. */
#include "common.h"

#define TILE 16
#define N 64 /* the TMA kernel's tensor: N x N floats */

#define UINT8 CU_TENSOR_MAP_DATA_TYPE_UINT8
#define FLOAT16 CU_TENSOR_MAP_DATA_TYPE_FLOAT16
#define FLOAT32 CU_TENSOR_MAP_DATA_TYPE_FLOAT32
#define BFLOAT16 CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
#define UINT32 CU_TENSOR_MAP_DATA_TYPE_UINT32

static int address_qword[CU_TENSOR_MAP_NUM_QWORDS]; /* 1: changes with the global address */

/* The map's checksum with its address qwords zeroed. */
static uint64_t masked(const CUtensorMap *m)
{
    CUtensorMap copy = *m;
    for (int q = 0; q < CU_TENSOR_MAP_NUM_QWORDS; q++)
        if (address_qword[q]) copy.opaque[q] = 0;
    return fnv1a(&copy, sizeof copy);
}

static CUresult tiled(CUtensorMap *m, CUtensorMapDataType type, cuuint32_t rank, CUdeviceptr address,
                      const cuuint64_t *dims, const cuuint64_t *strides, const cuuint32_t *box,
                      const cuuint32_t *elements, CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2,
                      CUtensorMapFloatOOBfill oob)
{
    return cuTensorMapEncodeTiled(m, type, rank, (void *)(uintptr_t)address, dims, strides, box, elements,
                                  CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle, l2, oob);
}

/* A 1D map of 4096 bytes at `address`. */
static CUresult line(CUtensorMap *m, CUdeviceptr address)
{
    const cuuint64_t dims[] = {4096}, no_strides[] = {0}; /* rank 1 has none; passed all the same */
    const cuuint32_t box[] = {64}, elements[] = {1};
    return tiled(m, UINT8, 1, address, dims, no_strides, box, elements, CU_TENSOR_MAP_SWIZZLE_NONE,
                 CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

/* The qwords that change when only the address changes: encodings at 20 addresses in the buffer. */
static void find_address_qwords(CUdeviceptr base)
{
    CUtensorMap first, other;
    int found[CU_TENSOR_MAP_NUM_QWORDS] = {0};
    CK(line(&first, base));
    for (int bit = 4; bit < 24; bit++) { /* the buffer is 16 MiB */
        CK(line(&other, base + ((CUdeviceptr)1 << bit)));
        for (int q = 0; q < CU_TENSOR_MAP_NUM_QWORDS; q++)
            if (other.opaque[q] != first.opaque[q]) found[q] = 1;
    }
    printf("tensor_map address qwords:");
    for (int q = 0; q < CU_TENSOR_MAP_NUM_QWORDS; q++)
        if (found[q]) printf(" %d", q);
    printf("\n");
    memcpy(address_qword, found, sizeof found);
}

/* 16 MiB of device memory mapped at the address asked for (cuMemAddressReserve's hint), so that
 * the maps hold the same address natively and through ivcuda and are compared whole; when the
 * driver puts the range elsewhere, the address qwords are zeroed before the checksums. */
#define FIXED_ADDRESS 0x600000000000ULL
#define FIXED_SIZE (16u << 20)
static CUmemGenericAllocationHandle fixed_handle;

static CUdeviceptr fixed_range(CUdevice dev)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    CUdeviceptr p;
    CK(cuMemAddressReserve(&p, FIXED_SIZE, 0, FIXED_ADDRESS, 0));
    CK(cuMemCreate(&fixed_handle, FIXED_SIZE, &prop, 0));
    CK(cuMemMap(p, FIXED_SIZE, 0, fixed_handle, 0));
    CUmemAccessDesc access = {0};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(p, FIXED_SIZE, &access, 1));
    int landed = p == FIXED_ADDRESS;
    printf("tensor_map 16 MiB mapped at the address asked for: %s\n", landed ? "yes" : "no");
    if (!landed) {
        printf("info: tensor_map range at 0x%llx\n", (unsigned long long)p);
        find_address_qwords(p);
    }
    return p;
}

static void free_fixed_range(CUdeviceptr p)
{
    CK(cuMemUnmap(p, FIXED_SIZE));
    CK(cuMemRelease(fixed_handle));
    CK(cuMemAddressFree(p, FIXED_SIZE));
}

static void print_map(const char *what, CUresult r, const CUtensorMap *m)
{
    if (r == CUDA_SUCCESS)
        printf("tensor_map %s: CUDA_SUCCESS checksum=%016llx\n", what, (unsigned long long)masked(m));
    else
        printf("tensor_map %s: %s\n", what, result_name(r));
}

static void encodings(CUdeviceptr base)
{
    CUtensorMap m;
    char what[96];
    /* rank 1..5, a type, swizzle, L2 promotion and OOB fill each */
    static const cuuint64_t dims[5][5] = {{1024}, {64, 64}, {32, 16, 8}, {16, 8, 4, 2}, {8, 4, 4, 4, 2}};
    static const cuuint64_t strides[5][4] = {{0}, {256}, {64, 1024}, {32, 256, 1024}, {32, 128, 512, 2048}};
    static const cuuint32_t boxes[5][5] = {{64}, {16, 16}, {32, 4, 2}, {16, 8, 4, 2}, {8, 4, 4, 4, 2}};
    static const cuuint32_t elements[5][5] = {{1}, {1, 1}, {1, 2, 1}, {1, 1, 2, 1}, {1, 1, 1, 1, 1}};
    static const CUtensorMapDataType types[5] = {UINT8, FLOAT32, FLOAT16, BFLOAT16, UINT32};
    static const CUtensorMapSwizzle swizzles[5] = {CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_SWIZZLE_64B,
                                                   CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_SWIZZLE_32B,
                                                   CU_TENSOR_MAP_SWIZZLE_32B};
    /* the NaN fill is for floating-point types only */
    static const CUtensorMapFloatOOBfill fills[5] = {CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
                                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
                                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA,
                                                     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE};
    for (int r = 1; r <= 5; r++) {
        CUresult res = tiled(&m, types[r - 1], (cuuint32_t)r, base, dims[r - 1], strides[r - 1], boxes[r - 1],
                             elements[r - 1], swizzles[r - 1], (CUtensorMapL2promotion)(r % 4), fills[r - 1]);
        snprintf(what, sizeof what, "tiled rank %d", r);
        print_map(what, res, &m);
    }
    /* NHWC: 16 half-float channels, 8x8 pixels, 2 images; a 3x3 filter's corners */
    const cuuint64_t nhwc[] = {16, 8, 8, 2}, nhwc_strides[] = {32, 256, 2048};
    const int lower[] = {-1, -1}, upper[] = {-1, -1};
    const cuuint32_t ones[] = {1, 1, 1, 1, 1};
    CUresult res = cuTensorMapEncodeIm2col(&m, FLOAT16, 4, (void *)(uintptr_t)base, nhwc, nhwc_strides, lower, upper,
                                           16, 64, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
                                           CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    print_map("im2col rank 4", res, &m);
    res = cuTensorMapEncodeIm2colWide(&m, FLOAT16, 4, (void *)(uintptr_t)base, nhwc, nhwc_strides, -1, -1, 16, 64, ones,
                                      CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_IM2COL_WIDE_MODE_W,
                                      CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    print_map("im2col wide rank 4", res, &m);

    /* ReplaceAddress: the same bytes as a fresh encoding at the new address */
    CUtensorMap fresh;
    CK(tiled(&m, FLOAT32, 2, base, dims[1], strides[1], boxes[1], elements[1], CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    CK(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)(base + 65536)));
    CK(tiled(&fresh, FLOAT32, 2, base + 65536, dims[1], strides[1], boxes[1], elements[1], CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    printf("tensor_map replace address: equals a fresh encoding %s checksum=%016llx\n",
           memcmp(&m, &fresh, sizeof m) == 0 ? "yes" : "NO", (unsigned long long)masked(&m));
}

static void refusals(CUdeviceptr base)
{
    CUtensorMap m;
    const cuuint64_t dims[] = {64, 64, 4, 4, 4, 4}, strides[] = {256, 16384, 65536, 262144, 1048576};
    const cuuint32_t box[] = {16, 16, 1, 1, 1, 1}, ones[] = {1, 1, 1, 1, 1, 1};
    const int corner[] = {0, 0, 0};
#define TILED(what, map, type, rank, address, d, s, b, e)                                                       \
    printf("tensor_map refused %s: %s\n", what,                                                                 \
           result_name(tiled(map, type, rank, address, d, s, b, e, CU_TENSOR_MAP_SWIZZLE_NONE,                  \
                             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)))
    TILED("rank 0", &m, FLOAT32, 0, base, dims, strides, box, ones);
    TILED("rank 6", &m, FLOAT32, 6, base, dims, strides, box, ones);
    TILED("an address 8 bytes off 16", &m, FLOAT32, 2, base + 8, dims, strides, box, ones);
    const cuuint64_t zero[] = {64, 0};
    TILED("a dimension of 0", &m, FLOAT32, 2, base, zero, strides, box, ones);
    const cuuint64_t odd[] = {260};
    TILED("a stride of 260 bytes", &m, FLOAT32, 2, base, dims, odd, box, ones);
    const cuuint32_t big[] = {512, 16};
    TILED("a box of 512", &m, FLOAT32, 2, base, dims, strides, big, ones);
    TILED("a data type of 99", &m, (CUtensorMapDataType)99, 2, base, dims, strides, box, ones);
    TILED("a NULL map", NULL, FLOAT32, 2, base, dims, strides, box, ones);
    /* a map 8 bytes off the 64 the driver requires */
    static union { CUtensorMap map; unsigned char bytes[2 * sizeof(CUtensorMap)]; } holder;
    TILED("a map 8 bytes off 64", (CUtensorMap *)(void *)(holder.bytes + 8), FLOAT32, 2, base, dims, strides, box,
          ones);
    printf("tensor_map refused im2col rank 2: %s\n",
           result_name(cuTensorMapEncodeIm2col(&m, FLOAT32, 2, (void *)(uintptr_t)base, dims, strides, corner, corner,
                                               16, 16, ones, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                               CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)));
    CK(tiled(&m, FLOAT32, 2, base, dims, strides, box, ones, CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    printf("tensor_map refused replace by an address 8 bytes off 16: %s\n",
           result_name(cuTensorMapReplaceAddress(&m, (void *)(uintptr_t)(base + 8))));
    /* the driver encodes a map over any number; the server holds it to the process's memory */
    printf("info: tensor_map over an address never allocated: %s\n",
           result_name(tiled(&m, FLOAT32, 2, (CUdeviceptr)0x10000000000ULL, dims, strides, box, ones,
                             CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_NONE,
                             CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)));
#undef TILED
}

/* The tile at column x, row y of the N x N matrix `src` (0 outside it: the driver's OOB fill). */
static void expected_tile(const float *src, int x, int y, float *tile)
{
    for (int r = 0; r < TILE; r++)
        for (int c = 0; c < TILE; c++)
            tile[r * TILE + c] = (y + r < N && x + c < N) ? src[(y + r) * N + x + c] : 0.0f;
}

static void load_tile(CUfunction f, CUtensorMap *map, CUdeviceptr out, int x, int y, const float *src,
                      const char *what)
{
    void *params[] = {map, &out, &x, &y};
    CK(cuLaunchKernel(f, 1, 1, 1, 128, 1, 1, 0, NULL, params, NULL));
    CK(cuCtxSynchronize());
    float got[TILE * TILE], want[TILE * TILE];
    CK(cuMemcpyDtoH(got, out, sizeof got));
    expected_tile(src, x, y, want);
    int same = memcmp(got, want, sizeof got) == 0;
    printf("tensor_map tma %s (x %d, y %d): %s checksum=%016llx\n", what, x, y, same ? "ok" : "WRONG",
           (unsigned long long)fnv1a(got, sizeof got));
    if (!same) exit(1);
}

static void tma(const char *dir, CUdeviceptr a, CUdeviceptr b)
{
    CUmodule module;
    CUfunction f;
    char *ptx = read_kernel(dir, "tensor_map", "ptx", NULL);
    CK(cuModuleLoadData(&module, ptx));
    free(ptx);
    CK(cuModuleGetFunction(&f, module, "tma_load_tile"));
    static float ha[N * N], hb[N * N];
    for (int i = 0; i < N * N; i++) {
        ha[i] = (float)i;
        hb[i] = (float)(i * 3 + 7);
    }
    CK(cuMemcpyHtoD(a, ha, sizeof ha));
    CK(cuMemcpyHtoD(b, hb, sizeof hb));
    CUdeviceptr out;
    CK(cuMemAlloc(&out, TILE * TILE * sizeof(float)));
    CUtensorMap map;
    const cuuint64_t dims[] = {N, N}, strides[] = {N * sizeof(float)};
    const cuuint32_t box[] = {TILE, TILE}, ones[] = {1, 1};
    CK(tiled(&map, FLOAT32, 2, a, dims, strides, box, ones, CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_NONE, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
    load_tile(f, &map, out, 16, 32, ha, "tile");
    load_tile(f, &map, out, 56, 48, ha, "tile partly outside");
    CK(cuTensorMapReplaceAddress(&map, (void *)(uintptr_t)b));
    load_tile(f, &map, out, 32, 16, hb, "tile after replace address");
    CK(cuMemFree(out));
    CK(cuModuleUnload(module));
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    int major = 0;
    CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    if (major < 9) {
        printf("tensor_map: compute capability %d, tensor maps need 9.0\n", major);
        return 0;
    }
    CUdeviceptr base = fixed_range(dev), a, b;
    encodings(base);
    refusals(base);
    CK(cuMemAlloc(&a, N * N * sizeof(float)));
    CK(cuMemAlloc(&b, N * N * sizeof(float)));
    tma(dir, a, b);
    CK(cuMemFree(b));
    CK(cuMemFree(a));
    free_fixed_range(base);
    CK(cuCtxDestroy(ctx));
    printf("tensor_map done\n");
    return 0;
}
