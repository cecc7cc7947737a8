/*
 * ivcuda-guest-irqd: owns the ivshmem-doorbell device through vfio-pci and hands its MSI-X
 * eventfds to guest libraries (docs/protocol.md §8.1).
 *
 * Only one process can own a vfio device, and a library cannot be that process (every CUDA
 * program would fight for it), so this daemon (root) attaches one eventfd per MSI-X vector with
 * VFIO_DEVICE_SET_IRQS and passes the same eventfds to every client of /run/ivcuda/irq.sock:
 * one 48-byte message (magic IVCIRQ01, u32 vectors, u32 flags 0, char[32] PCI address) with
 * the eventfds attached by SCM_RIGHTS in vector order. It keeps each connection open and never
 * writes again: a client sees end of file when the daemon stops, and the eventfds are then no
 * longer wired to the device.
 *
 * vfio facts from the kernel's Documentation/driver-api/vfio.rst and <linux/vfio.h>.
 * --exit-with-parent[=PID] (the back-end agent starts one per doorbell slot, giving its own pid):
 * the kernel sends SIGTERM when the process that started it ends (prctl(2) PR_SET_PDEATHSIG),
 * SIGKILL included, so that a killed agent leaves no daemon holding its slot's device; the daemon
 * then stops as on any SIGTERM. A parent gone before the prctl is seen by getppid() no longer being
 * PID (without PID: the parent it had when main() began).
 * Tests only: IVCUDA_IRQD_UNWIRED=N (1..64) serves N eventfds wired to no device, without sysfs
 * or vfio (tests/test_irqd.sh).
 * Exit status: 0 stopped by SIGTERM/SIGINT; 1 a failure (one message on stderr says what and
 * what to do); 64 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ivc_internal.h"
#include "region.h"

#define EXIT_FAILED 1
#define EXIT_USAGE 64
#ifndef IVCUDA_VERSION
#define IVCUDA_VERSION "(not built as a package)"
#endif

#define DEFAULT_SOCKET "/run/ivcuda/irq.sock"
#define DEFAULT_GROUP "ivcuda"
#define MAX_VECTORS 64u   /* §8.1: vectors 1..64 */
#define MAX_CLIENTS 1024  /* one per process that uses CUDA; more wait in the backlog */

/* §8.1: the message, little-endian (x86 is; the layout is spelled out byte by byte anyway). */
#define MESSAGE_SIZE 48
#define MESSAGE_MAGIC "IVCIRQ01"
#define MESSAGE_ADDRESS_SIZE 32

static const char *program = "ivcuda-guest-irqd";

struct options {
    const char *device;      /* PCI address, or NULL: the first ivcuda ivshmem device */
    const char *socket_path;
    const char *group;       /* NULL: "ivcuda" where it exists, else root */
    int bind;
    int debug;
    int exit_with_parent;
    pid_t parent;            /* --exit-with-parent=PID, or 0: the parent at start */
};

/* Everything the daemon holds; release() undoes whatever of it is set, in reverse order. */
struct daemon_state {
    char sysfs[PATH_MAX];
    char device_dir[PATH_MAX];
    char address[MESSAGE_ADDRESS_SIZE];
    int bound_by_us;          /* --bind took the device: a failed start gives it back */
    char previous_driver[256];
    int container;
    int group;
    int device;
    int irqs_set;
    uint32_t vectors;
    int eventfds[MAX_VECTORS];
    const char *mode;
    unsigned long iommu_group;
    char created_dir[PATH_MAX];  /* the socket's parent if we made it, else "" */
    const char *socket_path;
    int listener;
    int signals;
    int clients[MAX_CLIENTS];
    unsigned client_count;
};

static void fail_message(const char *format, ...) __attribute__((format(printf, 1, 2)));
static void fail_message(const char *format, ...)
{
    char line[2048];
    va_list args;
    va_start(args, format);
    vsnprintf(line, sizeof line, format, args);
    va_end(args);
    fprintf(stderr, "%s: %s\n", program, line);
}

