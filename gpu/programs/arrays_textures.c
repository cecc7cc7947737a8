/* arrays_textures: CUDA arrays, mipmapped arrays, texture and surface objects (docs/memory.md).
 * 2D arrays filled and read back through cuMemcpy2D/cuMemcpy3D from pageable and page-locked
 * memory at offsets; the 1D array copies (cuMemcpyHtoA/AtoH/DtoA/AtoD/AtoA and the async
 * forms); a kernel that reads one array through a texture object and writes another through a
 * surface object; textures on linear and pitched device memory and on a level of a mipmapped
 * array; the descriptor queries. Every result is compared with the CPU's and printed as a
 * checksum, so native and ivcuda output must be equal. */
#include "common.h"

static void report(const char *what, const void *got, const void *want, size_t n)
{
    int same = memcmp(got, want, n) == 0;
    printf("arrays_textures %s %s checksum=%016llx\n", what, same ? "ok" : "WRONG",
           (unsigned long long)fnv1a(got, n));
    if (!same) exit(1);
}

static void fill_floats(float *p, size_t n, unsigned seed)
{
    uint32_t x = seed * 2654435761u + 11;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        p[i] = (float)(x >> 20) / 16.0f; /* exact in a float, so 2v+1 is exact too */
    }
}

static CUarray make_array(size_t w, size_t h, unsigned flags)
{
    CUDA_ARRAY3D_DESCRIPTOR d = {0};
    d.Width = w, d.Height = h, d.Depth = 0, d.Format = CU_AD_FORMAT_FLOAT, d.NumChannels = 1, d.Flags = flags;
    CUarray a;
    CK(cuArray3DCreate(&a, &d));
    return a;
}

static CUtexObject array_texture(CUarray a)
{
    CUDA_RESOURCE_DESC res = {0};
    res.resType = CU_RESOURCE_TYPE_ARRAY, res.res.array.hArray = a;
    CUDA_TEXTURE_DESC tex = {0};
    tex.addressMode[0] = tex.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    tex.filterMode = CU_TR_FILTER_MODE_POINT;
    CUtexObject t;
    CK(cuTexObjectCreate(&t, &res, &tex, NULL));
    return t;
}

/* host → array (cuMemcpy2D, pageable, source at x 2 y 1 of a wider buffer) → host; then a
 * texture on it and a surface on a second array: out = 2v + 1, read back through cuMemcpy3D
 * into page-locked memory */
