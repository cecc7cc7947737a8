/*
 * Runs inside the doorbell test guest: checks what ivcuda-guest-irqd hands a client on its
 * socket against docs/protocol.md §8.1 (one 48-byte message: magic IVCIRQ01, u32 vectors
 * 1..64, u32 flags 0, char[32] NUL-terminated PCI address; exactly `vectors` eventfds by
 * SCM_RIGHTS). With --wait-eof it then waits (up to 120 s) for the end of file that says the
 * daemon stopped, and checks that the daemon never wrote anything more.
 *
 * usage: irq-socket-check [--wait-eof] SOCKET [EXPECTED_ADDRESS]
 * Prints one line "irq-socket-check: ok ..." and exits 0, or says what is wrong and exits 1.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MESSAGE_SIZE 48

static int bad(const char *what)
{
    fprintf(stderr, "irq-socket-check: %s\n", what);
    printf("irq-socket-check: FAILED: %s\n", what);
    return 1;
}

int main(int argc, char **argv)
{
    int wait_eof = argc > 1 && strcmp(argv[1], "--wait-eof") == 0;
    if (argc - wait_eof < 2 || argc - wait_eof > 3) {
        fprintf(stderr, "usage: %s [--wait-eof] SOCKET [EXPECTED_ADDRESS]\n", argv[0]);
        return 64;
    }
    const char *path = argv[1 + wait_eof];
    const char *expected = argc - wait_eof == 3 ? argv[2 + wait_eof] : NULL;
    char why[512];

    struct sockaddr_un address = {.sun_family = AF_UNIX};
    snprintf(address.sun_path, sizeof address.sun_path, "%s", path);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0 || connect(sock, (struct sockaddr *)&address, sizeof address) != 0) {
        snprintf(why, sizeof why, "cannot connect to %s (%s)", path, strerror(errno));
        return bad(why);
    }

    /* room for more descriptors than allowed, to see a daemon that sends too many */
    unsigned char message[MESSAGE_SIZE + 16];
    union {
        char buffer[CMSG_SPACE(128 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct iovec iov = {.iov_base = message, .iov_len = sizeof message};
    struct msghdr header = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer,
                            .msg_controllen = sizeof control.buffer};
    ssize_t n = recvmsg(sock, &header, MSG_CMSG_CLOEXEC);
    if (n != MESSAGE_SIZE) {
        snprintf(why, sizeof why, "received %zd bytes, expected one %d-byte message (%s)", n, MESSAGE_SIZE,
                 n < 0 ? strerror(errno) : "size");
        return bad(why);
    }
    if (header.msg_flags & MSG_CTRUNC)
        return bad("the descriptors were cut (MSG_CTRUNC)");
    int fds[128];
    unsigned fd_count = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&header); c != NULL; c = CMSG_NXTHDR(&header, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            return bad("a control message other than SCM_RIGHTS");
        unsigned count = (unsigned)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (unsigned i = 0; i < count && fd_count < 128; i++)
            memcpy(&fds[fd_count++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    if (memcmp(message, "IVCIRQ01", 8) != 0)
        return bad("magic is not IVCIRQ01");
    uint32_t vectors = 0, flags = 0;
    for (int b = 3; b >= 0; b--) {
        vectors = vectors << 8 | message[8 + b];
        flags = flags << 8 | message[12 + b];
    }
    if (vectors < 1 || vectors > 64) {
        snprintf(why, sizeof why, "vectors %u is outside 1..64", vectors);
        return bad(why);
    }
    if (flags != 0) {
        snprintf(why, sizeof why, "flags 0x%x, expected 0", flags);
        return bad(why);
    }
    const char *device = (const char *)message + 16;
    if (memchr(device, '\0', 32) == NULL || device[0] == '\0')
        return bad("the PCI address is empty or not NUL-terminated");
    if (expected != NULL && strcmp(device, expected) != 0) {
        snprintf(why, sizeof why, "device %s, expected %s", device, expected);
        return bad(why);
    }
    if (fd_count != vectors) {
        snprintf(why, sizeof why, "%u descriptors attached for %u vectors", fd_count, vectors);
        return bad(why);
    }
    for (unsigned i = 0; i < fd_count; i++) {
        char link[64], target[256];
        snprintf(link, sizeof link, "/proc/self/fd/%d", fds[i]);
        ssize_t t = readlink(link, target, sizeof target - 1);
        target[t > 0 ? t : 0] = '\0';
        if (strcmp(target, "anon_inode:[eventfd]") != 0) {
            snprintf(why, sizeof why, "descriptor %u is %s, not an eventfd", i, target);
            return bad(why);
        }
    }
    printf("irq-socket-check: ok: %u eventfds for %u vectors, device %s\n", fd_count, vectors, device);
    fflush(stdout);
    if (!wait_eof)
        return 0;

    struct pollfd p = {.fd = sock, .events = POLLIN};
    int ready = poll(&p, 1, 120000);
    if (ready <= 0)
        return bad(ready == 0 ? "no end of file within 120 s" : "poll failed");
    char byte;
    n = read(sock, &byte, 1);
    if (n != 0)
        return bad(n > 0 ? "the daemon wrote again (it never writes after the message)" : "read failed");
    printf("irq-socket-check: ok: end of file, the daemon stopped\n");
    return 0;
}
