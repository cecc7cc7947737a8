package io.ivcuda.hook;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.Logger;

/**
 * Stops the MPS control daemon the direct launcher started (package removal, {@code --stop-all}): without
 * systemd nothing else would, and a daemon left running as the server's user keeps that user from being
 * removed at purge. The launcher leaves {@value #MARKER} in the runtime directory when it starts one, so a
 * daemon the admin runs (another pipe directory, another user, or one that ran before ours was needed) is
 * never touched: NVIDIA's documented stop first ({@code quit} on {@code nvidia-cuda-mps-control}'s stdin),
 * SIGTERM and then SIGKILL only to the MPS processes of the server's user that serve our pipe directory.
 */
final class MpsDaemonStop {
    private static final Logger LOG = LogManager.getLogger(MpsDaemonStop.class);

    /** In the runtime directory: the pipe and log directories of the daemon the launcher started, one a line. */
    static final String MARKER = "mps-daemon.started";

    /** The control pipe the daemon keeps in its pipe directory (NVIDIA's MPS documentation). */
    static final String CONTROL_PIPE = "control";

    /** How long {@code quit} (and then SIGTERM) may take: the daemon stops its servers first. */
    static final long QUIT_WAIT_MS = 5_000;

    /** Linux keeps the first 15 bytes of a program's name in /proc/PID/comm. */
    private static final int COMM_LENGTH = 15;
    private static final String MPS_SERVER = "nvidia-cuda-mps-server";

    private MpsDaemonStop() {
    }

    /** Records that the launcher started the daemon of {@code pipe} (and {@code log}). */
    static void recordStarted(Path runtimeDir, Path pipe, Path log) throws IOException {
        Files.writeString(runtimeDir.resolve(MARKER), pipe + "\n" + log + "\n", StandardCharsets.UTF_8);
    }

