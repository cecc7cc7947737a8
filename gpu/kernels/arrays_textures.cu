// arrays_textures: kernels that read through texture objects (a CUDA array, linear memory,
// pitched memory, a level of a mipmapped array) and write through a surface object, so the
// program checks on the host that the objects the driver made through ivcuda are the ones
// kernels sample.
#include <cuda_runtime.h>

// out(x, y) = 2 * tex(x, y) + 1, written into the surface (float elements)
extern "C" __global__ void tex_to_surf(cudaTextureObject_t tex, cudaSurfaceObject_t surf, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height) return;
    float v = tex2D<float>(tex, x + 0.5f, y + 0.5f);
    surf2Dwrite(2.0f * v + 1.0f, surf, x * (int)sizeof(float), y);
}

// out[i] = 3 * tex1Dfetch(tex, i)
extern "C" __global__ void fetch_linear(cudaTextureObject_t tex, float *out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3.0f * tex1Dfetch<float>(tex, i);
}

// out[y * width + x] = tex(x, y), unnormalized coordinates at texel centres
extern "C" __global__ void read_2d(cudaTextureObject_t tex, float *out, int width, int height)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height) out[y * width + x] = tex2D<float>(tex, x + 0.5f, y + 0.5f);
}

// out[y * width + x] = the texel (x, y) of mipmap level `level` (normalized coordinates, point filtering)
extern "C" __global__ void read_level(cudaTextureObject_t tex, float *out, int width, int height, float level)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < width && y < height)
        out[y * width + x] = tex2DLod<float>(tex, (x + 0.5f) / width, (y + 0.5f) / height, level);
}
