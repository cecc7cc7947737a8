/* Host → guest interrupts in doorbell mode (docs/protocol.md §8, §8.1): where the guest
 * has a path to the device's MSI-X vectors, a thread waiting for the server sleeps on its
 * channel's vector instead of polling. The eventfds come from ivcuda-guest-irqd over its
 * socket (a vfio device has one owner, so a daemon owns it and shares the eventfds), or,
 * on the host loopback (tests, benchmarks), from IVCUDA_IRQ_EVENTFDS=<fd>,<fd>,... in
 * vector order, inherited from a process that connected to the server as QEMU does.
 * IVCUDA_WAIT=poll turns this off. Anything unexpected: say why once and poll. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "interrupts.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "region.h"

#define IRQ_SOCKET_DEFAULT "/run/ivcuda/irq.sock"
#define IRQ_MESSAGE_SIZE 48
#define IRQ_MAX_VECTORS 64

static int vector_fds[IRQ_MAX_VECTORS];
static uint32_t vector_count; /* 0: no interrupts, poll */
static int daemon_socket = -1;
static atomic_int source_lost;
/* A daemon that stopped may come back (a restart, an upgrade): asked again at most once a second. */
static const struct ivc_region *daemon_region;
static pthread_mutex_t reconnect_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t last_reconnect_ns;
static atomic_uint_fast64_t waits;
static atomic_uint_fast64_t woken;
static atomic_uint_fast64_t timed_out;

/* Reconnect attempts (once a second) say why they failed only in the trace. */
static int quiet;
#define say(...)                    \
    do {                            \
        if (quiet)                  \
            ivc_trace(__VA_ARGS__); \
        else                        \
            ivc_log(__VA_ARGS__);   \
    } while (0)

static void close_all(void)
{
    for (uint32_t v = 0; v < vector_count; v++)
        close(vector_fds[v]);
    vector_count = 0;
    if (daemon_socket >= 0)
        close(daemon_socket);
    daemon_socket = -1;
}

static int set_nonblocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

static void from_environment(const char *list)
{
    int fds[IRQ_MAX_VECTORS];
    int n = ivc_parse_fd_list(list, fds, IRQ_MAX_VECTORS);
    for (int i = 0; i < n; i++)
        if (!set_nonblocking(fds[i]))
            n = -1;
    if (n < 0) {
        ivc_log("IVCUDA_IRQ_EVENTFDS=%s: not a list of at most %d open descriptors; polling", list, IRQ_MAX_VECTORS);
        return; /* the descriptors are the parent's: not ours to close */
    }
    memcpy(vector_fds, fds, sizeof(int) * (size_t)n);
    vector_count = (uint32_t)n;
}

/* Reads the daemon's one message; on success vector_fds/vector_count hold its eventfds. */
static int receive(int sock, const struct ivc_region *region, const char *path)
{
    uint8_t message[IRQ_MESSAGE_SIZE];
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int) * IRQ_MAX_VECTORS)];
    } control;
    struct iovec iov = {message, sizeof message};
    struct msghdr msg = {0};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    ssize_t n;
    do
        n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_WAITALL);
    while (n < 0 && errno == EINTR);
    int fds[IRQ_MAX_VECTORS];
    uint32_t fd_count = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (fd_count < IRQ_MAX_VECTORS)
                fds[fd_count++] = fd;
            else
                close(fd);
        }
    }
    const char *why = NULL;
    char detail[200];
    uint32_t vectors = n == IRQ_MESSAGE_SIZE ? ivc_read32(message + 8) : 0;
    char address[33];
    memcpy(address, message + 16, 32);
    address[32] = '\0';
    if (n != IRQ_MESSAGE_SIZE) {
        snprintf(detail, sizeof detail, "message of %zd bytes, expected %d", n, IRQ_MESSAGE_SIZE);
        why = detail;
    } else if (memcmp(message, "IVCIRQ01", 8) != 0) {
        why = "magic is not IVCIRQ01";
    } else if (msg.msg_flags & MSG_CTRUNC) {
        why = "more descriptors than 64 attached";
    } else if (vectors < 1 || vectors > IRQ_MAX_VECTORS || vectors != fd_count) {
        snprintf(detail, sizeof detail, "vectors %" PRIu32 " with %" PRIu32 " descriptors attached, expected 1..%d and equal",
                 vectors, fd_count, IRQ_MAX_VECTORS);
        why = detail;
    } else if (memchr(message + 16, '\0', 32) == NULL || strcmp(address, region->pci_address) != 0) {
        snprintf(detail, sizeof detail, "device %.32s, but the region is on %s", address, region->pci_address);
        why = detail;
    } else if (region->doorbell_vectors != 0 && vectors != region->doorbell_vectors) {
        snprintf(detail, sizeof detail, "%" PRIu32 " vectors, but the server uses %" PRIu32, vectors,
                 region->doorbell_vectors);
        why = detail;
    }
    for (uint32_t i = 0; why == NULL && i < fd_count; i++)
        if (!set_nonblocking(fds[i]))
            why = "an attached descriptor cannot be made non-blocking";
    if (why != NULL) {
        say("interrupt socket %s: %s; polling", path, why);
        for (uint32_t i = 0; i < fd_count; i++)
            close(fds[i]);
        return 0;
    }
    memcpy(vector_fds, fds, sizeof(int) * fd_count);
    vector_count = fd_count;
    return 1;
}

