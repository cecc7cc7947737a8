package io.ivcuda.common.metrics;

import io.ivcuda.common.config.ServerKeys;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

/**
 * One VM's figures as its cuda-server writes them into its status file (a Java properties file, the server's
 * {@code StatusFile}) and as {@code ivshmem-provisioner status} and {@code metrics} read them back: the status
 * file is the one place a server says what it did, so the table and the Prometheus exposition show the same
 * numbers. Every figure a server wrote that does not read as a number is left out, not guessed.
 *
 * @param callsByFunction calls since the server started, by the function's name ({@code cuMemAlloc_v2})
 * @param errorsByFunction calls that did not return CUDA_SUCCESS, by function
 * @param totals the VM's totals
 * @param processes the guest processes the server holds state for now, by pid
 * @param recoveries how many times the server replaced its CUDA process after a fatal GPU fault
 * @param fatalFault whether a fatal GPU fault poisons the VM now (docs/architecture.md, "Fault recovery")
 * @param refusalsByKind what the server refused since it started (requests, records, claims; logged or not), by
 *        RefusalLog's kind as the status file spells it ({@code ivc_mem_alloc.bytesize}): the server counts these per
 *        VM only, so there is no per-process figure of them
 * @param processFunctions each process's calls and errors by function (the functions it called), by pid
 */
public record VmFigures(String domainName, String domainUuid, long memoryHeld, long memoryQuota, int computeShare,
                        String computeShareState, Map<String, Long> callsByFunction, Map<String, Long> errorsByFunction,
                        Totals totals, Map<Integer, Totals> processes, long recoveries, boolean fatalFault,
                        Map<String, Long> refusalsByKind, Map<Integer, Functions> processFunctions) {

    /** Calls and errors by function's name, of one guest process. */
    public record Functions(Map<String, Long> calls, Map<String, Long> errors) {
    }

    /** The status file's keys (written by the server, read here). */
    public static final String CALLS = "calls.";
    public static final String ERRORS = "errors.";
    public static final String PROCESS = "process.";
    public static final String MEMORY_HELD = "memory.held";
    /** The server's count of CUDA process replacements after a fatal GPU fault. */
    public static final String RECOVERIES = "recoveries";
    /** Present while a fatal GPU fault poisons the VM (its value: pid, function, result). */
    public static final String FATAL_FAULT = "fatal.fault";
    /** Every refusal since the server started; {@code refusals.KIND} the count of one kind. */
    public static final String REFUSALS = "refusals";

    /**
     * Totals of a VM or of one process.
     *
     * @param memoryHeld bytes of device memory held now (a process's own allocations)
     * @param busyNanos time the server's workers spent serving the calls (not the GPU's busy time)
     */
    public record Totals(long calls, long errors, long bytesToDevice, long bytesToHost, long launches, long busyNanos,
                         long memoryHeld) {
        /** Writes these under {@code prefix} ({@code total.} or {@code process.<pid>.}). */
        public void put(Properties p, String prefix) {
            p.setProperty(prefix + "calls", Long.toString(calls));
            p.setProperty(prefix + "errors", Long.toString(errors));
            p.setProperty(prefix + "bytes.to_device", Long.toString(bytesToDevice));
            p.setProperty(prefix + "bytes.to_host", Long.toString(bytesToHost));
            p.setProperty(prefix + "launches", Long.toString(launches));
            p.setProperty(prefix + "busy.ns", Long.toString(busyNanos));
            p.setProperty(prefix + "memory.held", Long.toString(memoryHeld));
        }

        static Totals read(Properties p, String prefix) {
            return new Totals(number(p, prefix + "calls"), number(p, prefix + "errors"), number(p, prefix + "bytes.to_device"),
                    number(p, prefix + "bytes.to_host"), number(p, prefix + "launches"), number(p, prefix + "busy.ns"),
                    number(p, prefix + "memory.held"));
        }
    }

    /** The VM's totals' prefix in the status file. */
    public static final String TOTAL = "total.";

    /** Reads a server's status file (as properties); {@code domainName} and {@code domainUuid} label the figures. */
    public static VmFigures read(Properties p, String domainName, String domainUuid) {
        Map<String, Long> calls = new TreeMap<>();
        Map<String, Long> errors = new TreeMap<>();
        Map<Integer, Totals> processes = new TreeMap<>();
        Map<Integer, Functions> processFunctions = new TreeMap<>();
        for (String key : p.stringPropertyNames()) {
            if (key.startsWith(CALLS) && key.length() > CALLS.length() && isNumber(p.getProperty(key))) {
                calls.put(key.substring(CALLS.length()), number(p, key));
            } else if (key.startsWith(ERRORS) && key.length() > ERRORS.length() && isNumber(p.getProperty(key))) {
                errors.put(key.substring(ERRORS.length()), number(p, key));
            } else if (key.startsWith(PROCESS) && key.endsWith(".calls")) {
                String pid = key.substring(PROCESS.length(), key.length() - ".calls".length());
                if (pid.matches("[0-9]{1,9}")) {
                    processes.put(Integer.parseInt(pid), Totals.read(p, PROCESS + pid + "."));
                }
            }
        }
        for (String key : p.stringPropertyNames()) {
            // process.PID.calls.FUNCTION and process.PID.errors.FUNCTION, for a process whose totals are there
            if (!key.startsWith(PROCESS) || !isNumber(p.getProperty(key))) {
                continue;
            }
            int dot = key.indexOf('.', PROCESS.length());
            String pid = dot < 0 ? "" : key.substring(PROCESS.length(), dot);
            if (!pid.matches("[0-9]{1,9}") || !processes.containsKey(Integer.parseInt(pid))) {
                continue;
            }
            String rest = key.substring(dot + 1);
            Functions f = processFunctions.computeIfAbsent(Integer.parseInt(pid),
                    k -> new Functions(new TreeMap<>(), new TreeMap<>()));
            if (rest.startsWith(CALLS) && rest.length() > CALLS.length()) {
                f.calls().put(rest.substring(CALLS.length()), number(p, key));
            } else if (rest.startsWith(ERRORS) && rest.length() > ERRORS.length()) {
                f.errors().put(rest.substring(ERRORS.length()), number(p, key));
            }
        }
        processFunctions.values().removeIf(f -> f.calls().isEmpty() && f.errors().isEmpty());
        return new VmFigures(domainName, domainUuid, number(p, MEMORY_HELD), number(p, ServerKeys.MEMORY_QUOTA.name()),
                (int) Math.max(0, Math.min(100, number(p, ServerKeys.COMPUTE_SHARE.name()))), p.getProperty("compute.share.state", ""),
                calls, errors, Totals.read(p, TOTAL), processes, number(p, RECOVERIES), p.getProperty(FATAL_FAULT) != null,
                refusalsByKind(p), processFunctions);
    }

    /** The server's refusal counters ({@code refusals.KIND} keys of its status file), by kind; garbled ones left out. */
    public static Map<String, Long> refusalsByKind(Properties p) {
        Map<String, Long> out = new TreeMap<>();
        String prefix = REFUSALS + ".";
        for (String key : p.stringPropertyNames()) {
            if (key.startsWith(prefix) && key.length() > prefix.length() && isNumber(p.getProperty(key))) {
                out.put(key.substring(prefix.length()), number(p, key));
            }
        }
        return out;
    }

    private static boolean isNumber(String text) {
        return text != null && text.trim().matches("[0-9]{1,19}");
    }

    private static long number(Properties p, String key) {
        String text = p.getProperty(key);
        if (!isNumber(text)) {
            return 0;
        }
        try {
            return Long.parseLong(text.trim());
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
