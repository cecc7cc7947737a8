/* Words of the calling thread's descriptor (x86-64 glibc: at %fs): the stack guard at
 * %fs:0x28 and the pointer guard at %fs:0x30, which an integrity oracle takes on from the
 * thread it answers for (remote_proto.h ORACLE_GUARDS; gpu/tools/integrity-probe). Code that
 * changes them must not be built with stack protection. */
#ifndef THREAD_WORDS_H
#define THREAD_WORDS_H

#include <stdint.h>

#define THREAD_STACK_GUARD 0x28
#define THREAD_POINTER_GUARD 0x30

static inline uint64_t thread_word(uint64_t offset)
{
    uint64_t v;
    __asm__ volatile("movq %%fs:(%1), %0" : "=r"(v) : "r"(offset));
    return v;
}

static inline void thread_set_word(uint64_t offset, uint64_t v)
{
    __asm__ volatile("movq %0, %%fs:(%1)" : : "r"(v), "r"(offset) : "memory");
}

#endif
