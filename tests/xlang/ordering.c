/*
 * Cross-language check of the order between threads (docs/protocol.md §6, "Order between
 * channels"), through the real guest library and the Java server's host-memory backend. A
 * worker thread queues memsets (ring records on its own channel: no reply), then tells the
 * main thread, which at once reads the memory back with a synchronous copy on its channel.
 * Natively the memsets are in the stream before the worker's calls return, so the main
 * thread must read the last value. Without ordering, the main thread's copy reached the
 * server while the worker's ring still held most of the memsets (each a 16 MiB memset of the
 * host-memory backend, queued in microseconds, run in milliseconds) and read an older value.
 * The worker stays alive until the main thread has read: its thread exit would say goodbye,
 * a synchronous call that drains its ring and would hide the fault.
 * Prints "ordering: ok" or what went wrong.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>

#include "check.h"

/* not in the guest's own cuda.h, which declares what its tests need */
CUresult cuMemsetD32Async(CUdeviceptr dstDevice, unsigned int ui, size_t N, CUstream hStream);

#define WORDS (4u << 20) /* 16 MiB of 32-bit words */
#define MEMSETS 32
#define ROUNDS 8

static CUcontext context;
static CUdeviceptr buffer;
static sem_t queued, read_back;
static int round_now;

static unsigned value_of(int round, int i)
{
    return 1000u * (unsigned)round + (unsigned)i;
}

static void *worker(void *unused)
{
    (void)unused;
    CK(cuCtxSetCurrent(context));
    for (int round = 1; round <= ROUNDS; round++) {
        for (int i = 1; i <= MEMSETS; i++)
            CK(cuMemsetD32Async(buffer, value_of(round, i), WORDS, NULL));
        round_now = round;
        sem_post(&queued);
        sem_wait(&read_back);
    }
    return NULL;
}

int main(void)
{
    CUdevice dev = xlang_device();
    context = xlang_primary_context(dev);
    CK(cuMemAlloc(&buffer, (size_t)WORDS * 4));
    sem_init(&queued, 0, 0);
    sem_init(&read_back, 0, 0);
    pthread_t thread;
    if (pthread_create(&thread, NULL, worker, NULL) != 0) {
        printf("pthread_create failed\n");
        return 1;
    }
    for (int round = 1; round <= ROUNDS; round++) {
        sem_wait(&queued);
        unsigned last = 0;
        CK(cuMemcpyDtoH(&last, buffer + (CUdeviceptr)(WORDS - 1) * 4, 4));
        if (last != value_of(round_now, MEMSETS)) {
            printf("round %d: read %u, expected %u (the worker's last memset)\n", round, last,
                   value_of(round_now, MEMSETS));
            failures++;
        }
        sem_post(&read_back);
    }
    pthread_join(thread, NULL);
    CK(cuMemFree(buffer));
    return xlang_report("ordering");
}
