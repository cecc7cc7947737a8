/* cuda-trace's forwarding code, x86-64 System V. The shim knows no prototypes, so every
 * entry point is a stub that loads its entry id into r11 (a scratch register no call
 * passes arguments in) and jumps here. trace_enter_common saves every register that can
 * carry an argument (rdi rsi rdx rcx r8 r9, rax = the vector-register count of a variadic
 * call, r10, xmm0-7), asks trace_on_enter (C) where to go, restores them all and jumps
 * there with the stack exactly as the caller left it, so arguments on the stack are where
 * the callee expects them. To see the result, trace_on_enter may replace the caller's
 * return address with trace_return, which hands the callee's rax/rdx/xmm0/xmm1 to
 * trace_on_return and then returns to the address it kept. Offsets: struct trace_regs in
 * trace.h. */

    .text

    .globl trace_enter_common
    .hidden trace_enter_common
    .type trace_enter_common, @function
    .balign 16
trace_enter_common:
    .cfi_startproc
    push %rbp
    .cfi_def_cfa_offset 16
    .cfi_offset %rbp, -16
    mov %rsp, %rbp
    .cfi_def_cfa_register %rbp
    sub $208, %rsp
    mov %rdi, 0(%rsp)
    mov %rsi, 8(%rsp)
    mov %rdx, 16(%rsp)
    mov %rcx, 24(%rsp)
    mov %r8, 32(%rsp)
    mov %r9, 40(%rsp)
    mov %rax, 48(%rsp)
    mov %r11, 56(%rsp)
    lea 8(%rbp), %r11
    mov %r11, 64(%rsp)
    mov %r10, 72(%rsp)
    movaps %xmm0, 80(%rsp)
    movaps %xmm1, 96(%rsp)
    movaps %xmm2, 112(%rsp)
    movaps %xmm3, 128(%rsp)
    movaps %xmm4, 144(%rsp)
    movaps %xmm5, 160(%rsp)
    movaps %xmm6, 176(%rsp)
    movaps %xmm7, 192(%rsp)
    mov %rsp, %rdi
    call trace_on_enter
    mov %rax, %r11
    mov 0(%rsp), %rdi
    mov 8(%rsp), %rsi
    mov 16(%rsp), %rdx
    mov 24(%rsp), %rcx
    mov 32(%rsp), %r8
    mov 40(%rsp), %r9
    mov 48(%rsp), %rax
    mov 72(%rsp), %r10
    movaps 80(%rsp), %xmm0
    movaps 96(%rsp), %xmm1
    movaps 112(%rsp), %xmm2
    movaps 128(%rsp), %xmm3
    movaps 144(%rsp), %xmm4
    movaps 160(%rsp), %xmm5
    movaps 176(%rsp), %xmm6
    movaps 192(%rsp), %xmm7
    leave
    .cfi_def_cfa %rsp, 8
    jmp *%r11
    .cfi_endproc
    .size trace_enter_common, .-trace_enter_common

/* Reached by the callee's `ret` when trace_on_enter replaced the return address. The
 * stack pointer is then 16-byte aligned (the caller's alignment at its call, plus the
 * popped return address). A slot for the kept return address is reserved first, so the
 * final `ret` goes there. */
    .globl trace_return
    .hidden trace_return
    .type trace_return, @function
    .balign 16
trace_return:
    endbr64
    sub $8, %rsp
    push %rbp
    mov %rsp, %rbp
    sub $48, %rsp
    mov %rax, 0(%rsp)
    mov %rdx, 8(%rsp)
    movaps %xmm0, 16(%rsp)
    movaps %xmm1, 32(%rsp)
    mov %rsp, %rdi
    lea 16(%rbp), %rsi      /* the stack pointer the callee returned with */
    call trace_on_return
    mov %rax, 8(%rbp)
    mov 0(%rsp), %rax
    mov 8(%rsp), %rdx
    movaps 16(%rsp), %xmm0
    movaps 32(%rsp), %xmm1
    leave
    ret
    .size trace_return, .-trace_return

/* The pool: TRACE_POOL_SIZE stubs of TRACE_POOL_STUB_BYTES bytes, ids from
 * TRACE_POOL_BASE (trace.h), handed out at run time by trace_pool_alloc. */
    .globl trace_pool_stubs
    .hidden trace_pool_stubs
    .type trace_pool_stubs, @function
    .balign 16
trace_pool_stubs:
    .set pool_id, 1024
    .rept 8192
    .balign 16
    endbr64
    mov $pool_id, %r11d
    jmp trace_enter_common
    .set pool_id, pool_id + 1
    .endr
    .size trace_pool_stubs, .-trace_pool_stubs

    .section .note.GNU-stack, "", @progbits
