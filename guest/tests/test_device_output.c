/* Device printf on the guest side, against the in-process fake server: output the server says is
 * pending (the channel's output_pending) is read and written to this process's stdout before the
 * call returns, in order with what the program printed itself, in as many reads as it takes; the
 * interrupted call's own response still decodes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"

CUresult cuInit(unsigned);
CUresult cuCtxSynchronize(void);
CUresult cuMemAlloc_v2(CUdeviceptr *, size_t);

static void device_prints(const char *text)
{
    size_t n = strlen(text);
    memcpy(fake.device_output, text, n);
    atomic_store(&fake.output_read_pos, 0);
    atomic_store(&fake.device_output_length, (unsigned)n);
}

/* Runs body with stdout going to a file; answers what reached it. */
static char *captured(void (*body)(void))
{
    static char text[16384];
    char path[] = "/tmp/ivcuda-stdout-XXXXXX";
    int fd = mkstemp(path);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    body();
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return text;
}

static void sync_between_prints(void)
{
    printf("before\n"); /* buffered: stdout is a file */
    device_prints("[0] hello from the device\n[1] hello from the device\n");
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
    printf("after\n");
}

static void test_output_in_order_with_the_programs(void)
{
    int reads = fake.output_reads;
    const char *out = captured(sync_between_prints);
    CHECK(strcmp(out, "before\n[0] hello from the device\n[1] hello from the device\nafter\n") == 0);
    CHECK(fake.output_reads == reads + 1);
}

static CUdeviceptr allocated;
static CUresult alloc_result;

static void alloc_while_output_waits(void)
{
    atomic_store(&fake.output_piece, 5);
    device_prints("0123456789abcdefghij\n");
    alloc_result = cuMemAlloc_v2(&allocated, 4096);
    atomic_store(&fake.output_piece, 0);
}

static void test_the_interrupted_calls_response_survives(void)
{
    int reads = fake.output_reads;
    const char *out = captured(alloc_while_output_waits);
    CHECK(strcmp(out, "0123456789abcdefghij\n") == 0);
    CHECK(fake.output_reads == reads + 5); /* 21 bytes in 5-byte pieces */
    CHECK(alloc_result == CUDA_SUCCESS);
    CHECK(allocated >= FAKE_DEVICE_BASE && allocated < FAKE_DEVICE_BASE + FAKE_DEVICE_SIZE);
}

static void sync_with_a_loss(void)
{
    atomic_store(&fake.output_dropped, 100);
    device_prints("kept\n");
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
}

static void test_lost_output_is_said_and_the_rest_delivered(void)
{
    const char *out = captured(sync_with_a_loss);
    CHECK(strcmp(out, "kept\n") == 0); /* the note goes to stderr, not into the program's output */
    CHECK(atomic_load(&fake.output_dropped) == 0);
}

static void nothing_pending(void)
{
    device_prints("");
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
}

static void test_no_read_without_output(void)
{
    int reads = fake.output_reads;
    const char *out = captured(nothing_pending);
    CHECK(out[0] == '\0');
    CHECK(fake.output_reads == reads);
}

int main(void)
{
    const char *path = fake_region_start();
    CHECK(cuInit(0) == CUDA_SUCCESS);
    test_output_in_order_with_the_programs();
    test_the_interrupted_calls_response_survives();
    test_lost_output_is_said_and_the_rest_delivered();
    test_no_read_without_output();
    unlink(path);
    return check_summary("test_device_output");
}
