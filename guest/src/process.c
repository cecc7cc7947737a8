/* This process's life beyond one call: what a forked child must forget. It stands above
 * every other unit and calls down into each one's reset, so that no lower unit needs to
 * know who else keeps per-process state.
 *
 * A child inherits the parent's memory but not its channels (their owner is the parent's
 * token), its server-side objects, its heartbeat thread nor its interrupt counters: it
 * starts as a process that has called nothing yet, and its first call claims a channel
 * with a token of its own (docs/protocol.md §3). Whether cuInit succeeded is not
 * forgotten: a child's calls go to the server on its fresh channel.
 *
 * The handler is registered when the library is loaded, so that every unit's state is
 * dropped in every child; in a process that never attached there is nothing to drop, and
 * each reset is a few stores. The thread-exit and process-exit notices belong to the
 * calls' session (they send calls); only fork is handled here. */
#include <pthread.h>

#include "staged_copy.h"
#include "cache.h"
#include "call_profile.h"
#include "channel.h"
#include "interrupts.h"
#include "current_context.h"
#include "launch.h"
#include "memory.h"
#include "module.h"
#include "pinned.h"
#include "primary_state.h"
#include "session.h"
#include "vmm.h"

/* Runs in the child, which has one thread: no lock can be held by anyone else, and each
 * reset replaces its locks with fresh ones. The order does not matter: the units share
 * nothing. */
static void forget_process(void)
{
    ivc_channel_forget_process();
    ivc_session_forget_process();
    ivc_cache_clear();
    ivc_interrupts_forget_process();
    ivc_profile_forget_process();
    ivc_memory_forget_process();
    ivc_pinned_forget_process();
    ivc_module_forget_process();
    ivc_launch_forget_process();
    ivc_vmm_forget_process();
    ivc_staged_forget_process();
    ivc_current_context_changed_anywhere();
    ivc_primary_state_changed();
}

__attribute__((constructor)) static void register_fork_handler(void)
{
    pthread_atfork(NULL, NULL, forget_process);
}
