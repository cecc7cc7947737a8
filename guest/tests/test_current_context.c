/* The guest answers cuCtxGetCurrent, cuCtxGetDevice and cuDevicePrimaryCtxGetState from what it saw
 * set (current_context.c, primary_state.c) and asks the server again whenever it cannot know: counted at the fake
 * server, per opcode. */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"

static int asked(int opcode)
{
    return atomic_load(&fake.calls[opcode]);
}

static void *other_thread(void *arg)
{
    int *first_went_to_server = arg;
    int before = asked(IVC_OP_cuCtxGetCurrent);
    CUcontext c = NULL;
    cuCtxGetCurrent(&c);
    *first_went_to_server = asked(IVC_OP_cuCtxGetCurrent) == before + 1;
    return NULL;
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);

    /* the first question goes to the server, the repeat does not */
    CUcontext first = NULL, again = NULL;
    int before = asked(IVC_OP_cuCtxGetCurrent);
    CHECK(cuCtxGetCurrent(&first) == CUDA_SUCCESS && first == (CUcontext)0x0100000100000001ULL);
    CHECK(cuCtxGetCurrent(&again) == CUDA_SUCCESS && again == first);
    CHECK(asked(IVC_OP_cuCtxGetCurrent) == before + 1);

    /* a context set here is known here */
    CUcontext mine = (CUcontext)0x0100000100000002ULL, seen = NULL;
    CHECK(cuCtxSetCurrent(mine) == CUDA_SUCCESS);
    CHECK(cuCtxGetCurrent(&seen) == CUDA_SUCCESS && seen == mine);
    CHECK(asked(IVC_OP_cuCtxGetCurrent) == before + 1);

    /* its device (the VM's one device) without a round trip, for it or for the current one */
    CUdevice device = -1;
    int devices = asked(IVC_OP_cuCtxGetDevice_v2);
    CHECK(cuCtxGetDevice_v2(&device, NULL) == CUDA_SUCCESS && device == 0);
    device = -1;
    CHECK(cuCtxGetDevice_v2(&device, mine) == CUDA_SUCCESS && device == 0);
    CHECK(asked(IVC_OP_cuCtxGetDevice_v2) == devices);
    /* another context is the server's to check */
    CHECK(cuCtxGetDevice_v2(&device, (CUcontext)0x0100000100000003ULL) == CUDA_SUCCESS);
    CHECK(asked(IVC_OP_cuCtxGetDevice_v2) == devices + 1);
    CHECK(cuCtxGetDevice_v2(NULL, NULL) == CUDA_ERROR_INVALID_VALUE);

    /* a context destroyed anywhere: ask again */
    CHECK(cuCtxDestroy_v2((CUcontext)0x0100000100000003ULL) == CUDA_SUCCESS);
    CHECK(cuCtxGetCurrent(&seen) == CUDA_SUCCESS && seen == mine);
    CHECK(asked(IVC_OP_cuCtxGetCurrent) == before + 2);

    /* after a pop, the server says what is below */
    CUcontext popped = NULL;
    cuCtxPopCurrent_v2(&popped);
    cuCtxGetCurrent(&seen);
    CHECK(asked(IVC_OP_cuCtxGetCurrent) == before + 3);

    /* nothing current: cuCtxGetDevice is the server's to refuse */
    CHECK(cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
    atomic_store(&fake.current_context, 0);
    devices = asked(IVC_OP_cuCtxGetDevice);
    cuCtxGetDevice(&device);
    CHECK(asked(IVC_OP_cuCtxGetDevice) == devices + 1);

    /* the primary context's state: asked once, then again after each retain or release */
    unsigned flags = 7;
    int active = -1, states = asked(IVC_OP_cuDevicePrimaryCtxGetState);
    atomic_store(&fake.primary_active, 0);
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && flags == 0 && active == 0);
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && active == 0);
    CHECK(asked(IVC_OP_cuDevicePrimaryCtxGetState) == states + 1);
    CUcontext primary = NULL;
    CHECK(cuDevicePrimaryCtxRetain(&primary, 0) == CUDA_SUCCESS);
    CHECK(cuDevicePrimaryCtxGetState(0, &flags, &active) == CUDA_SUCCESS && active == 1);
    CHECK(asked(IVC_OP_cuDevicePrimaryCtxGetState) == states + 2);
    cuDevicePrimaryCtxSetFlags_v2(0, 4); /* whatever the fake answers, the flags may have changed */
    cuDevicePrimaryCtxGetState(0, &flags, &active);
    CHECK(asked(IVC_OP_cuDevicePrimaryCtxGetState) == states + 3);
    CHECK(cuDevicePrimaryCtxGetState(1, NULL, &active) == CUDA_ERROR_INVALID_VALUE);

    /* another thread has its own channel and its own current context */
    int first_went_to_server = 0;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, other_thread, &first_went_to_server) == 0);
    pthread_join(t, NULL);
    CHECK(first_went_to_server);

    unlink(path);
    return check_summary("test_current_context");
}
