package io.ivcuda.common;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import de.bwaldvogel.log4j.SystemdJournalAppender;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.apache.logging.log4j.ThreadContext;
import org.apache.logging.log4j.core.Appender;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.ConsoleAppender;
import org.apache.logging.log4j.core.appender.FileAppender;
import org.apache.logging.log4j.core.appender.NullAppender;
import org.apache.logging.log4j.core.appender.SyslogAppender;
import org.apache.logging.log4j.core.config.ConfigurationSource;
import org.apache.logging.log4j.core.config.xml.XmlConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The shipped logging configurations (templates/log4j2-hook.xml, log4j2-provisioner.xml) with LogTarget's
 * choice: the journal's appender where journald's socket exists, the file (or, chosen in the template,
 * Log4j's Syslog appender) where it does not. Each configuration is loaded into a context of its own, as
 * the hook and the provisioner load it.
 */
class LogTemplatesTest {
    private static final Path TEMPLATES = Path.of("..").toAbsolutePath().normalize().resolve("templates");

    @TempDir
    Path dir;
    private LoggerContext context;

    @AfterEach
    void clear() {
        if (context != null) {
            context.stop();
        }
        System.clearProperty(LogTarget.PROPERTY);
        System.clearProperty(LogTarget.FILE_PROPERTY);
        ThreadContext.clearMap();
    }

    @Test
    void hookLogsToTheJournalWhereJournaldsSocketExists() throws IOException {
        Path socket = Files.createFile(dir.resolve("socket"));
        LogTarget target = LogTarget.journalOr(LogTarget.FILE, socket);
        assertEquals(LogTarget.JOURNAL, target, "libsystemd loads here (the build hosts' Debian has libsystemd0)");

        Map<String, Appender> appenders = load("log4j2-hook.xml", target, null);
        assertEquals(1, appenders.size(), appenders.toString());
        assertInstanceOf(SystemdJournalAppender.class, appenders.values().iterator().next());
    }

    @Test
    void hookLogsToItsFileWhereJournaldDoesNotRun() throws IOException {
        LogTarget target = LogTarget.journalOr(LogTarget.FILE, dir.resolve("no-socket"));
        assertEquals(LogTarget.FILE, target);

        Path file = dir.resolve("hook.log");
        Map<String, Appender> appenders = load("log4j2-hook.xml", target, file);
        assertEquals(1, appenders.size(), appenders.toString());
        assertInstanceOf(FileAppender.class, appenders.values().iterator().next());
        context.getLogger("io.ivcuda.hook.Hook").error("vm1 prepare: refused for the test");
        context.stop();
        context = null;
        assertTrue(Files.readString(file).matches("(?s).* ERROR \\[[0-9]+\\] vm1 prepare: refused for the test\n"), Files.readString(file));
    }

    @Test
    void hookSendsToTheSyslogDaemonWhenTheTemplateSaysSo() throws IOException {
        try (DatagramSocket daemon = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
            daemon.setSoTimeout(10_000);
            // the admin's edit (docs/operations.md), and the test's own port instead of 514
            String xml = template("log4j2-hook.xml")
                    .replace("<Property name=\"without.journal\">file</Property>", "<Property name=\"without.journal\">syslog</Property>")
                    .replace("port=\"514\"", "port=\"" + daemon.getLocalPort() + "\"");
            Map<String, Appender> appenders = load(xml, LogTarget.journalOr(LogTarget.FILE, dir.resolve("no-socket")),
                    dir.resolve("hook.log"));
            assertInstanceOf(SyslogAppender.class, appenders.values().iterator().next());
            ThreadContext.put("domain", "vm1");
            context.getLogger("io.ivcuda.hook.Hook").error("vm1 prepare: refused for the test");

            DatagramPacket packet = new DatagramPacket(new byte[4096], 4096);
            daemon.receive(packet);
            String record = new String(packet.getData(), 0, packet.getLength(), StandardCharsets.UTF_8);
            // RFC 5424: <facility daemon (3) * 8 + error (3)>1 TIME HOST APP-NAME …
            assertTrue(record.startsWith("<27>1 "), record);
            assertTrue(record.contains(" ivcuda-hook "), record);
            assertTrue(record.contains("[ivcuda@32473 domain=\"vm1\"]"), record);
            assertTrue(record.contains("vm1 prepare: refused for the test"), record);
            assertTrue(Files.notExists(dir.resolve("hook.log")), "the file stays empty when syslog is chosen");
        }
    }

    @Test
    void provisionerChoosesByTarget() throws IOException {
        assertInstanceOf(SystemdJournalAppender.class, only(load("log4j2-provisioner.xml", LogTarget.JOURNAL, null)));
        context.stop();
        assertInstanceOf(NullAppender.class, only(load("log4j2-provisioner.xml", LogTarget.NONE, null)));
        context.stop();
        assertInstanceOf(ConsoleAppender.class, only(load("log4j2-provisioner.xml", LogTarget.STDERR, null)));
        context.stop();
        assertInstanceOf(FileAppender.class, only(load("log4j2-provisioner.xml", LogTarget.FILE, dir.resolve("p.log"))));
    }

    @Test
    void aJournalThatRunsWithoutItsLibraryFallsBackAndSaysWhy() throws IOException {
        Path socket = Files.createFile(dir.resolve("socket"));
        assertEquals(LogTarget.FILE, LogTarget.journalOr(LogTarget.FILE, socket, "ivcuda-no-such-library"));
        String note = LogTarget.fallbackNote;
        LogTarget.fallbackNote = null;
        assertTrue(note != null && note.startsWith("journald runs (" + socket + ") but libivcuda-no-such-library cannot be "
                + "loaded (") && note.endsWith("): logging here instead of the journal"), note);
    }

    private static Appender only(Map<String, Appender> appenders) {
        assertEquals(1, appenders.size(), appenders.toString());
        return appenders.values().iterator().next();
    }

    private static String template(String name) throws IOException {
        return Files.readString(TEMPLATES.resolve(name));
    }

    /** Loads a template (by name) or XML text with {@code target} chosen; the root logger's appenders. */
    private Map<String, Appender> load(String templateOrXml, LogTarget target, Path file) throws IOException {
        String xml = templateOrXml.startsWith("<") ? templateOrXml : template(templateOrXml);
        System.setProperty(LogTarget.PROPERTY, target.name().toLowerCase(java.util.Locale.ROOT));
        if (file != null) {
            System.setProperty(LogTarget.FILE_PROPERTY, file.toString());
        }
        context = new LoggerContext("LogTemplatesTest");
        XmlConfiguration configuration = new XmlConfiguration(context,
                new ConfigurationSource(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8))));
        context.start(configuration);
        return context.getConfiguration().getRootLogger().getAppenders();
    }
}
