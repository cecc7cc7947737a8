package io.ivcuda.provisioner;

import io.ivcuda.common.ServerProcesses;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The daemon's pidfile where no service manager keeps track of it ({@code daemon --pidfile}, the init
 * script): holds the pid while the daemon runs, refuses a second daemon while the pid in it is alive,
 * and goes when the daemon stops. A pidfile left by a daemon that died is taken over.
 */
final class Pidfile {
    private final Path path;
    private final String pid = Long.toString(ProcessHandle.current().pid());

    private Pidfile(Path path) {
        this.path = path;
    }

    static Pidfile claim(Path path) throws IOException {
        if (Files.isRegularFile(path)) {
            String other = Files.readString(path, StandardCharsets.US_ASCII).trim();
            if (other.matches("[0-9]{1,9}") && ServerProcesses.isAlive(Long.parseLong(other))) {
                throw new IOException("another provisioner daemon runs (pid " + other + " in " + path + ")");
            }
        }
        Files.createDirectories(path.toAbsolutePath().getParent());
        Pidfile pidfile = new Pidfile(path);
        Files.writeString(path, pidfile.pid + "\n", StandardCharsets.US_ASCII);
        return pidfile;
    }

    /** Removes the file if it still names this process. */
    void release() {
        try {
            if (Files.isRegularFile(path) && Files.readString(path, StandardCharsets.US_ASCII).trim().equals(pid)) {
                Files.delete(path);
            }
        } catch (IOException e) {
            // the shutdown goes on; a stale pidfile is taken over by the next start
        }
    }
}
