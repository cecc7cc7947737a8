// memory_objects: a kernel that reads a pitched 2D buffer (what cuMemcpy2D filled) and writes
// each row's sum, so the program checks that the rows landed at the pitch the device uses.
extern "C" __global__ void row_sums(const unsigned char *image, unsigned long long pitch, int width, int height,
                                    unsigned int *sums)
{
    int y = blockIdx.x * blockDim.x + threadIdx.x;
    if (y >= height) return;
    const unsigned char *row = image + (unsigned long long)y * pitch;
    unsigned int s = 0;
    for (int x = 0; x < width; x++) s += row[x] * (unsigned int)(x + 1);
    sums[y] = s;
}
