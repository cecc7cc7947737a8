/* Answers that stay fixed for a context's life, kept per context after the server's first one:
 *   - cuKernelGetFunction: a kernel's function in the current context (cuBLASLt asks it before
 *     its launches: 4 round trips a step of PyTorch's transformer training);
 *   - cuCtxGetLimit of the limits a program can only query, CU_LIMIT_SHMEM_SIZE and
 *     CU_LIMIT_CIG_ENABLED (cuda.h: "Can only be queried, cannot be set"): cuBLASLt asks whether
 *     its context is a CIG one, 8 times a step.
 * Handles are never reused (the server mints each with a new generation), so an entry of a
 * destroyed context or an unloaded library can no longer be asked for by a correct program; the
 * table is bounded and starts over when full. A forked child starts empty: its handles are not
 * its parent's. */

#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "ivc_api.h"
#include "log.h"

#define SLOTS 2048

enum question { KERNEL_FUNCTION = 1, QUERY_ONLY_LIMIT = 2 };

struct answer {
    uint64_t context, key, value;
    int question; /* 0: a free slot */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct answer answers[SLOTS];
static unsigned used;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void forget_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
    memset(answers, 0, sizeof answers);
    used = 0;
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forget_in_child);
}

static struct answer *find_locked(int question, uint64_t context, uint64_t key)
{
    uint64_t h = (context * 0x9e3779b97f4a7c15ULL) ^ (key * 0xc2b2ae3d27d4eb4fULL) ^ (uint64_t)question;
    size_t at = (size_t)(h >> 21) % SLOTS;
    for (size_t probe = 0; probe < SLOTS; probe++) {
        struct answer *a = &answers[(at + probe) % SLOTS];
        if (a->question == 0 || (a->question == question && a->context == context && a->key == key))
            return a;
    }
    return NULL;
}

/* The thread's current context, or 0 when it has none (then nothing is kept or answered). */
static uint64_t current_context(void)
{
    CUcontext current = NULL;
    if (cuCtxGetCurrent(&current) != CUDA_SUCCESS)
        return 0;
    return (uint64_t)(uintptr_t)current;
}

static int recall(int question, uint64_t key, uint64_t *value)
{
    uint64_t context = current_context();
    if (context == 0)
        return 0;
    pthread_once(&once, register_fork_handler);
    pthread_mutex_lock(&lock);
    struct answer *a = find_locked(question, context, key);
    int hit = a != NULL && a->question != 0;
    if (hit)
        *value = a->value;
    pthread_mutex_unlock(&lock);
    return hit;
}

static void keep(int question, uint64_t key, uint64_t value)
{
    uint64_t context = current_context();
    if (context == 0)
        return;
    pthread_mutex_lock(&lock);
    if (used >= SLOTS * 3 / 4) {
        memset(answers, 0, sizeof answers);
        used = 0;
    }
    struct answer *a = find_locked(question, context, key);
    if (a != NULL) {
        if (a->question == 0)
            used++;
        *a = (struct answer){context, key, value, question};
    }
    pthread_mutex_unlock(&lock);
}

static int query_only(CUlimit limit)
{
    return limit == 0x07 || limit == 0x08; /* CU_LIMIT_SHMEM_SIZE, CU_LIMIT_CIG_ENABLED */
}

/* ---- the generated stubs' hooks ------------------------------------------------------- */

CUresult ivc_local_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    uint64_t function;
    if (!recall(KERNEL_FUNCTION, (uint64_t)(uintptr_t)kernel, &function))
        return IVC_NOT_LOCAL;
    *pFunc = (CUfunction)(uintptr_t)function;
    ivc_trace("cuKernelGetFunction(%p) -> %p (known in this context)", (void *)kernel, (void *)*pFunc);
    return CUDA_SUCCESS;
}

void ivc_hook_before_cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
    (void)pFunc, (void)kernel;
}

CUresult ivc_hook_after_cuKernelGetFunction(CUresult result, CUfunction *pFunc, CUkernel kernel)
{
    if (result == CUDA_SUCCESS)
        keep(KERNEL_FUNCTION, (uint64_t)(uintptr_t)kernel, (uint64_t)(uintptr_t)*pFunc);
    return result;
}

CUresult ivc_local_cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    uint64_t value;
    if (!query_only(limit) || !recall(QUERY_ONLY_LIMIT, (uint64_t)limit, &value))
        return IVC_NOT_LOCAL;
    *pvalue = (size_t)value;
    ivc_trace("cuCtxGetLimit(%d) -> %zu (known in this context)", (int)limit, *pvalue);
    return CUDA_SUCCESS;
}

void ivc_hook_before_cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    (void)pvalue, (void)limit;
}

CUresult ivc_hook_after_cuCtxGetLimit(CUresult result, size_t *pvalue, CUlimit limit)
{
    if (result == CUDA_SUCCESS && query_only(limit))
        keep(QUERY_ONLY_LIMIT, (uint64_t)limit, (uint64_t)*pvalue);
    return result;
}