static void usage(FILE *to)
{
    fprintf(to,
            "Usage: %s [--device ADDRESS] [--socket PATH] [--group NAME] [--bind] [--exit-with-parent[=PID]] [--debug]\n"
            "Hands the ivshmem device's MSI-X interrupts to the guest's CUDA processes (doorbell mode).\n"
            "\n"
            "Options:\n"
            "  --device ADDRESS  the ivshmem-doorbell device (0000:00:05.0); default: the first\n"
            "                    1af4:1110 device whose BAR2 holds an ivcuda region\n"
            "  --socket PATH     where guest libraries ask for the eventfds (default " DEFAULT_SOCKET ")\n"
            "  --group NAME      the socket's group, mode 0660 (default " DEFAULT_GROUP " if it exists, else root)\n"
            "  --bind            bind the device to vfio-pci first if another driver or none has it\n"
            "  --exit-with-parent[=PID]  stop (as on SIGTERM) when the process that started it (PID)\n"
            "                    ends, even if it was killed; do not start if PID is not its parent\n"
            "                    (the back-end agent's daemons)\n"
            "  --debug           one line per client\n"
            "  -h, --help        show this help and exit\n"
            "  -V, --version     print the version and exit\n"
            "\n"
            "Exit status: 0 stopped by SIGTERM; 1 no usable device or vfio (the message says what to do); 64 wrong arguments\n",
            program);
}

/* ---- small file helpers ---------------------------------------------------------------------- */

static int write_text(const char *path, const char *text, char *why, size_t capacity)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, capacity, "cannot open %s (%s)", path, strerror(errno));
        return 0;
    }
    ssize_t n = write(fd, text, strlen(text));
    int error = errno;
    close(fd);
    if (n != (ssize_t)strlen(text)) {
        snprintf(why, capacity, "writing \"%s\" to %s failed (%s)", text, path, n < 0 ? strerror(error) : "short write");
        return 0;
    }
    return 1;
}

/* The last component of a symbolic link's target ("vfio-pci" for .../drivers/vfio-pci), or "". */
static void link_name(const char *link, char *name, size_t capacity)
{
    char target[PATH_MAX];
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0) {
        name[0] = '\0';
        return;
    }
    target[n] = '\0';
    const char *slash = strrchr(target, '/');
    snprintf(name, capacity, "%s", slash ? slash + 1 : target);
}

/* ---- the device ------------------------------------------------------------------------------ */

static int find_device(struct daemon_state *s, const struct options *o)
{
    if (o->device == NULL) {
        uint8_t *base = NULL;
        size_t size = 0;
        char message[2000];
        /* region.c's scan: the same device the library picks */
        if (!ivc_pci_find(s->device_dir, sizeof s->device_dir, &base, &size, message, sizeof message)) {
            fail_message("%s; is this a VM with an ivcuda device, and is its server running? (--device ADDRESS names one)",
                         message);
            return 0;
        }
        munmap(base, size);
        const char *slash = strrchr(s->device_dir, '/');
        snprintf(s->address, sizeof s->address, "%s", slash ? slash + 1 : s->device_dir);
        return 1;
    }
    if (strlen(o->device) >= MESSAGE_ADDRESS_SIZE || strchr(o->device, '/') != NULL || o->device[0] == '.') {
        fail_message("--device %s: not a PCI address such as 0000:00:05.0", o->device);
        return 0;
    }
    snprintf(s->address, sizeof s->address, "%s", o->device);
    snprintf(s->device_dir, sizeof s->device_dir, "%s/bus/pci/devices/%s", s->sysfs, o->device);
    char path[PATH_MAX + 16];
    unsigned long vendor = 0, device = 0;
    snprintf(path, sizeof path, "%s/vendor", s->device_dir);
    if (!ivc_read_hex_file(path, &vendor)) {
        fail_message("--device %s: no such PCI device (%s cannot be read)", o->device, path);
        return 0;
    }
    snprintf(path, sizeof path, "%s/device", s->device_dir);
    if (!ivc_read_hex_file(path, &device) || vendor != 0x1af4 || device != 0x1110) {
        fail_message("--device %s is %04lx:%04lx, not an ivshmem device (1af4:1110)", o->device, vendor, device);
        return 0;
    }
    return 1;
}

