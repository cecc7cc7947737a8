package io.ivcuda.common.config;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One configuration key, declared once (in {@link ServerKeys} or {@link HostKeys}): its name, how its value
 * is read ({@link KeyType}), its default, its bounds and one line of documentation. Everything else —
 * reading, checking, the instance file the hook writes, the key tables of docs/operations.md — takes the
 * key from here, so no key is spelled twice.
 *
 * <p>A name with {@code <n>} in it ({@code gpu.<n>.capacity}) is a family: {@code <n>} stands for an index
 * of up to four digits.
 *
 * @param <T> the value's type
 */
public final class ConfigKey<T> {
    private static final String INDEX = "<n>";

    private final String name;
    private final KeyType<T> type;
    private final T defaultValue;
    private final String shownDefault;
    private final long min;
    private final long max;
    private final String doc;
    private final Pattern family;

    private ConfigKey(String name, KeyType<T> type, T defaultValue, String shownDefault, long min, long max, String doc) {
        this.name = name;
        this.type = type;
        this.defaultValue = defaultValue;
        this.shownDefault = shownDefault;
        this.min = min;
        this.max = max;
        this.doc = doc;
        this.family = name.contains(INDEX)
                ? Pattern.compile(Pattern.quote(name).replace(INDEX, "\\E([0-9]{1,4})\\Q")) : null;
    }

    /** A key of {@code type} with a default ({@code null}: none; the consumer decides what absence means). */
    public static <T> ConfigKey<T> of(String name, KeyType<T> type, T defaultValue, String doc) {
        return new ConfigKey<>(name, type, defaultValue, null, Long.MIN_VALUE, Long.MAX_VALUE, doc);
    }

    /** This key with numeric bounds, checked when a configuration is loaded (values of a {@code Long} type only). */
    public ConfigKey<T> range(long minimum, long maximum) {
        return new ConfigKey<>(name, type, defaultValue, shownDefault, minimum, maximum, doc);
    }

    /** This key with the default as the documentation shows it ({@code auto}, {@code derived}) instead of its value. */
    public ConfigKey<T> shown(String text) {
        return new ConfigKey<>(name, type, defaultValue, text, min, max, doc);
    }

    public String name() {
        return name;
    }

    public KeyType<T> type() {
        return type;
    }

    /** The default, or null when the key has none. */
    public T defaultValue() {
        return defaultValue;
    }

    public String doc() {
        return doc;
    }

    public boolean bounded() {
        return min != Long.MIN_VALUE || max != Long.MAX_VALUE;
    }

    public long min() {
        return min;
    }

    public long max() {
        return max;
    }

    /** The default as documented: the shown text, else the formatted value, else {@code —}. */
    public String shownDefault() {
        if (shownDefault != null) {
            return shownDefault;
        }
        return defaultValue == null ? "—" : type.format(defaultValue);
    }

    /** Whether the documentation shows a word ({@link #shown}) instead of the default's value. */
    public boolean hasShownDefault() {
        return shownDefault != null;
    }

    /** Whether this is a family ({@code gpu.<n>.uuid}). */
    public boolean isFamily() {
        return family != null;
    }

    /** Whether {@code key} is this key (or, for a family, one of its members). */
    public boolean matches(String key) {
        return family == null ? name.equals(key) : family.matcher(key).matches();
    }

    /** The index of a family member ({@code 3} of {@code gpu.3.uuid}); -1 when {@code key} is no member. */
    public int indexOf(String key) {
        if (family == null) {
            return -1;
        }
        Matcher m = family.matcher(key);
        return m.matches() ? Integer.parseInt(m.group(1)) : -1;
    }

    /** The name of member {@code index} of a family. */
    public String member(int index) {
        return name.replace(INDEX, Integer.toString(index));
    }

    /**
     * Reads {@code text} as this key's value and checks the bounds.
     *
     * @throws IllegalArgumentException with a few words saying why (without key or file)
     */
    public T parse(String text) {
        T value = type.parse(text);
        if (bounded() && value instanceof Long n && (n < min || n > max)) {
            throw new IllegalArgumentException(max == Long.MAX_VALUE ? "must be at least " + min : "is not in " + min + ".." + max);
        }
        return value;
    }

    /** The text {@link #parse} reads back as {@code value}. */
    public String format(T value) {
        return type.format(value);
    }

    /** Sets this key to {@code value} in {@code properties}, written as {@link #parse} reads it back. */
    public void set(java.util.Properties properties, T value) {
        properties.setProperty(name, format(value));
    }

    /** This key's value in {@code properties} as written, or null (for readers of files the server or hook wrote). */
    public String textIn(java.util.Properties properties) {
        return properties.getProperty(name);
    }

    @Override
    public String toString() {
        return name;
    }
}
