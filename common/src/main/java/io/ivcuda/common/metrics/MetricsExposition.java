package io.ivcuda.common.metrics;

import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * The VMs' figures in the Prometheus text format (docs/operations.md, "Metrics"), built as the Prometheus Java
 * client's snapshots and written by its {@link PrometheusTextFormatWriter}: names, escaping, {@code # HELP} and
 * {@code # TYPE} lines are the client's, not ours. One exposition holds every VM of the host, each sample
 * labelled with the domain's name and UUID, per-process samples with the guest pid too.
 */
public final class MetricsExposition {
    public static final String CONTENT_TYPE = PrometheusTextFormatWriter.CONTENT_TYPE;

    private MetricsExposition() {
    }

    /** Writes the exposition of {@code vms} to {@code out}. */
    public static void write(List<VmFigures> vms, OutputStream out) throws IOException {
        PrometheusTextFormatWriter.create().write(out, snapshots(vms), io.prometheus.metrics.config.EscapingScheme.UNDERSCORE_ESCAPING);
    }

    /** The snapshots {@link #write} writes, one per metric family. */
    public static MetricSnapshots snapshots(List<VmFigures> vms) {
        List<MetricSnapshot> families = new ArrayList<>();
        CounterSnapshot.Builder calls = counter("ivcuda_calls", "CUDA driver calls of the VM's guest processes, by function");
        CounterSnapshot.Builder errors = counter("ivcuda_call_errors",
                "calls that did not return CUDA_SUCCESS (refused or failed), by function");
        GaugeSnapshot.Builder held = gauge("ivcuda_gpu_memory_held_bytes", "device memory the VM's guest processes hold now");
        GaugeSnapshot.Builder quota = gauge("ivcuda_gpu_memory_quota_bytes", "the VM's device memory quota (0: none)");
        GaugeSnapshot.Builder share = gauge("ivcuda_compute_share_percent",
                "the VM's compute share: percent of the GPU's SMs; state mps (enforced), unshared (not enforced) or whole-gpu");
        GaugeSnapshot.Builder processes = gauge("ivcuda_guest_processes", "guest processes the server holds CUDA state for");
        CounterSnapshot.Builder recoveries = counter("ivcuda_server_recoveries",
                "times the server replaced its CUDA process after a fatal GPU fault of a guest process");
        GaugeSnapshot.Builder fatal = gauge("ivcuda_fatal_fault",
                "1 while a fatal GPU fault of a guest process poisons the VM (new processes wait), else 0");
        CounterSnapshot.Builder refusals = counter("ivcuda_refusals",
                "requests, ring records and claims the server refused (logged or not), by kind: the operation and the field at fault");
        for (VmFigures vm : vms) {
            Labels labels = vmLabels(vm);
            for (Map.Entry<String, Long> e : vm.callsByFunction().entrySet()) {
                calls.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels.add("function", e.getKey()))
                        .value(e.getValue()).build());
            }
            for (Map.Entry<String, Long> e : vm.errorsByFunction().entrySet()) {
                errors.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels.add("function", e.getKey()))
                        .value(e.getValue()).build());
            }
            held.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels).value(vm.memoryHeld()).build());
            quota.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels).value(vm.memoryQuota()).build());
            share.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                    .labels(labels.add("state", vm.computeShareState())).value(vm.computeShare()).build());
            processes.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels).value(vm.processes().size()).build());
            recoveries.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels).value(vm.recoveries()).build());
            fatal.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels).value(vm.fatalFault() ? 1 : 0).build());
            // the status file's refusals.KIND counters; the server keeps them per VM, not per process
            for (Map.Entry<String, Long> e : vm.refusalsByKind().entrySet()) {
                refusals.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels.add("kind", e.getKey()))
                        .value(e.getValue()).build());
            }
        }
        families.add(calls.build());
        families.add(errors.build());
        families.add(held.build());
        families.add(quota.build());
        families.add(share.build());
        families.add(processes.build());
        families.add(recoveries.build());
        families.add(fatal.build());
        families.add(refusals.build());
        // the same totals for the VM and, labelled with its pid, for each of its processes
        totals(families, vms, "copied_to_device_bytes", "bytes copied from the guest to the GPU", VmFigures.Totals::bytesToDevice);
        totals(families, vms, "copied_to_host_bytes", "bytes copied from the GPU to the guest", VmFigures.Totals::bytesToHost);
        totals(families, vms, "kernel_launches", "kernels launched (cuLaunchKernel and cuLaunchKernelEx)",
                VmFigures.Totals::launches);
        totals(families, vms, "requests", "calls and queued records served (all functions)", VmFigures.Totals::calls);
        totals(families, vms, "request_errors", "calls and queued records that did not return CUDA_SUCCESS",
                VmFigures.Totals::errors);
        CounterSnapshot.Builder busy = counter("ivcuda_busy_seconds",
                "time the cuda-server's workers spent serving the calls (host side; not the GPU's busy time)");
        // a process's calls and errors by function: pids x the functions each called, as the status file has them
        CounterSnapshot.Builder processCalls = counter("ivcuda_process_calls",
                "CUDA driver calls of one guest process, by function (the functions it called)");
        CounterSnapshot.Builder processErrors = counter("ivcuda_process_call_errors",
                "calls of one guest process that did not return CUDA_SUCCESS, by function");
        for (VmFigures vm : vms) {
            for (Map.Entry<Integer, VmFigures.Functions> p : vm.processFunctions().entrySet()) {
                Labels labels = vmLabels(vm).add("pid", Integer.toString(p.getKey()));
                for (Map.Entry<String, Long> e : p.getValue().calls().entrySet()) {
                    processCalls.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder()
                            .labels(labels.add("function", e.getKey())).value(e.getValue()).build());
                }
                for (Map.Entry<String, Long> e : p.getValue().errors().entrySet()) {
                    processErrors.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder()
                            .labels(labels.add("function", e.getKey())).value(e.getValue()).build());
                }
            }
        }
        families.add(processCalls.build());
        families.add(processErrors.build());
        CounterSnapshot.Builder processBusy = counter("ivcuda_process_busy_seconds", "busy time, per guest process");
        GaugeSnapshot.Builder processHeld = gauge("ivcuda_process_gpu_memory_held_bytes",
                "device memory one guest process holds now (its allocations)");
        for (VmFigures vm : vms) {
            busy.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(vmLabels(vm))
                    .value(vm.totals().busyNanos() / 1e9).build());
            for (Map.Entry<Integer, VmFigures.Totals> p : vm.processes().entrySet()) {
                Labels labels = vmLabels(vm).add("pid", Integer.toString(p.getKey()));
                processBusy.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(labels)
                        .value(p.getValue().busyNanos() / 1e9).build());
                processHeld.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().labels(labels)
                        .value(p.getValue().memoryHeld()).build());
            }
        }
        families.add(busy.build());
        families.add(processBusy.build());
        families.add(processHeld.build());
        return new MetricSnapshots(families);
    }

    private static void totals(List<MetricSnapshot> families, List<VmFigures> vms, String name, String help,
                               ToLongFunction<VmFigures.Totals> figure) {
        CounterSnapshot.Builder vm = counter("ivcuda_" + name, help);
        CounterSnapshot.Builder process = counter("ivcuda_process_" + name, help + ", per guest process");
        for (VmFigures v : vms) {
            vm.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().labels(vmLabels(v))
                    .value(figure.applyAsLong(v.totals())).build());
            for (Map.Entry<Integer, VmFigures.Totals> p : v.processes().entrySet()) {
                process.dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder()
                        .labels(vmLabels(v).add("pid", Integer.toString(p.getKey())))
                        .value(figure.applyAsLong(p.getValue())).build());
            }
        }
        families.add(vm.build());
        families.add(process.build());
    }

    private static Labels vmLabels(VmFigures vm) {
        return Labels.of("domain", vm.domainName(), "uuid", vm.domainUuid());
    }

    private static CounterSnapshot.Builder counter(String name, String help) {
        return CounterSnapshot.builder().name(name).help(help);
    }

    private static GaugeSnapshot.Builder gauge(String name, String help) {
        return GaugeSnapshot.builder().name(name).help(help);
    }
}
