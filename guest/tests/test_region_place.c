/* Where the region is mapped (docs/protocol.md §2a): at pool_device_address - pool_offset when
 * that range is free, else where the first mapping put it, with the library still attached;
 * values that cannot be an address of the server's are not used. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"
#include "region.h"
#include "region_place.h"

static char path[] = "/tmp/ivcuda-place-XXXXXX";
static uint8_t *image;

static void write_region(uint64_t pool_device_address)
{
    fake_write_header(image, FAKE_REGION_SIZE);
    ivc_write64(image + IVC_HDR_POOL_DEVICE_ADDRESS, pool_device_address);
    int fd = open(path, O_WRONLY | O_TRUNC);
    CHECK(fd >= 0 && write(fd, image, FAKE_REGION_SIZE) == (ssize_t)FAKE_REGION_SIZE);
    close(fd);
}

/* An address range of the region's size that is free in this process right now. */
static uint64_t free_range(void)
{
    void *p = mmap(NULL, FAKE_REGION_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(p != MAP_FAILED);
    munmap(p, FAKE_REGION_SIZE);
    return (uint64_t)(uintptr_t)p;
}

static void test_wanted_base(void)
{
    const uint64_t limit = 1ULL << 47, size = 1 << 20;
    CHECK(ivc_region_wanted_base(0x7f0000100000ULL, 0x100000, size, limit) == 0x7f0000000000ULL);
    CHECK(ivc_region_wanted_base(0, 0x100000, size, limit) == 0);                 /* not registered */
    CHECK(ivc_region_wanted_base(0x7f0000100010ULL, 0x100000, size, limit) == 0); /* not page-aligned */
    CHECK(ivc_region_wanted_base(0x80000, 0x100000, size, limit) == 0);           /* below pool_offset */
    CHECK(ivc_region_wanted_base(0x100000, 0x100000, size, limit) == 0);          /* base 0 */
    CHECK(ivc_region_wanted_base(limit - 4096, 0, size, limit) == 0);             /* ends above the limit */
    CHECK(ivc_region_wanted_base(~0xfffULL, 0, size, limit) == 0);                /* wraps */
    CHECK(ivc_region_wanted_base(limit - size, 0, size, limit) == limit - size);  /* ends at the limit */
}

static void test_placement(void)
{
    image = calloc(1, FAKE_REGION_SIZE);
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    setenv("IVCUDA_REGION", path, 1);
    struct ivc_region region;

    /* not registered: wherever the kernel put it */
    write_region(0);
    CHECK(ivc_region_open(&region) == CUDA_SUCCESS);
    ivc_region_close(&region);

    /* a free range: exactly there, and the header read through the new mapping */
    uint64_t wanted = free_range();
    write_region(wanted + FAKE_POOL_OFFSET);
    CHECK(ivc_region_open(&region) == CUDA_SUCCESS);
    CHECK((uint64_t)(uintptr_t)region.base == wanted);
    CHECK(ivc_read64(region.base + IVC_HDR_MAGIC) == IVC_MAGIC);
    CHECK(region.pool_size == FAKE_POOL_SIZE && region.channel_count == FAKE_CHANNELS);
    /* the same file, seen through the new mapping */
    int check_fd = open(path, O_RDWR);
    CHECK(check_fd >= 0 && pwrite(check_fd, "x", 1, FAKE_POOL_OFFSET) == 1);
    close(check_fd);
    CHECK(region.base[FAKE_POOL_OFFSET] == 'x');
    ivc_region_close(&region);

    /* the range taken by something else of the process: the first mapping, and it works */
    wanted = free_range();
    void *taken = mmap((void *)(uintptr_t)(wanted + 8192), 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
                       -1, 0);
    CHECK(taken != MAP_FAILED);
    write_region(wanted + FAKE_POOL_OFFSET);
    CHECK(ivc_region_open(&region) == CUDA_SUCCESS);
    CHECK((uint64_t)(uintptr_t)region.base != wanted && region.base != NULL);
    CHECK(ivc_read64(region.base + IVC_HDR_MAGIC) == IVC_MAGIC);
    CHECK(*(volatile uint8_t *)taken == 0); /* still the other mapping, untouched */
    ivc_region_close(&region);
    munmap(taken, 4096);

    /* a value that cannot be an address: not used, the library still attaches */
    write_region(0x7f0000100010ULL);
    CHECK(ivc_region_open(&region) == CUDA_SUCCESS && region.base != NULL);
    ivc_region_close(&region);
    write_region(1ULL << 63);
    CHECK(ivc_region_open(&region) == CUDA_SUCCESS && region.base != NULL);
    ivc_region_close(&region);

    unsetenv("IVCUDA_REGION");
    unlink(path);
    free(image);
}

int main(void)
{
    test_wanted_base();
    test_placement();
    return check_summary("test_region_place");
}
