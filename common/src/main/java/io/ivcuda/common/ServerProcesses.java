package io.ivcuda.common;

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
 * survives a server that died before writing one, and is safe against pid reuse. The hook stops
 * servers with it; {@code ivshmem-provisioner status} reads their pid and start time.
 */
public final class ServerProcesses {
    private static final Path PROC = Path.of("/proc");

    private ServerProcesses() {
    }

    public static List<Long> find(Path instanceConfig) {
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

    /** Processes with an argument that starts with {@code prefix} (a server configuration in the runtime directory). */
    public static List<Long> findWithPrefix(String prefix) {
        return findWithArgument(argument -> argument.startsWith(prefix) && argument.endsWith(".properties"));
    }

    /**
     * Back-end slot relays (docs/backend-domains.md): processes with an argument that is a relay's socket in
     * {@code runtimeDir}, {@code relay-<back-end uuid>-slot<k>.sock} ({@link BackendPaths#relaySocket}).
     */
    public static List<Long> findRelays(Path runtimeDir) {
        String prefix = runtimeDir.resolve("relay-").toString();
        return findWithArgument(argument -> argument.startsWith(prefix) && argument.endsWith(".sock"));
    }

    private static List<Long> findWithArgument(java.util.function.Predicate<String> test) {
        List<Long> pids = new ArrayList<>();
        long self = ProcessHandle.current().pid();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC, "[0-9]*")) {
            for (Path entry : entries) {
                long pid = Long.parseLong(entry.getFileName().toString());
                if (pid != self && matches(entry, test) && isAlive(pid)) {
                    pids.add(pid);
                }
            }
        } catch (IOException e) {
            // /proc unreadable: nothing found
        }
        return pids;
    }

    /**
     * Processes whose command line matches one of {@code alternatives}: every word of it is one of the
     * process's arguments, as given or as the last part of a path ({@code libvirtd} matches
     * {@code /usr/sbin/libvirtd}). For status: is libvirtd there, is the provisioner daemon.
     */
    @SafeVarargs
    public static List<Long> findCommand(List<String>... alternatives) {
        List<Long> pids = new ArrayList<>();
        long self = ProcessHandle.current().pid();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC, "[0-9]*")) {
            for (Path entry : entries) {
                long pid = Long.parseLong(entry.getFileName().toString());
                List<String> arguments = arguments(entry);
                for (List<String> words : alternatives) {
                    if (pid != self && !arguments.isEmpty() && words.stream().allMatch(w -> arguments.stream()
                            .anyMatch(a -> a.equals(w) || a.endsWith("/" + w))) && isAlive(pid)) {
                        pids.add(pid);
                        break;
                    }
                }
            }
        } catch (IOException e) {
            // /proc unreadable: nothing found
        }
        java.util.Collections.sort(pids);
        return pids;
    }

    private static List<String> arguments(Path procEntry) {
        try {
            byte[] cmdline = Files.readAllBytes(procEntry.resolve("cmdline"));
            return cmdline.length == 0 ? List.of() : List.of(new String(cmdline, StandardCharsets.UTF_8).split("\0"));
        } catch (IOException | RuntimeException e) {
            return List.of();
        }
    }

    private static boolean hasArgument(Path procEntry, String wanted) {
        return matches(procEntry, wanted::equals);
    }

    private static boolean matches(Path procEntry, java.util.function.Predicate<String> test) {
        try {
            byte[] cmdline = Files.readAllBytes(procEntry.resolve("cmdline"));
            for (String argument : new String(cmdline, StandardCharsets.UTF_8).split("\0")) {
                if (test.test(argument)) {
                    return true;
                }
            }
        } catch (IOException | RuntimeException e) {
            // gone meanwhile, or not ours to read
        }
        return false;
    }

    /** Alive and not a zombie (a zombie's parent may never reap it, e.g. in a container without init). */
    public static boolean isAlive(long pid) {
        try {
            String stat = Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat"));
            int afterName = stat.lastIndexOf(')');
            char state = stat.charAt(afterName + 2);
            return state != 'Z' && state != 'X';
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** When the process started (the kernel's record, through the JDK); null when it is gone or unreadable. */
    public static java.time.Instant startTime(long pid) {
        return ProcessHandle.of(pid).flatMap(p -> p.info().startInstant()).orElse(null);
    }

    /** SIGTERM, wait up to {@code timeoutMs}, then SIGKILL. Bounded. */
    public static void terminate(List<Long> pids, long timeoutMs) {
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

    public static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
