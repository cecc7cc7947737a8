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
        try {
            String text = Files.readString(pipeDirectory.resolve(FILE), StandardCharsets.US_ASCII).trim();
            if (!text.matches("[0-9]{1,10}")) {
                return false;
            }
            return ProcessHandle.of(Long.parseLong(text)).map(ProcessHandle::isAlive).orElse(false);
        } catch (IOException e) {
            return false;
        }
    }
}
