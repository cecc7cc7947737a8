/* Function and kernel attributes answered in the guest when it knows them.
 *
 * cuBLASLt reads two attributes of a kernel and sets them again before each of its launches
 * (MAX_DYNAMIC_SHARED_SIZE_BYTES and NON_PORTABLE_CLUSTER_SIZE_ALLOWED). While every set that went
 * to the server forgot every value, PyTorch's transformer training still sent 646 gets and 178
 * sets per run, 25 and 59 us each (IVCUDA_STATS on the H200, 2026-12-02). An attribute only moves
 * when this process sets it — its handles are its own, and the server never gives an unloaded
 * handle's value to another (HandleTable's generations) — so the guest keeps each value the server
 * answered, per (API, handle, attribute, device), answers repeats from it, and answers a set to
 * the value it already holds without asking (the driver would change nothing).
 *
 * A set that does go to the server forgets what it may move: the named attribute and every
 * attribute of that handle that no set takes (the driver may derive those from the settings), and
 * every value of the other API (a kernel's attribute and its functions' are the driver's one
 * setting, and which function belongs to which kernel is the server's to know). The settable
 * attributes are separate settings of the driver, so a set of one keeps the others. After the set
 * succeeds, MAX_DYNAMIC_SHARED_SIZE_BYTES and NON_PORTABLE_CLUSTER_SIZE_ALLOWED — plain values the
 * driver reads back as set — are kept as set; the other settable ones are read back from the
 * driver when next asked (a carveout is a preference the driver may round).
 *
 * Races: a get that was on its way while a set was is not kept (the server may have answered it
 * before or after the set), and a set's value is kept only when no other set overlapped it (the
 * generation counter and the sets in flight), so no thread keeps a value older than another
 * thread's set. */

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
static unsigned sets_in_flight;                  /* under the lock */
static _Thread_local uint64_t set_in_generation; /* the generation this thread's set began */

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void forget_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    memset(values, 0, sizeof values);
    used = 0;
    sets_in_flight = 0;
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
    if (atomic_load(&generation) == asked_in_generation && sets_in_flight == 0) {
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

/* The attributes cuFuncSetAttribute and cuKernelSetAttribute take (NVIDIA's cuda.h: MAX_DYNAMIC_
 * SHARED_SIZE_BYTES 8, PREFERRED_SHARED_MEMORY_CARVEOUT 9, REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH
 * 11-13, NON_PORTABLE_CLUSTER_SIZE_ALLOWED 14, CLUSTER_SCHEDULING_POLICY_PREFERENCE 15): a set of
 * any other is the driver's to refuse, so it always goes to the server. */
static int settable(int attribute)
{
    return attribute == 8 || attribute == 9 || (attribute >= 11 && attribute <= 15);
}

/* Settable attributes the driver reads back exactly as they were set. */
static int read_back_as_set(int attribute)
{
    return attribute == 8 || attribute == 14;
}

/* Caller holds the lock: empties the table, then puts back what a set of `attribute` of `handle`
 * (an `api` handle) cannot move; re-inserting keeps the open-addressing chains whole. */
static void forget_moved_locked(int api, uint64_t handle, int attribute)
{
    static struct value kept[SLOTS];
    unsigned n = 0;
    for (size_t i = 0; i < SLOTS; i++) {
        const struct value *v = &values[i];
        if (v->api != api)
            continue; /* free, or the other API's: forgotten */
        if (v->handle == handle && (v->attribute == attribute || !settable(v->attribute)))
            continue;
        kept[n++] = *v;
    }
    memset(values, 0, sizeof values);
    used = 0;
    for (unsigned i = 0; i < n; i++) {
        struct value *v = find_locked(kept[i].api, kept[i].handle, kept[i].attribute, kept[i].device);
        if (v != NULL) {
            *v = kept[i];
            used++;
        }
    }
}

/* Before a set goes to the server: what it may move is forgotten, and gets and sets already on
 * their way will not keep what they learn. */
static void set_begins(int api, uint64_t handle, int attribute)
{
    pthread_once(&once, register_fork_handler);
    pthread_mutex_lock(&lock);
    set_in_generation = atomic_fetch_add(&generation, 1) + 1;
    sets_in_flight++;
    forget_moved_locked(api, handle, attribute);
    pthread_mutex_unlock(&lock);
}

/* After it: a successful set of a value read back as set is kept, unless another set overlapped
 * it (their order at the server is unknown). */
static void set_ends(CUresult result, int api, uint64_t handle, int attribute, int device, int value)
{
    pthread_mutex_lock(&lock);
    sets_in_flight--;
    if (result == CUDA_SUCCESS && read_back_as_set(attribute) && sets_in_flight == 0
        && atomic_load(&generation) == set_in_generation && used < SLOTS * 3 / 4) {
        struct value *v = find_locked(api, handle, attribute, device);
        if (v != NULL) {
            if (v->api == 0)
                used++;
            *v = (struct value){handle, api, attribute, device, value};
        }
    }
    /* a get that began while this set was on its way may have been answered before it */
    atomic_fetch_add(&generation, 1);
    pthread_mutex_unlock(&lock);
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
    (void)value;
    set_begins(FUNC, (uint64_t)(uintptr_t)hfunc, (int)attrib); /* before: a get racing with it keeps nothing */
}

CUresult ivc_hook_after_cuFuncSetAttribute(CUresult result, CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    set_ends(result, FUNC, (uint64_t)(uintptr_t)hfunc, (int)attrib, -1, value);
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
    (void)val, (void)dev;
    set_begins(KERNEL, (uint64_t)(uintptr_t)kernel, (int)attrib);
}

CUresult ivc_hook_after_cuKernelSetAttribute(CUresult result, CUfunction_attribute attrib, int val, CUkernel kernel,
                                             CUdevice dev)
{
    set_ends(result, KERNEL, (uint64_t)(uintptr_t)kernel, (int)attrib, dev, val);
    return result;
}