static void texture_and_surface(CUfunction tex_to_surf)
{
    const size_t w = 37, h = 19, hpitch = (w + 5) * sizeof(float);
    CUarray in = make_array(w, h, 0), out = make_array(w, h, CUDA_ARRAY3D_SURFACE_LDST);
    CUDA_ARRAY_DESCRIPTOR d2;
    CK(cuArrayGetDescriptor(&d2, in));
    CUDA_ARRAY3D_DESCRIPTOR d3;
    CK(cuArray3DGetDescriptor(&d3, out));
    printf("arrays_textures descriptors %zux%zu format=%d channels=%u; %zux%zux%zu flags=%u\n", d2.Width, d2.Height,
           (int)d2.Format, d2.NumChannels, d3.Width, d3.Height, d3.Depth, d3.Flags);

    float *src = calloc(h + 2, hpitch), *back = calloc(w * h, sizeof(float)), *want = malloc(w * h * sizeof(float));
    if (!src || !back || !want) die("malloc");
    fill_floats(src, (h + 2) * hpitch / sizeof(float), 3);
    CUDA_MEMCPY2D up = {0};
    up.srcXInBytes = 2 * sizeof(float), up.srcY = 1, up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = src;
    up.srcPitch = hpitch, up.dstMemoryType = CU_MEMORYTYPE_ARRAY, up.dstArray = in;
    up.WidthInBytes = w * sizeof(float), up.Height = h;
    CK(cuMemcpy2D(&up));
    for (size_t y = 0; y < h; y++)
        memcpy(want + y * w, (char *)src + (1 + y) * hpitch + 2 * sizeof(float), w * sizeof(float));
    CUDA_MEMCPY2D down = {0};
    down.srcMemoryType = CU_MEMORYTYPE_ARRAY, down.srcArray = in, down.dstMemoryType = CU_MEMORYTYPE_HOST;
    down.dstHost = back, down.dstPitch = w * sizeof(float), down.WidthInBytes = w * sizeof(float), down.Height = h;
    CK(cuMemcpy2D(&down));
    report("2d host->array->host", back, want, w * h * sizeof(float));

    CUtexObject tex = array_texture(in);
    CUDA_RESOURCE_DESC sres = {0};
    sres.resType = CU_RESOURCE_TYPE_ARRAY, sres.res.array.hArray = out;
    CUsurfObject surf;
    CK(cuSurfObjectCreate(&surf, &sres));
    int wi = (int)w, hi = (int)h;
    void *args[] = {&tex, &surf, &wi, &hi};
    CK(cuLaunchKernel(tex_to_surf, (unsigned)((w + 15) / 16), (unsigned)((h + 15) / 16), 1, 16, 16, 1, 0, NULL, args,
                      NULL));
    CK(cuCtxSynchronize());
    float *pinned;
    CK(cuMemAllocHost((void **)&pinned, w * h * sizeof(float)));
    CUDA_MEMCPY3D c3 = {0};
    c3.srcMemoryType = CU_MEMORYTYPE_ARRAY, c3.srcArray = out, c3.dstMemoryType = CU_MEMORYTYPE_HOST;
    c3.dstHost = pinned, c3.dstPitch = w * sizeof(float), c3.dstHeight = h;
    c3.WidthInBytes = w * sizeof(float), c3.Height = h, c3.Depth = 1;
    CK(cuMemcpy3D(&c3));
    for (size_t i = 0; i < w * h; i++)
        want[i] = 2.0f * want[i] + 1.0f;
    report("texture->kernel->surface", pinned, want, w * h * sizeof(float));

    /* the queries name the array by the handle the program holds */
    CUDA_RESOURCE_DESC got = {0};
    CK(cuTexObjectGetResourceDesc(&got, tex));
    CUDA_TEXTURE_DESC gtex = {0};
    CK(cuTexObjectGetTextureDesc(&gtex, tex));
    CUDA_RESOURCE_DESC gs = {0};
    CK(cuSurfObjectGetResourceDesc(&gs, surf));
    printf("arrays_textures queries texture resType=%d same-array=%d filter=%d address=%d; surface same-array=%d\n",
           (int)got.resType, got.res.array.hArray == in, (int)gtex.filterMode, (int)gtex.addressMode[0],
           gs.res.array.hArray == out);
    CK(cuTexObjectDestroy(tex));
    CK(cuSurfObjectDestroy(surf));
    CK(cuMemFreeHost(pinned));
    CK(cuArrayDestroy(in));
    CK(cuArrayDestroy(out));
    free(src);
    free(back);
    free(want);
}

/* the 1D array copies: HtoA, AtoA, AtoD, DtoA, AtoH and the async HtoA/AtoH on a stream */
static void copies_1d(void)
{
    const size_t n = 3000, bytes = n * sizeof(float);
    CUarray a = make_array(n, 0, 0), b = make_array(n, 0, 0), c = make_array(n, 0, 0);
    float *src = malloc(bytes), *back = malloc(bytes), *want = malloc(bytes);
    if (!src || !back || !want) die("malloc");
    fill_floats(src, n, 5);
    CK(cuMemcpyHtoA(a, 0, src, bytes));
    CK(cuMemcpyAtoA(b, 16, a, 0, bytes - 16));
    CUdeviceptr d;
    CK(cuMemAlloc(&d, bytes));
    CK(cuMemsetD8(d, 0, bytes));
    CK(cuMemcpyAtoD(d, b, 16, bytes - 16));
    CK(cuMemcpyDtoA(c, 0, d, bytes));
    memset(back, 0, bytes);
    CK(cuMemcpyAtoH(back, c, 0, bytes));
    memset(want, 0, bytes);
    memcpy(want, src, bytes - 16);
    report("1d HtoA AtoA AtoD DtoA AtoH", back, want, bytes);
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    float *pinned;
    CK(cuMemAllocHost((void **)&pinned, bytes));
    for (size_t i = 0; i < n; i++)
        pinned[i] = src[n - 1 - i];
    CK(cuMemcpyHtoAAsync(a, 0, pinned, bytes, s));
    CK(cuMemcpyAtoHAsync(back, a, 0, bytes, s));
    CK(cuStreamSynchronize(s));
    report("1d HtoAAsync AtoHAsync", back, pinned, bytes);
    CK(cuStreamDestroy(s));
    CK(cuMemFreeHost(pinned));
    CK(cuMemFree(d));
    CK(cuArrayDestroy(a));
    CK(cuArrayDestroy(b));
    CK(cuArrayDestroy(c));
    free(src);
    free(back);
    free(want);
}

