/*
 * ivcuda-region-wait: waits until a cuda-server has published a READY header in a region file
 * (docs/protocol.md §2). The one "wait for READY" of every script and test: none of them reads
 * the header itself.
 *
 * usage: ivcuda-region-wait [--pid PID] REGION [TIMEOUT_SECONDS]     (default 60 s)
 *        ivcuda-region-wait --show REGION
 *   --pid PID   give up as soon as process PID (the server) is gone
 *   --show      no wait: print what the header says now, one line
 *               "state=READY epoch=N heartbeat=N" (state INIT, READY, STOPPING, STOPPED or its
 *               number), for scripts that watch a server (its heartbeat, its STOPPED) without
 *               reading the header themselves
 * Exit status: 0 READY (--show: a header with the magic); 1 not READY in time (the last state
 * seen and the server's message are printed; --show: no header with the magic); 2 usage; 3 the
 * process PID ended first.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ivc_region.h"

#define POLL_NS 2000000L

struct seen {
    const char *what;
    uint64_t magic;
    uint32_t state;
    char message[IVC_HDR_SERVER_MESSAGE_LENGTH + 1];
};

static double seconds_since(const struct timespec *start)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (double)(now.tv_nsec - start->tv_nsec) * 1e-9;
}

/* 1 when the header says READY. The server stores server_state last (release): reading it
 * first keeps a half-written header from passing for a ready one. */
static int ready(const char *path, struct seen *seen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        seen->what = "file absent";
        return 0;
    }
    unsigned char header[IVC_HDR_SERVER_MESSAGE + IVC_HDR_SERVER_MESSAGE_LENGTH];
    int whole = pread(fd, &seen->state, sizeof seen->state, IVC_HDR_SERVER_STATE) == (ssize_t)sizeof seen->state &&
                pread(fd, header, sizeof header, 0) == (ssize_t)sizeof header;
    close(fd);
    if (!whole) {
        seen->what = "header too short";
        return 0;
    }
    memcpy(&seen->magic, header + IVC_HDR_MAGIC, sizeof seen->magic);
    memcpy(seen->message, header + IVC_HDR_SERVER_MESSAGE, IVC_HDR_SERVER_MESSAGE_LENGTH);
    seen->message[IVC_HDR_SERVER_MESSAGE_LENGTH] = '\0';
    seen->what = seen->magic == IVC_MAGIC ? "magic ok" : "no magic yet";
    return seen->magic == IVC_MAGIC && seen->state == IVC_STATE_READY;
}

/* Whether process pid is gone: no such process, or a zombie nobody reaped yet. */
static int ended(long pid)
{
    if (kill((pid_t)pid, 0) != 0 && errno == ESRCH)
        return 1;
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *file = fopen(path, "r");
    if (file == NULL)
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, file);
    fclose(file);
    stat[n] = '\0';
    const char *name_end = strrchr(stat, ')');
    return name_end != NULL && name_end[1] == ' ' && (name_end[2] == 'Z' || name_end[2] == 'X');
}

static int usage(void)
{
    fprintf(stderr, "usage: ivcuda-region-wait [--pid PID] REGION [TIMEOUT_SECONDS]\n"
                    "       ivcuda-region-wait --show REGION\n");
    return 2;
}

/* --show: the header's state, epoch and heartbeat as they are now. */
static int show(const char *path)
{
    static const char *const states[] = {[IVC_STATE_INIT] = "INIT", [IVC_STATE_READY] = "READY",
                                         [IVC_STATE_STOPPING] = "STOPPING", [IVC_STATE_STOPPED] = "STOPPED"};
    uint64_t magic = 0, heartbeat = 0;
    uint32_t state = 0, epoch = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    int whole = fd >= 0 && pread(fd, &magic, sizeof magic, IVC_HDR_MAGIC) == (ssize_t)sizeof magic &&
                pread(fd, &state, sizeof state, IVC_HDR_SERVER_STATE) == (ssize_t)sizeof state &&
                pread(fd, &epoch, sizeof epoch, IVC_HDR_EPOCH) == (ssize_t)sizeof epoch &&
                pread(fd, &heartbeat, sizeof heartbeat, IVC_HDR_SERVER_HEARTBEAT) == (ssize_t)sizeof heartbeat;
    if (fd >= 0)
        close(fd);
    if (!whole || magic != IVC_MAGIC) {
        printf("region %s: %s\n", path, fd < 0 ? "file absent" : !whole ? "header too short" : "no magic");
        return 1;
    }
    if (state < sizeof states / sizeof states[0] && states[state] != NULL)
        printf("state=%s epoch=%u heartbeat=%llu\n", states[state], epoch, (unsigned long long)heartbeat);
    else
        printf("state=%u epoch=%u heartbeat=%llu\n", state, epoch, (unsigned long long)heartbeat);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "--show") == 0)
        return argc == 3 ? show(argv[2]) : usage();
    long pid = 0;
    int arg = 1;
    if (arg + 1 < argc && strcmp(argv[arg], "--pid") == 0) {
        char *end;
        pid = strtol(argv[arg + 1], &end, 10);
        if (*end != '\0' || pid <= 0)
            return usage();
        arg += 2;
    }
    if (argc - arg < 1 || argc - arg > 2)
        return usage();
    const char *path = argv[arg];
    double timeout = 60;
    if (argc - arg == 2) {
        char *end;
        timeout = strtod(argv[arg + 1], &end);
        if (*end != '\0' || timeout < 0)
            return usage();
    }
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    struct seen seen = {.what = "file absent"};
    for (;;) {
        if (ready(path, &seen)) {
            printf("region %s READY\n", path);
            return 0;
        }
        if (pid > 0 && ended(pid)) {
            printf("region %s: process %ld ended before READY (%s, state %u, message \"%s\")\n", path, pid, seen.what,
                   seen.state, seen.message);
            return 3;
        }
        if (seconds_since(&start) >= timeout)
            break;
        nanosleep(&(struct timespec){.tv_nsec = POLL_NS}, NULL);
    }
    printf("region %s not ready after %.1f s: %s, magic=0x%016llx state=%u message=\"%s\"\n", path, timeout, seen.what,
           (unsigned long long)seen.magic, seen.state, seen.message);
    return 1;
}
