package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** What status --json shows of a server's refusal counters (its status file's refusals.KIND keys). */
class StatusReportTest {
    @Test
    void refusalCountersAreReadByKind() {
        Properties status = new Properties();
        status.setProperty("refusals", "12");
        status.setProperty("refusals.ivc_mem_alloc.bytesize", "10");
        status.setProperty("refusals.ring.ring", "2");
        status.setProperty("refusals.garbled", "x");
        status.setProperty("memory.held", "0");
        assertEquals(Map.of("ivc_mem_alloc.bytesize", 10L, "ring.ring", 2L), StatusReport.refusalsByKind(status));
        assertEquals(Map.of(), StatusReport.refusalsByKind(new Properties()));
    }

    /** LAST ERROR of a running domain: the server log's last ERROR line of this start, none of an earlier one. */
    @Test
    void lastErrorIsTheLatestStartsOnly() {
        String earlier = "2026-12-01T10:00:00,000 ERROR worker 1: cuMemAlloc failed";
        String now = "2026-12-01T11:00:02,000 ERROR ivc_mem_alloc: bytesize 5000 above the quota";
        assertNull(StatusReport.lastErrorSinceStart(List.of("--- 2026-12-01T10:00:00Z starting: a", earlier,
                "--- 2026-12-01T11:00:00Z starting: b", "2026-12-01T11:00:01,000 INFO  ready")), "the earlier start's error");
        assertEquals(now, StatusReport.lastErrorSinceStart(List.of("--- 2026-12-01T11:00:00Z starting: b",
                "2026-12-01T11:00:01,000 ERROR first", now, "2026-12-01T11:00:03,000 INFO  hello")));
        assertNull(StatusReport.lastErrorSinceStart(List.of()));
    }
}
