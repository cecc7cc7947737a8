/* pidns.h: a program with a chosen pid, in a PID namespace of its own. */
#define _GNU_SOURCE
#include "pidns.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif

/* struct clone_args of linux/sched.h up to set_tid_size (CLONE_ARGS_SIZE_VER1, Linux 5.5),
 * written out so that older headers build it. */
struct clone3_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid, set_tid_size;
};

/* A fork through clone3: glibc's fork handlers do not run, so the child only makes system
 * calls until it execs. */
static long clone3_fork(uint64_t flags, const uint64_t *set_tid)
{
    struct clone3_args a;
    memset(&a, 0, sizeof a);
    a.flags = flags;
    a.exit_signal = SIGCHLD;
    if (set_tid) {
        a.set_tid = (uint64_t)(uintptr_t)set_tid;
        a.set_tid_size = 1;
    }
    return syscall(SYS_clone3, &a, sizeof a);
}

static void say(const char *a, const char *b)
{
    (void)!write(2, a, strlen(a));
    (void)!write(2, b, strlen(b));
    (void)!write(2, "\n", 1);
}

/* "pidns: cannot have pid N: reason" */
static void say_no_pid(long n, int err)
{
    char digits[24];
    int i = (int)sizeof digits;
    unsigned long u = n < 0 ? 0ul : (unsigned long)n;
    do {
        digits[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u && i > 0);
    static const char head[] = "pidns: cannot have pid ";
    (void)!write(2, head, sizeof head - 1);
    (void)!write(2, digits + i, sizeof digits - (size_t)i);
    say(": ", strerror(err)); /* glibc's strerror reads a constant table for known numbers */
}

pid_t pidns_spawn(pid_t want, const char *path, char *const argv[], char *const envp[])
{
    if (want <= 0) {
        errno = EINVAL;
        return -1;
    }
    long init = clone3_fork(CLONE_NEWPID | CLONE_NEWNS, NULL);
    if (init < 0) return -1;
    if (init > 0) return (pid_t)init;
    /* pid 1 of the new namespace: it goes with its starter, and the namespace with it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* a /proc of the namespace, so that /proc/<getpid()> is the program's own (in a mount
     * namespace of its own: nobody else sees it) */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
        say("pidns: /proc of the namespace not mounted: ", strerror(errno));
    if (want == 1) {
        execve(path, argv, envp);
        say("pidns: cannot start ", path);
        _exit(PIDNS_EXIT_NO_EXEC);
    }
    uint64_t tid = (uint64_t)want;
    long child = clone3_fork(0, &tid);
    if (child == 0) {
        execve(path, argv, envp);
        say("pidns: cannot start ", path);
        _exit(PIDNS_EXIT_NO_EXEC);
    }
    if (child < 0) {
        say_no_pid(want, errno);
        _exit(PIDNS_EXIT_NO_PID);
    }
    for (;;) { /* the namespace's reaper: the program's status is ours */
        int status;
        pid_t w = waitpid(-1, &status, __WALL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) _exit(PIDNS_EXIT_NO_EXEC);
        if (w != child) continue;
        _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
}
