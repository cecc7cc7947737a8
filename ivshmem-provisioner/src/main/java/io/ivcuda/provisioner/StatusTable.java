package io.ivcuda.provisioner;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;

/** {@code ivshmem-provisioner status} as a person reads it: the host's three lines, then a table with headers. */
final class StatusTable {
    private static final String[] HEADERS = {"DOMAIN", "STATE", "PROVISIONING", "SERVER", "PID", "MODE", "REGION", "UPTIME",
        "PROCESSES", "CHANNELS", "GPU MEMORY", "SHARE", "CALLS", "ERRORS", "COPIED IN/OUT", "LAUNCHES", "BUSY", "LAST ERROR"};

    private StatusTable() {
    }

    static void print(StatusReport.Report report, PrintWriter out) {
        out.println("hook:        " + report.host().hook());
        out.println("libvirtd:    " + report.host().libvirtd());
        out.println("provisioner: " + report.host().daemon());
        out.println();
        if (report.domains().isEmpty()) {
            out.println("no domain is tagged with <ivcuda:gpu> (status --all lists every domain)");
            return;
        }
        List<String[]> rows = new ArrayList<>();
        rows.add(HEADERS);
        for (StatusReport.DomainStatus d : report.domains()) {
            StatusReport.Server s = d.server();
            String error = d.lastError() == null ? "-" : d.lastError();
            if (d.backend() != null || d.frontend() != null) {
                rows.add(new String[] {d.name(), d.state(), d.provisioning(), roleServer(d), "-", "-", "-", "-", "-", "-", "-", error});
                continue;
            }
            if (s == null) {
                rows.add(new String[] {d.name(), d.state(), d.provisioning(), "-", "-", "-", "-", "-", "-", "-", "-", error});
                continue;
            }
            rows.add(new String[] {d.name(), d.state(), d.provisioning(), s.state(), s.pid() == null ? "-" : s.pid().toString(),
                s.mode() == null ? "?" : s.mode(), s.regionSize() == null ? "?" : StatusReport.bytes(s.regionSize()),
                StatusReport.duration(s.uptimeSeconds()), processes(s), channels(s), memory(s), share(s),
                calls(s, VmFiguresTotals.CALLS), calls(s, VmFiguresTotals.ERRORS), copied(s), calls(s, VmFiguresTotals.LAUNCHES),
                busy(s), error});
        }
        int[] widths = new int[HEADERS.length];
        for (String[] row : rows) {
            for (int i = 0; i < row.length - 1; i++) {
                widths[i] = Math.max(widths[i], row[i].length());
            }
        }
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int i = 0; i < row.length; i++) {
                line.append(i == row.length - 1 ? row[i] : String.format("%-" + widths[i] + "s  ", row[i]));
            }
            out.println(line.toString().stripTrailing());
        }
        for (StatusReport.DomainStatus d : report.domains()) {
            if (d.backend() != null) {
                printBackend(d, out);
            }
        }
    }

    /** The SERVER cell of a back-end ({@code back-end, agent alive}) or front-end ({@code via gpu-be slot 2: SERVING}). */
    static String roleServer(StatusReport.DomainStatus d) {
        if (d.backend() != null) {
            return "back-end, agent " + d.backend().agent();
        }
        StatusReport.FrontendStatus f = d.frontend();
        if (f.slot() == null) {
            return "front-end, no slot";
        }
        return "via " + f.backend() + " slot " + f.slot() + ": " + (f.server() != null ? f.server()
                : f.slotState() == null ? "not started" : f.slotState());
    }

    /** Below the table, one block per back-end: its agent and each slot. */
    static void printBackend(StatusReport.DomainStatus d, PrintWriter out) {
        StatusReport.BackendStatus b = d.backend();
        out.println();
        out.println("back-end " + d.name() + ": " + b.slotCount() + " slots of " + StatusReport.bytes(b.slotSize())
                + (b.running() ? ", running" : ", not running") + "; agent " + b.agent()
                + (b.agentPid() == null ? "" : ", pid " + b.agentPid()) + (b.agentMessage() == null ? "" : " (" + b.agentMessage() + ")"));
        for (StatusReport.SlotStatus s : b.slots()) {
            out.println("  slot " + s.slot() + ": " + (s.frontend() == null ? "free" : s.frontend())
                    + (s.state() == null ? "" : ", " + s.state())
                    + (s.server() == null ? "" : ", server " + s.server()) + (s.serverPid() == null ? "" : " pid " + s.serverPid())
                    + (s.serverMessage() == null ? "" : " (" + s.serverMessage() + ")")
                    + (s.relay() == null ? "" : "; " + relay(s.relay())));
        }
    }

    /** {@code relay running pid 12 on SOCKET, peers 0 (back-end) pid 3, 1 (front-end) pid 4}. */
    static String relay(StatusReport.RelayStatus r) {
        StringBuilder text = new StringBuilder("relay ");
        switch (r.state()) {
            case StatusReport.RELAY_STALE -> text.append("STALE (no process; its socket or pidfile is left: the next start of "
                    + "the back-end or its doorbell front-end starts a new one)");
            case StatusReport.RELAY_NONE -> text.append("not running");
            default -> text.append(r.state()).append(" pid ").append(r.pid());
        }
        text.append(" on ").append(r.socket());
        if (r.pid() != null) {
            if (r.peers() == null) {
                text.append(", peers unknown");
            } else if (r.peers().isEmpty()) {
                text.append(", no peer connected");
            } else {
                text.append(", peers ").append(String.join(", ", r.peers().stream()
                        .map(p -> p.peer() + " (" + p.role() + ") pid " + p.pid()).toList()));
            }
        }
        return text.toString();
    }

    private static String processes(StatusReport.Server s) {
        if (s.pid() == null) {
            return "-";
        }
        if (s.channelsTotal() == null) {
            return "?";
        }
        return s.processes().isEmpty() ? "0" : s.processes().size() + " (" + String.join(",",
                s.processes().stream().map(String::valueOf).toList()) + ")";
    }

    private static String channels(StatusReport.Server s) {
        return s.channelsTotal() == null ? (s.pid() == null ? "-" : "?") : s.channelsAttached() + "/" + s.channelsTotal();
    }

    /** {@code 25% mps} (enforced), {@code 25% UNSHARED} (not enforced: the whole GPU), {@code 100%}; {@code ?} unknown. */
    static String share(StatusReport.Server s) {
        if (s.computeShare() == null) {
            return s.pid() == null ? "-" : "?";
        }
        String state = s.computeShareState() == null ? "" : s.computeShareState();
        return switch (state) {
            case "mps" -> s.computeShare() + "% mps";
            case "unshared" -> s.computeShare() + "% UNSHARED";
            default -> s.computeShare() + "%";
        };
    }

    private enum VmFiguresTotals { CALLS, ERRORS, LAUNCHES }

    private static String calls(StatusReport.Server s, VmFiguresTotals which) {
        if (s.calls() == null) {
            return s.pid() == null ? "-" : "?";
        }
        return Long.toString(switch (which) {
            case CALLS -> s.calls().calls();
            case ERRORS -> s.calls().errors();
            case LAUNCHES -> s.calls().launches();
        });
    }

    private static String copied(StatusReport.Server s) {
        if (s.calls() == null) {
            return s.pid() == null ? "-" : "?";
        }
        return StatusReport.bytes(s.calls().bytesToDevice()) + "/" + StatusReport.bytes(s.calls().bytesToHost());
    }

    private static String busy(StatusReport.Server s) {
        if (s.calls() == null) {
            return s.pid() == null ? "-" : "?";
        }
        return String.format(java.util.Locale.ROOT, "%.1fs", s.calls().busyNanos() / 1e9);
    }

    private static String memory(StatusReport.Server s) {
        if (s.memoryHeld() == null) {
            return s.pid() == null ? "-" : "?";
        }
        if (s.memoryQuota() == null || s.memoryQuota() == 0) {
            return StatusReport.bytes(s.memoryHeld()) + " (no quota)";
        }
        return StatusReport.bytes(s.memoryHeld()) + " of " + StatusReport.bytes(s.memoryQuota());
    }
}
