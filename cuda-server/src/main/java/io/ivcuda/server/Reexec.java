package io.ivcuda.server;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import com.sun.jna.StringArray;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Replaces this process's image by a fresh start of itself: the same executable
 * ({@code /proc/self/exe}), the same arguments ({@code /proc/self/cmdline}), the same pid — so the
 * hook's pidfile, systemd's unit and the region stay what they were — and a CUDA driver that never
 * saw the fatal fault. Every descriptor above stderr is marked close-on-exec first: the driver's
 * device files among them, which would otherwise keep the old, unusable GPU state alive in the new
 * image. Two environment variables tell the new process it is a recovery ({@link #RECOVERIES},
 * {@link #RECOVERED_FROM}).
 */
final class Reexec {
    /** How many times this server replaced its CUDA process (status {@code recoveries}). */
    static final String RECOVERIES = "IVCUDA_SERVER_RECOVERIES";
    /** The fault the last replacement recovered from (its log line). */
    static final String RECOVERED_FROM = "IVCUDA_SERVER_RECOVERED_FROM";
    /** Where the previous image mapped the region (hex): the new one asks for the same address. */
    static final String REGION_ADDRESS = "IVCUDA_SERVER_REGION_ADDRESS";
    private static final int F_SETFD = 2;
    private static final int FD_CLOEXEC = 1;

    static {
        Native.register(Platform.C_LIBRARY_NAME);
    }

    private Reexec() {
    }

    private static native int execve(String path, Pointer argv, Pointer envp) throws LastErrorException;

    private static native int fcntl(int fd, int cmd, int arg) throws LastErrorException;

    /** This process's arguments, argv[0] included, as the kernel keeps them. */
    static List<String> commandLine() throws IOException {
        byte[] raw = Files.readAllBytes(Path.of("/proc/self/cmdline"));
        List<String> args = new ArrayList<>();
        int start = 0;
        for (int i = 0; i < raw.length; i++) {
            if (raw[i] == 0) {
                args.add(new String(raw, start, i - start, StandardCharsets.UTF_8));
                start = i + 1;
            }
        }
        if (start < raw.length) {
            args.add(new String(raw, start, raw.length - start, StandardCharsets.UTF_8));
        }
        return args;
    }

    /** The environment of the new image: this one's, with the recovery's count and cause. */
    static String[] environment(Map<String, String> current, String fault, long regionAddress) {
        return environment(current, fault, regionAddress, null);
    }

    /** As above, with the replacements' times for the next image's {@link RecoveryBudget} (null: unchanged). */
    static String[] environment(Map<String, String> current, String fault, long regionAddress, String recoveryTimes) {
        Map<String, String> env = new TreeMap<>(current);
        if (recoveryTimes != null) {
            env.put(RecoveryBudget.TIMES, recoveryTimes);
        }
        int before = recoveries(current);
        env.put(RECOVERIES, Integer.toString(before + 1));
        env.put(RECOVERED_FROM, fault.replace('\n', ' '));
        env.put(REGION_ADDRESS, Long.toHexString(regionAddress));
        return env.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()).toArray(String[]::new);
    }

    /** Where the previous image mapped the region (0: no previous image, or no usable value). */
    static long regionAddress(Map<String, String> env) {
        String text = env.get(REGION_ADDRESS);
        if (text == null || text.isEmpty() || text.length() > 16) {
            return 0;
        }
        try {
            long address = Long.parseUnsignedLong(text, 16);
            return address % 4096 == 0 ? address : 0;
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** How many times the server replaced its CUDA process before this image (0: it never did). */
    static int recoveries(Map<String, String> env) {
        try {
            return Math.max(0, Integer.parseInt(env.getOrDefault(RECOVERIES, "0")));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * Execs: returns only when it failed (the reason). The caller has stopped everything that must
     * not be cut short and flushed its logging.
     */
    static String exec(String fault, long regionAddress, String recoveryTimes) {
        List<String> args;
        try {
            args = commandLine();
            try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
                for (Path p : fds.toList()) {
                    int fd = Integer.parseInt(p.getFileName().toString());
                    if (fd > 2) {
                        try {
                            fcntl(fd, F_SETFD, FD_CLOEXEC);
                        } catch (LastErrorException closedMeanwhile) {
                            // the listing's own descriptor, or one closed since: nothing to keep from the new image
                        }
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            return "cannot read this process's command line or descriptors: " + e.getMessage();
        }
        if (args.isEmpty()) {
            return "/proc/self/cmdline is empty";
        }
        try {
            execve("/proc/self/exe", new StringArray(args.toArray(new String[0])),
                    new StringArray(environment(System.getenv(), fault, regionAddress, recoveryTimes)));
            return "execve returned";
        } catch (LastErrorException e) {
            return "execve failed: errno " + e.getErrorCode();
        }
    }
}
