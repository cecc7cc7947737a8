/* ivcuda-syscall-filter [--require] -- PROGRAM [ARG...]
 *
 * The direct launcher's system-call filter (hosts without systemd; docs/threat-model.md): loads
 * the allow-list of the server's systemd unit (its SystemCallFilter= lines, expanded by
 * syscall-allow.sh into syscall_allow.inc) as a seccomp filter, then execs PROGRAM, which keeps
 * it, as do its children (the integrity oracle). A call outside the list fails with EPERM, as the
 * unit's SystemCallErrorNumber=EPERM has it; a call of another architecture (the unit's
 * SystemCallArchitectures=native) kills the caller.
 *
 * libseccomp builds the filter. It is loaded at run time (dlopen), so that the host package works
 * where it is not installed: the program then says so on stderr and execs PROGRAM unfiltered, or
 * with --require refuses (exit 126). The libseccomp functions and the action values used here are
 * its documented API (seccomp_init(3), seccomp_rule_add(3), seccomp_load(3)); the action values
 * are the kernel's SECCOMP_RET_* (linux/seccomp.h). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *const allowed[] = {
#include "syscall_allow.inc"
};

/* libseccomp's API, as seccomp_init(3) and its siblings document it */
typedef void *(*seccomp_init_fn)(uint32_t def_action);
typedef int (*seccomp_rule_add_fn)(void *ctx, uint32_t action, int syscall, unsigned int arg_cnt, ...);
typedef int (*seccomp_load_fn)(void *ctx);
typedef void (*seccomp_release_fn)(void *ctx);
typedef int (*seccomp_syscall_resolve_name_fn)(const char *name);

#define EXIT_NO_FILTER 126

/* 0, or -1 with why in err: libseccomp missing, or the filter not made or not loaded */
static int load_filter(char *err, size_t errlen, unsigned *rules)
{
    void *lib = dlopen("libseccomp.so.2", RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(err, errlen, "libseccomp.so.2 not found (%s)", dlerror());
        return -1;
    }
    seccomp_init_fn init = (seccomp_init_fn)dlsym(lib, "seccomp_init");
    seccomp_rule_add_fn rule_add = (seccomp_rule_add_fn)dlsym(lib, "seccomp_rule_add");
    seccomp_load_fn load = (seccomp_load_fn)dlsym(lib, "seccomp_load");
    seccomp_release_fn release = (seccomp_release_fn)dlsym(lib, "seccomp_release");
    seccomp_syscall_resolve_name_fn resolve = (seccomp_syscall_resolve_name_fn)dlsym(lib, "seccomp_syscall_resolve_name");
    if (!init || !rule_add || !load || !release || !resolve) {
        snprintf(err, errlen, "libseccomp.so.2 lacks its API");
        return -1;
    }
    void *ctx = init(SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
    if (ctx == NULL) {
        snprintf(err, errlen, "seccomp_init failed");
        return -1;
    }
    *rules = 0;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++) {
        /* names of other architectures, or newer than this libseccomp, resolve to nothing here */
        int nr = resolve(allowed[i]);
        if (nr < 0) continue;
        int r = rule_add(ctx, SECCOMP_RET_ALLOW, nr, 0);
        if (r != 0) {
            snprintf(err, errlen, "seccomp_rule_add(%s): %s", allowed[i], strerror(-r));
            release(ctx);
            return -1;
        }
        (*rules)++;
    }
    /* libseccomp sets no_new_privs before it loads, as the unit's NoNewPrivileges does */
    int r = load(ctx);
    release(ctx);
    if (r != 0) {
        snprintf(err, errlen, "seccomp_load: %s", strerror(-r));
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int require = 0, i = 1;
    if (i < argc && strcmp(argv[i], "--require") == 0) {
        require = 1;
        i++;
    }
    if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
        fprintf(stderr, "usage: ivcuda-syscall-filter [--require] -- PROGRAM [ARG...]\n");
        return 2;
    }
    char err[256];
    unsigned rules = 0;
    if (load_filter(err, sizeof err, &rules) != 0) {
        fprintf(stderr, "ivcuda-syscall-filter: no system-call filter: %s%s\n", err,
                require ? "" : "; running without one");
        if (require) return EXIT_NO_FILTER;
    }
    execvp(argv[i + 1], argv + i + 1);
    fprintf(stderr, "ivcuda-syscall-filter: cannot run %s: %s\n", argv[i + 1], strerror(errno));
    return 127;
}