/* textures on linear memory (tex1Dfetch) and on pitched memory (tex2D) */
static void linear_textures(CUfunction fetch_linear, CUfunction read_2d, CUdevice dev)
{
    const size_t n = 5000, w = 29, h = 23;
    float *host = malloc(n * sizeof(float)), *back = malloc(n * sizeof(float)), *want = malloc(n * sizeof(float));
    if (!host || !back || !want) die("malloc");
    fill_floats(host, n, 7);
    /* a linear texture's start must be aligned to TEXTURE_ALIGNMENT: the first aligned byte of the allocation */
    int align = 0;
    CK(cuDeviceGetAttribute(&align, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, dev));
    CUdeviceptr base, lin, out;
    CK(cuMemAlloc(&base, n * sizeof(float) + (size_t)align));
    lin = (base + (CUdeviceptr)align - 1) / (CUdeviceptr)align * (CUdeviceptr)align;
    CK(cuMemAlloc(&out, n * sizeof(float)));
    CK(cuMemcpyHtoD(lin, host, n * sizeof(float)));
    CUDA_RESOURCE_DESC res = {0};
    res.resType = CU_RESOURCE_TYPE_LINEAR, res.res.linear.devPtr = lin, res.res.linear.format = CU_AD_FORMAT_FLOAT;
    res.res.linear.numChannels = 1, res.res.linear.sizeInBytes = n * sizeof(float);
    CUDA_TEXTURE_DESC tex = {0};
    tex.filterMode = CU_TR_FILTER_MODE_POINT;
    CUtexObject t;
    CK(cuTexObjectCreate(&t, &res, &tex, NULL));
    int ni = (int)n;
    void *args[] = {&t, &out, &ni};
    CK(cuLaunchKernel(fetch_linear, (unsigned)((n + 255) / 256), 1, 1, 256, 1, 1, 0, NULL, args, NULL));
    CK(cuMemcpyDtoH(back, out, n * sizeof(float)));
    for (size_t i = 0; i < n; i++)
        want[i] = 3.0f * host[i];
    report("linear texture", back, want, n * sizeof(float));
    CK(cuTexObjectDestroy(t));

    CUdeviceptr pitched;
    size_t pitch;
    CK(cuMemAllocPitch(&pitched, &pitch, w * sizeof(float), h, 4));
    CUDA_MEMCPY2D up = {0};
    up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = host, up.srcPitch = w * sizeof(float);
    up.dstMemoryType = CU_MEMORYTYPE_DEVICE, up.dstDevice = pitched, up.dstPitch = pitch;
    up.WidthInBytes = w * sizeof(float), up.Height = h;
    CK(cuMemcpy2D(&up));
    CUDA_RESOURCE_DESC pres = {0};
    pres.resType = CU_RESOURCE_TYPE_PITCH2D, pres.res.pitch2D.devPtr = pitched;
    pres.res.pitch2D.format = CU_AD_FORMAT_FLOAT, pres.res.pitch2D.numChannels = 1;
    pres.res.pitch2D.width = w, pres.res.pitch2D.height = h, pres.res.pitch2D.pitchInBytes = pitch;
    CK(cuTexObjectCreate(&t, &pres, &tex, NULL));
    int wi = (int)w, hi = (int)h;
    void *args2[] = {&t, &out, &wi, &hi};
    CK(cuLaunchKernel(read_2d, (unsigned)((w + 15) / 16), (unsigned)((h + 15) / 16), 1, 16, 16, 1, 0, NULL, args2,
                      NULL));
    CK(cuMemcpyDtoH(back, out, w * h * sizeof(float)));
    report("pitch2d texture", back, host, w * h * sizeof(float));
    CK(cuTexObjectDestroy(t));
    CK(cuMemFree(pitched));
    CK(cuMemFree(base));
    CK(cuMemFree(out));
    free(host);
    free(back);
    free(want);
}

