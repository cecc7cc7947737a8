/* Starting a program with a chosen process id: in a PID namespace of its own, whose first
 * process (pid 1 there) starts the program with the pid asked for (clone3 with set_tid,
 * Linux 5.5, CAP_SYS_ADMIN over the namespace: root, or a user namespace of one's own)
 * and waits for it. getpid() in the program is then that pid; its threads get the next
 * free numbers of the namespace. The namespace has a mount namespace and a /proc of its own,
 * so that /proc/<pid> is the program's. The namespace goes when its first process goes, which is
 * killed when the one that started it ends (PR_SET_PDEATHSIG): nothing is left behind. */
#ifndef PIDNS_H
#define PIDNS_H

#include <sys/types.h>

/* Exit statuses of the namespace's first process other than the program's own. */
#define PIDNS_EXIT_NO_PID 126  /* the pid could not be had (the reason is on stderr) */
#define PIDNS_EXIT_NO_EXEC 127 /* the program could not be started */

/* Starts path (argv, envp) as process `want` (> 0) of a new PID namespace. Returns the
 * namespace's first process as the caller sees it (its exit status is the program's, or one
 * of the above), or -1 with errno when no namespace could be made. Async-signal-safe after
 * the fork: may be called from a process with threads. */
pid_t pidns_spawn(pid_t want, const char *path, char *const argv[], char *const envp[]);

#endif