/* --bind: driver_override, unbind, drivers_probe (the kernel's sysfs-rules for PCI). */
static int bind_to_vfio(struct daemon_state *s, const char *current)
{
    char path[PATH_MAX + 64], why[PATH_MAX + 200];
    snprintf(path, sizeof path, "%s/bus/pci/drivers/vfio-pci", s->sysfs);
    if (access(path, F_OK) != 0) {
        fail_message("cannot bind %s: the vfio-pci driver is not loaded (%s is missing): modprobe vfio-pci", s->address,
                     path);
        return 0;
    }
    snprintf(path, sizeof path, "%s/driver_override", s->device_dir);
    if (!write_text(path, "vfio-pci", why, sizeof why)) {
        fail_message("cannot bind %s to vfio-pci: %s (run as root)", s->address, why);
        return 0;
    }
    if (current[0] != '\0') {
        snprintf(path, sizeof path, "%s/driver/unbind", s->device_dir);
        if (!write_text(path, s->address, why, sizeof why)) {
            fail_message("cannot unbind %s from %s: %s", s->address, current, why);
            goto undo;
        }
    }
    snprintf(path, sizeof path, "%s/bus/pci/drivers_probe", s->sysfs);
    /* the probe's own error (EINVAL without an IOMMU group) says less than the checks below */
    write_text(path, s->address, why, sizeof why);
    char driver[256];
    snprintf(path, sizeof path, "%s/driver", s->device_dir);
    link_name(path, driver, sizeof driver);
    if (strcmp(driver, "vfio-pci") == 0) {
        s->bound_by_us = 1;
        snprintf(s->previous_driver, sizeof s->previous_driver, "%s", current);
        return 1;
    }
    snprintf(path, sizeof path, "%s/iommu_group", s->device_dir);
    if (access(path, F_OK) != 0)
        fail_message("vfio-pci did not take %s: the device has no IOMMU group (%s). Give the VM a virtual IOMMU "
                     "(libvirt: <iommu model='intel'><driver intremap='on'/></iommu>) and boot with intel_iommu=on; "
                     "in a VM without a vIOMMU set vfio.enable_unsafe_noiommu_mode=1 (needs CONFIG_VFIO_NOIOMMU). "
                     "The kernel log (dmesg) has vfio-pci's reason",
                     s->address, path);
    else
        fail_message("vfio-pci did not take %s (its driver is now \"%s\"); the kernel log (dmesg) has vfio-pci's reason",
                     s->address, driver[0] ? driver : "none");
undo:
    /* leave no override behind that would keep the device from its usual driver */
    snprintf(path, sizeof path, "%s/driver_override", s->device_dir);
    write_text(path, "\n", why, sizeof why);
    return 0;
}

/* After a failed start: the device goes back to the driver it had (or none), as --bind found it.
 * Only once the vfio device is closed: vfio-pci's unbind waits for its release. */
static void give_back(const struct daemon_state *s)
{
    char path[PATH_MAX + 64], why[PATH_MAX + 200], driver[256];
    snprintf(path, sizeof path, "%s/bus/pci/drivers/vfio-pci/unbind", s->sysfs);
    int ok = write_text(path, s->address, why, sizeof why);
    snprintf(path, sizeof path, "%s/driver_override", s->device_dir);
    ok = write_text(path, "\n", why, sizeof why) && ok;
    if (s->previous_driver[0] != '\0') {
        snprintf(path, sizeof path, "%s/bus/pci/drivers_probe", s->sysfs);
        write_text(path, s->address, why, sizeof why);
    }
    snprintf(path, sizeof path, "%s/driver", s->device_dir);
    link_name(path, driver, sizeof driver);
    if (!ok || strcmp(driver, s->previous_driver) != 0)
        fail_message("giving %s back to %s failed (its driver is \"%s\"; %s)", s->address,
                     s->previous_driver[0] ? s->previous_driver : "no driver", driver[0] ? driver : "none", why);
    else
        fail_message("%s given back to %s", s->address, s->previous_driver[0] ? s->previous_driver : "no driver");
}

static int ensure_vfio_driver(struct daemon_state *s, const struct options *o)
{
    char path[PATH_MAX + 16], driver[256];
    snprintf(path, sizeof path, "%s/driver", s->device_dir);
    link_name(path, driver, sizeof driver);
    if (strcmp(driver, "vfio-pci") == 0)
        return 1;
    if (!o->bind) {
        fail_message("%s is bound to %s, not vfio-pci: run with --bind (or write vfio-pci to %s/driver_override "
                     "and probe it)",
                     s->address, driver[0] ? driver : "no driver", s->device_dir);
        return 0;
    }
    return bind_to_vfio(s, driver);
}

/* ---- vfio ------------------------------------------------------------------------------------ */