static const char *socket_path(void)
{
    const char *path = getenv("IVCUDA_IRQ_SOCKET");
    return path != NULL && path[0] != '\0' ? path : IRQ_SOCKET_DEFAULT;
}

static int from_daemon(const struct ivc_region *region)
{
    const char *path = socket_path();
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof address.sun_path) {
        ivc_log("IVCUDA_IRQ_SOCKET=%s: longer than a socket path may be; polling", path);
        return 0;
    }
    strcpy(address.sun_path, path);
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        return 0;
    if (connect(sock, (struct sockaddr *)&address, sizeof address) != 0) {
        /* no daemon is the normal case of a guest without an interrupt path */
        if (errno == ENOENT || errno == ECONNREFUSED)
            ivc_trace("interrupt socket %s: %s; polling", path, strerror(errno));
        else
            say("interrupt socket %s: %s; polling", path, strerror(errno));
        close(sock);
        return 0;
    }
    /* a daemon that accepts and says nothing must not hang cuInit, nor a call that reconnects */
    struct timeval limit = {quiet ? 0 : 1, quiet ? 50000 : 0};
    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    if (!receive(sock, region, path)) {
        close(sock);
        return 0;
    }
    daemon_socket = sock;
    return 1;
}

void ivc_interrupts_open(const struct ivc_region *region)
{
    close_all();
    atomic_store(&source_lost, 0);
    const char *wait = getenv("IVCUDA_WAIT");
    if (!(region->feature_bits & IVC_FEATURE_DOORBELL) || (wait != NULL && strcmp(wait, "poll") == 0))
        return;
    const char *source;
    const char *list = getenv("IVCUDA_IRQ_EVENTFDS");
    if (region->pci_address[0] == '\0') {
        if (list == NULL || list[0] == '\0')
            return;
        from_environment(list);
        source = "IVCUDA_IRQ_EVENTFDS";
    } else {
        daemon_region = region;
        from_daemon(region);
        source = socket_path();
    }
    if (vector_count != 0 && region->doorbell_vectors != 0 && vector_count != region->doorbell_vectors) {
        ivc_log("%s: %" PRIu32 " vectors, but the server uses %" PRIu32 "; polling", source, vector_count,
                region->doorbell_vectors);
        vector_count = 0; /* inherited descriptors stay open: not ours to close */
    }
    if (vector_count != 0)
        ivc_trace("interrupts: %" PRIu32 " MSI-X vectors from %s (device %s)", vector_count, source,
                  region->pci_address[0] ? region->pci_address : "none, host loopback");
}

/* At process exit (IVCUDA_DEBUG or IVCUDA_STATS): how the waits went. The descriptors stay
 * open: other threads may still be waiting, and the exit closes them anyway. */
