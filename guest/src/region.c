/* Finding, mapping and validating the shared-memory region (docs/protocol.md §2):
 * IVCUDA_REGION=<file> (host loopback for tests and benchmarks), else the first PCI
 * device 1af4:1110 under <IVCUDA_SYSFS_ROOT or /sys>/bus/pci/devices whose BAR2
 * (resource2) starts with the magic. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ivc_api.h"
#include "ivc_internal.h"
#include "log.h"
#include "region.h"
#include "region_check.h"
#include "region_place.h"
#include "restart.h"

static int map_file(const char *path, uint8_t **base, size_t *size, char *why, size_t capacity)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        snprintf(why, capacity, "cannot open: %s", strerror(errno));
        return 0;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0) {
        snprintf(why, capacity, "cannot size (empty or unreadable)");
        close(fd);
        return 0;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        snprintf(why, capacity, "cannot map: %s", strerror(errno));
        return 0;
    }
    *base = p;
    *size = (size_t)st.st_size;
    return 1;
}

int ivc_read_hex_file(const char *path, unsigned long *value)
{
    FILE *f = fopen(path, "re");
    if (f == NULL)
        return 0;
    int ok = fscanf(f, "%lx", value) == 1;
    fclose(f);
    return ok;
}

/* MSI-X table size from the device's config space; 1 when it cannot be read. */
static uint32_t msix_vectors(const char *device_dir)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/config", device_dir);
    uint8_t config[256] = {0};
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 1;
    ssize_t n = read(fd, config, sizeof config);
    close(fd);
    if (n < 64 || !(config[6] & 0x10))
        return 1;
    unsigned position = config[0x34] & 0xfc;
    for (int hops = 0; position >= 0x40 && position + 3 < (unsigned)n && hops < 48; hops++) {
        if (config[position] == 0x11) {
            unsigned control = config[position + 2] | (unsigned)config[position + 3] << 8;
            return (control & 0x7ff) + 1;
        }
        position = config[position + 1] & 0xfc;
    }
    return 1;
}

int ivc_pci_find(char *device_dir, size_t dir_capacity, uint8_t **base, size_t *size, char *message,
                 size_t capacity)
{
    const char *root = getenv("IVCUDA_SYSFS_ROOT");
    char dir_path[512];
    snprintf(dir_path, sizeof dir_path, "%s/bus/pci/devices", root && root[0] ? root : "/sys");
    struct dirent **entries = NULL;
    int count = scandir(dir_path, &entries, NULL, alphasort); /* bus order: "the first" is stable */
    if (count < 0) {
        snprintf(message, capacity, "no region: IVCUDA_REGION is not set and %s cannot be read (%s)", dir_path,
                 strerror(errno));
        return 0;
    }
    char last_problem[1600] = "";
    int found = 0;
    for (int e = 0; e < count && !found; e++) {
        const struct dirent *entry = entries[e];
        if (entry->d_name[0] == '.')
            continue;
        char dir[1100], path[1200];
        snprintf(dir, sizeof dir, "%s/%s", dir_path, entry->d_name);
        unsigned long vendor = 0, device = 0;
        snprintf(path, sizeof path, "%s/vendor", dir);
        if (!ivc_read_hex_file(path, &vendor) || vendor != 0x1af4)
            continue;
        snprintf(path, sizeof path, "%s/device", dir);
        if (!ivc_read_hex_file(path, &device) || device != 0x1110)
            continue;
        snprintf(path, sizeof path, "%s/resource2", dir);
        char why[300];
        if (!map_file(path, base, size, why, sizeof why)) {
            snprintf(last_problem, sizeof last_problem, " (%s: %s)", path, why);
            continue;
        }
        if (*size < 8 || ivc_read64(*base) != IVC_MAGIC) {
            munmap(*base, *size);
            continue; /* an ivshmem device used for something else */
        }
        snprintf(device_dir, dir_capacity, "%s", dir);
        found = 1;
    }
    for (int e = 0; e < count; e++)
        free(entries[e]);
    free(entries);
    if (!found)
        snprintf(message, capacity, "no region: no ivshmem device 1af4:1110 with an ivcuda region under %s%s",
                 dir_path, last_problem);
    return found;
}

static int scan_pci(struct ivc_region *region, char *message, size_t capacity)
{
    char device_dir[1100];
    if (!ivc_pci_find(device_dir, sizeof device_dir, &region->base, &region->size, message, capacity))
        return 0;
    snprintf(region->path, sizeof region->path, "%s/resource2", device_dir);
    snprintf(region->doorbell_path, sizeof region->doorbell_path, "%s/resource0", device_dir);
    const char *slash = strrchr(device_dir, '/');
    snprintf(region->pci_address, sizeof region->pci_address, "%s", slash ? slash + 1 : device_dir);
    region->doorbell_vectors = msix_vectors(device_dir);
    return 1;
}