static int open_container(struct daemon_state *s)
{
    s->container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
    if (s->container < 0) {
        fail_message("cannot open /dev/vfio/vfio (%s): %s", strerror(errno),
                     errno == ENOENT ? "the vfio module is not loaded: modprobe vfio-pci" : "run as root");
        return 0;
    }
    int version = ioctl(s->container, VFIO_GET_API_VERSION);
    if (version != VFIO_API_VERSION) {
        fail_message("/dev/vfio/vfio speaks vfio API %d, this daemon %d", version, VFIO_API_VERSION);
        return 0;
    }
    return 1;
}

static int open_group(struct daemon_state *s)
{
    char path[PATH_MAX + 16], name[64];
    snprintf(path, sizeof path, "%s/iommu_group", s->device_dir);
    link_name(path, name, sizeof name);
    char *end;
    errno = 0;
    s->iommu_group = strtoul(name, &end, 10);
    if (name[0] == '\0' || *end != '\0' || errno != 0) {
        fail_message("%s has no IOMMU group (%s): vfio-pci cannot serve it", s->address, path);
        return 0;
    }
    char group_path[64];
    snprintf(group_path, sizeof group_path, "/dev/vfio/%lu", s->iommu_group);
    s->group = open(group_path, O_RDWR | O_CLOEXEC);
    if (s->group < 0 && errno == ENOENT) {
        /* vfio's no-IOMMU mode names the group noiommu-N */
        snprintf(group_path, sizeof group_path, "/dev/vfio/noiommu-%lu", s->iommu_group);
        s->group = open(group_path, O_RDWR | O_CLOEXEC);
    }
    if (s->group < 0) {
        int error = errno;
        fail_message("cannot open the vfio group of %s, /dev/vfio/%lu or /dev/vfio/noiommu-%lu (%s)%s", s->address,
                     s->iommu_group, s->iommu_group, strerror(error),
                     error == EBUSY ? ": another process owns it (another ivcuda-guest-irqd?)" : "");
        return 0;
    }
    struct vfio_group_status status = {.argsz = sizeof status};
    if (ioctl(s->group, VFIO_GROUP_GET_STATUS, &status) != 0) {
        fail_message("VFIO_GROUP_GET_STATUS on %s failed (%s)", group_path, strerror(errno));
        return 0;
    }
    if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
        fail_message("IOMMU group %lu of %s is not viable: every device in %s/kernel/iommu_groups/%lu/devices must be "
                     "bound to vfio-pci or to no driver",
                     s->iommu_group, s->address, s->sysfs, s->iommu_group);
        return 0;
    }
    if (ioctl(s->group, VFIO_GROUP_SET_CONTAINER, &s->container) != 0) {
        fail_message("VFIO_GROUP_SET_CONTAINER for %s failed (%s)", group_path, strerror(errno));
        return 0;
    }
    static const struct {
        int type;
        const char *name;
    } kinds[] = {{VFIO_TYPE1v2_IOMMU, "type1v2"}, {VFIO_TYPE1_IOMMU, "type1"}, {VFIO_NOIOMMU_IOMMU, "noiommu"}};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        if (ioctl(s->container, VFIO_CHECK_EXTENSION, kinds[k].type) <= 0)
            continue;
        if (ioctl(s->container, VFIO_SET_IOMMU, kinds[k].type) != 0) {
            fail_message("VFIO_SET_IOMMU %s for %s failed (%s)%s", kinds[k].name, group_path, strerror(errno),
                         errno == EPERM ? ": the IOMMU cannot remap interrupts; give the vIOMMU interrupt remapping "
                                          "(libvirt: <driver intremap='on'/>)"
                                        : "");
            return 0;
        }
        s->mode = kinds[k].name;
        return 1;
    }
    fail_message("no vfio IOMMU driver offers type1 or noiommu for %s: modprobe vfio_iommu_type1", group_path);
    return 0;
}

