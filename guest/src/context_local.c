/* Export table c693336e, context-local storage: cudart keeps its per-context state here, one
 * value per (context, key), with a destructor the driver runs when the context goes away
 * (destroyed, primary context reset, or released for the last time). Three slots and no size
 * word (docs/export-tables.md):
 *   0  put(ctx, key, value, destructor)   ctx NULL: the current context
 *   1  remove(ctx, key)                    without running the destructor
 *   2  get(&value, ctx, key)               CUDA_ERROR_NOT_FOUND when there is none
 * Contexts are the guest's handles; the destructors run here, in the process that registered
 * them, from the hooks around cuCtxDestroy / cuDevicePrimaryCtx{Retain,Release,Reset}
 * (api/cuda-driver.api `hook`). */
#include <pthread.h>
#include <stdlib.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "current_context.h"
#include "primary_state.h"

#define PRIMARY_DEVICES 64

struct entry {
    CUcontext context;
    void *key;
    void *value;
    ivc_context_local_destructor destructor;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct entry *entries;
static size_t entry_count, entry_capacity;
static CUcontext primary[PRIMARY_DEVICES]; /* the primary context of each device, once retained */
static pthread_once_t fork_handler_once = PTHREAD_ONCE_INIT;

/* A forked child's contexts are not its parent's: it starts with none and runs no destructor
 * of its parent's values (they belong to the parent's contexts). */
static void forget_in_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    lock = fresh;
    free(entries);
    entries = NULL;
    entry_count = entry_capacity = 0;
    for (int i = 0; i < PRIMARY_DEVICES; i++)
        primary[i] = NULL;
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forget_in_child);
}

static struct entry *find_locked(CUcontext context, void *key)
{
    for (size_t i = 0; i < entry_count; i++)
        if (entries[i].context == context && entries[i].key == key)
            return &entries[i];
    return NULL;
}

static CUresult resolve_context(CUcontext *context)
{
    if (*context != NULL)
        return CUDA_SUCCESS;
    CUresult r = cuCtxGetCurrent(context);
    if (r != CUDA_SUCCESS)
        return r;
    return *context != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult ivc_context_local_put(CUcontext context, void *key, void *value, ivc_context_local_destructor destructor)
{
    pthread_once(&fork_handler_once, register_fork_handler);
    CUresult r = resolve_context(&context);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    struct entry *e = find_locked(context, key);
    if (e == NULL && entry_count == entry_capacity) {
        size_t capacity = entry_capacity ? entry_capacity * 2 : 16;
        struct entry *grown = realloc(entries, capacity * sizeof *grown);
        if (grown == NULL) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        entries = grown;
        entry_capacity = capacity;
    }
    if (e == NULL)
        e = &entries[entry_count++];
    *e = (struct entry){context, key, value, destructor};
    pthread_mutex_unlock(&lock);
    ivc_trace("context-local storage: put %p/%p = %p (destructor %p)", (void *)context, key, value,
              (void *)(uintptr_t)destructor);
    return CUDA_SUCCESS;
}

/* The value of (context, key) into *value, taking the entry out if `take`; NOT_FOUND if none. */
static CUresult find(CUcontext context, void *key, int take, void **value, const char *what)
{
    CUresult r = resolve_context(&context);
    if (r != CUDA_SUCCESS)
        return r;
    pthread_mutex_lock(&lock);
    struct entry *e = find_locked(context, key);
    if (e != NULL) {
        *value = e->value;
        if (take)
            *e = entries[--entry_count];
    }
    pthread_mutex_unlock(&lock);
    ivc_trace("context-local storage: %s %p/%p -> %p", what, (void *)context, key, e ? *value : NULL);
    return e != NULL ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult ivc_context_local_remove(CUcontext context, void *key)
{
    void *value = NULL;
    return find(context, key, 1, &value, "remove");
}

CUresult ivc_context_local_get(void **value, CUcontext context, void *key)
{
    if (value == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    *value = NULL;
    return find(context, key, 0, value, "get");
}

/* Takes the context's entries out, then runs their destructors without the lock: a destructor
 * may call the driver, this table included. */
void ivc_context_local_destroy(CUcontext context)
{
    if (context == NULL)
        return;
    pthread_mutex_lock(&lock);
    size_t taken = 0;
    struct entry *gone = NULL;
    for (size_t i = 0; i < entry_count;) {
        if (entries[i].context != context) {
            i++;
            continue;
        }
        struct entry *grown = realloc(gone, (taken + 1) * sizeof *gone);
        if (grown == NULL)
            break; /* out of memory: the rest stay until the next destroy */
        gone = grown;
        gone[taken++] = entries[i];
        entries[i] = entries[--entry_count];
    }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < taken; i++) {
        ivc_trace("context-local storage: destructor %p(%p, %p, %p)", (void *)(uintptr_t)gone[i].destructor,
                  (void *)context, gone[i].key, gone[i].value);
        if (gone[i].destructor != NULL)
            gone[i].destructor(context, gone[i].key, gone[i].value);
    }
    free(gone);
}

static int has_entries(CUcontext context)
{
    int any = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < entry_count && !any; i++)
        any = entries[i].context == context;
    pthread_mutex_unlock(&lock);
    return any;
}

static CUcontext primary_of(CUdevice dev)
{
    pthread_mutex_lock(&lock);
    CUcontext c = dev >= 0 && dev < PRIMARY_DEVICES ? primary[dev] : NULL;
    pthread_mutex_unlock(&lock);
    return c;
}

/* ---- hooks around the generated stubs ---------------------------------------------- */

/* The destructors run while the context still exists, as they may free what lives in it. */
void ivc_hook_before_cuCtxDestroy_v2(CUcontext ctx)
{
    ivc_context_local_destroy(ctx);
}

CUresult ivc_hook_after_cuCtxDestroy_v2(CUresult result, CUcontext ctx)
{
    (void)ctx;
    ivc_current_context_changed_anywhere(); /* it may have been current to any thread */
    return result;
}

void ivc_hook_before_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    (void)pctx;
    (void)dev;
}

CUresult ivc_hook_after_cuDevicePrimaryCtxRetain(CUresult result, CUcontext *pctx, CUdevice dev)
{
    ivc_primary_state_changed();
    if (result == CUDA_SUCCESS && dev >= 0 && dev < PRIMARY_DEVICES) {
        pthread_mutex_lock(&lock);
        primary[dev] = *pctx;
        pthread_mutex_unlock(&lock);
    }
    return result;
}

void ivc_hook_before_cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    (void)dev;
}

/* Only the last release ends the primary context; whether this was it, the driver's state says
 * (asked only when the context has values here). */
CUresult ivc_hook_after_cuDevicePrimaryCtxRelease_v2(CUresult result, CUdevice dev)
{
    ivc_current_context_changed_anywhere(); /* the last release ends the primary context */
    ivc_primary_state_changed();
    CUcontext context = primary_of(dev);
    if (result != CUDA_SUCCESS || context == NULL || !has_entries(context))
        return result;
    unsigned flags = 0;
    int active = 1;
    if (cuDevicePrimaryCtxGetState(dev, &flags, &active) == CUDA_SUCCESS && !active)
        ivc_context_local_destroy(context);
    return result;
}

void ivc_hook_before_cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ivc_context_local_destroy(primary_of(dev));
}

CUresult ivc_hook_after_cuDevicePrimaryCtxReset_v2(CUresult result, CUdevice dev)
{
    (void)dev;
    ivc_current_context_changed_anywhere();
    ivc_primary_state_changed();
    return result;
}
