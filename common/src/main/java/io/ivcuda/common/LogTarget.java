package io.ivcuda.common;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where hook and provisioner log, chosen before the first logger exists: the logging configurations
 * ({@code templates/log4j2-hook.xml}, {@code log4j2-provisioner.xml}) select their appender on the
 * system property {@code ivcuda.log.target}; {@code ivcuda.log.file} names the file for {@link #FILE}.
 */
public enum LogTarget {
    /** glibc's syslog(3) to /dev/log: the journal or the syslog daemon ({@link LibcSyslogAppender}). */
    SYSLOG,
    /** Standard error: a systemd service's stderr is its journal. */
    STDERR,
    /** A file (the hook where there is no /dev/log; {@code daemon --log FILE}). */
    FILE,
    /** Nowhere (a command's output already says everything, and there is no syslog to keep a record). */
    NONE;

    public static final String PROPERTY = "ivcuda.log.target";
    public static final String FILE_PROPERTY = "ivcuda.log.file";
    static final Path DEV_LOG = Path.of("/dev/log");

    /** Whether a syslog daemon or journald listens on /dev/log. */
    public static boolean syslogListening() {
        return Files.exists(DEV_LOG);
    }

    /** Whether stderr goes to the journal (systemd sets JOURNAL_STREAM for a service's output). */
    public static boolean stderrIsJournal() {
        return System.getenv("JOURNAL_STREAM") != null;
    }

    /**
     * Selects this target (and, for {@link #FILE}, the file) unless the system properties already name
     * one ({@code -Divcuda.log.target=…}, tests); also points Log4j at {@code resource}, or at
     * {@code override} where the admin has one.
     */
    public void select(Path file, String resource, Path override) {
        if (System.getProperty(PROPERTY) == null) {
            System.setProperty(PROPERTY, name().toLowerCase(java.util.Locale.ROOT));
            if (file != null) {
                System.setProperty(FILE_PROPERTY, file.toString());
            }
        }
        if (System.getProperty("log4j2.configurationFile") == null) {
            System.setProperty("log4j2.configurationFile", Files.isReadable(override) ? override.toString() : resource);
        }
    }
}
