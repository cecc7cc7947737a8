/* Where the region lies in the guest process (docs/protocol.md §2a). Natively, pinned host
 * memory is mapped into the GPU's address space at the host pointer's own address (unified
 * addressing), and programs pass such pointers straight to kernels. Our pinned memory is the
 * pool, which the server registered at the server's own mapping address: the GPU sees the pool
 * at pool_device_address, not at wherever the guest's first mmap put it. So the library asks
 * for the region at the server's address, once, at attach; when the range is free in this
 * process a pool pointer is then a device pointer, as natively. When it is not, nothing else
 * changes: pool pointers still travel as offsets, only a kernel storing through one faults. */
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ivc_api.h"
#include "log.h"
#include "region_check.h"
#include "region_place.h"

#ifndef MAP_FIXED_NOREPLACE
/* Linux 4.17's value; an older kernel takes the address as a plain hint, which the result's
 * comparison with the hint below catches. */
#define MAP_FIXED_NOREPLACE 0x100000
#endif

/* x86-64's user address space with 4-level paging. With 5-level paging the kernel maps above
 * it only when asked to, which the server's process does not do, so a larger value is not an
 * address it mapped. */
#define USER_ADDRESS_LIMIT (1ULL << 47)

uint64_t ivc_region_wanted_base(uint64_t pool_device_address, uint64_t pool_offset, uint64_t size, uint64_t limit)
{
    if (pool_device_address == 0 || pool_device_address % 4096 != 0 || pool_device_address < pool_offset)
        return 0;
    uint64_t base = pool_device_address - pool_offset;
    if (base == 0 || size > limit || base > limit - size)
        return 0;
    return base;
}

/* One line per process, only with IVCUDA_DEBUG: a program that never passes a pinned pointer
 * to a kernel is not affected, and a program's own output stays its own. */
static void say_once(const struct ivc_region *region, uint64_t wanted, const char *why)
{
    static int said;
    if (__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        return;
    ivc_trace("region %s: not mapped at the server's device address 0x%" PRIx64 " (%s): a pinned host pointer "
              "passed to a kernel will fault; cuMemHostGetDevicePointer's answer works",
              region->path, wanted, why);
}

int ivc_region_place(struct ivc_region *region)
{
    /* read once: the value checked is the value used */
    uint64_t device = ivc_read64(region->base + IVC_HDR_POOL_DEVICE_ADDRESS);
    if (device == 0)
        return 0; /* the pool is not registered: no device address to match */
    uint64_t wanted = ivc_region_wanted_base(device, region->pool_offset, region->size, USER_ADDRESS_LIMIT);
    if (wanted == 0) {
        say_once(region, device, "pool_device_address is not a usable address");
        return 0;
    }
    if (wanted == (uint64_t)(uintptr_t)region->base)
        return 1;
    int fd = open(region->path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        say_once(region, wanted, "cannot open the region again");
        return 0;
    }
    struct stat st;
    void *p = MAP_FAILED;
    if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == region->size)
        p = mmap((void *)(uintptr_t)wanted, region->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE,
                 fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        say_once(region, wanted, "the range is taken in this process");
        return 0;
    }
    if ((uint64_t)(uintptr_t)p != wanted) {
        munmap(p, region->size);
        say_once(region, wanted, "the kernel does not know MAP_FIXED_NOREPLACE");
        return 0;
    }
    /* the path names the same region only while its server is the one whose header we checked */
    char message[512];
    if (!ivc_region_check(p, region->size, message, sizeof message)
        || ivc_read32((uint8_t *)p + IVC_HDR_EPOCH) != region->epoch) {
        munmap(p, region->size);
        say_once(region, wanted, "the region changed while it was mapped again");
        return 0;
    }
    munmap(region->base, region->size);
    region->base = p;
    ivc_trace("region %s: mapped at the server's device address 0x%" PRIx64 ": pinned pointers are device pointers",
              region->path, wanted);
    return 1;
}
