package io.ivcuda.server;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.HostMemoryBackend;
import java.util.ArrayList;
import java.util.List;

/**
 * A {@link HostMemoryGuestCase} whose tests speak as one process through channel 0, {@link #c}, to a server
 * whose waits park at most 200 µs: the setup the quota and memory-object tests share.
 */
abstract class OneProcessCase extends HostMemoryGuestCase {
    private final long token;
    Channel c;

    OneProcessCase(long token) {
        this.token = token;
    }

    @Override
    final long token() {
        return token;
    }

    /** Starts the server on {@code backend} with {@code settings}; {@link #c}: channel 0, greeted, before cuInit. */
    void startAndHello(HostMemoryBackend backend, String... settings) throws Exception {
        startParked(backend, settings);
        c = hello(0, token);
    }

    /** As {@link #startAndHello}, and {@link #c} past cuInit. */
    void startAndInit(HostMemoryBackend backend, String... settings) throws Exception {
        startParked(backend, settings);
        c = greeted(0);
    }

    private void startParked(HostMemoryBackend backend, String... settings) throws Exception {
        List<String> all = new ArrayList<>(List.of("wait.park.max.us=200"));
        all.addAll(List.of(settings));
        start(backend, all.toArray(String[]::new));
    }
}