static int wire_interrupts(struct daemon_state *s)
{
    s->device = ioctl(s->group, VFIO_GROUP_GET_DEVICE_FD, s->address);
    if (s->device < 0) {
        fail_message("VFIO_GROUP_GET_DEVICE_FD %s failed (%s)%s", s->address, strerror(errno),
                     errno == EBUSY ? ": another process has the device open" : "");
        return 0;
    }
    struct vfio_irq_info info = {.argsz = sizeof info, .index = VFIO_PCI_MSIX_IRQ_INDEX};
    if (ioctl(s->device, VFIO_DEVICE_GET_IRQ_INFO, &info) != 0) {
        fail_message("VFIO_DEVICE_GET_IRQ_INFO (MSI-X) on %s failed (%s)", s->address, strerror(errno));
        return 0;
    }
    if (info.count == 0) {
        fail_message("%s has no MSI-X vectors: an ivshmem-plain device? interrupts need the ivshmem-doorbell mode "
                     "(<model type='ivshmem-doorbell'/> with <msi vectors=...>)",
                     s->address);
        return 0;
    }
    if (!(info.flags & VFIO_IRQ_INFO_EVENTFD)) {
        fail_message("%s: vfio cannot signal its MSI-X vectors through eventfds (flags 0x%x)", s->address, info.flags);
        return 0;
    }
    s->vectors = info.count < MAX_VECTORS ? info.count : MAX_VECTORS;
    for (uint32_t v = 0; v < s->vectors; v++) {
        s->eventfds[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->eventfds[v] < 0) {
            fail_message("eventfd for vector %u failed (%s)", v, strerror(errno));
            return 0;
        }
    }
    size_t size = sizeof(struct vfio_irq_set) + s->vectors * sizeof(int32_t);
    struct vfio_irq_set *set = calloc(1, size);
    if (set == NULL) {
        fail_message("out of memory");
        return 0;
    }
    set->argsz = (uint32_t)size;
    set->flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
    set->index = VFIO_PCI_MSIX_IRQ_INDEX;
    set->start = 0;
    set->count = s->vectors;
    memcpy(set->data, s->eventfds, s->vectors * sizeof(int32_t));
    int ok = ioctl(s->device, VFIO_DEVICE_SET_IRQS, set) == 0;
    int error = errno;
    free(set);
    if (!ok) {
        fail_message("VFIO_DEVICE_SET_IRQS (%u MSI-X eventfds) on %s failed (%s)", s->vectors, s->address,
                     strerror(error));
        return 0;
    }
    s->irqs_set = 1;

    /* An MSI-X message is a memory write by the device: without bus mastering it is dropped. */
    struct vfio_region_info config = {.argsz = sizeof config, .index = VFIO_PCI_CONFIG_REGION_INDEX};
    if (ioctl(s->device, VFIO_DEVICE_GET_REGION_INFO, &config) != 0) {
        fail_message("VFIO_DEVICE_GET_REGION_INFO (config space) on %s failed (%s)", s->address, strerror(errno));
        return 0;
    }
    uint16_t command = 0;
    off_t at = (off_t)config.offset + PCI_COMMAND;
    if (pread(s->device, &command, sizeof command, at) != (ssize_t)sizeof command) {
        fail_message("reading the PCI command register of %s through vfio failed (%s)", s->address, strerror(errno));
        return 0;
    }
    if (!(command & PCI_COMMAND_MASTER)) {
        command |= PCI_COMMAND_MASTER;
        if (pwrite(s->device, &command, sizeof command, at) != (ssize_t)sizeof command) {
            fail_message("turning on bus mastering of %s through vfio failed (%s)", s->address, strerror(errno));
            return 0;
        }
    }
    return 1;
}

/* ---- the socket ------------------------------------------------------------------------------ */

