/* The wait loop (wait.c) against a server that answers and then lets the channel go, the race
 * 077e444 fixed: the answer and the release both land after the waiter asked whether the answer
 * arrived and before it checks that the server is still there, so its check sees the release.
 * The answer stands (the server wrote it first): the call returns it.
 *
 * The interleaving is made, not waited for: the fake server holds its answers
 * (fake_server_hold) and IVCUDA_SPIN_US=0 makes every step of the wait a sleep followed by the
 * server check. This program's own nanosleep and poll (the library's objects are linked into
 * it), which that sleep calls, write the answer and the release at that moment, on the test's
 * thread: nanosleep where the waiter polls (wait.c's waiter_pause), poll where it sleeps on its
 * channel's vector (waiter_block; a child process with IVCUDA_IRQ_EVENTFDS). Every test also
 * checks that the moment came, in the sleep expected. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "fake_server.h"
#include "interrupts.h"
#include "ivc_api.h"
#include "ivc_internal.h"

enum step {
    NOTHING,
    ANSWER_THEN_RELEASE, /* answer, then owner 0: a refused hello while the server replaces its CUDA process */
    ANSWER_THEN_RECLAIM, /* answer, then another process's token in owner */
    RESTART,             /* the server replaces its CUDA process (INIT, table wiped, epoch + 1, READY) */
    STEPS
};

enum sleep { IN_NANOSLEEP = 1, IN_POLL };

/* What the library said on stderr between said_begin() and said_end(). */
static int saved_stderr = -1;
static FILE *said_file;
static char said[4096];

static void said_begin(void)
{
    fflush(stderr);
    said_file = tmpfile();
    saved_stderr = dup(2);
    dup2(fileno(said_file), 2);
}

static const char *said_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(said_file);
    size_t n = fread(said, 1, sizeof said - 1, said_file);
    said[n] = '\0';
    fclose(said_file);
    return said;
}

static pid_t test_thread;
static atomic_int next_step;
static atomic_int taken[STEPS];     /* how often each step was taken */
static atomic_uint answered_opcode; /* the request the last answer step answered */
static atomic_int answered_in;      /* and the sleep it was taken in */

/* The channel with a request still unanswered (the server holds answers), or -1. */
static int pending_channel(void)
{
    for (int i = 0; i < FAKE_CHANNELS; i++) {
        uint8_t *ch = fake_channel(i);
        if (ivc_load64(ch + IVC_CH_OWNER) != 0 && ivc_load64(ch + IVC_CH_REQ_SEQ) != ivc_load64(ch + IVC_CH_RESP_SEQ))
            return i;
    }
    return -1;
}

/* Takes the planned step where its condition holds: on the test's thread only (the library's
 * heartbeat thread sleeps too). */
static void take_step(enum sleep sleep)
{
    if (gettid() != test_thread)
        return;
    int step = atomic_load(&next_step), i = pending_channel();
    if ((step == ANSWER_THEN_RELEASE || step == ANSWER_THEN_RECLAIM) && i >= 0) {
        uint8_t *ch = fake_channel(i);
        atomic_store(&answered_opcode, ivc_read32(ch + IVC_CH_AREAS));
        atomic_store(&answered_in, sleep);
        atomic_store(&next_step, step == ANSWER_THEN_RELEASE ? RESTART : NOTHING);
        fake_server_answer(i); /* the response, then resp_seq (and the vector raised) */
        uint64_t owner = ivc_load64(ch + IVC_CH_OWNER);
        ivc_store64(ch + IVC_CH_OWNER, step == ANSWER_THEN_RELEASE ? 0 : owner ^ 0x0000000100000000ULL);
        atomic_fetch_add(&taken[step], 1);
    } else if (step == RESTART && i < 0) {
        atomic_store(&next_step, NOTHING);
        fake_server_restart();
        fake_server_hold(0);
        atomic_fetch_add(&taken[step], 1);
    }
}

int nanosleep(const struct timespec *duration, struct timespec *left)
{
    take_step(IN_NANOSLEEP);
    int error = clock_nanosleep(CLOCK_REALTIME, 0, duration, left);
    if (error != 0) {
        errno = error;
        return -1;
    }
    return 0;
}

int poll(struct pollfd *fds, nfds_t count, int timeout_ms)
{
    take_step(IN_POLL);
    struct timespec timeout = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
    return ppoll(fds, count, timeout_ms < 0 ? NULL : &timeout, NULL);
}

static enum sleep expected_sleep;

/* A process's first hello, refused with CUDA_ERROR_SYSTEM_NOT_READY (the server poisoned,
 * replacing its CUDA process) and its channel released at once: the wait keeps the refusal, so
 * the process follows the server to its next epoch (tests/xlang's fault-recovery check failed
 * with "the server reclaimed the channel" instead). */
