/* Function and kernel attributes answered in the guest when it knows them.
 *
 * cuBLASLt reads two attributes of a kernel and sets them again before each of its launches
 * (MAX_DYNAMIC_SHARED_SIZE_BYTES and NON_PORTABLE_CLUSTER_SIZE_ALLOWED: 54 gets and 9 sets per
 * step of PyTorch's transformer training, each a round trip to the server). An attribute only
 * moves when this process sets it — its handles are its own — so the guest keeps each value the
 * server answered, per (API, handle, attribute, device), answers repeats from it, and answers a set
 * to the value it already holds without asking (the driver would change nothing). Any set that does
 * go to the server forgets every value: a kernel's attribute and its functions' are the driver's
 * one setting, and a set may move more than the attribute named.
 *
 * A get that was on its way while a set went out is not kept (the generation counter), so no
 * thread keeps a value older than another thread's set. */

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "ivc_api.h"
#include "log.h"

/* How many values are kept: more than any program's kernels × attributes seen; full, all go. */
#define SLOTS 4096

enum api { FUNC = 1, KERNEL = 2 };

struct value {
    uint64_t handle;
    int32_t api, attribute, device, value; /* api 0: a free slot */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct value values[SLOTS];
static unsigned used;
static atomic_uint_fast64_t generation;
static _Thread_local uint64_t asked_in_generation;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void forget_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    memset(values, 0, sizeof values);
    used = 0;
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forget_in_child); /* a child's handles are not its parent's */
}

static size_t slot_of(int api, uint64_t handle, int attribute, int device)
{
    uint64_t h = handle * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uint32_t)attribute << 8 ^ (uint64_t)(uint32_t)device << 20
                 ^ (uint64_t)api;
    return (size_t)(h >> 17) % SLOTS;
}

/* Caller holds the lock: the slot holding the key, or the free one where it would go (NULL: full). */
static struct value *find_locked(int api, uint64_t handle, int attribute, int device)
{
    size_t at = slot_of(api, handle, attribute, device);
    for (size_t probe = 0; probe < SLOTS; probe++) {
        struct value *v = &values[(at + probe) % SLOTS];
        if (v->api == 0 || (v->api == api && v->handle == handle && v->attribute == attribute && v->device == device))
            return v;
    }
    return NULL;
}

static int known(int api, uint64_t handle, int attribute, int device, int *value)
{
    pthread_once(&once, register_fork_handler);
    pthread_mutex_lock(&lock);
    struct value *v = find_locked(api, handle, attribute, device);
    int hit = v != NULL && v->api != 0;
    if (hit)
        *value = v->value;
    pthread_mutex_unlock(&lock);
    return hit;
}

static void keep(int api, uint64_t handle, int attribute, int device, int value)
{
    pthread_mutex_lock(&lock);
    if (atomic_load(&generation) == asked_in_generation) {
        if (used >= SLOTS * 3 / 4) {
            memset(values, 0, sizeof values);
            used = 0;
        }
        struct value *v = find_locked(api, handle, attribute, device);
        if (v != NULL) {
            if (v->api == 0)
                used++;
            *v = (struct value){handle, api, attribute, device, value};
        }
    }
    pthread_mutex_unlock(&lock);
}

static void forget_all(void)
{
    pthread_mutex_lock(&lock);
    atomic_fetch_add(&generation, 1);
    memset(values, 0, sizeof values);
    used = 0;
    pthread_mutex_unlock(&lock);
}

/* The attributes cuFuncSetAttribute and cuKernelSetAttribute take (NVIDIA's cuda.h: MAX_DYNAMIC_
 * SHARED_SIZE_BYTES 8, PREFERRED_SHARED_MEMORY_CARVEOUT 9, REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH
 * 11-13, NON_PORTABLE_CLUSTER_SIZE_ALLOWED 14, CLUSTER_SCHEDULING_POLICY_PREFERENCE 15): a set of
 * any other is the driver's to refuse, so it always goes to the server. */
static int settable(int attribute)
{
    return attribute == 8 || attribute == 9 || (attribute >= 11 && attribute <= 15);
}

static CUresult get_locally(int api, uint64_t handle, int attribute, int device, int *pi)
{
    if (known(api, handle, attribute, device, pi)) {
        ivc_trace("attribute %d of %p (known)", attribute, (void *)(uintptr_t)handle);
        return CUDA_SUCCESS;
    }
    asked_in_generation = atomic_load(&generation);
    return IVC_NOT_LOCAL;
}

static CUresult set_locally(int api, uint64_t handle, int attribute, int device, int value)
{
    int now;
    if (settable(attribute) && known(api, handle, attribute, device, &now) && now == value) {
        ivc_trace("attribute %d of %p is %d already", attribute, (void *)(uintptr_t)handle, value);
        return CUDA_SUCCESS;
    }
    return IVC_NOT_LOCAL;
}

/* ---- the generated stubs' hooks ------------------------------------------------------- */

CUresult ivc_local_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    return get_locally(FUNC, (uint64_t)(uintptr_t)hfunc, (int)attrib, -1, pi);
}

void ivc_hook_before_cuFuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    (void)pi, (void)attrib, (void)hfunc;
}

CUresult ivc_hook_after_cuFuncGetAttribute(CUresult result, int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    if (result == CUDA_SUCCESS)
        keep(FUNC, (uint64_t)(uintptr_t)hfunc, (int)attrib, -1, *pi);
    return result;
}

CUresult ivc_local_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    return set_locally(FUNC, (uint64_t)(uintptr_t)hfunc, (int)attrib, -1, value);
}

void ivc_hook_before_cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)hfunc, (void)attrib, (void)value;
    forget_all(); /* before: a get racing with this set must not keep the old value */
}

CUresult ivc_hook_after_cuFuncSetAttribute(CUresult result, CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    (void)hfunc, (void)attrib, (void)value;
    return result;
}

CUresult ivc_local_cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    return get_locally(KERNEL, (uint64_t)(uintptr_t)kernel, (int)attrib, dev, pi);
}

void ivc_hook_before_cuKernelGetAttribute(int *pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev)
{
    (void)pi, (void)attrib, (void)kernel, (void)dev;
}

CUresult ivc_hook_after_cuKernelGetAttribute(CUresult result, int *pi, CUfunction_attribute attrib, CUkernel kernel,
                                             CUdevice dev)
{
    if (result == CUDA_SUCCESS)
        keep(KERNEL, (uint64_t)(uintptr_t)kernel, (int)attrib, dev, *pi);
    return result;
}

CUresult ivc_local_cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    return set_locally(KERNEL, (uint64_t)(uintptr_t)kernel, (int)attrib, dev, val);
}

void ivc_hook_before_cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev)
{
    (void)attrib, (void)val, (void)kernel, (void)dev;
    forget_all();
}

CUresult ivc_hook_after_cuKernelSetAttribute(CUresult result, CUfunction_attribute attrib, int val, CUkernel kernel,
                                             CUdevice dev)
{
    (void)attrib, (void)val, (void)kernel, (void)dev;
    return result;
}
