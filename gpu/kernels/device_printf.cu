// device_printf: a kernel's printf must reach the program's own stdout, where and when it would
// natively (gpu/programs/device_printf.c). One thread prints, so the lines' order is fixed.
#include <cstdio>

extern "C" __global__ void dp_print(int launch, int lines)
{
    for (int i = 0; i < lines; i++) {
        printf("device: launch %d line %d of %d\n", launch, i, lines);
    }
}
