/* syscall_probe: what the system-call filter leaves a process: the Seccomp mode the kernel reports
 * for it, whether ptrace(PTRACE_TRACEME) (in @debug, which the unit denies; any process may call
 * it otherwise) is refused, and whether personality(ADDR_NO_RANDOMIZE) works (the integrity oracle
 * turns randomisation off with it for its children). One line: seccomp=N ptrace=ERRNO personality=ERRNO */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>

int main(void)
{
    int mode = -1;
    char line[256];
    FILE *status = fopen("/proc/self/status", "r");
    while (status != NULL && fgets(line, sizeof line, status) != NULL)
        if (sscanf(line, "Seccomp: %d", &mode) == 1) break;
    if (status != NULL) fclose(status);
    int traced = ptrace(PTRACE_TRACEME, 0, NULL, NULL) == 0 ? 0 : errno;
    int persona = personality(PER_LINUX | ADDR_NO_RANDOMIZE) >= 0 ? 0 : errno;
    printf("seccomp=%d ptrace=%d personality=%d\n", mode, traced, persona);
    return 0;
}
