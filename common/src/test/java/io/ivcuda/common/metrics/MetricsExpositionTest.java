package io.ivcuda.common.metrics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The exposition as text for given status-file figures, and docs/operations.md's "Metrics" table against it. */
class MetricsExpositionTest {
    private static final Path DOC = Path.of("..").toAbsolutePath().normalize().resolve("docs/operations.md");

    @Test
    void refusalCountsOfTheStatusFileAreOneCounterPerKind() throws Exception {
        Properties status = new Properties();
        status.setProperty(VmFigures.REFUSALS, "13");
        status.setProperty("refusals.ivc_mem_alloc.bytesize", "10");
        status.setProperty("refusals.ring.ring", "2");
        status.setProperty("refusals.owner.heartbeat.stopped", "1");
        status.setProperty("refusals.garbled", "x");
        String text = text(VmFigures.read(status, "vm1", "u-1"));

        assertTrue(text.contains("# TYPE ivcuda_refusals_total counter\n"), text);
        assertEquals(List.of(
                "ivcuda_refusals_total{domain=\"vm1\",kind=\"ivc_mem_alloc.bytesize\",uuid=\"u-1\"} 10.0",
                "ivcuda_refusals_total{domain=\"vm1\",kind=\"owner.heartbeat.stopped\",uuid=\"u-1\"} 1.0",
                "ivcuda_refusals_total{domain=\"vm1\",kind=\"ring.ring\",uuid=\"u-1\"} 2.0"),
                text.lines().filter(l -> l.startsWith("ivcuda_refusals_total{")).sorted().toList(),
                "one sample per kind, the garbled count left out");
    }

    @Test
    void aServerThatRefusedNothingHasNoRefusalSamples() throws Exception {
        String text = text(VmFigures.read(new Properties(), "vm1", "u-1"));
        assertTrue(text.lines().noneMatch(l -> l.startsWith("ivcuda_refusals_total{")), text);
    }

    /**
     * A process's calls and errors by function are its own series, labelled with its pid and the function: one per
     * function it called; keys of a process without totals, garbled counts and empty names are left out.
     */
    @Test
    void aProcessCallsByFunctionAreOneCounterPerPidAndFunction() throws Exception {
        Properties status = new Properties();
        status.setProperty("process.7.calls", "5");
        status.setProperty("process.7.calls.cuInit", "1");
        status.setProperty("process.7.errors.cuInit", "0");
        status.setProperty("process.7.calls.cuMemAlloc_v2", "4");
        status.setProperty("process.7.errors.cuMemAlloc_v2", "2");
        status.setProperty("process.7.calls.", "9");
        status.setProperty("process.7.calls.garbled", "x");
        status.setProperty("process.8.calls.cuInit", "3");
        String text = text(VmFigures.read(status, "vm1", "u-1"));

        assertTrue(text.contains("# TYPE ivcuda_process_calls_total counter\n"), text);
        assertEquals(List.of(
                "ivcuda_process_calls_total{domain=\"vm1\",function=\"cuInit\",pid=\"7\",uuid=\"u-1\"} 1.0",
                "ivcuda_process_calls_total{domain=\"vm1\",function=\"cuMemAlloc_v2\",pid=\"7\",uuid=\"u-1\"} 4.0"),
                text.lines().filter(l -> l.startsWith("ivcuda_process_calls_total{")).sorted().toList());
        assertEquals(List.of(
                "ivcuda_process_call_errors_total{domain=\"vm1\",function=\"cuInit\",pid=\"7\",uuid=\"u-1\"} 0.0",
                "ivcuda_process_call_errors_total{domain=\"vm1\",function=\"cuMemAlloc_v2\",pid=\"7\",uuid=\"u-1\"} 2.0"),
                text.lines().filter(l -> l.startsWith("ivcuda_process_call_errors_total{")).sorted().toList());
    }

    /** Every metric family written is a row of docs/operations.md's "Metrics" table, under its exposed name. */
    @Test
    void everyMetricIsInTheOperationsMetricsTable() throws Exception {
        String doc = Files.readString(DOC, StandardCharsets.UTF_8);
        int start = doc.indexOf("### Metrics");
        assertTrue(start >= 0, "docs/operations.md has a Metrics section");
        String table = doc.substring(start, doc.indexOf("\n#", start + 1));
        Properties status = new Properties();
        status.setProperty("refusals.x", "1");
        status.setProperty("process.7.calls", "1");
        status.setProperty("process.7.calls.cuInit", "1");
        for (var family : MetricsExposition.snapshots(List.of(VmFigures.read(status, "vm", "u"))))  {
            String name = family.getMetadata().getPrometheusName()
                    + (family instanceof io.prometheus.metrics.model.snapshots.CounterSnapshot ? "_total" : "");
            assertTrue(table.contains("`" + name + "`") || table.contains("`" + name + "{"),
                    name + " is missing from docs/operations.md's Metrics table");
        }
    }

    private static String text(VmFigures vm) throws Exception {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        MetricsExposition.write(List.of(vm), out);
        return out.toString(StandardCharsets.UTF_8);
    }
}