static int make_parent(struct daemon_state *s, const char *socket_path)
{
    char parent[PATH_MAX];
    snprintf(parent, sizeof parent, "%s", socket_path);
    char *slash = strrchr(parent, '/');
    if (slash == NULL || slash == parent)
        return 1;
    *slash = '\0';
    struct stat st;
    if (stat(parent, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 1;
        fail_message("the socket's directory %s is not a directory", parent);
        return 0;
    }
    /* one level, like systemd's RuntimeDirectory: /run exists */
    if (mkdir(parent, 0755) != 0) {
        fail_message("cannot create the socket's directory %s (%s)", parent, strerror(errno));
        return 0;
    }
    chmod(parent, 0755); /* whatever the umask */
    snprintf(s->created_dir, sizeof s->created_dir, "%s", parent);
    return 1;
}

static int open_socket(struct daemon_state *s, const struct options *o)
{
    struct sockaddr_un address = {.sun_family = AF_UNIX};
    if (strlen(o->socket_path) >= sizeof address.sun_path || o->socket_path[0] != '/') {
        fail_message("--socket %s: not an absolute path shorter than %zu bytes", o->socket_path,
                     sizeof address.sun_path);
        return 0;
    }
    snprintf(address.sun_path, sizeof address.sun_path, "%s", o->socket_path);

    gid_t gid = 0;
    const char *group_name = o->group;
    struct group *group = getgrnam(o->group ? o->group : DEFAULT_GROUP);
    if (group != NULL) {
        gid = group->gr_gid;
        group_name = group->gr_name;
    } else if (o->group != NULL) {
        fail_message("--group %s: no such group", o->group);
        return 0;
    } else {
        group_name = "root";
    }

    if (!make_parent(s, o->socket_path))
        return 0;
    struct stat st;
    if (lstat(o->socket_path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            fail_message("%s exists and is not a socket: remove it or choose --socket", o->socket_path);
            return 0;
        }
        int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int alive = probe >= 0 && connect(probe, (struct sockaddr *)&address, sizeof address) == 0;
        if (probe >= 0)
            close(probe);
        if (alive) {
            fail_message("%s answers: another ivcuda-guest-irqd is running", o->socket_path);
            return 0;
        }
        unlink(o->socket_path); /* a stale socket of a daemon that died */
    }
    s->listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s->listener < 0) {
        fail_message("socket(AF_UNIX) failed (%s)", strerror(errno));
        return 0;
    }
    mode_t old_mask = umask(0117); /* born 0660: no moment in which others may connect */
    int bound = bind(s->listener, (struct sockaddr *)&address, sizeof address) == 0;
    int error = errno;
    umask(old_mask);
    if (!bound) {
        fail_message("cannot bind %s (%s)", o->socket_path, strerror(error));
        return 0;
    }
    s->socket_path = o->socket_path;
    if (chown(o->socket_path, 0, gid) != 0 || chmod(o->socket_path, 0660) != 0) {
        fail_message("cannot give %s to root:%s mode 0660 (%s)", o->socket_path, group_name, strerror(errno));
        return 0;
    }
    if (listen(s->listener, 64) != 0) {
        fail_message("listen on %s failed (%s)", o->socket_path, strerror(errno));
        return 0;
    }
    return 1;
}

static int open_signals(struct daemon_state *s)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 || (s->signals = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
        fail_message("signalfd failed (%s)", strerror(errno));
        return 0;
    }
    signal(SIGPIPE, SIG_IGN);
    return 1;
}

