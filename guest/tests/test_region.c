/* Header validation (§2): every field that can be wrong yields a message naming it;
 * discovery through IVCUDA_REGION and through a fake sysfs tree. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "region.h"
#include "region_check.h"

static uint8_t *image;

static int starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

static void expect_field(const char *field, size_t offset, int width, uint64_t value)
{
    fake_write_header(image, FAKE_REGION_SIZE);
    if (width == 4)
        ivc_write32(image + offset, (uint32_t)value);
    else
        ivc_write64(image + offset, value);
    char message[1024] = "";
    int ok = ivc_region_check(image, FAKE_REGION_SIZE, message, sizeof message);
    CHECK(!ok);
    CHECK(starts_with(message, field));
    if (ok || !starts_with(message, field))
        fprintf(stderr, "  for %s got: %s\n", field, message);
}

static void test_header_checks(void)
{
    image = calloc(1, FAKE_REGION_SIZE);
    char message[1024] = "";
    fake_write_header(image, FAKE_REGION_SIZE);
    CHECK(ivc_region_check(image, FAKE_REGION_SIZE, message, sizeof message));
    expect_field("magic", IVC_HDR_MAGIC, 8, 0x1234);
    char version_mismatch[64];
    snprintf(version_mismatch, sizeof version_mismatch, "protocol_version %u, this library speaks %u",
             IVC_PROTOCOL_VERSION + 1, IVC_PROTOCOL_VERSION);
    expect_field(version_mismatch, IVC_HDR_PROTOCOL_VERSION, 4, IVC_PROTOCOL_VERSION + 1);
    expect_field("api_hash", IVC_HDR_API_HASH, 8, IVC_API_HASH ^ 1);
    expect_field("header_size", IVC_HDR_HEADER_SIZE, 4, 8192);
    expect_field("region_size", IVC_HDR_REGION_SIZE, 8, FAKE_REGION_SIZE * 2);
    expect_field("server_state 0", IVC_HDR_SERVER_STATE, 4, 0);
    expect_field("channel_count", IVC_HDR_CHANNEL_COUNT, 4, 0);
    expect_field("channel_stride", IVC_HDR_CHANNEL_STRIDE, 4, 5000);
    expect_field("channel_table_offset", IVC_HDR_CHANNEL_TABLE_OFFSET, 8, 8192);
    expect_field("request_area_size", IVC_HDR_REQUEST_AREA_SIZE, 4, 12);
    expect_field("response_area_size", IVC_HDR_RESPONSE_AREA_SIZE, 4, 13);
    expect_field("ring_size", IVC_HDR_RING_SIZE, 4, 1000);
    expect_field("window_size", IVC_HDR_WINDOW_SIZE, 4, 3);
    expect_field("channel_stride", IVC_HDR_WINDOW_SIZE, 4, 1 << 20); /* areas beyond the stride */
    expect_field("pool_offset", IVC_HDR_POOL_OFFSET, 8, 8192);     /* overlaps the channels */
    expect_field("pool_size", IVC_HDR_POOL_SIZE, 8, FAKE_REGION_SIZE);
    /* the server's message travels with a not-READY state */
    fake_write_header(image, FAKE_REGION_SIZE);
    ivc_write32(image + IVC_HDR_SERVER_STATE, 3);
    strcpy((char *)image + IVC_HDR_SERVER_MESSAGE, "stopped by libvirt");
    CHECK(!ivc_region_check(image, FAKE_REGION_SIZE, message, sizeof message));
    CHECK(strstr(message, "stopped by libvirt") != NULL);
    CHECK(!ivc_region_check(image, 100, message, sizeof message) && starts_with(message, "region_size"));
}

static void write_file(const char *path, const void *bytes, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, bytes, size) == (ssize_t)size);
    close(fd);
}

static void test_discovery(void)
{
    char root[] = "/tmp/ivcuda-sysfs-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char path[512];
    snprintf(path, sizeof path, "%s/bus", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/bus/pci", root);
    mkdir(path, 0700);
    snprintf(path, sizeof path, "%s/bus/pci/devices", root);
    mkdir(path, 0700);
    /* another vendor, and an ivshmem device that carries something else */
    const char *devices[] = {"0000:00:02.0", "0000:00:03.0", "0000:00:04.0"};
    const char *vendors[] = {"0x8086\n", "0x1af4\n", "0x1af4\n"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/bus/pci/devices/%s", root, devices[i]);
        mkdir(path, 0700);
        snprintf(path, sizeof path, "%s/bus/pci/devices/%s/vendor", root, devices[i]);
        write_file(path, vendors[i], strlen(vendors[i]));
        snprintf(path, sizeof path, "%s/bus/pci/devices/%s/device", root, devices[i]);
        write_file(path, "0x1110\n", 7);
        snprintf(path, sizeof path, "%s/bus/pci/devices/%s/resource2", root, devices[i]);
        if (i == 1) {
            uint8_t other[8192] = {1, 2, 3};
            write_file(path, other, sizeof other);
        } else {
            fake_write_header(image, FAKE_REGION_SIZE);
            write_file(path, image, FAKE_REGION_SIZE);
        }
    }
    setenv("IVCUDA_SYSFS_ROOT", root, 1);
    unsetenv("IVCUDA_REGION");
    struct ivc_region region;
    CHECK(ivc_region_open(&region) == CUDA_SUCCESS);
    CHECK(strstr(region.path, "0000:00:04.0/resource2") != NULL);
    CHECK(strstr(region.doorbell_path, "0000:00:04.0/resource0") != NULL);
    CHECK(region.channel_count == FAKE_CHANNELS && region.pool_size == FAKE_POOL_SIZE);
    ivc_region_close(&region);

    /* the same file through IVCUDA_REGION */
    snprintf(path, sizeof path, "%s/bus/pci/devices/0000:00:04.0/resource2", root);
    setenv("IVCUDA_REGION", path, 1);
    CHECK(ivc_region_open(&region) == CUDA_SUCCESS && region.doorbell_path[0] == '\0');
    ivc_region_close(&region);

    /* a mismatch: cuInit's error */
    ivc_write32(image + IVC_HDR_PROTOCOL_VERSION, IVC_PROTOCOL_VERSION + 1);
    write_file(path, image, FAKE_REGION_SIZE);
    CHECK(ivc_region_open(&region) == CUDA_ERROR_NOT_INITIALIZED);
    setenv("IVCUDA_REGION", "/nonexistent/ivcuda", 1);
    CHECK(ivc_region_open(&region) == CUDA_ERROR_NOT_INITIALIZED);
    unsetenv("IVCUDA_REGION");
    snprintf(path, sizeof path, "%s/empty", root);
    setenv("IVCUDA_SYSFS_ROOT", path, 1);
    CHECK(ivc_region_open(&region) == CUDA_ERROR_NOT_INITIALIZED);
    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", root);
    CHECK(system(command) == 0);
}

int main(void)
{
    test_header_checks();
    test_discovery();
    return check_summary("test_region");
}