void ivc_interrupts_report(void)
{
    const char *stats = getenv("IVCUDA_STATS");
    if (vector_count != 0 && stats != NULL && stats[0] != '\0' && stats[0] != '0')
        ivc_log("interrupt waits: %" PRIuFAST64 ", woken by an interrupt: %" PRIuFAST64 ", timed out: %" PRIuFAST64,
                atomic_load(&waits), atomic_load(&woken), atomic_load(&timed_out));
    else if (vector_count != 0)
        ivc_trace("interrupt waits: %" PRIuFAST64 ", woken by an interrupt: %" PRIuFAST64 ", timed out: %" PRIuFAST64,
                  atomic_load(&waits), atomic_load(&woken), atomic_load(&timed_out));
}

void ivc_interrupts_forget_process(void)
{
    /* a forked child keeps the descriptors (its channels, hence vectors, differ from the
     * parent's); the counters were the parent's */
    atomic_store(&waits, 0);
    atomic_store(&woken, 0);
    atomic_store(&timed_out, 0);
}

/* The daemon's socket ended: ask it again, at most once a second and by one thread. A thread
 * still sleeping on an old descriptor wakes at its 100 ms limit and takes the new ones. */
static void reconnect(void)
{
    if (daemon_region == NULL || pthread_mutex_trylock(&reconnect_lock) != 0)
        return;
    uint64_t now = ivc_now_ns();
    if (atomic_load(&source_lost) && now - last_reconnect_ns >= 1000000000ULL) {
        last_reconnect_ns = now;
        int old_fds[IRQ_MAX_VECTORS];
        uint32_t old_count = vector_count;
        int old_socket = daemon_socket;
        memcpy(old_fds, vector_fds, sizeof old_fds);
        quiet = 1;
        int back = from_daemon(daemon_region);
        quiet = 0;
        if (back) {
            for (uint32_t v = 0; v < old_count; v++)
                close(old_fds[v]);
            if (old_socket >= 0)
                close(old_socket);
            atomic_store(&source_lost, 0);
            ivc_log("interrupt daemon is back: sleeping on interrupts again");
        }
    }
    pthread_mutex_unlock(&reconnect_lock);
}

int ivc_interrupts_usable(uint32_t channel_index, uint32_t channel_count)
{
    if (atomic_load_explicit(&source_lost, memory_order_relaxed))
        reconnect();
    uint32_t vectors = vector_count;
    if (vectors == 0 || atomic_load_explicit(&source_lost, memory_order_relaxed))
        return 0;
    /* §8: only channel v, v + vectors, ... share vector v; sleep only on a vector of one's own */
    return channel_index % vectors + vectors >= channel_count;
}

void ivc_interrupts_drain(uint32_t channel_index)
{
    uint64_t count;
    ssize_t n = read(vector_fds[channel_index % vector_count], &count, sizeof count);
    (void)n; /* EAGAIN: nothing pending */
}

int ivc_interrupts_wait(uint32_t channel_index, uint64_t timeout_ns)
{
    int fd = vector_fds[channel_index % vector_count];
    struct pollfd fds[2] = {{fd, POLLIN, 0}, {daemon_socket, POLLIN, 0}};
    atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
    int ready = poll(fds, daemon_socket >= 0 ? 2 : 1, (int)(timeout_ns / 1000000));
    if (ready > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR))) {
        /* the daemon never writes: anything readable is its end (it stopped) */
        if (!atomic_exchange(&source_lost, 1))
            ivc_log("interrupt daemon closed its socket: polling from now on");
        return -1;
    }
    if (ready > 0 && (fds[0].revents & POLLIN)) {
        uint64_t count;
        ssize_t n = read(fd, &count, sizeof count); /* take the count: the next wait blocks again */
        (void)n;
        atomic_fetch_add_explicit(&woken, 1, memory_order_relaxed);
        return 1;
    }
    if (ready == 0)
        atomic_fetch_add_explicit(&timed_out, 1, memory_order_relaxed);
    else
        ivc_trace("channel %u: poll on its vector: %s", channel_index, ready < 0 ? strerror(errno) : "no event");
    return 0;
}

void ivc_interrupts_stats(uint64_t *wait_count, uint64_t *woken_count)
{
    *wait_count = atomic_load(&waits);
    *woken_count = atomic_load(&woken);
}
