package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How status shows back-ends' slots and which back-end serves a front-end (issue 16). */
class BackendStatusTableTest {
    private static StatusReport.DomainStatus backend() {
        return new StatusReport.DomainStatus("gpu-be", "b", "running", "provisioned", "", false, null, null,
                new StatusReport.BackendStatus(2, 256L << 20, true, 321, "alive", null, List.of(
                        new StatusReport.SlotStatus(0, "front", "f", "ASSIGNED", "SERVING", 654, null),
                        new StatusReport.SlotStatus(1, null, null, "FREE", "IDLE", null, null))), null);
    }

    private static StatusReport.DomainStatus frontend(Integer slot, String server) {
        return new StatusReport.DomainStatus("front", "f", "running", "provisioned", "", false, null, null, null,
                new StatusReport.FrontendStatus(slot == null ? null : "gpu-be", "b", slot, "ASSIGNED", server));
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
        assertTrue(out.contains("  slot 0: front, ASSIGNED, server SERVING pid 654\n"), out);
        assertTrue(out.contains("  slot 1: free, FREE, server IDLE\n"), out);
        assertTrue(out.contains("via gpu-be slot 0: SERVING"), out);
    }
}
