/* userns.h: a user namespace mapping only the caller's own ids. */
#define _GNU_SOURCE
#include "userns.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int write_file(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = write(fd, text, strlen(text));
    int saved = errno;
    close(fd);
    errno = saved;
    return n == (ssize_t)strlen(text) ? 0 : -1;
}

int userns_enter(char *err, size_t errlen)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER) != 0) {
        snprintf(err, errlen, "no user namespace: %s", strerror(errno));
        return -1;
    }
    char map[64];
    /* an unprivileged process may write gid_map only after giving up setgroups */
    if (write_file("/proc/self/setgroups", "deny") != 0 && errno != ENOENT) {
        snprintf(err, errlen, "user namespace: setgroups: %s", strerror(errno));
        return -1;
    }
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
    if (write_file("/proc/self/uid_map", map) != 0) {
        snprintf(err, errlen, "user namespace: uid_map: %s", strerror(errno));
        return -1;
    }
    snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
    if (write_file("/proc/self/gid_map", map) != 0) {
        snprintf(err, errlen, "user namespace: gid_map: %s", strerror(errno));
        return -1;
    }
    return 0;
}
