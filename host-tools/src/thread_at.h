/* Running a function in a thread whose pthread_self() — on x86-64 glibc the thread pointer,
 * the %fs base — is an address chosen by the caller: the address another process's thread
 * has. glibc puts a thread's descriptor at the top of a stack the caller provides
 * (pthread_attr_setstack), below it by a fixed amount that one measuring thread gives; the
 * stack is mapped so that the descriptor lands on the address, never over an existing
 * mapping. */
#ifndef THREAD_AT_H
#define THREAD_AT_H

#include <stddef.h>
#include <stdint.h>

/* Runs fn(arg) in a new thread whose pthread_self() is `self`, and waits for it. 0, or -1
 * with the reason in err: the address range the thread needs is taken in this process, or
 * glibc's alignment cannot put a descriptor there. Not thread-safe: one caller at a time. */
int thread_at_run(uint64_t self, void (*fn)(void *), void *arg, char *err, size_t errlen);

/* The same with a stack of stack_bytes (a multiple of 4096, at least 64 KiB) below the
 * descriptor instead of THREAD_AT_STACK_BYTES: the same pthread_self(), another stack. */
#define THREAD_AT_STACK_BYTES (1024ull * 1024)
int thread_at_run_sized(uint64_t self, uint64_t stack_bytes, void (*fn)(void *), void *arg, char *err,
                        size_t errlen);

#endif
