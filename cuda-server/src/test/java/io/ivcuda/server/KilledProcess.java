package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.core.Vm;
import io.ivcuda.wire.ChannelFlyweight;
import io.ivcuda.wire.HeaderFlyweight;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A guest process that lives as the library makes it live (its channels' owner heartbeats and the VM's
 * heartbeat every 250 ms, protocol §7) and is killed at the worst moment for the server: right after one
 * of the server's liveness checks, with a last beat the server sees only a whole check period later.
 * Meanwhile another process of the VM goes on beating (the VM runs), as a newcomer's library does.
 */
final class KilledProcess {
    static final long BEAT_MS = 250;

    private KilledProcess() {
    }

    /**
     * Lives 2 s, dies at the worst moment, and returns the seconds from its death until each of its
     * {@code held} channels is free (owner 0) and the VM holds no device memory; fails after 10 s.
     */
    static double secondsUntilReclaimed(FakeGuest guest, List<Channel> held, Vm vm) throws InterruptedException {
        long beat = 0;
        long started = System.nanoTime();
        long lastBeat = 0;
        long seen = guest.header.getLongVolatile(HeaderFlyweight.SERVER_HEARTBEAT_OFFSET);
        // beats every 250 ms for 2 s (the server's checks then follow its period: a token first seen
        // without beats had a deadline of its own), and on until a check of the server has just run
        // (it beats server_heartbeat, then checks), which saw a beat; then one more beat, and death
        while (true) {
            long now = System.nanoTime();
            long shb = guest.header.getLongVolatile(HeaderFlyweight.SERVER_HEARTBEAT_OFFSET);
            if (now - started > TimeUnit.SECONDS.toNanos(2) && shb != seen && now - lastBeat > TimeUnit.MILLISECONDS.toNanos(20)) {
                break;
            }
            seen = shb;
            assertTrue(now - started < TimeUnit.SECONDS.toNanos(10), "the server checks");
            if (now - lastBeat >= TimeUnit.MILLISECONDS.toNanos(BEAT_MS)) {
                beat(guest, held, ++beat);
                lastBeat = now;
            }
            Thread.sleep(1);
        }
        Thread.sleep(10); // past the check itself
        beat(guest, held, ++beat);
        long killed = System.nanoTime();
        long vmBeat = killed;
        long deadline = killed + TimeUnit.SECONDS.toNanos(10);
        while (!reclaimed(held, vm) && System.nanoTime() < deadline) {
            if (System.nanoTime() - vmBeat >= TimeUnit.MILLISECONDS.toNanos(BEAT_MS)) {
                guest.header.addLongRelease(HeaderFlyweight.GUEST_HEARTBEAT_OFFSET, 1); // the other process
                vmBeat += TimeUnit.MILLISECONDS.toNanos(BEAT_MS);
            }
            Thread.sleep(2);
        }
        double seconds = (System.nanoTime() - killed) / 1e9;
        assertTrue(reclaimed(held, vm), "not reclaimed within 10 s");
        return seconds;
    }

    private static void beat(FakeGuest guest, List<Channel> held, long beat) {
        for (Channel c : held) {
            c.c.putLongRelease(ChannelFlyweight.OWNER_HEARTBEAT_OFFSET, beat);
        }
        guest.header.addLongRelease(HeaderFlyweight.GUEST_HEARTBEAT_OFFSET, 1);
    }

    private static boolean reclaimed(List<Channel> held, Vm vm) {
        for (Channel c : held) {
            if (c.control.ownerVolatile() != 0) {
                return false;
            }
        }
        return vm.allocated() == 0;
    }
}
