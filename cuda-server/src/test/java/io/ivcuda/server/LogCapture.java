package io.ivcuda.server;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

/**
 * Every line the server's loggers write at INFO and above while it is open: the tests count what a
 * hostile guest makes the server log. While it is open only ERROR lines are printed.
 */
final class LogCapture extends AbstractAppender implements AutoCloseable {
    private final ConcurrentLinkedQueue<LogEvent> events = new ConcurrentLinkedQueue<>();
    private final java.util.concurrent.atomic.AtomicLong warnings = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong errors = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong all = new java.util.concurrent.atomic.AtomicLong();
    private final LoggerConfig config;

    LogCapture() {
        super("capture-" + System.nanoTime(), null, null, true, Property.EMPTY_ARRAY);
        LoggerContext context = (LoggerContext) LogManager.getContext(false);
        Configuration c = context.getConfiguration();
        // Not additive: what a hostile guest provokes is counted here, not printed (the fuzzer's
        // refusals written to the console cost it throughput). ERROR and above, a server bug, still
        // reach the configuration's own appenders.
        config = new LoggerConfig("io.ivcuda.server", Level.INFO, false);
        start();
        config.addAppender(this, Level.INFO, null);
        c.getRootLogger().getAppenders().values().forEach(a -> config.addAppender(a, Level.ERROR, null));
        c.addLogger("io.ivcuda.server", config);
        context.updateLoggers();
    }

    @Override
    public void append(LogEvent event) {
        long n = all.incrementAndGet();
        if (event.getLevel() == Level.WARN) {
            warnings.incrementAndGet();
        } else if (event.getLevel().isMoreSpecificThan(Level.ERROR)) {
            errors.incrementAndGet();
        }
        if (n <= 10_000) { // the count, not events.size(): that walks the whole queue
            events.add(event.toImmutable());
        }
    }

    /** Lines at INFO and above. */
    long total() {
        return all.get();
    }

    /** Lines at WARN, or at ERROR and above. */
    long count(Level level) {
        return level == Level.WARN ? warnings.get() : errors.get();
    }

    List<String> lines() {
        List<String> out = new ArrayList<>();
        events.forEach(e -> out.add(e.getLevel() + " " + e.getMessage().getFormattedMessage()));
        return out;
    }

    @Override
    public void close() {
        LoggerContext context = (LoggerContext) LogManager.getContext(false);
        context.getConfiguration().removeLogger("io.ivcuda.server");
        context.updateLoggers();
        stop();
    }
}
