package io.ivcuda.hook;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Whether an MPS control daemon serves a pipe directory: it writes its pid to
 * {@code nvidia-cuda-mps-control.pid} there (NVIDIA's MPS documentation), which outlives a daemon that was
 * killed, so the process must be alive too.
 */
final class MpsDaemonPid {
    static final String FILE = "nvidia-cuda-mps-control.pid";

    private MpsDaemonPid() {
    }

    static boolean alive(Path pipeDirectory) {
        long pid = recorded(pipeDirectory);
        return pid > 0 && ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false);
    }

    /** The pid the daemon wrote in its pipe directory, or -1 (none, or not a pid). */
    static long recorded(Path pipeDirectory) {
        try {
            String text = Files.readString(pipeDirectory.resolve(FILE), StandardCharsets.US_ASCII).trim();
            return text.matches("[0-9]{1,10}") ? Long.parseLong(text) : -1;
        } catch (IOException e) {
            return -1;
        }
    }
}
