/*
 * ivcuda-guest-check: tells an admin whether this guest sees an ivcuda device and whether the
 * host's cuda-server answers. It looks at the PCI devices itself (to say what it found) and then
 * asks the installed libcuda.so.1 (dlopen, the library's own discovery) for cuInit,
 * cuDriverGetVersion and cuDeviceGetCount.
 *
 * Exit status: 0 the server answers; 1 no ivshmem device with an ivcuda region; 2 a device is there
 * but the library cannot use it (server not READY, incompatible, no permission); 3 the library
 * cannot be loaded; 64 usage. --help and --version answer on stdout and exit 0.
 */
#ifndef IVCUDA_VERSION
#define IVCUDA_VERSION "(not built as a package)"
#endif
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ivc_region.h"

#define EXIT_ANSWERS 0
#define EXIT_NO_DEVICE 1
#define EXIT_DEVICE_UNUSABLE 2
#define EXIT_NO_LIBRARY 3
#define EXIT_USAGE 64

#ifndef IVCUDA_LIBRARY
#define IVCUDA_LIBRARY "/usr/lib/ivcuda/libcuda.so.1"
#endif

/* Indexed by server_state (IVC_STATE_*, docs/protocol.md §2). */
static const char *const SERVER_STATES[] = {"INIT", "READY", "STOPPING", "STOPPED"};

typedef int (*cu_init_fn)(unsigned int);
typedef int (*cu_int_out_fn)(int *);
typedef int (*cu_error_string_fn)(int, const char **);

static int read_hex_file(const char *path, unsigned long *value) {
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return 0;
    int ok = fscanf(file, "%lx", value) == 1;
    fclose(file);
    return ok;
}

/* Prints what page 0 of one device's BAR2 says; returns 1 when it carries an ivcuda header. */
static int describe_region(const char *device_dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/resource2", device_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        printf("  %s: cannot open (%s)%s\n", path, strerror(errno),
               errno == EACCES ? "; members of group ivcuda may (udev rule 60-ivcuda.rules), or run as root" : "");
        return 0;
    }
    void *page = mmap(NULL, IVC_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (page == MAP_FAILED) {
        printf("  %s: cannot map (%s)\n", path, strerror(errno));
        return 0;
    }
    const volatile unsigned char *header = page;
    uint64_t magic, region_size;
    uint32_t version, state, host_driver;
    memcpy(&magic, (const void *)(header + IVC_HDR_MAGIC), sizeof magic);
    memcpy(&version, (const void *)(header + IVC_HDR_PROTOCOL_VERSION), sizeof version);
    memcpy(&region_size, (const void *)(header + IVC_HDR_REGION_SIZE), sizeof region_size);
    memcpy(&state, (const void *)(header + IVC_HDR_SERVER_STATE), sizeof state);
    memcpy(&host_driver, (const void *)(header + IVC_HDR_HOST_DRIVER_VERSION), sizeof host_driver);
    char message[IVC_HDR_SERVER_MESSAGE_LENGTH + 1];
    memcpy(message, (const void *)(header + IVC_HDR_SERVER_MESSAGE), IVC_HDR_SERVER_MESSAGE_LENGTH);
    message[IVC_HDR_SERVER_MESSAGE_LENGTH] = '\0';
    munmap(page, IVC_HEADER_SIZE);
    if (magic != IVC_MAGIC) {
        printf("  %s: no ivcuda header (magic 0x%016" PRIx64 "; the server has not written it yet, or another ivshmem user)\n",
               path, magic);
        return 0;
    }
    printf("  %s: ivcuda region, protocol %" PRIu32 ", %" PRIu64 " MiB, server %s, host driver %" PRIu32 "%s%s\n", path,
           version, region_size >> 20, state < 4 ? SERVER_STATES[state] : "in an unknown state", host_driver,
           message[0] ? ", server says: " : "", message);
    return 1;
}