/* a mipmapped array of 3 levels: level 1 (32x16) filled through its array, sampled at LOD 1 */
static void mipmaps(CUfunction read_level, CUdevice dev)
{
    const size_t w = 64, h = 32, lw = 32, lh = 16;
    CUDA_ARRAY3D_DESCRIPTOR d = {0};
    d.Width = w, d.Height = h, d.Format = CU_AD_FORMAT_FLOAT, d.NumChannels = 1;
    CUmipmappedArray m;
    CK(cuMipmappedArrayCreate(&m, &d, 3));
    CUarray level[3];
    for (unsigned i = 0; i < 3; i++)
        CK(cuMipmappedArrayGetLevel(&level[i], m, i));
    CUDA_ARRAY3D_DESCRIPTOR l1;
    CK(cuArray3DGetDescriptor(&l1, level[1]));
    CUarray again;
    CK(cuMipmappedArrayGetLevel(&again, m, 1));
    printf("arrays_textures mipmap level 1 %zux%zu\n", l1.Width, l1.Height);
    /* ivcuda answers the handle it minted for the level (docs/memory.md); the driver's own answer is its business */
    printf("info: the same level handle twice=%d\n", again == level[1]);
    float *host = malloc(lw * lh * sizeof(float)), *back = malloc(lw * lh * sizeof(float));
    if (!host || !back) die("malloc");
    fill_floats(host, lw * lh, 9);
    CUDA_MEMCPY2D up = {0};
    up.srcMemoryType = CU_MEMORYTYPE_HOST, up.srcHost = host, up.srcPitch = lw * sizeof(float);
    up.dstMemoryType = CU_MEMORYTYPE_ARRAY, up.dstArray = level[1];
    up.WidthInBytes = lw * sizeof(float), up.Height = lh;
    CK(cuMemcpy2D(&up));
    CUDA_RESOURCE_DESC res = {0};
    res.resType = CU_RESOURCE_TYPE_MIPMAPPED_ARRAY, res.res.mipmap.hMipmappedArray = m;
    CUDA_TEXTURE_DESC tex = {0};
    tex.addressMode[0] = tex.addressMode[1] = CU_TR_ADDRESS_MODE_CLAMP;
    tex.filterMode = CU_TR_FILTER_MODE_POINT, tex.mipmapFilterMode = CU_TR_FILTER_MODE_POINT;
    tex.flags = CU_TRSF_NORMALIZED_COORDINATES, tex.maxMipmapLevelClamp = 2.0f;
    CUtexObject t;
    CK(cuTexObjectCreate(&t, &res, &tex, NULL));
    CUDA_RESOURCE_DESC got = {0};
    CK(cuTexObjectGetResourceDesc(&got, t));
    printf("arrays_textures mipmap texture resType=%d same-mipmap=%d\n", (int)got.resType,
           got.res.mipmap.hMipmappedArray == m);
    CUdeviceptr out;
    CK(cuMemAlloc(&out, lw * lh * sizeof(float)));
    int wi = (int)lw, hi = (int)lh;
    float lod = 1.0f;
    void *args[] = {&t, &out, &wi, &hi, &lod};
    CK(cuLaunchKernel(read_level, (unsigned)((lw + 15) / 16), (unsigned)((lh + 15) / 16), 1, 16, 16, 1, 0, NULL, args,
                      NULL));
    CK(cuMemcpyDtoH(back, out, lw * lh * sizeof(float)));
    report("mipmap level 1 texture", back, host, lw * lh * sizeof(float));
    CUDA_ARRAY_MEMORY_REQUIREMENTS req = {0};
    printf("arrays_textures mipmap memory requirements result=%d\n",
           (int)cuMipmappedArrayGetMemoryRequirements(&req, m, dev));
    CK(cuTexObjectDestroy(t));
    CK(cuMemFree(out));
    CK(cuMipmappedArrayDestroy(m));
    free(host);
    free(back);
}

int main(int argc, char **argv)
{
    const char *dir = kernel_dir(argc, argv);
    CUdevice dev;
    CUcontext ctx = create_context(&dev);
    CUmodule module;
    char *ptx = read_kernel(dir, "arrays_textures", "ptx", NULL);
    CK(cuModuleLoadData(&module, ptx));
    CUfunction tex_to_surf, fetch_linear, read_2d, read_level;
    CK(cuModuleGetFunction(&tex_to_surf, module, "tex_to_surf"));
    CK(cuModuleGetFunction(&fetch_linear, module, "fetch_linear"));
    CK(cuModuleGetFunction(&read_2d, module, "read_2d"));
    CK(cuModuleGetFunction(&read_level, module, "read_level"));
    size_t max_width = 0;
    CK(cuDeviceGetTexture1DLinearMaxWidth(&max_width, CU_AD_FORMAT_FLOAT, 1, dev));
    printf("arrays_textures Texture1DLinearMaxWidth float x1 = %zu\n", max_width);
    texture_and_surface(tex_to_surf);
    copies_1d();
    linear_textures(fetch_linear, read_2d, dev);
    mipmaps(read_level, dev);
    CK(cuModuleUnload(module));
    free(ptx);
    CK(cuCtxDestroy(ctx));
    printf("arrays_textures done\n");
    return 0;
}
