package io.ivcuda.server.integrity;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One running ivcuda-integrity-oracle (host-tools/src/oracle.c) for one guest process, spoken to
 * over its stdin and stdout with the fixed records of host-tools/src/oracle_proto.h (little-endian,
 * the host's order). Every read has a deadline: past it the oracle is killed, which ends the read.
 * One question at a time ({@code synchronized}): the oracle answers in order.
 */
final class OracleProcess {
    static final int MAGIC = 0x4f435649;
    static final int READY_BYTES = 136;
    static final int REQUEST_BYTES = 24;
    static final int REPLY_BYTES = 32;
    static final int MESSAGE_OFFSET = 56;
    static final int MESSAGE_BYTES = 80;

    /** oracle_proto.h's statuses the server tells apart. */
    static final int OK = 0;
    static final int BAD_REQUEST = 5;

    /** Why an oracle cannot be used: its message goes to the log line naming the pid. */
    static final class Failure extends Exception {
        Failure(String message) {
            super(message);
        }
    }

    private final Process process;
    private final InputStream from;
    private final OutputStream to;
    private final ScheduledExecutorService timer;
    private final int timeoutMs;
    private final Placement placement;

    private OracleProcess(Process process, ScheduledExecutorService timer, int timeoutMs) throws Failure {
        this.process = process;
        this.from = process.getInputStream();
        this.to = process.getOutputStream();
        this.timer = timer;
        this.timeoutMs = timeoutMs;
        ByteBuffer ready = read(READY_BYTES, "its ready record");
        if (ready.getInt(0) != MAGIC) {
            throw new Failure("the oracle's ready record has a wrong magic");
        }
        int status = ready.getInt(4);
        if (status != OK) {
            byte[] message = new byte[MESSAGE_BYTES];
            ready.get(MESSAGE_OFFSET, message);
            int end = 0;
            while (end < message.length && message[end] != 0) {
                end++;
            }
            throw new Failure("the oracle did not start (status " + status + "): "
                    + new String(message, 0, end, StandardCharsets.UTF_8));
        }
        placement = new Placement(ready.getLong(16), ready.getLong(24), ready.getLong(32), ready.getLong(40),
                ready.getLong(48));
        if (!placement.plausible()) {
            throw new Failure("the oracle reported an implausible placement " + placement);
        }
    }

    /** Starts the oracle for guest process {@code pid} and reads its ready record (within the timeout). */
    static OracleProcess start(IntegrityConfig config, int pid, ScheduledExecutorService timer) throws Failure {
        ProcessBuilder b = new ProcessBuilder(config.oracle().toString(), "--pid", Integer.toString(pid), "--driver",
                config.driver());
        b.redirectError(ProcessBuilder.Redirect.INHERIT);
        Process p;
        try {
            p = b.start();
        } catch (IOException e) {
            throw new Failure("cannot start " + config.oracle() + ": " + e.getMessage());
        }
        try {
            return new OracleProcess(p, timer, config.timeoutMs());
        } catch (Failure f) {
            kill(p);
            throw f;
        }
    }

    Placement placement() {
        return placement;
    }

    /** The oracle's 16 bytes (as two little-endian words) for the question, or a Failure (the oracle is dead then). */
    synchronized long[] answer(int version, long unixSeconds, long thread) throws Failure {
        ByteBuffer q = ByteBuffer.allocate(REQUEST_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        q.putInt(MAGIC).putInt(version).putLong(unixSeconds).putLong(thread);
        try {
            to.write(q.array());
            to.flush();
        } catch (IOException e) {
            kill(process);
            throw new Failure("the oracle does not take questions: " + e.getMessage());
        }
        ByteBuffer r = read(REPLY_BYTES, "an answer");
        int status = r.getInt(4);
        if (r.getInt(0) != MAGIC) {
            kill(process);
            throw new Failure("the oracle's answer has a wrong magic");
        }
        if (status != OK) {
            throw new Failure("the oracle could not answer (status " + status + ", driver " + r.getInt(8) + ")");
        }
        return new long[] {r.getLong(16), r.getLong(24)};
    }

    /** n bytes from the oracle, or a Failure after killing it when they did not come within the timeout. */
    private ByteBuffer read(int n, String what) throws Failure {
        ScheduledFuture<?> deadline = timer.schedule(() -> kill(process), timeoutMs, TimeUnit.MILLISECONDS);
        byte[] b;
        try {
            b = from.readNBytes(n);
        } catch (IOException e) {
            b = new byte[0];
        } finally {
            deadline.cancel(false);
        }
        if (b.length != n) {
            kill(process);
            throw new Failure("the oracle ended, or sent no " + what + " within " + timeoutMs + " ms");
        }
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    boolean alive() {
        return process.isAlive();
    }

    long pid() {
        return process.pid();
    }

    void kill() {
        kill(process);
    }

    /**
     * Kills the oracle and what it started (its PID namespace's first process, whose death ends
     * the namespace, and the served stage), first the descendants so that none is orphaned.
     */
    private static void kill(Process p) {
        p.descendants().forEach(ProcessHandle::destroyForcibly);
        p.destroyForcibly();
        try {
            p.getOutputStream().close();
        } catch (IOException ignored) {
            // the pipe's other end is gone with the process
        }
    }
}