/* Counts 1af4:1110 devices (and those with an ivcuda header) under the sysfs the library uses. */
static void scan_devices(int *devices, int *regions) {
    const char *root = getenv("IVCUDA_SYSFS_ROOT");
    char dir_path[4096];
    snprintf(dir_path, sizeof dir_path, "%s/bus/pci/devices", root != NULL ? root : "/sys");
    *devices = 0;
    *regions = 0;
    DIR *dir = opendir(dir_path);
    if (dir == NULL) {
        printf("cannot read %s: %s\n", dir_path, strerror(errno));
        return;
    }
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (entry->d_name[0] == '.')
            continue;
        char device_dir[4096], path[4096 + 16];
        unsigned long vendor = 0, device = 0;
        snprintf(device_dir, sizeof device_dir, "%s/%s", dir_path, entry->d_name);
        snprintf(path, sizeof path, "%s/vendor", device_dir);
        if (!read_hex_file(path, &vendor) || vendor != 0x1af4)
            continue;
        snprintf(path, sizeof path, "%s/device", device_dir);
        if (!read_hex_file(path, &device) || device != 0x1110)
            continue;
        (*devices)++;
        printf("ivshmem device %s\n", entry->d_name);
        *regions += describe_region(device_dir);
    }
    closedir(dir);
}

static void usage(FILE *to, const char *program) {
    fprintf(to,
            "Usage: %s [--library PATH]\n"
            "Tells whether this VM has an ivcuda device and whether the host's cuda-server answers.\n"
            "\n"
            "Options:\n"
            "  --library PATH  the libcuda.so.1 to ask (default " IVCUDA_LIBRARY ")\n"
            "  -h, --help      show this help and exit\n"
            "  -V, --version   print the version and exit\n"
            "\n"
            "Exit status:\n"
            "  0  the server answers\n"
            "  1  no ivshmem device with an ivcuda region\n"
            "  2  a device is there but unusable (server not READY, incompatible, no permission)\n"
            "  3  the library cannot be loaded\n"
            "  64 wrong arguments\n",
            program);
}

int main(int argc, char **argv) {
    const char *library = IVCUDA_LIBRARY;
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout, "ivcuda-guest-check");
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
        printf("ivcuda-guest-check (ivcuda) %s\n", IVCUDA_VERSION);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--library") == 0) {
        library = argv[2];
    } else if (argc != 1) {
        usage(stderr, "ivcuda-guest-check");
        return EXIT_USAGE;
    }

    int devices = 0, regions = 0;
    const char *region_override = getenv("IVCUDA_REGION");
    if (region_override != NULL) {
        printf("IVCUDA_REGION=%s: the library uses this file instead of a PCI device\n", region_override);
    } else {
        scan_devices(&devices, &regions);
        if (devices == 0) {
            printf("no ivshmem device found (PCI 1af4:1110): is the VM tagged with <ivcuda:gpu> and was it started after "
                   "the provisioner added the device? (host: ivshmem-provisioner status)\n");
            return EXIT_NO_DEVICE;
        }
    }

    void *handle = dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        printf("cannot load the guest library: %s\n", dlerror());
        return EXIT_NO_LIBRARY;
    }
    cu_init_fn cu_init = (cu_init_fn)dlsym(handle, "cuInit");
    cu_int_out_fn cu_driver_get_version = (cu_int_out_fn)dlsym(handle, "cuDriverGetVersion");
    cu_int_out_fn cu_device_get_count = (cu_int_out_fn)dlsym(handle, "cuDeviceGetCount");
    cu_error_string_fn cu_get_error_name = (cu_error_string_fn)dlsym(handle, "cuGetErrorName");
    if (cu_init == NULL || cu_driver_get_version == NULL || cu_device_get_count == NULL) {
        printf("%s does not export cuInit/cuDriverGetVersion/cuDeviceGetCount: not the ivcuda library?\n", library);
        return EXIT_NO_LIBRARY;
    }

    int status = cu_init(0);
    if (status != 0) {
        const char *name = NULL;
        if (cu_get_error_name == NULL || cu_get_error_name(status, &name) != 0 || name == NULL)
            name = "unknown error";
        if (status == 100) /* CUDA_ERROR_NO_DEVICE: the server answered, the host has no usable GPU for it */
            printf("server answers, but the host has no usable GPU for this VM: cuInit %d (%s)\n", status, name);
        else
            printf("cuInit failed: %d (%s); the library's stderr line above says why\n", status, name);
        return EXIT_DEVICE_UNUSABLE;
    }
    int version = 0, count = 0;
    cu_driver_get_version(&version);
    status = cu_device_get_count(&count);
    printf("server answers: driver API %d.%d, %d GPU%s (cuDeviceGetCount status %d)\n", version / 1000,
           (version % 1000) / 10, count, count == 1 ? "" : "s", status);
    return status == 0 ? EXIT_ANSWERS : EXIT_DEVICE_UNUSABLE;
}
