/* Export table 1734dc26 (136 bytes: size word + 16 slots), asked by cuBLASLt for its nvjet
 * kernels: the GPU's SM topology. Read from the H200 trace of PyTorch's matmul and cuBLASLt's
 * code around the calls (docs/export-tables.md): slot 4, (uint8_t **first, uint8_t **second),
 * hands out two heap arrays of one byte per TPC (pair of SMs) — the first each TPC's GPC, the
 * second its index within the GPC — which cuBLASLt counts per GPC; slot 13, (first, second),
 * takes them back (the driver frees both: what looked like "a hash" written into them was glibc's
 * free list). Refused as an unknown table, cuBLASLt crashes (on the real driver too); with slot 4
 * failing, it takes other kernels.
 *
 * Only the server's driver knows the topology: it is asked once (ivc_sm_topology) and kept; each
 * slot-4 call hands out fresh copies, which slot 13 frees. */

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export_tables.h"
#include "ivc_api.h"
#include "log.h"

/* Two arrays of one byte per TPC: room for GPUs of up to 1024 SMs. */
#define TOPOLOGY_CAPACITY 1024

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int asked;
static CUresult answer;
static uint32_t entries;
static uint8_t arrays[TOPOLOGY_CAPACITY];

/* A child forked while another thread held the lock must not inherit it held; the answer kept is
 * the same GPU's and stays. */
static void unlock_in_child(void)
{
    pthread_mutex_init(&lock, NULL);
}

static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, unlock_in_child);
}

static CUresult topology(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, register_fork_handler);
    pthread_mutex_lock(&lock);
    if (!asked) {
        uint32_t count = 0;
        answer = ivc_sm_topology(&count, (char *)arrays, TOPOLOGY_CAPACITY);
        if (answer == CUDA_SUCCESS && (count == 0 || count > TOPOLOGY_CAPACITY / 2)) {
            ivc_log("the SM topology from the server has %u entries per array (at most %u): not used", count,
                    TOPOLOGY_CAPACITY / 2);
            answer = CUDA_ERROR_NOT_SUPPORTED;
        }
        entries = count;
        /* a server that cannot answer is asked again by the next process, not on every call */
        asked = answer == CUDA_SUCCESS || answer == CUDA_ERROR_NOT_SUPPORTED;
    }
    CUresult r = answer;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult ivc_sm_topology_get(uint8_t **first, uint8_t **second)
{
    if (first == NULL || second == NULL)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = topology();
    if (r != CUDA_SUCCESS) {
        ivc_trace("SM topology slot 4 -> %d", r);
        return r;
    }
    uint8_t *a = malloc(entries), *b = malloc(entries);
    if (a == NULL || b == NULL) {
        free(a);
        free(b);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(a, arrays, entries);
    memcpy(b, arrays + entries, entries);
    *first = a;
    *second = b;
    ivc_trace("SM topology slot 4 -> %u entries per array", entries);
    return CUDA_SUCCESS;
}

CUresult ivc_sm_topology_release(void *first, void *second)
{
    free(first);
    free(second);
    return CUDA_SUCCESS;
}