/* §8.1: one 48-byte message, the eventfds attached in vector order. */
static int send_eventfds(const struct daemon_state *s, int client)
{
    unsigned char message[MESSAGE_SIZE] = {0};
    memcpy(message, MESSAGE_MAGIC, 8);
    for (int b = 0; b < 4; b++)
        message[8 + b] = (unsigned char)(s->vectors >> (8 * b));
    /* flags (0x0C) stay 0 */
    memcpy(message + 16, s->address, strnlen(s->address, MESSAGE_ADDRESS_SIZE - 1));

    union {
        char buffer[CMSG_SPACE(MAX_VECTORS * sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct iovec iov = {.iov_base = message, .iov_len = sizeof message};
    struct msghdr header = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buffer,
                            .msg_controllen = CMSG_SPACE(s->vectors * sizeof(int))};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&header);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(s->vectors * sizeof(int));
    memcpy(CMSG_DATA(cmsg), s->eventfds, s->vectors * sizeof(int));
    return sendmsg(client, &header, MSG_NOSIGNAL) == (ssize_t)sizeof message;
}

static void accept_clients(struct daemon_state *s, int debug)
{
    for (;;) {
        int client = accept4(s->listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (client < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
                fail_message("accept on %s failed (%s)", s->socket_path, strerror(errno));
            return;
        }
        struct ucred peer = {0};
        socklen_t length = sizeof peer;
        getsockopt(client, SOL_SOCKET, SO_PEERCRED, &peer, &length);
        if (s->client_count == MAX_CLIENTS) {
            fail_message("client pid %d refused: %d clients already (it polls instead)", (int)peer.pid, MAX_CLIENTS);
            close(client);
            continue;
        }
        if (!send_eventfds(s, client)) {
            if (debug)
                fail_message("client pid %d: sending the eventfds failed (%s)", (int)peer.pid, strerror(errno));
            close(client);
            continue;
        }
        s->clients[s->client_count++] = client;
        if (debug)
            fail_message("client pid %d uid %d: %u eventfds sent (%u clients)", (int)peer.pid, (int)peer.uid,
                         s->vectors, s->client_count);
    }
}

static void drop_client(struct daemon_state *s, unsigned index, int debug, const char *why)
{
    if (debug)
        fail_message("client on descriptor %d %s (%u clients left)", s->clients[index], why, s->client_count - 1);
    close(s->clients[index]);
    s->clients[index] = s->clients[--s->client_count];
}

/* Returns when SIGTERM or SIGINT arrives (1), or on a failure of poll itself (0). */
static int serve(struct daemon_state *s, int debug)
{
    static struct pollfd fds[2 + MAX_CLIENTS];
    for (;;) {
        fds[0] = (struct pollfd){.fd = s->signals, .events = POLLIN};
        fds[1] = (struct pollfd){.fd = s->listener, .events = POLLIN};
        for (unsigned c = 0; c < s->client_count; c++)
            fds[2 + c] = (struct pollfd){.fd = s->clients[c], .events = POLLIN};
        unsigned watched = s->client_count;
        if (poll(fds, 2 + watched, -1) < 0) {
            if (errno == EINTR)
                continue;
            fail_message("poll failed (%s)", strerror(errno));
            return 0;
        }
        if (fds[0].revents & POLLIN) {
            struct signalfd_siginfo info;
            if (read(s->signals, &info, sizeof info) == (ssize_t)sizeof info)
                fprintf(stderr, "%s: signal %u: stopping\n", program, info.ssi_signo);
            return 1;
        }
        /* from the last, so that moving the last client into a dropped slot skips nobody */
        for (unsigned c = watched; c-- > 0;) {
            short events = fds[2 + c].revents;
            if (events == 0)
                continue;
            char byte[64];
            ssize_t n = (events & POLLIN) ? read(s->clients[c], byte, sizeof byte) : 0;
            if (n > 0)
                drop_client(s, c, debug, "wrote to the socket (clients never write, §8.1): dropped");
            else if (n == 0 || (events & (POLLHUP | POLLERR | POLLNVAL)))
                drop_client(s, c, debug, "closed");
        }
        if (fds[1].revents & POLLIN)
            accept_clients(s, debug);
    }
}

/* ---- start and stop -------------------------------------------------------------------------- */

static void release(struct daemon_state *s)
{
    for (unsigned c = 0; c < s->client_count; c++)
        close(s->clients[c]);
    s->client_count = 0;
    if (s->listener >= 0)
        close(s->listener);
    if (s->socket_path != NULL)
        unlink(s->socket_path);
    if (s->created_dir[0] != '\0')
        rmdir(s->created_dir); /* only if empty */
    if (s->irqs_set) {
        struct vfio_irq_set none = {.argsz = sizeof none,
                                    .flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
                                    .index = VFIO_PCI_MSIX_IRQ_INDEX, .start = 0, .count = 0};
        if (ioctl(s->device, VFIO_DEVICE_SET_IRQS, &none) != 0)
            fail_message("disabling the MSI-X eventfds of %s failed (%s)", s->address, strerror(errno));
    }
    for (uint32_t v = 0; v < MAX_VECTORS; v++)
        if (s->eventfds[v] >= 0)
            close(s->eventfds[v]);
    if (s->device >= 0)
        close(s->device);
    if (s->group >= 0)
        close(s->group);
    if (s->container >= 0)
        close(s->container);
    if (s->signals >= 0)
        close(s->signals);
}

static int parse_options(int argc, char **argv, struct options *o)
{
    static const struct option long_options[] = {
        {"device", required_argument, NULL, 'd'}, {"socket", required_argument, NULL, 's'},
        {"group", required_argument, NULL, 'g'},  {"bind", no_argument, NULL, 'b'},
        {"debug", no_argument, NULL, 'D'},        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {"exit-with-parent", optional_argument, NULL, 'P'},
        {NULL, 0, NULL, 0}};
    *o = (struct options){.socket_path = DEFAULT_SOCKET};
    int option;
    while ((option = getopt_long(argc, argv, "hV", long_options, NULL)) != -1) {
        switch (option) {
        case 'd': o->device = optarg; break;
        case 's': o->socket_path = optarg; break;
        case 'g': o->group = optarg; break;
        case 'b': o->bind = 1; break;
        case 'D': o->debug = 1; break;
        case 'P':
            o->exit_with_parent = 1;
            if (optarg != NULL) {
                char *end;
                errno = 0;
                long pid = strtol(optarg, &end, 10);
                if (optarg[0] == '\0' || *end != '\0' || errno != 0 || pid < 1 || pid > INT_MAX) {
                    fail_message("--exit-with-parent=%s: not a process id", optarg);
                    usage(stderr);
                    return 0;
                }
                o->parent = (pid_t)pid;
            }
            break;
        case 'h': usage(stdout); exit(0);
        case 'V': printf("ivcuda-guest-irqd (ivcuda) %s\n", IVCUDA_VERSION); exit(0);
        default: usage(stderr); return 0;
        }
    }
    if (optind != argc) {
        fail_message("unexpected argument %s", argv[optind]);
        usage(stderr);
        return 0;
    }
    return 1;
}

/* --exit-with-parent: SIGTERM (blocked by now, read from the signalfd) when the starting process
 * ends. The kernel sends it when the thread that started us ends (the agent starts its daemons from
 * its loop thread, which lives as long as it); a parent that died before the prctl is seen by
 * getppid() no longer being the pid we were started by. */
static int exit_with_parent(pid_t parent)
{
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0) {
        fail_message("prctl(PR_SET_PDEATHSIG) failed (%s)", strerror(errno));
        return 0;
    }
    if (getppid() != parent) {
        fail_message("the process that started it (pid %d) is gone: not starting", (int)parent);
        return 0;
    }
    return 1;
}

/* IVCUDA_IRQD_UNWIRED=N (tests only): N eventfds wired to nothing, no sysfs, no vfio. */
static int unwired(struct daemon_state *s, const char *count)
{
    char *end;
    errno = 0;
    unsigned long n = strtoul(count, &end, 10);
    if (*end != '\0' || errno != 0 || n < 1 || n > MAX_VECTORS) {
        fail_message("IVCUDA_IRQD_UNWIRED=%s: not a vector count 1..%u", count, MAX_VECTORS);
        return 0;
    }
    snprintf(s->address, sizeof s->address, "unwired");
    s->mode = "unwired (IVCUDA_IRQD_UNWIRED, tests only)";
    s->vectors = (uint32_t)n;
    for (uint32_t v = 0; v < s->vectors; v++) {
        s->eventfds[v] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (s->eventfds[v] < 0) {
            fail_message("eventfd for vector %u failed (%s)", v, strerror(errno));
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    pid_t parent = getppid(); /* before anything: who started us */
    struct options o;
    if (!parse_options(argc, argv, &o))
        return EXIT_USAGE;
    if (o.parent != 0)
        parent = o.parent;
    static struct daemon_state s;
    s.container = s.group = s.device = s.listener = s.signals = -1;
    for (uint32_t v = 0; v < MAX_VECTORS; v++)
        s.eventfds[v] = -1;
    const char *root = getenv("IVCUDA_SYSFS_ROOT"); /* tests; the same variable region.c's scan reads */
    snprintf(s.sysfs, sizeof s.sysfs, "%s", root && root[0] ? root : "/sys");

    const char *test_vectors = getenv("IVCUDA_IRQD_UNWIRED");
    /* signals first: a SIGTERM during start-up still goes through release() (the parent's death too) */
    int ok = open_signals(&s) && (!o.exit_with_parent || exit_with_parent(parent)) &&
             (test_vectors != NULL && test_vectors[0] != '\0'
                  ? unwired(&s, test_vectors)
                  : find_device(&s, &o) && ensure_vfio_driver(&s, &o) && open_container(&s) && open_group(&s) &&
                        wire_interrupts(&s)) &&
             open_socket(&s, &o);
    if (ok) {
        fprintf(stderr, "%s: device %s, vfio %s (IOMMU group %lu), %u MSI-X vectors, socket %s\n", program,
                s.address, s.mode, s.iommu_group, s.vectors, s.socket_path);
        ok = serve(&s, o.debug);
    }
    release(&s);
    if (!ok && s.bound_by_us)
        give_back(&s);
    return ok ? 0 : EXIT_FAILED;
}
