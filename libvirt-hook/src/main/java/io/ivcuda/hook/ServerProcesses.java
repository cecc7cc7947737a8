package io.ivcuda.hook;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Finds a VM's server processes by their command line: every server gets
 * {@code --config /run/ivcuda/U.properties}, which no other process has. Unlike a pidfile this
 * survives a server that died before writing one, and is safe against pid reuse.
 */
final class ServerProcesses {
    private static final Path PROC = Path.of("/proc");

    private ServerProcesses() {
    }

    static List<Long> find(Path instanceConfig) {
        String wanted = instanceConfig.toString();
        List<Long> pids = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC, "[0-9]*")) {
            for (Path entry : entries) {
                long pid = Long.parseLong(entry.getFileName().toString());
                if (hasArgument(entry, wanted) && isAlive(pid)) {
                    pids.add(pid);
                }
            }
        } catch (IOException e) {
            // /proc unreadable: nothing found; the caller reports what it expected.
        }
        return pids;
    }

    private static boolean hasArgument(Path procEntry, String wanted) {
        try {
            byte[] cmdline = Files.readAllBytes(procEntry.resolve("cmdline"));
            for (String argument : new String(cmdline, StandardCharsets.UTF_8).split("\0")) {
                if (argument.equals(wanted)) {
                    return true;
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone meanwhile, or not ours to read
        }
        return false;
    }

    /** Alive and not a zombie (a zombie's parent may never reap it, e.g. in a container without init). */
    static boolean isAlive(long pid) {
        try {
            String stat = Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat"));
            int afterName = stat.lastIndexOf(')');
            char state = stat.charAt(afterName + 2);
            return state != 'Z' && state != 'X';
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** SIGTERM, wait up to {@code timeoutMs}, then SIGKILL. Bounded. */
    static void terminate(List<Long> pids, long timeoutMs) {
        for (long pid : pids) {
            ProcessHandle.of(pid).ifPresent(ProcessHandle::destroy);
        }
        long deadline = System.nanoTime() + timeoutMs * 1_000_000;
        while (pids.stream().anyMatch(ServerProcesses::isAlive) && System.nanoTime() < deadline) {
            sleep(20);
        }
        for (long pid : pids) {
            if (isAlive(pid)) {
                ProcessHandle.of(pid).ifPresent(ProcessHandle::destroyForcibly);
            }
        }
        long killDeadline = System.nanoTime() + 2_000_000_000L;
        while (pids.stream().anyMatch(ServerProcesses::isAlive) && System.nanoTime() < killDeadline) {
            sleep(20);
        }
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
