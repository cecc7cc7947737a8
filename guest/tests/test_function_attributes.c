/* Function and kernel attributes the guest knows are answered without the server; a set to the
 * value it holds is not sent; any set that is sent forgets them all (function_attributes.c). */
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"

static int asked(uint32_t opcode)
{
    if (opcode == IVC_OP_cuKernelGetAttribute)
        return atomic_load(&fake.kernel_attribute_gets);
    if (opcode == IVC_OP_cuKernelSetAttribute)
        return atomic_load(&fake.kernel_attribute_sets);
    return atomic_load(&fake.calls[opcode]);
}

static void test_function_attributes(void)
{
    CUfunction f = (CUfunction)FAKE_FUNCTION;
    int v = 0;
    CHECK(cuFuncGetAttribute(&v, 8, f) == CUDA_SUCCESS && v == 1024);
    int gets = asked(IVC_OP_cuFuncGetAttribute);
    CHECK(cuFuncGetAttribute(&v, 8, f) == CUDA_SUCCESS && v == 1024);
    CHECK(asked(IVC_OP_cuFuncGetAttribute) == gets); /* known */
    CHECK(cuFuncGetAttribute(&v, 4, f) == CUDA_SUCCESS && asked(IVC_OP_cuFuncGetAttribute) == gets + 1);

    int sets = asked(IVC_OP_cuFuncSetAttribute);
    CHECK(cuFuncSetAttribute(f, 8, 1024) == CUDA_SUCCESS && asked(IVC_OP_cuFuncSetAttribute) == sets); /* the same */
    CHECK(cuFuncSetAttribute(f, 4, 1024) == CUDA_SUCCESS && asked(IVC_OP_cuFuncSetAttribute) == sets + 1); /* not settable: the driver decides */
    CHECK(cuFuncSetAttribute(f, 8, 2048) == CUDA_SUCCESS && asked(IVC_OP_cuFuncSetAttribute) == sets + 2);
    gets = asked(IVC_OP_cuFuncGetAttribute);
    CHECK(cuFuncGetAttribute(&v, 8, f) == CUDA_SUCCESS && v == 2048); /* never the old value */
    CHECK(asked(IVC_OP_cuFuncGetAttribute) == gets + 1);
}

static void test_kernel_attributes(void)
{
    CUkernel k = (CUkernel)FAKE_FUNCTION;
    int v = 0;
    CHECK(cuKernelGetAttribute(&v, 14, k, 0) == CUDA_SUCCESS && v == 2048);
    int gets = asked(IVC_OP_cuKernelGetAttribute);
    CHECK(cuKernelGetAttribute(&v, 14, k, 0) == CUDA_SUCCESS && asked(IVC_OP_cuKernelGetAttribute) == gets);
    CHECK(cuKernelGetAttribute(&v, 14, k, 1) == CUDA_SUCCESS && asked(IVC_OP_cuKernelGetAttribute) == gets + 1); /* another device */
    int sets = asked(IVC_OP_cuKernelSetAttribute);
    CHECK(cuKernelSetAttribute(14, 2048, k, 0) == CUDA_SUCCESS && asked(IVC_OP_cuKernelSetAttribute) == sets);
    CHECK(cuKernelSetAttribute(14, 1, k, 0) == CUDA_SUCCESS && asked(IVC_OP_cuKernelSetAttribute) == sets + 1);
    /* a kernel's set moves its functions' attributes too: the function's value is asked again */
    int fgets = asked(IVC_OP_cuFuncGetAttribute);
    CHECK(cuFuncGetAttribute(&v, 8, (CUfunction)FAKE_FUNCTION) == CUDA_SUCCESS && v == 1);
    CHECK(asked(IVC_OP_cuFuncGetAttribute) == fgets + 1);
    int value = 5;
    CHECK(cuKernelGetAttribute(NULL, 14, k, 0) != CUDA_SUCCESS && value == 5);
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_function_attributes();
    test_kernel_attributes();
    unlink(path);
    return check_summary("test_function_attributes");
}
