/* The trace file: CUDA_TRACE_OUT with every "%p" replaced by the process id (default
 * /tmp/cuda-trace.%p.log). One record a line, each written with a single write(2) on an
 * O_APPEND descriptor, so lines of different threads never interleave and a record is on
 * disk as soon as it is made: a program that crashes or is killed keeps its trace. A child
 * made by fork() gets its own file at its first record. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "trace.h"

static int log_fd = -1;
static pid_t log_pid;
static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static __thread uint32_t cached_tid;
static __thread pid_t cached_tid_pid;

uint32_t trace_tid(void)
{
    pid_t pid = getpid();
    if (cached_tid == 0 || cached_tid_pid != pid) {
        cached_tid = (uint32_t)syscall(SYS_gettid);
        cached_tid_pid = pid;
    }
    return cached_tid;
}

static void expand_path(char *dst, size_t len, const char *pattern, pid_t pid)
{
    size_t o = 0;
    for (const char *s = pattern; *s && o + 1 < len; s++) {
        if (s[0] == '%' && s[1] == 'p') {
            int n = snprintf(dst + o, len - o, "%d", (int)pid);
            if (n < 0 || (size_t)n >= len - o) break;
            o += (size_t)n;
            s++;
        } else {
            dst[o++] = *s;
        }
    }
    dst[o] = '\0';
}

static void write_header(pid_t parent)
{
    char exe[512] = "?", cmd[1024] = "";
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) exe[n] = '\0';
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, cmd, sizeof cmd - 1);
        close(fd);
        if (r > 0) {
            for (ssize_t i = 0; i < r; i++)
                if (cmd[i] == '\0' || cmd[i] == '\n') cmd[i] = ' ';
            cmd[r] = '\0';
        }
    }
    trace_logf("H", "format=cuda-trace-1 pid=%d parent=%d exe=%s", (int)getpid(), (int)parent, exe);
    trace_logf("H", "cmdline=%s", cmd);
}

/* Opens (or, in a forked child, reopens) the file for this process. */
void trace_log_open(void)
{
    pid_t pid = getpid();
    if (log_fd >= 0 && log_pid == pid) return;
    pthread_mutex_lock(&open_lock);
    if (log_fd < 0 || log_pid != pid) {
        pid_t parent = log_fd >= 0 ? log_pid : 0;
        if (log_fd >= 0) close(log_fd);
        const char *pattern = getenv("CUDA_TRACE_OUT");
        char path[1024];
        expand_path(path, sizeof path, pattern && *pattern ? pattern : "/tmp/cuda-trace.%p.log", pid);
        log_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (log_fd < 0) {
            char msg[1200];
            int m = snprintf(msg, sizeof msg, "cuda-trace: cannot open %s; tracing to stderr\n", path);
            if (m > 0) (void)!write(2, msg, (size_t)m);
            log_fd = dup(2);
        }
        log_pid = pid;
        pthread_mutex_unlock(&open_lock);
        write_header(parent);
        return;
    }
    pthread_mutex_unlock(&open_lock);
}

/* In a forked child: its own file at once, so even a child that makes no logged call
 * leaves its header. The lock may have been held by a thread that does not exist here. */
void trace_log_after_fork(void)
{
    pthread_mutex_init(&open_lock, NULL);
    trace_log_open();
}

void trace_line_start(struct trace_line *l, const char *tag)
{
    l->len = 0;
    trace_line_add(l, "%s", tag);
}

void trace_line_add(struct trace_line *l, const char *fmt, ...)
{
    if (l->len >= sizeof l->buf - 2) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(l->buf + l->len, sizeof l->buf - 1 - l->len, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    l->len += (size_t)n;
    if (l->len > sizeof l->buf - 2) l->len = sizeof l->buf - 2;
}

void trace_line_hex(struct trace_line *l, const uint8_t *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n && l->len + 3 < sizeof l->buf - 2; i++) {
        l->buf[l->len++] = digits[p[i] >> 4];
        l->buf[l->len++] = digits[p[i] & 15];
    }
}

void trace_line_end(struct trace_line *l)
{
    trace_log_open();
    l->buf[l->len++] = '\n';
    const char *p = l->buf;
    size_t left = l->len;
    while (left > 0) {
        ssize_t w = write(log_fd, p, left);
        if (w <= 0) break;
        p += w;
        left -= (size_t)w;
    }
}

void trace_logf(const char *tag, const char *fmt, ...)
{
    struct trace_line l;
    trace_line_start(&l, tag);
    trace_line_add(&l, " ");
    if (l.len < sizeof l.buf - 2) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(l.buf + l.len, sizeof l.buf - 1 - l.len, fmt, ap);
        va_end(ap);
        if (n > 0) l.len += (size_t)n;
        if (l.len > sizeof l.buf - 2) l.len = sizeof l.buf - 2;
    }
    trace_line_end(&l);
}
