/* Function and kernel attributes the guest knows are answered without the server; a set to the
 * value it holds is not sent; a set that is sent forgets what it may move and, for the two plain
 * settings cuBLASLt sets before each launch, keeps the value set (function_attributes.c). */
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
    CHECK(asked(IVC_OP_cuFuncGetAttribute) == gets);                  /* kept as set */
    CHECK(cuFuncGetAttribute(&v, 4, f) == CUDA_SUCCESS && asked(IVC_OP_cuFuncGetAttribute) == gets + 1); /* may move */
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

/* cuBLASLt before each launch: two gets and two sets of the same kernel; after the first round
 * nothing goes to the server. Another kernel's values are kept across the sets. */
static void test_cublaslt_pattern(void)
{
    CUkernel k = (CUkernel)(FAKE_FUNCTION + 0x100), other = (CUkernel)(FAKE_FUNCTION + 0x200);
    int v = 0;
    CHECK(cuKernelGetAttribute(&v, 0, other, 0) == CUDA_SUCCESS); /* MAX_THREADS_PER_BLOCK of another kernel */
    int other_value = v;
    CHECK(cuKernelGetAttribute(&v, 0, k, 0) == CUDA_SUCCESS); /* and of this one */
    int gets = asked(IVC_OP_cuKernelGetAttribute), sets = asked(IVC_OP_cuKernelSetAttribute);
    for (int round = 0; round < 3; round++) {
        CHECK(cuKernelGetAttribute(&v, 8, k, 0) == CUDA_SUCCESS);
        CHECK(round == 0 || v == 4096);
        CHECK(cuKernelGetAttribute(&v, 14, k, 0) == CUDA_SUCCESS);
        CHECK(round == 0 || v == 1);
        CHECK(cuKernelSetAttribute(8, 4096, k, 0) == CUDA_SUCCESS);
        CHECK(cuKernelSetAttribute(14, 1, k, 0) == CUDA_SUCCESS);
        if (round == 0) {
            gets = asked(IVC_OP_cuKernelGetAttribute);
            sets = asked(IVC_OP_cuKernelSetAttribute);
        }
    }
    CHECK(asked(IVC_OP_cuKernelGetAttribute) == gets); /* rounds 2 and 3: all in the guest */
    CHECK(asked(IVC_OP_cuKernelSetAttribute) == sets);
    /* the other kernel's value survived this one's sets */
    CHECK(cuKernelGetAttribute(&v, 0, other, 0) == CUDA_SUCCESS && v == other_value);
    CHECK(asked(IVC_OP_cuKernelGetAttribute) == gets);
    /* an attribute no set takes may be derived from the settings: asked again after a set */
    CHECK(cuKernelSetAttribute(8, 2048, k, 0) == CUDA_SUCCESS && asked(IVC_OP_cuKernelSetAttribute) == sets + 1);
    CHECK(cuKernelGetAttribute(&v, 0, k, 0) == CUDA_SUCCESS && asked(IVC_OP_cuKernelGetAttribute) == gets + 1);
    /* the other plain setting of the same kernel is a separate one: still known */
    CHECK(cuKernelGetAttribute(&v, 14, k, 0) == CUDA_SUCCESS && v == 1 && asked(IVC_OP_cuKernelGetAttribute) == gets + 1);
    /* a carveout is a preference the driver may round: read back from the driver */
    CHECK(cuKernelSetAttribute(9, 50, k, 0) == CUDA_SUCCESS);
    CHECK(cuKernelGetAttribute(&v, 9, k, 0) == CUDA_SUCCESS && asked(IVC_OP_cuKernelGetAttribute) == gets + 2);
    /* a refused set keeps nothing: the next identical set goes to the server again */
    sets = asked(IVC_OP_cuKernelSetAttribute);
    fake.refuse_kernel_attribute_sets = 1;
    CHECK(cuKernelSetAttribute(8, 8192, k, 0) != CUDA_SUCCESS);
    fake.refuse_kernel_attribute_sets = 0;
    CHECK(cuKernelSetAttribute(8, 8192, k, 0) == CUDA_SUCCESS && asked(IVC_OP_cuKernelSetAttribute) == sets + 2);
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_function_attributes();
    test_kernel_attributes();
    test_cublaslt_pattern();
    unlink(path);
    return check_summary("test_function_attributes");
}
