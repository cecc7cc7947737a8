/*
 * Prints every CUresult the real driver names, with its cuGetErrorString text, as
 * "code<TAB>name<TAB>string" lines. Run natively on the GPU machine; its output was
 * turned into guest/src/error_table.inc, so the guest library answers cuGetErrorName
 * and cuGetErrorString exactly as the driver does.
 *   gcc -I/usr/local/cuda/include -o error_strings gpu/tools/error_strings.c -lcuda
 */
#include <cuda.h>
#include <stdio.h>

int main(void)
{
    for (int code = 0; code < 1100; code++) {
        const char *name = NULL, *string = NULL;
        if (cuGetErrorName((CUresult)code, &name) == CUDA_SUCCESS && name != NULL) {
            cuGetErrorString((CUresult)code, &string);
            printf("%d\t%s\t%s\n", code, name, string ? string : "");
        }
    }
    return 0;
}
