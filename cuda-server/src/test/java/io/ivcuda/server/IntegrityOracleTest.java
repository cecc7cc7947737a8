package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.ivcuda.server.FakeGuest.Channel;
import io.ivcuda.server.backend.CuResult;
import io.ivcuda.server.gen.Requests;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server's integrity oracles (io.ivcuda.server.integrity) with host-tools' real oracle and
 * its MOCK driver (host-tools/test/mock_check.h, mirrored in {@link #mock}): the answer the
 * oracle gives covers the guest's declared pid and thread and the oracle's own table addresses,
 * so an oracle that ran as another pid or thread answers otherwise. Also: threads the guest may
 * not declare, an oracle that never becomes ready (timeout, killed), the limit per VM, and the
 * oracle killed when its process is reclaimed.
 */
class IntegrityOracleTest {
    static final long SIZE = 16L << 20;
    static final Path HOST_TOOLS = Path.of("../host-tools/target").toAbsolutePath().normalize();
    static final Path ORACLE = HOST_TOOLS.resolve("ivcuda-integrity-oracle");
    static final Path MOCK = HOST_TOOLS.resolve("mock/libcuda.so.1");
    static final int PID = 4242;
    static final long THREAD = 0x7f12_3456_7000L;

    @TempDir
    Path dir;

    /** Whether this machine gives the oracle its namespaces: asked of the oracle itself. */
    @BeforeAll
    static void namespacesAvailable() throws Exception {
        assumeTrue(Files.isExecutable(ORACLE), "host-tools not built: " + ORACLE);
        Process p = new ProcessBuilder(ORACLE.toString(), "--pid", "4242", "--driver", MOCK.toString())
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        byte[] ready;
        try (InputStream in = p.getInputStream()) {
            ready = in.readNBytes(136);
        } finally {
            p.getOutputStream().close();
            p.waitFor();
        }
        int status = ready.length == 136 ? ByteBuffer.wrap(ready).order(ByteOrder.LITTLE_ENDIAN).getInt(4) : -1;
        String message = ready.length == 136 ? new String(ready, 56, 80, StandardCharsets.UTF_8).trim() : "no ready record";
        assumeTrue(status == 0, "the integrity oracle cannot run here: " + message);
    }

    private CudaServer server(String... sets) throws Exception {
        List<String> all = new ArrayList<>(List.of("region.path=" + dir.resolve("region"), "region.size=" + SIZE,
                "channel.count=4", "backend=host-memory", "integrity.oracle=" + ORACLE, "integrity.driver=" + MOCK));
        all.addAll(List.of(sets));
        CudaServer s = new CudaServer(ServerConfig.load(List.of(), all));
        s.start();
        return s;
    }

    @Test
    void theOracleAnswersAsTheGuestsProcessAndThread() throws Exception {
        try (CudaServer server = server(); FakeGuest guest = new FakeGuest(dir.resolve("region"), SIZE)) {
            Channel c = guest.claim(0, ((long) PID << 32) | 1);
            assertEquals(CuResult.SUCCESS, c.hello().result());
            FakeGuest.Response p = c.call(Requests.ivc_integrity_oracle());
            assertEquals(CuResult.SUCCESS, p.result());
            long cudart = p.out(0), integrity = p.out(2), slot1 = p.out(4);
            assertEquals(104, p.out(1));
            assertEquals(24, p.out(3));
            for (int version : new int[] {13000, 13002}) {
                FakeGuest.Response a = c.call(Requests.ivc_integrity_answer(version, 1_796_000_000L, THREAD));
                assertEquals(CuResult.SUCCESS, a.result());
                long[] want = mock(version, 1_796_000_000L, cudart, integrity, slot1, PID, THREAD);
                assertEquals(want[0], a.out(0), "version " + version);
                assertEquals(want[1], a.out(1), "version " + version);
            }
            FakeGuest.Response other = c.call(Requests.ivc_integrity_answer(13002, 1_796_000_000L, THREAD + 0x10000));
            assertEquals(mock(13002, 1_796_000_000L, cudart, integrity, slot1, PID, THREAD + 0x10000)[0], other.out(0),
                    "another thread, another answer");
            assertEquals(1, server.vm().integrity().alive());
        }
    }

    @Test
    void threadsThatAreNoThreadDescriptorsAreRefused() throws Exception {
        try (CudaServer server = server(); FakeGuest guest = new FakeGuest(dir.resolve("region"), SIZE)) {
            Channel c = guest.claim(0, ((long) PID << 32) | 2);
            assertEquals(CuResult.SUCCESS, c.hello().result());
            for (long thread : new long[] {0, 0x1000, 0x0000_8000_0000_0000L, -64L, THREAD + 8}) {
                assertEquals(CuResult.INVALID_VALUE,
                        c.call(Requests.ivc_integrity_answer(13002, 1, thread)).result(), Long.toHexString(thread));
            }
            assertEquals(0, server.vm().integrity().alive(), "nothing started for a refused request");
            assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_integrity_answer(13002, 1, THREAD)).result());
        }
    }

    @Test
    void reclaimKillsTheProcesssOracle() throws Exception {
        try (CudaServer server = server(); FakeGuest guest = new FakeGuest(dir.resolve("region"), SIZE)) {
            long token = ((long) PID << 32) | 3;
            Channel c = guest.claim(0, token);
            assertEquals(CuResult.SUCCESS, c.hello().result());
            assertEquals(CuResult.SUCCESS, c.call(Requests.ivc_integrity_oracle()).result());
            List<ProcessHandle> oracles = oracleProcesses();
            assertEquals(3, oracles.size(), "one oracle for the process: its launcher, its namespace's first process, its served stage");
            server.reclaim(token);
            for (int i = 0; i < 100 && oracles.stream().anyMatch(ProcessHandle::isAlive); i++) {
                Thread.sleep(50);
            }
            assertTrue(oracles.stream().noneMatch(ProcessHandle::isAlive), "the oracle is gone");
            assertEquals(0, server.vm().integrity().alive());
        }
    }

    @Test
    void anOracleThatDoesNotBecomeReadyIsKilledAfterTheTimeout() throws Exception {
        Path silent = dir.resolve("silent-oracle");
        Files.writeString(silent, "#!/bin/sh\nexec sleep 60\n");
        Files.setPosixFilePermissions(silent, PosixFilePermissions.fromString("rwx------"));
        try (LogCapture log = new LogCapture();
             CudaServer server = server("integrity.oracle=" + silent, "integrity.timeout.ms=300");
             FakeGuest guest = new FakeGuest(dir.resolve("region"), SIZE)) {
            Channel c = guest.claim(0, ((long) PID << 32) | 4);
            assertEquals(CuResult.SUCCESS, c.hello().result());
            long start = System.nanoTime();
            assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_integrity_oracle()).result());
            assertTrue(System.nanoTime() - start < 10_000_000_000L, "answered after the timeout");
            assertEquals(0, server.vm().integrity().alive());
            assertTrue(oracleProcesses().isEmpty() && childrenNamed("sleep").isEmpty(), "the silent oracle was killed");
            String lines = String.join("\n", log.lines());
            assertTrue(lines.contains("integrity oracle for pid " + PID), lines);
            // once failed, failed: no second start for the same process
            assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_integrity_oracle()).result());
            assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_integrity_answer(13002, 1, THREAD)).result());
        }
    }

    @Test
    void atMostIntegrityOraclesRunForTheVm() throws Exception {
        try (CudaServer server = server("integrity.oracles=1");
             FakeGuest guest = new FakeGuest(dir.resolve("region"), SIZE)) {
            Channel a = guest.claim(0, ((long) PID << 32) | 5);
            Channel b = guest.claim(1, ((long) (PID + 1) << 32) | 6);
            assertEquals(CuResult.SUCCESS, a.hello().result());
            assertEquals(CuResult.SUCCESS, b.hello().result());
            assertEquals(CuResult.SUCCESS, a.call(Requests.ivc_integrity_oracle()).result());
            assertEquals(CuResult.NOT_SUPPORTED, b.call(Requests.ivc_integrity_oracle()).result());
            assertEquals(1, server.vm().integrity().alive());
        }
    }

    @Test
    void withoutOraclesOpcode270AnswersAsBefore() throws Exception {
        try (CudaServer server = server("integrity.oracles=0");
             FakeGuest guest = new FakeGuest(dir.resolve("region"), SIZE)) {
            Channel c = guest.claim(0, ((long) PID << 32) | 7);
            assertEquals(CuResult.SUCCESS, c.hello().result());
            assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_integrity_oracle()).result());
            assertEquals(CuResult.NOT_SUPPORTED, c.call(Requests.ivc_export_integrity_check(13000, 1)).result());
            assertEquals(CuResult.SUCCESS, c.call(Requests.cuDeviceGetCount()).result());
        }
    }

    private static List<ProcessHandle> oracleProcesses() {
        return childrenNamed("ivcuda-integrity-oracle");
    }

    private static List<ProcessHandle> childrenNamed(String name) {
        return ProcessHandle.current().descendants().filter(ProcessHandle::isAlive)
                .filter(h -> h.info().command().map(cmd -> cmd.endsWith(name)).orElse(false)).toList();
    }

    /** host-tools/test/mock_check.h's mock_check_at, as the oracle's pid and thread compute it. */
    static long[] mock(int version, long seconds, long cudart, long integrity, long slot1, long pid, long thread) {
        long h = mix(0xcbf29ce484222325L, version & 0xffffffffL);
        if (version % 10 == 2) {
            for (long w : new long[] {seconds, cudart, integrity, slot1, pid, thread}) {
                h = mix(h, w);
            }
        }
        return new long[] {h, mix(h, 0x5a5a)};
    }

    private static long mix(long h, long word) {
        for (int i = 0; i < 8; i++) {
            h = (h ^ ((word >>> (8 * i)) & 0xff)) * 0x100000001b3L;
        }
        return h;
    }
}
