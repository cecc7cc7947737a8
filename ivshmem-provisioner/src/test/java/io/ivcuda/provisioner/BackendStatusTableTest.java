package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ivcuda.common.BackendPaths;
import io.ivcuda.common.HostConfig;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** How status shows back-ends' slots and which back-end serves a front-end (issue 16). */
class BackendStatusTableTest {
    private static StatusReport.DomainStatus backend() {
        return new StatusReport.DomainStatus("gpu-be", "b", "running", "provisioned", "", false, null, null,
                new StatusReport.BackendStatus(2, 256L << 20, true, 321, "alive", null, List.of(
                        new StatusReport.SlotStatus(0, "front", "f", "ASSIGNED", "SERVING", 654, null,
                                new StatusReport.RelayStatus("/run/ivcuda/relay-b-slot0.sock", 99L, StatusReport.RELAY_RUNNING,
                                        List.of(new StatusReport.RelayPeer(0, "back-end", 11, 64),
                                                new StatusReport.RelayPeer(1, "front-end", 12, 64)))),
                        new StatusReport.SlotStatus(1, null, null, "FREE", "IDLE", null, null,
                                new StatusReport.RelayStatus("/run/ivcuda/relay-b-slot1.sock", null, StatusReport.RELAY_STALE, null)))),
                null);
    }

    private static StatusReport.DomainStatus frontend(Integer slot, String server) {
        return new StatusReport.DomainStatus("front", "f", "running", "provisioned", "", false, null, null, null,
                new StatusReport.FrontendStatus(slot == null ? null : "gpu-be", "b", slot, "ASSIGNED", server));
    }

    @TempDir
    Path dir;
    private final List<Process> started = new ArrayList<>();

    @AfterEach
    void stopStandIns() {
        started.forEach(Process::destroyForcibly);
    }

    /**
     * A slot's relay as status finds it on the host: by its process (a stand-in with the relay's --socket argument),
     * its pidfile and socket, and the peers file it keeps.
     */
    @Test
    void aSlotsRelayIsFoundRunningWithItsPeersOrStaleOrAbsent() throws Exception {
        Files.writeString(dir.resolve("ivcuda.properties"), "runtime.dir=" + dir.resolve("run") + "\nshm.dir=" + dir.resolve("shm")
                + "\n");
        BackendPaths paths = BackendPaths.of("7e57b0c5-1111-4222-8333-944455556666", HostConfig.load(List.of(dir.resolve("ivcuda.properties"))));
        Files.createDirectories(dir.resolve("run"));
        Path socket = paths.relaySocket(1);
        StatusReport.RelayStatus none = StatusReport.relayStatus(paths, 1);
        assertEquals(new StatusReport.RelayStatus(socket.toString(), null, StatusReport.RELAY_NONE, null), none);

        Process relay = new ProcessBuilder("sh", "-c", "read -r line", "relay", "--socket", socket.toString()).start();
        started.add(relay);
        Files.writeString(socket, "");
        StatusReport.RelayStatus starting = StatusReport.relayStatus(paths, 1);
        assertEquals(StatusReport.RELAY_STARTING, starting.state(), "no pidfile yet: not listening");
        assertEquals(relay.pid(), starting.pid());
        Files.writeString(paths.relayPidfile(1), relay.pid() + "\n");
        Files.writeString(paths.relayPeers(1), "0 4242 64\n1 4343 64\n");
        StatusReport.RelayStatus running = StatusReport.relayStatus(paths, 1);
        assertEquals(StatusReport.RELAY_RUNNING, running.state());
        assertEquals(List.of(new StatusReport.RelayPeer(0, "back-end", 4242, 64), new StatusReport.RelayPeer(1, "front-end", 4343, 64)),
                running.peers());
        Files.writeString(paths.relayPeers(1), "0 4242 64\n1 x 64\n");
        assertNull(StatusReport.relayStatus(paths, 1).peers(), "a garbled peers file is not shown as peers");

        relay.destroyForcibly();
        relay.waitFor();
        StatusReport.RelayStatus stale = StatusReport.relayStatus(paths, 1);
        assertEquals(new StatusReport.RelayStatus(socket.toString(), null, StatusReport.RELAY_STALE, null), stale,
                "its process gone, its socket and pidfile left");
        assertEquals(StatusReport.RELAY_NONE, StatusReport.relayStatus(paths, 0).state(), "another slot's relay is not this one");
    }

    @Test
    void theJsonCarriesEachSlotsRelay() {
        String json = new com.google.gson.GsonBuilder().serializeNulls().create().toJson(backend());
        assertTrue(json.contains("\"relay\":{\"socket\":\"/run/ivcuda/relay-b-slot0.sock\",\"pid\":99,\"state\":\"running\","
                + "\"peers\":[{\"peer\":0,\"role\":\"back-end\",\"pid\":11,\"uid\":64}"), json);
    }

    @Test
    void frontendsSayWhichBackendAndSlotServeThem() {
        assertEquals("via gpu-be slot 0: SERVING", StatusTable.roleServer(frontend(0, "SERVING")));
        assertEquals("via gpu-be slot 0: ASSIGNED", StatusTable.roleServer(frontend(0, null)));
        assertEquals("front-end, no slot", StatusTable.roleServer(frontend(null, null)));
        assertEquals("back-end, agent alive", StatusTable.roleServer(backend()));
    }

    @Test
    void backendsListTheirSlotsBelowTheTable() {
        StringWriter text = new StringWriter();
        StatusTable.print(new StatusReport.Report(new StatusReport.Host("h", "l", "d"), List.of(backend(), frontend(0, "SERVING"))),
                new PrintWriter(text, true));
        String out = text.toString();
        assertTrue(out.contains("back-end gpu-be: 2 slots of 256 MiB, running; agent alive, pid 321\n"), out);
        assertTrue(out.contains("  slot 0: front, ASSIGNED, server SERVING pid 654; relay running pid 99 on "
                + "/run/ivcuda/relay-b-slot0.sock, peers 0 (back-end) pid 11, 1 (front-end) pid 12\n"), out);
        assertTrue(out.contains("  slot 1: free, FREE, server IDLE; relay STALE (no process; its socket or pidfile is left"), out);
        assertTrue(out.contains("via gpu-be slot 0: SERVING"), out);
    }
}
