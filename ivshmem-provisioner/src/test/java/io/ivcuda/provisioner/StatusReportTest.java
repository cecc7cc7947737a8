package io.ivcuda.provisioner;

import static org.junit.jupiter.api.Assertions.assertEquals;

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
}