static void test_a_refused_hello_then_released_is_answered(uint8_t *header)
{
    int hellos = atomic_load(&fake.calls[IVC_OP_ivc_hello]);
    uint32_t epoch = ivc_load32(header + IVC_HDR_EPOCH);
    atomic_store(&fake.refuse_hello, 2);
    fake_server_hold(1);
    atomic_store(&next_step, ANSWER_THEN_RELEASE);
    said_begin();
    CUresult initialised = cuInit(0);
    /* the refusal is followed, not reported as a lost channel */
    CHECK(strstr(said_end(), "server unavailable") == NULL);
    CHECK(initialised == CUDA_SUCCESS);
    CHECK(atomic_load(&taken[ANSWER_THEN_RELEASE]) == 1); /* inside the hello's wait */
    CHECK(atomic_load(&answered_opcode) == IVC_OP_ivc_hello);
    CHECK(atomic_load(&answered_in) == (int)expected_sleep);
    CHECK(atomic_load(&taken[RESTART]) == 1); /* followed: it waited for the new epoch */
    CHECK(ivc_load32(header + IVC_HDR_EPOCH) == epoch + 1);
    CHECK(atomic_load(&fake.calls[IVC_OP_ivc_hello]) == hellos + 2); /* refused, then accepted */
    int count = 0;
    CHECK(cuDeviceGetCount(&count) == CUDA_SUCCESS && count == 1);
    /* whatever happened, the next test starts with a server that answers */
    atomic_store(&next_step, NOTHING);
    atomic_store(&fake.refuse_hello, 0);
    fake_server_hold(0);
}

/* A call answered, then its channel reclaimed and claimed by another process: the call returns
 * the server's answer; the loss shows on the next call. */
static void test_an_answer_then_reclaimed_is_returned(void)
{
    CHECK(cuInit(0) == CUDA_SUCCESS);
    int asked = atomic_load(&fake.calls[IVC_OP_cuDeviceGetAttribute]), value = 0;
    fake_server_hold(1);
    atomic_store(&next_step, ANSWER_THEN_RECLAIM);
    said_begin();
    CUresult answered = cuDeviceGetAttribute(&value, 9, 0);
    /* the call has its answer: nothing said yet */
    CHECK(strstr(said_end(), "server unavailable") == NULL);
    CHECK(answered == CUDA_SUCCESS && value == 90); /* the fake: attribute * 10 */
    CHECK(atomic_load(&taken[ANSWER_THEN_RECLAIM]) == 1);
    CHECK(atomic_load(&answered_opcode) == IVC_OP_cuDeviceGetAttribute);
    CHECK(atomic_load(&answered_in) == (int)expected_sleep);
    CHECK(atomic_load(&fake.calls[IVC_OP_cuDeviceGetAttribute]) == asked + 1);
    atomic_store(&next_step, NOTHING);
    fake_server_hold(0);
    said_begin();
    CUresult lost = cuDeviceGetAttribute(&value, 8, 0);
    const char *why = said_end();
    CHECK(lost == CUDA_ERROR_DEVICE_UNAVAILABLE);
    /* the next call says why, once */
    CHECK(strstr(why, "server unavailable after the previous call: the server reclaimed the channel") != NULL);
    said_begin();
    lost = cuDeviceGetAttribute(&value, 8, 0);
    CHECK(strstr(said_end(), "server unavailable") == NULL);
    CHECK(lost == CUDA_ERROR_DEVICE_UNAVAILABLE);
    CHECK(atomic_load(&fake.calls[IVC_OP_cuDeviceGetAttribute]) == asked + 1);
}

/* Both tests, on the library's first attach in this process: polling, or sleeping on the
 * channel's vector (eventfds standing in for MSI-X, raised by the fake server, §8). */
static int run(enum sleep sleep)
{
    expected_sleep = sleep;
    setenv("IVCUDA_SPIN_US", "0", 1); /* read once, at the first wait */
    if (sleep == IN_POLL) {
        char list[128] = "";
        for (int i = 0; i < FAKE_CHANNELS; i++) {
            fake.interrupt_fds[i] = eventfd(0, EFD_CLOEXEC);
            CHECK(fake.interrupt_fds[i] >= 0);
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", fake.interrupt_fds[i]);
        }
        setenv("IVCUDA_IRQ_EVENTFDS", list, 1);
        fake.extra_features = IVC_FEATURE_DOORBELL;
        fake.doorbell_vectors = FAKE_CHANNELS;
        atomic_store(&fake.interrupt_count, FAKE_CHANNELS);
    }
    test_thread = gettid();
    const char *path = fake_region_start();
    test_a_refused_hello_then_released_is_answered(fake_channel(0) - IVC_HEADER_SIZE);
    test_an_answer_then_reclaimed_is_returned();
    if (sleep == IN_POLL) {
        uint64_t waits = 0, woken = 0;
        ivc_interrupts_stats(&waits, &woken);
        CHECK(woken >= 2); /* both answers woke the waiter from its vector */
    }
    /* the server keeps running: the library's exit handler says process_exit to it */
    unlink(path);
    return check_summary(sleep == IN_POLL ? "test_wait (sleeping on the vector)" : "test_wait (polling)");
}

int main(void)
{
    pid_t child = fork(); /* the library attaches once per process: one process per mode */
    if (child == 0)
        exit(run(IN_POLL));
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return run(IN_NANOSLEEP);
}
