package io.ivcuda.common;

import com.sun.jna.Library;
import com.sun.jna.Memory;
import com.sun.jna.Native;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.core.Appender;
import org.apache.logging.log4j.core.Core;
import org.apache.logging.log4j.core.Filter;
import org.apache.logging.log4j.core.Layout;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.logging.log4j.core.config.plugins.Plugin;
import org.apache.logging.log4j.core.config.plugins.PluginAttribute;
import org.apache.logging.log4j.core.config.plugins.PluginElement;
import org.apache.logging.log4j.core.config.plugins.PluginFactory;
import org.apache.logging.log4j.core.layout.PatternLayout;

/**
 * Log4j appender {@code <LibcSyslog name="…" identity="…">}: hands every event to the C library's
 * {@code syslog(3)}, which sends it to {@code /dev/log} — journald on a systemd host
 * ({@code journalctl -t IDENTITY}), rsyslog or another syslog daemon elsewhere. Log4j's own
 * SyslogAppender speaks only UDP and TCP, which neither journald nor a default rsyslog listens on;
 * glibc's syslog is the well-kept client of the local socket (reconnects, datagram or stream).
 * Facility daemon; the identity and the pid go with every message.
 */
@Plugin(name = "LibcSyslog", category = Core.CATEGORY_NAME, elementType = Appender.ELEMENT_TYPE, printObject = true)
public final class LibcSyslogAppender extends AbstractAppender {
    private static final int LOG_PID = 0x01;
    private static final int LOG_DAEMON = 3 << 3;
    private static final int LOG_ERR = 3;
    private static final int LOG_WARNING = 4;
    private static final int LOG_INFO = 6;
    private static final int LOG_DEBUG = 7;

    /** The C library's syslog functions. */
    interface LibC extends Library {
        void openlog(Memory ident, int option, int facility);

        void syslog(int priority, String format, Object... args);
    }

    private static LibC libc;
    /** openlog keeps the pointer, not a copy: the identity must live as long as the process. */
    private static Memory identity;

    private LibcSyslogAppender(String name, Layout<? extends Serializable> layout, Filter filter) {
        super(name, filter, layout, true, Property.EMPTY_ARRAY);
    }

    @PluginFactory
    public static LibcSyslogAppender create(@PluginAttribute("name") String name, @PluginAttribute("identity") String ident,
                                            @PluginElement("Layout") Layout<? extends Serializable> layout,
                                            @PluginElement("Filter") Filter filter) {
        open(ident == null || ident.isBlank() ? "ivcuda" : ident);
        return new LibcSyslogAppender(name == null ? "syslog" : name,
                layout != null ? layout : PatternLayout.newBuilder().withPattern("%msg").build(), filter);
    }

    private static synchronized void open(String ident) {
        if (libc == null) {
            libc = Native.load("c", LibC.class);
        }
        byte[] bytes = ident.getBytes(StandardCharsets.UTF_8);
        Memory memory = new Memory(bytes.length + 1L);
        memory.write(0, bytes, 0, bytes.length);
        memory.setByte(bytes.length, (byte) 0);
        libc.openlog(memory, LOG_PID, LOG_DAEMON);
        identity = memory;
    }

    @Override
    public void append(LogEvent event) {
        Serializable formatted = getLayout().toSerializable(event);
        String text = formatted instanceof String s ? s : String.valueOf(formatted);
        // one event, one record: a stack trace's lines go with it, not as records of their own
        libc.syslog(LOG_DAEMON | priority(event.getLevel()), "%s", text.stripTrailing());
    }

    static int priority(Level level) {
        if (level.isMoreSpecificThan(Level.ERROR)) {
            return LOG_ERR;
        }
        if (level.isMoreSpecificThan(Level.WARN)) {
            return LOG_WARNING;
        }
        return level.isMoreSpecificThan(Level.INFO) ? LOG_INFO : LOG_DEBUG;
    }
}