    /**
     * Stops the daemon {@link #recordStarted} recorded, saying on {@code out} one line per action; the
     * {@code asUser} prefix runs a command as the server's user. False when an MPS process of ours still
     * runs afterwards.
     */
    static boolean stop(Path runtimeDir, String control, String serverUser, List<String> asUser, PrintStream out) {
        Path marker = runtimeDir.resolve(MARKER);
        List<String> dirs;
        try {
            dirs = Files.readAllLines(marker, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return true; // the launcher started none
        }
        if (dirs.size() < 2 || !Path.of(dirs.get(0)).isAbsolute() || !Path.of(dirs.get(1)).isAbsolute()) {
            out.println("ivcuda: " + marker + " does not name the MPS pipe and log directories; no MPS daemon stopped");
            return true;
        }
        Path pipe = Path.of(dirs.get(0));
        long pid = MpsDaemonPid.recorded(pipe);
        if (!running(pipe, pid)) {
            out.println("ivcuda: the MPS control daemon ivcuda started (pipe directory " + pipe + ") no longer runs");
            removePipeDirectory(pipe, serverUser, out);
            deleteQuietly(marker);
            return true;
        }
        String quit = sendQuit(control, pipe, Path.of(dirs.get(1)), asUser);
        if (waitGone(pipe, pid, QUIT_WAIT_MS)) {
            out.println("ivcuda: stopped the MPS control daemon (pipe directory " + pipe + ") with 'quit'");
            removePipeDirectory(pipe, serverUser, out);
            deleteQuietly(marker);
            return true;
        }
        String controlName = Path.of(control).getFileName().toString();
        for (String signal : List.of("SIGTERM", "SIGKILL")) {
            List<ProcessHandle> left = ours(pipe, serverUser, controlName);
            if (left.isEmpty() && !running(pipe, pid)) {
                break;
            }
            out.println("ivcuda: the MPS control daemon (pipe directory " + pipe + ") did not stop on 'quit'"
                    + (quit == null ? "" : " (" + quit + ")") + ": " + signal + " to " + left.stream().map(ProcessHandle::pid).toList());
            for (ProcessHandle p : left) {
                if (signal.equals("SIGTERM")) {
                    p.destroy();
                } else {
                    p.destroyForcibly();
                }
            }
            waitGone(pipe, pid, QUIT_WAIT_MS);
        }
        boolean gone = ours(pipe, serverUser, controlName).isEmpty() && !ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
        if (gone) {
            removePipeDirectory(pipe, serverUser, out);
            deleteQuietly(marker);
        } else {
            out.println("ivcuda: could not stop the MPS control daemon (pipe directory " + pipe + ")");
        }
        return gone;
    }

    /**
     * The pipe directory of a stopped daemon: what the daemon left there (files of the server's user; no
     * subdirectory is followed), then the directory once empty — a configured directory that holds anything
     * else stays, said on {@code out}. The log directory stays for the admin to read (a purge removes it).
     */
    private static void removePipeDirectory(Path pipe, String serverUser, PrintStream out) {
        if (!Files.isDirectory(pipe, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (var entries = Files.newDirectoryStream(pipe)) {
            for (Path entry : entries) {
                if (!Files.isDirectory(entry, java.nio.file.LinkOption.NOFOLLOW_LINKS)
                        && serverUser.equals(Files.getOwner(entry, java.nio.file.LinkOption.NOFOLLOW_LINKS).getName())) {
                    Files.delete(entry);
                }
            }
            Files.delete(pipe);
            out.println("ivcuda: removed the MPS pipe directory " + pipe);
        } catch (IOException e) {
            out.println("ivcuda: left the MPS pipe directory " + pipe + " (" + e + ")");
        }
    }

    /** {@code echo quit | control} as the server's user, bounded; null when it ran, else what went wrong. */
    private static String sendQuit(String control, Path pipe, Path log, List<String> asUser) {
        List<String> command = new ArrayList<>(asUser);
        command.addAll(List.of("sh", "-c", "echo quit | exec " + control, "ivcuda-mps-quit"));
        ProcessBuilder builder = new ProcessBuilder(command).redirectInput(new File("/dev/null"))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectErrorStream(true);
        builder.environment().put(io.ivcuda.common.MpsEnvironment.PIPE_DIRECTORY, pipe.toString());
        builder.environment().put(io.ivcuda.common.MpsEnvironment.LOG_DIRECTORY, log.toString());
        try {
            Process process = builder.start();
            if (!process.waitFor(QUIT_WAIT_MS, TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                return control + " did not return within " + QUIT_WAIT_MS + " ms";
            }
            return process.exitValue() == 0 ? null : control + " exited with status " + process.exitValue();
        } catch (IOException e) {
            return "cannot run " + control + ": " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    /** Its recorded pid is alive, or (none recorded) its control pipe is still there. */
    private static boolean running(Path pipe, long pid) {
        if (pid > 0) {
            return ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
        }
        return Files.exists(pipe.resolve(CONTROL_PIPE));
    }

    private static boolean waitGone(Path pipe, long pid, long ms) {
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ms);
        while (running(pipe, pid)) {
            if (System.nanoTime() > end) {
                return false;
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /**
     * The MPS control daemon and servers of ours: run by the server's user, named like the control program
     * or nvidia-cuda-mps-server, with our pipe directory in their environment (the servers inherit it from
     * the daemon) — an admin's daemon with another pipe directory or user is not among them.
     */
    static List<ProcessHandle> ours(Path pipe, String serverUser, String controlName) {
        List<String> names = List.of(comm(controlName), comm(MPS_SERVER));
        String wanted = io.ivcuda.common.MpsEnvironment.PIPE_DIRECTORY + "=" + pipe;
        long self = ProcessHandle.current().pid();
        return ProcessHandle.allProcesses()
                .filter(p -> p.pid() != self && serverUser.equals(p.info().user().orElse(null)))
                .filter(p -> names.contains(read(Path.of("/proc", Long.toString(p.pid()), "comm")).trim()))
                .filter(p -> List.of(read(Path.of("/proc", Long.toString(p.pid()), "environ")).split("\0")).contains(wanted))
                .toList();
    }

    private static String comm(String name) {
        return name.length() <= COMM_LENGTH ? name : name.substring(0, COMM_LENGTH);
    }

    private static String read(Path file) {
        try {
            return Files.readString(file, StandardCharsets.ISO_8859_1); // every byte a char: an environment need not be UTF-8
        } catch (IOException | RuntimeException e) {
            return ""; // the process ended, or is not ours to read
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException e) {
            LOG.warn("cannot remove {}: {}", file, e.getMessage());
        }
    }
}
