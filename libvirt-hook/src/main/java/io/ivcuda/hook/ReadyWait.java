package io.ivcuda.hook;

import io.ivcuda.common.RegionHeader;
import io.ivcuda.common.ServerProcesses;
import java.nio.file.Path;
import java.util.function.Predicate;

/**
 * Waiting, bounded, for a server the hook started to be ready (docs/protocol.md §2): its region's
 * header read every 20 ms until the caller's test of "ready" holds, the server ends, or the time is
 * up. The hook waits at a VM's start and when it restarts a plain-mode server at libvirt's reconnect;
 * what "ready" means differs (at start also the doorbell socket, at a restart READY of a new epoch,
 * since the dead server's header still says READY), the loop and its order do not, so it is written
 * once here.
 */
final class ReadyWait {
    static final long POLL_MS = 20;

    /** How a wait ended, with the header as last read (its server message goes into the user's error). */
    enum Ending { READY, SERVER_ENDED, TIMED_OUT }

    /** {@code exit} is the launcher's description of how the server ended, only with {@link Ending#SERVER_ENDED}. */
    record Outcome(Ending ending, RegionHeader header, String exit) { }

    private ReadyWait() {
    }

    /**
     * Reads the header, then: ready if {@code ready} holds for it; else ended if the server exited; else
     * timed out once {@code timeoutMs} passed since the call. The header is asked first, so a last look
     * is taken after the server ended or the time ran out.
     */
    static Outcome await(Path regionFile, ServerLauncher.Started started, long timeoutMs, Predicate<RegionHeader> ready) {
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (true) {
            RegionHeader header = RegionHeader.read(regionFile);
            if (ready.test(header)) {
                return new Outcome(Ending.READY, header, null);
            }
            String ended = started.exitDescription();
            if (ended != null) {
                return new Outcome(Ending.SERVER_ENDED, header, ended);
            }
            if (System.nanoTime() > deadline) {
                return new Outcome(Ending.TIMED_OUT, header, null);
            }
            ServerProcesses.sleep(POLL_MS);
        }
    }
}
