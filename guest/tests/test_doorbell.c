/* Doorbell mode (§8): found through a fake sysfs tree, the guest writes
 * `0 << 16 | channel mod vectors` to BAR0 offset 12 when the server is parked. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"

static void write_file(const char *path, const void *bytes, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, bytes, size) == (ssize_t)size);
    close(fd);
}

static uint32_t doorbell_value(const char *bar0)
{
    uint32_t value = 0xffffffffu;
    int fd = open(bar0, O_RDONLY);
    CHECK(fd >= 0 && pread(fd, &value, 4, 12) == 4);
    close(fd);
    return value;
}

int main(void)
{
    char root[] = "/tmp/ivcuda-doorbell-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char device[600], path[700], region_path[700], bar0[700];
    snprintf(device, sizeof device, "%s/bus", root);
    mkdir(device, 0700);
    snprintf(device, sizeof device, "%s/bus/pci", root);
    mkdir(device, 0700);
    snprintf(device, sizeof device, "%s/bus/pci/devices", root);
    mkdir(device, 0700);
    snprintf(device, sizeof device, "%s/bus/pci/devices/0000:00:05.0", root);
    mkdir(device, 0700);
    snprintf(path, sizeof path, "%s/vendor", device);
    write_file(path, "0x1af4\n", 7);
    snprintf(path, sizeof path, "%s/device", device);
    write_file(path, "0x1110\n", 7);
    uint8_t config[256] = {0};
    config[6] = 0x10;    /* status: capability list */
    config[0x34] = 0x40; /* first capability */
    config[0x40] = 0x11; /* MSI-X */
    config[0x42] = 3;    /* table size - 1: 4 vectors */
    snprintf(path, sizeof path, "%s/config", device);
    write_file(path, config, sizeof config);
    static uint8_t zeros[4096];
    snprintf(bar0, sizeof bar0, "%s/resource0", device);
    write_file(bar0, zeros, sizeof zeros);
    snprintf(region_path, sizeof region_path, "%s/resource2", device);

    fake.extra_features = IVC_FEATURE_DOORBELL;
    fake.parked = 1;
    fake_server_start(region_path);
    /* two channels already taken by another process: this one gets channel 2 */
    int fd = open(region_path, O_RDWR);
    uint8_t *region = mmap(NULL, FAKE_REGION_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    ivc_write64(FAKE_CHANNEL(region, 0) + IVC_CH_OWNER, 0xdead00000001ULL);
    ivc_write64(FAKE_CHANNEL(region, 1) + IVC_CH_OWNER, 0xdead00000001ULL);
    setenv("IVCUDA_SYSFS_ROOT", root, 1);
    unsetenv("IVCUDA_REGION");

    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(doorbell_value(bar0) == 2);
    CHECK(ivc_load64(FAKE_CHANNEL(region, 2) + IVC_CH_OWNER) >> 32 == (uint64_t)getpid());

    fake.parked = 0;
    while (ivc_load32(FAKE_CHANNEL(region, 2) + IVC_CH_SERVER_PARKED) != 0)
        usleep(100);
    int bar = open(bar0, O_WRONLY);
    CHECK(bar >= 0 && pwrite(bar, zeros, 16, 0) == 16);
    close(bar);
    CHECK(cuInit(0) == CUDA_SUCCESS);
    CHECK(doorbell_value(bar0) == 0); /* not parked: no ring */

    char command[700];
    snprintf(command, sizeof command, "rm -rf '%s'", root);
    /* the exit handler still talks to the server: remove the tree only from disk */
    CHECK(system(command) == 0);
    return check_summary("test_doorbell");
}
