/* A server that starts or replaces its CUDA process (docs/protocol.md §7, "A server that
 * restarts"): a process attaching while the header says INIT waits for READY, bounded by
 * IVCUDA_SERVER_WAIT_S; a process whose first hello is refused with CUDA_ERROR_SYSTEM_NOT_READY
 * (the server poisoned by a fatal GPU fault) follows the server to its next epoch once, and
 * then works. Each guest is a child process (the library attaches once per process); the fake
 * server is a thread of the parent. */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "ivc_api.h"
#include "ivc_internal.h"

static uint8_t *header;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* A guest process: cuInit and a device query; its exit status says what happened. */
static pid_t guest(double min_wait_s, CUresult expected)
{
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    double start = now_s();
    CUresult r = cuInit(0);
    double waited = now_s() - start;
    int count = 0;
    if (r == CUDA_SUCCESS && cuDeviceGetCount(&count) != CUDA_SUCCESS)
        _exit(3);
    if (r != expected) {
        fprintf(stderr, "  cuInit -> %d, expected %d\n", r, expected);
        _exit(1);
    }
    if (waited < min_wait_s) {
        fprintf(stderr, "  cuInit returned after %.2f s, expected a wait of %.2f s\n", waited, min_wait_s);
        _exit(2);
    }
    _exit(0);
}

static int status_of(pid_t pid)
{
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_attach_waits_while_the_server_initialises(void)
{
    ivc_store32(header + IVC_HDR_SERVER_STATE, IVC_STATE_INIT);
    pid_t pid = guest(0.25, CUDA_SUCCESS);
    usleep(400000);
    ivc_store32(header + IVC_HDR_SERVER_STATE, IVC_STATE_READY);
    CHECK(status_of(pid) == 0);
}

static void test_the_wait_is_bounded(void)
{
    setenv("IVCUDA_SERVER_WAIT_S", "1", 1);
    ivc_store32(header + IVC_HDR_SERVER_STATE, IVC_STATE_INIT);
    double start = now_s();
    pid_t pid = guest(0.9, CUDA_ERROR_NOT_INITIALIZED);
    CHECK(status_of(pid) == 0);
    CHECK(now_s() - start < 10);
    ivc_store32(header + IVC_HDR_SERVER_STATE, IVC_STATE_READY);
    unsetenv("IVCUDA_SERVER_WAIT_S");
}

static void test_a_refused_hello_follows_the_restarted_server(void)
{
    atomic_store(&fake.refuse_hello, 2); /* CUDA_ERROR_SYSTEM_NOT_READY: poisoned, restarting */
    int hellos = atomic_load(&fake.calls[IVC_OP_ivc_hello]);
    uint32_t epoch = ivc_load32(header + IVC_HDR_EPOCH);
    pid_t pid = guest(0.2, CUDA_SUCCESS);
    for (int i = 0; i < 500 && atomic_load(&fake.calls[IVC_OP_ivc_hello]) == hellos; i++)
        usleep(10000);
    CHECK(atomic_load(&fake.calls[IVC_OP_ivc_hello]) == hellos + 1); /* refused */
    usleep(300000);
    fake_server_restart(); /* INIT, the channel table wiped, epoch + 1, READY */
    CHECK(status_of(pid) == 0);
    CHECK(ivc_load32(header + IVC_HDR_EPOCH) == epoch + 1);
    CHECK(atomic_load(&fake.calls[IVC_OP_ivc_hello]) == hellos + 2); /* once more, accepted */
}

int main(void)
{
    const char *path = fake_region_start();
    header = fake_channel(0) - IVC_HEADER_SIZE;
    test_attach_waits_while_the_server_initialises();
    test_the_wait_is_bounded();
    test_a_refused_hello_follows_the_restarted_server();
    fake_server_stop();
    unlink(path);
    return check_summary("test_restart");
}
