package io.ivcuda.server.integrity;

import io.ivcuda.common.config.ServerKeys;
import io.ivcuda.server.core.RefusalLog;
import java.nio.file.Files;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * One VM's integrity oracles: at most one per guest process (owner token), started at the
 * process's first integrity request, killed when the process is reclaimed (exit, death, server
 * stop). Bounded: {@link IntegrityConfig#oracles()} alive at once; each start and each answer
 * within {@link IntegrityConfig#timeoutMs()}. A process whose oracle could not start or failed
 * keeps that outcome until it is reclaimed (one log line naming the pid), so that a guest cannot
 * make the server start oracles over and over; its requests are answered NOT_SUPPORTED and the
 * guest falls back to opcode 270.
 */
public final class IntegrityOracles implements AutoCloseable {
    private static final Logger LOG = LogManager.getLogger(IntegrityOracles.class);
    /** The kernel's largest pid_max: a pid above it is no guest process's. */
    static final int PID_MAX = 4_194_304;

    private final IntegrityConfig config;
    private final RefusalLog refusals;
    private final boolean enabled;
    private final ConcurrentHashMap<Long, Entry> entries = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer;
    /** Oracles started and not killed: counted apart from the entries, whose locks are taken one at a time. */
    private final AtomicInteger running = new AtomicInteger();

    /** A process's oracle, or why it has none (then {@code oracle} is null for good). */
    private static final class Entry {
        OracleProcess oracle;
        String failure;
    }

    public IntegrityOracles(IntegrityConfig config, RefusalLog refusals) {
        this.config = config;
        this.refusals = refusals;
        boolean present = Files.isExecutable(config.oracle());
        enabled = config.oracles() > 0 && present;
        if (config.oracles() > 0 && !present) {
            LOG.warn("{} {} is not an executable program: cudart's integrity check is asked of this server's own driver "
                    + "(opcode 270), which runtime-API programs reject", ServerKeys.INTEGRITY_ORACLE.name(), config.oracle());
        }
        timer = !enabled ? null : Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "integrity-oracle-timer");
            t.setDaemon(true);
            return t;
        });
    }

    /** No oracles at all (servers and tests that answer through opcode 270 only). */
    public static IntegrityOracles none() {
        return new IntegrityOracles(IntegrityConfig.NONE, null);
    }

    public boolean enabled() {
        return enabled;
    }

    /** Oracles running now. */
    public int alive() {
        return running.get();
    }

    /** The process's oracle's placement, starting the oracle if it has none yet; null when it cannot have one. */
    public Placement placement(long token, int pid) {
        OracleProcess o = oracle(token, pid);
        return o == null ? null : o.placement();
    }

    /**
     * The oracle's answer to d4082055 slot 1 (version, unixSeconds) asked from pthread_self() ==
     * {@code thread} (checked by the caller), as two little-endian words; null when the process
     * has no oracle or it could not answer (logged).
     */
    public long[] answer(long token, int pid, int version, long unixSeconds, long thread) {
        OracleProcess o = oracle(token, pid);
        if (o == null) {
            return null;
        }
        try {
            return o.answer(version, unixSeconds, thread);
        } catch (OracleProcess.Failure f) {
            if (!o.alive()) {
                fail(token, pid, f.getMessage());
            } else {
                log(pid, f.getMessage());
            }
            return null;
        }
    }

    private OracleProcess oracle(long token, int pid) {
        if (!enabled || pid <= 0 || pid > PID_MAX) {
            return null;
        }
        Entry e = entries.computeIfAbsent(token, t -> new Entry());
        synchronized (e) {
            if (e.oracle != null || e.failure != null) {
                return e.oracle;
            }
            if (running.incrementAndGet() > config.oracles()) {
                running.decrementAndGet();
                e.failure = ServerKeys.INTEGRITY_ORACLES.name() + " (" + config.oracles() + ") oracles run already";
                log(pid, e.failure);
                return null;
            }
            try {
                e.oracle = OracleProcess.start(config, pid, timer);
                LOG.info("integrity oracle for pid {} started (process {}): {}", pid, e.oracle.pid(),
                        e.oracle.placement());
            } catch (OracleProcess.Failure f) {
                running.decrementAndGet();
                e.failure = f.getMessage();
                log(pid, e.failure);
            }
            return e.oracle;
        }
    }

    private void fail(long token, int pid, String why) {
        Entry e = entries.get(token);
        if (e != null) {
            synchronized (e) {
                if (e.oracle != null) {
                    e.oracle.kill();
                    running.decrementAndGet();
                }
                e.oracle = null;
                e.failure = why;
            }
        }
        log(pid, why);
    }

    private void log(int pid, String why) {
        String line = "integrity oracle for pid " + pid + ": " + why
                + "; its integrity checks are asked of this server's driver (opcode 270)";
        if (refusals != null) {
            refusals.log(LOG, Level.WARN, "integrity oracle", () -> line);
        } else {
            LOG.warn(line);
        }
    }

    /** The process is reclaimed: its oracle (and the namespace it runs in) is killed. */
    public void kill(long token) {
        Entry e = entries.remove(token);
        if (e != null) {
            synchronized (e) {
                if (e.oracle != null) {
                    e.oracle.kill();
                    e.oracle = null;
                    running.decrementAndGet();
                }
            }
        }
    }

    @Override
    public void close() {
        for (Long token : entries.keySet()) {
            kill(token);
        }
        if (timer != null) {
            timer.shutdownNow();
        }
    }
}
