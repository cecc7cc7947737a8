package io.ivcuda.server;

import io.ivcuda.server.backend.HostMemoryBackend;
import java.util.function.Supplier;
import org.junit.jupiter.api.BeforeEach;

/**
 * A {@link HostMemoryGuestCase} whose server is already running when each test begins, on a backend made
 * for that test alone ({@link #backend}: the host-memory backend or a stand-in derived from it that records
 * or fakes what the driver would do), and whose own process is the token the subclass names: the set-up of
 * the tests that look at one backend's calls ({@link GraphCase}'s tests, {@link LibraryTest},
 * {@link KernelLaunchTest}, {@link PointerAttributeTest}, ...).
 *
 * @param <B> the backend's class, so a test reads what its stand-in recorded without a cast
 */
abstract class StartedServerCase<B extends HostMemoryBackend> extends HostMemoryGuestCase {
    private final long token;
    private final Supplier<B> newBackend;
    private final String[] settings;
    B backend;

    /**
     * @param token the test's own process ({@link #token()})
     * @param newBackend makes each test's backend
     * @param settings more server settings ({@code key=value})
     */
    StartedServerCase(long token, Supplier<B> newBackend, String... settings) {
        this.token = token;
        this.newBackend = newBackend;
        this.settings = settings;
    }

    @Override
    final long token() {
        return token;
    }

    @BeforeEach
    void startOnNewBackend() throws Exception {
        backend = newBackend.get();
        start(backend, settings);
    }
}
