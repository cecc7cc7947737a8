/*
 * Runs inside the doorbell test guest: checks what ivcuda-guest-irqd hands a client on its
 * socket against docs/protocol.md §8.1 (one 48-byte message: magic IVCIRQ01, u32 vectors
 * 1..64, u32 flags 0, char[32] NUL-terminated PCI address; exactly `vectors` eventfds by
 * SCM_RIGHTS). With --wait-eof it then waits (up to 120 s) for the end of file that says the
 * daemon stopped, and checks that the daemon never wrote anything more.
 *
 * With --self-ring (needs EXPECTED_ADDRESS) it proves that the eventfds are wired to the MSI-X
 * vectors, without the host's server: ivshmem delivers a doorbell write (peer << 16 | vector, BAR0
 * offset 12) to the peer's own eventfd of that vector, so a write naming this VM's own peer id
 * (IVPosition, BAR0 offset 8) makes QEMU raise the guest's own MSI-X vector. Each vector in turn
 * must then arrive on its eventfd (read, so no count is left for the library).
 *
 * usage: irq-socket-check [--wait-eof | --self-ring] SOCKET [EXPECTED_ADDRESS]
 * Prints "irq-socket-check: ok ..." lines and exits 0, or says what is wrong and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

/* Rings each vector on this VM's own peer id and takes the interrupt from its eventfd. */
static int self_ring(const char *address, const int *fds, unsigned vectors)
{
    char path[300], why[512];
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/resource0", address);
    int fd = open(path, O_RDWR | O_SYNC | O_CLOEXEC);
    void *map = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED) {
        snprintf(why, sizeof why, "cannot map %s (%s)", path, strerror(errno));
        return bad(why);
    }
    volatile uint32_t *registers = map;
    uint32_t own_peer = registers[2]; /* IVPosition */
    for (unsigned v = 0; v < vectors; v++) {
        registers[3] = own_peer << 16 | v; /* Doorbell */
        struct pollfd p = {.fd = fds[v], .events = POLLIN};
        uint64_t count = 0;
        if (poll(&p, 1, 5000) != 1 || read(fds[v], &count, sizeof count) != (ssize_t)sizeof count || count == 0) {
            snprintf(why, sizeof why, "a doorbell to peer %u vector %u did not arrive on eventfd %u within 5 s", own_peer, v, v);
            munmap(map, 4096);
            return bad(why);
        }
    }
    munmap(map, 4096);
    printf("irq-socket-check: ok: self-rings of %u vectors (peer %u) arrived on their eventfds\n", vectors, own_peer);
    return 0;
}

int main(int argc, char **argv)
{
    int wait_eof = argc > 1 && strcmp(argv[1], "--wait-eof") == 0;
    int ring = argc > 1 && strcmp(argv[1], "--self-ring") == 0;
    int flag = wait_eof || ring;
    if (argc - flag < 2 || argc - flag > 3 || (ring && argc - flag != 3)) {
        fprintf(stderr, "usage: %s [--wait-eof | --self-ring] SOCKET [EXPECTED_ADDRESS]\n", argv[0]);
        return 64;
    }
    const char *path = argv[1 + flag];
    const char *expected = argc - flag == 3 ? argv[2 + flag] : NULL;
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
    if (ring)
        return self_ring(device, fds, fd_count);
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