/* Host loopback in doorbell mode (tests, benchmarks): there is no BAR0, but a process that
 * connected to the server's socket as QEMU does may hand us the server's vector eventfds,
 * IVCUDA_DOORBELL_EVENTFDS=<fd>,<fd>,... in vector order; ringing vector v writes to the v-th. */
int ivc_parse_fd_list(const char *list, int *fds, uint32_t capacity)
{
    uint32_t n = 0;
    for (const char *p = list; *p != '\0';) {
        char *end;
        errno = 0;
        long fd = strtol(p, &end, 10);
        if (end == p || errno != 0 || fd < 0 || fd > 1 << 20 || (*end != ',' && *end != '\0') || n == capacity)
            return -1;
        fds[n++] = (int)fd;
        p = *end == ',' ? end + 1 : end;
    }
    return (int)n;
}

static void loopback_eventfds(struct ivc_region *region)
{
    const char *list = getenv("IVCUDA_DOORBELL_EVENTFDS");
    if (list == NULL || list[0] == '\0')
        return;
    int n = ivc_parse_fd_list(list, region->doorbell_eventfds, 64);
    if (n < 0) {
        ivc_log("IVCUDA_DOORBELL_EVENTFDS=%s: not a list of descriptors; not ringing", list);
        return;
    }
    region->doorbell_eventfd_count = (uint32_t)n;
    region->doorbell_vectors = (uint32_t)n;
}

CUresult ivc_region_open(struct ivc_region *region)
{
    memset(region, 0, sizeof *region);
    char message[2000];
    const char *file = getenv("IVCUDA_REGION");
    if (file != NULL && file[0] != '\0') {
        char why[300];
        snprintf(region->path, sizeof region->path, "%s", file);
        if (!map_file(file, &region->base, &region->size, why, sizeof why)) {
            ivc_log("region %s (IVCUDA_REGION): %s", file, why);
            return CUDA_ERROR_NOT_INITIALIZED;
        }
    } else if (!scan_pci(region, message, sizeof message)) {
        ivc_log("%s", message);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    /* a server starting, or replacing its CUDA process after a fatal fault: wait for READY (§7) */
    ivc_server_wait_ready(region->base, region->size);
    if (!ivc_region_check_layout(region->base, region->size, region, message, sizeof message)) {
        ivc_log("region %s: %s", region->path, message);
        ivc_region_close(region);
        return CUDA_ERROR_NOT_INITIALIZED;
    }
    const uint8_t *h = region->base;
    region->epoch = ivc_read32(h + IVC_HDR_EPOCH);
    region->api_version = ivc_read32(h + IVC_HDR_API_VERSION);
    region->feature_bits = ivc_read64(h + IVC_HDR_FEATURE_BITS);
    if ((region->feature_bits & IVC_FEATURE_DOORBELL) && file != NULL && file[0] != '\0')
        loopback_eventfds(region);
    uint32_t header_vectors = ivc_read32(h + IVC_HDR_DOORBELL_VECTORS);
    if ((region->feature_bits & IVC_FEATURE_DOORBELL) && header_vectors != 0)
        region->doorbell_vectors = header_vectors; /* the server's modulus; config space needs root */
    if ((region->feature_bits & IVC_FEATURE_DOORBELL) && region->doorbell_eventfd_count == 0) {
        uint8_t *bar0;
        size_t bar0_size;
        char why[300];
        if (region->doorbell_path[0] != '\0' && map_file(region->doorbell_path, &bar0, &bar0_size, why, sizeof why)
            && bar0_size >= 16) {
            region->doorbell = bar0;
        } else {
            ivc_log("region %s: doorbell mode but no BAR0 to ring%s%s; relying on the server polling",
                    region->path, region->doorbell_path[0] ? ": " : "", region->doorbell_path);
        }
    }
    ivc_region_place(region); /* §2a: pinned pointers as device pointers (h is stale after it) */
    ivc_trace("region %s: %u channels of %u bytes, pool %" PRIu64 " bytes at %" PRIu64, region->path,
              region->channel_count, region->channel_stride, region->pool_size, region->pool_offset);
    return CUDA_SUCCESS;
}

void ivc_region_close(struct ivc_region *region)
{
    if (region->base != NULL)
        munmap(region->base, region->size);
    region->base = NULL;
}

/* §8: the cuda-server is ivshmem peer 0; vector = channel index mod vectors. */
void ivc_region_ring_doorbell(const struct ivc_region *region, uint32_t channel_index)
{
    if (region->doorbell_eventfd_count != 0) {
        uint64_t one = 1;
        ssize_t written = write(region->doorbell_eventfds[channel_index % region->doorbell_eventfd_count], &one, 8);
        (void)written; /* a full counter still wakes the server */
        return;
    }
    if (region->doorbell == NULL)
        return;
    uint32_t vectors = region->doorbell_vectors ? region->doorbell_vectors : 1;
    uint32_t value = (0u << 16) | (channel_index % vectors);
    *(volatile uint32_t *)(region->doorbell + 12) = value;
}
