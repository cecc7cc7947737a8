/* Reading memory the shim does not own without faulting, and naming code addresses.
 * An argument may be a host pointer, a device address in the unified address space (not
 * readable from the CPU), a handle or a number: the shim cannot tell, so it asks the
 * kernel to copy the bytes (process_vm_readv on itself fails cleanly on an unmapped or
 * unreadable page); where that system call is refused it writes the bytes into a pipe,
 * which fails the same way. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "trace.h"

static _Atomic int vm_readv_refused;
static pthread_mutex_t pipe_lock = PTHREAD_MUTEX_INITIALIZER;
static int probe_pipe[2] = { -1, -1 };

static size_t read_through_pipe(void *dst, uint64_t src, size_t n)
{
    size_t done = 0;
    pthread_mutex_lock(&pipe_lock);
    if (probe_pipe[0] < 0 && pipe2(probe_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
        pthread_mutex_unlock(&pipe_lock);
        return 0;
    }
    while (done < n) {
        ssize_t w = write(probe_pipe[1], (const void *)(uintptr_t)(src + done), n - done);
        if (w <= 0) break;
        ssize_t r = read(probe_pipe[0], (char *)dst + done, (size_t)w);
        if (r != w) break;
        done += (size_t)w;
    }
    pthread_mutex_unlock(&pipe_lock);
    return done;
}

/* Copies up to n bytes from src; returns how many were readable from the start. */
size_t trace_safe_read(void *dst, uint64_t src, size_t n)
{
    if (src < 4096 || n == 0) return 0;
    if (!atomic_load_explicit(&vm_readv_refused, memory_order_relaxed)) {
        size_t done = 0;
        while (done < n) {
            struct iovec local = { (char *)dst + done, n - done };
            struct iovec remote = { (void *)(uintptr_t)(src + done), n - done };
            ssize_t r = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
            if (r > 0) {
                done += (size_t)r;
                continue;
            }
            if (r < 0 && (errno == ENOSYS || errno == EPERM)) {
                atomic_store(&vm_readv_refused, 1);
                return done + read_through_pipe((char *)dst + done, src + done, n - done);
            }
            break;
        }
        return done;
    }
    return read_through_pipe(dst, src, n);
}

struct code_probe {
    uint64_t addr;
    int found;
};

static int find_exec_segment(struct dl_phdr_info *info, size_t size, void *data)
{
    struct code_probe *p = data;
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
        uint64_t start = info->dlpi_addr + ph->p_vaddr;
        if (p->addr >= start && p->addr < start + ph->p_memsz) {
            p->found = 1;
            return 1;
        }
    }
    return 0;
}

/* Whether addr lies in an executable segment of a loaded ELF object. */
int trace_is_code(uint64_t addr)
{
    if (addr < 4096) return 0;
    struct code_probe p = { addr, 0 };
    dl_iterate_phdr(find_exec_segment, &p);
    return p.found;
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static uintptr_t shim_base(void)
{
    static uintptr_t base;
    Dl_info self;
    if (!base && dladdr((void *)shim_base, &self)) base = (uintptr_t)self.dli_fbase;
    return base;
}

/* Whether addr lies in this shim (which has the driver's file name too). */
int trace_is_shim(uint64_t addr)
{
    Dl_info info;
    return addr >= 4096 && dladdr((void *)(uintptr_t)addr, &info) && (uintptr_t)info.dli_fbase == shim_base();
}

/* "libname+0xoffset" of the object holding addr ("shim" for this library), or "?" */
const char *trace_object_of(uint64_t addr, char *buf, size_t len)
{
    Dl_info info;
    if (addr >= 4096 && dladdr((void *)(uintptr_t)addr, &info) && info.dli_fbase) {
        const char *name = (uintptr_t)info.dli_fbase == shim_base()              ? "shim"
                           : info.dli_fname && info.dli_fname[0] ? base_name(info.dli_fname)
                                                                 : "exe";
        snprintf(buf, len, "%s+0x%lx", name, (unsigned long)(addr - (uint64_t)(uintptr_t)info.dli_fbase));
    } else {
        snprintf(buf, len, "?");
    }
    return buf;
}

/* "libname+0xoffset(symbol+0xdelta)"; the symbol is the nearest dynamic symbol below. */
const char *trace_describe_code(uint64_t addr, char *buf, size_t len)
{
    Dl_info info;
    char obj[256];
    trace_object_of(addr, obj, sizeof obj);
    if (addr >= 4096 && dladdr((void *)(uintptr_t)addr, &info) && info.dli_sname) {
        uint64_t delta = addr - (uint64_t)(uintptr_t)info.dli_saddr;
        if (delta)
            snprintf(buf, len, "%s(%s+0x%lx)", obj, info.dli_sname, (unsigned long)delta);
        else
            snprintf(buf, len, "%s(%s)", obj, info.dli_sname);
    } else {
        snprintf(buf, len, "%s", obj);
    }
    return buf;
}
