/* region_wait <region-file> <timeout-seconds>: waits until the cuda-server has
 * published a READY header (docs/protocol.md §2: magic at 0x000, server_state at
 * 0x018, server_message at 0x100). Exit 0 ready, 1 timeout, 2 usage. Prints the
 * last state seen and the server's message when it gives up. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REGION_MAGIC 0x3130414455435649ULL
#define STATE_READY 1u

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: region_wait <region-file> <timeout-seconds>\n");
        return 2;
    }
    double timeout = atof(argv[2]);
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    uint64_t magic = 0;
    uint32_t state = 0;
    char message[257] = "";
    const char *seen = "file absent";
    for (;;) {
        int fd = open(argv[1], O_RDONLY);
        if (fd >= 0) {
            seen = "header too short";
            unsigned char header[0x200];
            /* State is stored last by the server; reading it first keeps us from
             * taking a half-written header for a ready one. */
            if (pread(fd, &state, sizeof state, 0x18) == (ssize_t)sizeof state &&
                pread(fd, header, sizeof header, 0) == (ssize_t)sizeof header) {
                memcpy(&magic, header, sizeof magic);
                memcpy(message, header + 0x100, 256);
                message[256] = '\0';
                seen = magic == REGION_MAGIC ? "magic ok" : "no magic yet";
                if (magic == REGION_MAGIC && state == STATE_READY) {
                    close(fd);
                    printf("region %s READY\n", argv[1]);
                    return 0;
                }
            }
            close(fd);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - start.tv_sec) + (double)(now.tv_nsec - start.tv_nsec) * 1e-9;
        if (waited >= timeout) break;
        usleep(20000);
    }
    printf("region %s not ready after %.1f s: %s, magic=0x%016llx state=%u message=\"%s\"\n", argv[1], timeout, seen,
           (unsigned long long)magic, state, message);
    return 1;
}
