package io.ivcuda.common;

import com.sun.jna.NativeLibrary;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.logging.log4j.LogManager;

/**
 * Where hook and provisioner log, chosen before the first logger exists: the logging configurations
 * ({@code templates/log4j2-hook.xml}, {@code log4j2-provisioner.xml}) select their appender on the
 * system property {@code ivcuda.log.target}; {@code ivcuda.log.file} names the file for {@link #FILE}.
 * The appenders are Log4j's own and the journal's plugin (de.bwaldvogel log4j-systemd-journal-appender);
 * this class only decides which one.
 */
public enum LogTarget {
    /** The journal, through libsystemd's sd_journal_send ({@code <SystemdJournal>}): {@code journalctl -t IDENTIFIER}. */
    JOURNAL,
    /** Standard error: a systemd service's stderr is its journal. */
    STDERR,
    /**
     * A file (the hook where journald does not run; {@code daemon --log FILE}), or Log4j's Syslog appender
     * where the admin chose it in the template for hosts without journald.
     */
    FILE,
    /** Nowhere (a command's output already says everything, and there is no journal to keep a record). */
    NONE;

    public static final String PROPERTY = "ivcuda.log.target";
    public static final String FILE_PROPERTY = "ivcuda.log.file";
    /** journald's native socket: it exists exactly while journald runs. */
    public static final Path JOURNAL_SOCKET = Path.of("/run/systemd/journal/socket");

    /** Said once in the log that was chosen instead of the journal, when journald runs but cannot be written to. */
    static volatile String fallbackNote;

    /**
     * {@link #JOURNAL} where journald runs ({@code socket} exists) and libsystemd loads, else {@code fallback}.
     * A journal that runs but cannot be used (no libsystemd.so.0, or JNA cannot load it) must not break the
     * hook or the provisioner: they log to the fallback, whose first line says why ({@link #select}).
     */
    public static LogTarget journalOr(LogTarget fallback, Path socket) {
        return journalOr(fallback, socket, "systemd");
    }

    /** {@link #journalOr(LogTarget, Path)} with the journal's library by name (tests: one that does not exist). */
    static LogTarget journalOr(LogTarget fallback, Path socket, String library) {
        if (!Files.exists(socket)) {
            return fallback;
        }
        String problem = libraryProblem(library);
        if (problem == null) {
            return JOURNAL;
        }
        fallbackNote = "journald runs (" + socket + ") but " + problem + ": logging here instead of the journal";
        return fallback;
    }

    /** Whether the journal appender can load its library (libsystemd): null when it can, else why not. */
    static String libraryProblem(String library) {
        try {
            // the appender loads the same library by the same name (JNA keeps one instance per name)
            NativeLibrary.getInstance(library);
            return null;
        } catch (UnsatisfiedLinkError | RuntimeException e) {
            String why = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().lines().findFirst().orElse("");
            return "lib" + library + " cannot be loaded (" + why + ")";
        }
    }

    /** Whether stderr goes to the journal (systemd sets JOURNAL_STREAM for a service's output). */
    public static boolean stderrIsJournal() {
        return System.getenv("JOURNAL_STREAM") != null;
    }

    /** Whether the journal is what this process logs to (for messages that say where the log is). */
    public static boolean isJournal() {
        return JOURNAL.name().equalsIgnoreCase(System.getProperty(PROPERTY));
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
        String note = fallbackNote;
        // NONE keeps the note: the provisioner's daemon chooses again later, for a log that is kept
        if (note != null && (this == FILE || this == STDERR)) {
            fallbackNote = null;
            LogManager.getLogger(LogTarget.class).warn(note);
        }
    }
}
