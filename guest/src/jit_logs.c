/* JIT logs of the linker (docs/kernels.md, "JIT logs"): a program's CU_JIT_INFO_LOG_BUFFER /
 * CU_JIT_ERROR_LOG_BUFFER (with their _SIZE_BYTES) and CU_JIT_WALL_TIME at cuLinkCreate. The link
 * state is the server's, and its driver writes the logs into buffers of the server's; the guest
 * sends the sizes the program gave, remembers where the program's buffers and option values are
 * (cuda.h: they must stay valid for the link state's life when output options are used), and
 * after each call of the link state copies the logs into them and sets the options as the driver
 * does. The same options given to cuModuleLoadDataEx or cuLibraryLoadData are outputs of that one
 * call: the server keeps the channel's last load's logs, read right after it (link state 0). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "ivc_api.h"
#include "jit_logs.h"
#include "log.h"

struct kept {
    struct kept *next;
    CUlinkState state;
    void **values; /* the program's optionValues */
    struct ivc_jit_logs logs;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept *all;

int ivc_jit_logs_scan(struct ivc_jit_logs *logs, unsigned numOptions, const CUjit_option *options,
                      void *const *values)
{
    int buffer_slot[2] = {-1, -1};
    *logs = (struct ivc_jit_logs){.size_slot = {-1, -1}, .wall_slot = -1};
    if (numOptions == 0 || options == NULL || values == NULL)
        return 0;
    for (unsigned i = 0; i < numOptions; i++) {
        CUjit_option o = options[i];
        if (o == CU_JIT_INFO_LOG_BUFFER || o == CU_JIT_ERROR_LOG_BUFFER)
            buffer_slot[o == CU_JIT_ERROR_LOG_BUFFER] = (int)i;
        else if (o == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES || o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
            logs->size_slot[o == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES] = (int)i;
        else if (o == CU_JIT_WALL_TIME)
            logs->wall_slot = (int)i;
    }
    int asked = logs->wall_slot >= 0;
    for (int w = 0; w < 2; w++) {
        /* a log is a buffer with a size of at least one byte (its NUL) */
        if (buffer_slot[w] >= 0 && logs->size_slot[w] >= 0 && values[buffer_slot[w]] != NULL &&
            (unsigned)(uintptr_t)values[logs->size_slot[w]] != 0) {
            logs->buffer[w] = values[buffer_slot[w]];
            logs->size[w] = (unsigned)(uintptr_t)values[logs->size_slot[w]];
            asked = 1;
        }
    }
    return asked;
}

void ivc_jit_logs_pairs(const struct ivc_jit_logs *logs, uint64_t *jit, size_t *pairs, size_t max_pairs)
{
    for (int w = 0; w < 2; w++) {
        if (logs->buffer[w] != NULL && *pairs < max_pairs) {
            jit[2 * *pairs] = w == 0 ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES : CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES;
            jit[2 * *pairs + 1] = logs->size[w];
            (*pairs)++;
        }
    }
    if (logs->wall_slot >= 0 && *pairs < max_pairs) {
        jit[2 * *pairs] = CU_JIT_WALL_TIME;
        jit[2 * *pairs + 1] = 0;
        (*pairs)++;
    }
}

void ivc_jit_logs_keep(CUlinkState state, const struct ivc_jit_logs *logs, void **values)
{
    struct kept *k = malloc(sizeof *k);
    if (k == NULL) {
        ivc_log("cuLinkCreate: no memory to keep where the JIT logs go; they stay empty");
        return;
    }
    k->state = state;
    k->values = values;
    k->logs = *logs;
    pthread_mutex_lock(&lock);
    k->next = all;
    all = k;
    pthread_mutex_unlock(&lock);
}

/* The server's logs of link state `state` (0: the channel's last load) into the program's buffers
 * and option values. */
static void copy_logs(const struct ivc_jit_logs *logs, void **values, CUlinkState state)
{
    for (uint32_t w = 0; w < 2; w++) {
        /* the time comes with either read: the info one stands in when no log was asked for */
        if (logs->buffer[w] == NULL && !(w == 0 && logs->wall_slot >= 0 && logs->buffer[1] == NULL))
            continue;
        uint32_t filled = 0, wall = 0;
        char none[1];
        char *into = logs->buffer[w] != NULL ? logs->buffer[w] : none;
        uint32_t capacity = logs->buffer[w] != NULL ? logs->size[w] : 1;
        CUresult r = ivc_jit_log_read(&filled, &wall, into, capacity, w, state);
        if (r != CUDA_SUCCESS) {
            ivc_trace("JIT log %u of link state %p: not read (%d)", w, (void *)state, r);
            continue;
        }
        if (logs->buffer[w] != NULL) {
            into[capacity - 1] = '\0'; /* the server ends the text within capacity; this keeps it so */
            values[logs->size_slot[w]] = (void *)(uintptr_t)(filled < capacity ? filled : capacity);
        }
        if (logs->wall_slot >= 0)
            memcpy(&values[logs->wall_slot], &wall, sizeof wall); /* the float over the option's value */
    }
}

void ivc_jit_logs_update(CUlinkState state)
{
    struct kept k;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (struct kept *p = all; p != NULL && !found; p = p->next) {
        if (p->state == state) {
            k = *p;
            found = 1;
        }
    }
    pthread_mutex_unlock(&lock);
    if (found)
        copy_logs(&k.logs, k.values, state);
}

void ivc_jit_logs_after_load(const struct ivc_jit_logs *logs, void **values)
{
    copy_logs(logs, values, NULL);
}

void ivc_jit_logs_forget(CUlinkState state)
{
    pthread_mutex_lock(&lock);
    for (struct kept **p = &all; *p != NULL;) {
        struct kept *k = *p;
        if (k->state == state) {
            *p = k->next;
            free(k);
        } else {
            p = &k->next;
        }
    }
    pthread_mutex_unlock(&lock);
}
