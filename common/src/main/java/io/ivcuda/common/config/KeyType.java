package io.ivcuda.common.config;

import io.ivcuda.common.ByteSize;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * How a configuration value is written and read: one parser and one printer per kind of value, so that
 * every consumer (server, hook, provisioner) reads {@code 256M}, {@code 1500} or {@code doorbell} the same
 * way. {@link #parse} throws {@link IllegalArgumentException} with a few words saying why; the caller
 * ({@link Settings}) adds key, value and file.
 */
public interface KeyType<T> {
    T parse(String text);

    /** The text that {@link #parse} reads back as {@code value} (what the hook writes into an instance file). */
    String format(T value);

    /** A few words for the documentation: {@code bytes (K, M, G, T)}, {@code plain or doorbell}. */
    String describe();

    /** A number as whole: {@code Long.decode}, so {@code 0x100000} is read as it always was. */
    KeyType<Long> NUMBER = new KeyType<>() {
        @Override
        public Long parse(String text) {
            try {
                return Long.decode(text.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("is not a number");
            }
        }

        @Override
        public String format(Long value) {
            return Long.toString(value);
        }

        @Override
        public String describe() {
            return "number";
        }
    };

    /** A byte count: {@code 268435456}, {@code 256M}, {@code 4G} (binary units, {@link ByteSize}); hexadecimal as before. */
    KeyType<Long> BYTES = new KeyType<>() {
        @Override
        public Long parse(String text) {
            String t = text.trim();
            if (t.startsWith("0x") || t.startsWith("0X") || t.startsWith("#")) {
                return NUMBER.parse(t);
            }
            try {
                return ByteSize.parse(t);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("is not a byte count (" + e.getMessage() + ")");
            }
        }

        @Override
        public String format(Long value) {
            return Long.toString(value);
        }

        @Override
        public String describe() {
            return "bytes (K, M, G, T)";
        }
    };

    /** Free text, trimmed. */
    KeyType<String> TEXT = new KeyType<>() {
        @Override
        public String parse(String text) {
            return text.trim();
        }

        @Override
        public String format(String value) {
            return value;
        }

        @Override
        public String describe() {
            return "text";
        }
    };

    KeyType<Path> PATH = new KeyType<>() {
        @Override
        public Path parse(String text) {
            String t = text.trim();
            if (t.isEmpty()) {
                throw new IllegalArgumentException("is empty (a path is needed)");
            }
            try {
                return Path.of(t);
            } catch (RuntimeException e) {
                throw new IllegalArgumentException("is not a path");
            }
        }

        @Override
        public String format(Path value) {
            return value.toString();
        }

        @Override
        public String describe() {
            return "path";
        }
    };

    /**
     * A duration counted in {@code unit} (the key's name says which: {@code .ms}, {@code .us}): a plain
     * number in that unit, or one with a unit of its own ({@code 2s}, {@code 1500ms}, {@code 500us},
     * {@code 1min}) that converts exactly.
     */
    static KeyType<Long> duration(TimeUnit unit) {
        return new KeyType<>() {
            @Override
            public Long parse(String text) {
                String t = text.trim().toLowerCase(Locale.ROOT);
                int digits = 0;
                while (digits < t.length() && (Character.isDigit(t.charAt(digits)) || (digits == 0 && t.charAt(0) == '-'))) {
                    digits++;
                }
                String suffix = t.substring(digits).trim();
                if (suffix.isEmpty()) {
                    return NUMBER.parse(t);
                }
                TimeUnit given = switch (suffix) {
                    case "us" -> TimeUnit.MICROSECONDS;
                    case "ms" -> TimeUnit.MILLISECONDS;
                    case "s" -> TimeUnit.SECONDS;
                    case "min" -> TimeUnit.MINUTES;
                    case "h" -> TimeUnit.HOURS;
                    default -> throw new IllegalArgumentException("is not a duration (a number of " + unitWord(unit)
                            + ", or with us, ms, s, min, h)");
                };
                long n = NUMBER.parse(t.substring(0, digits));
                long converted = unit.convert(n, given);
                if (given.convert(converted, unit) != n || converted == Long.MAX_VALUE || converted == Long.MIN_VALUE) {
                    throw new IllegalArgumentException("is not a whole number of " + unitWord(unit));
                }
                return converted;
            }

            @Override
            public String format(Long value) {
                return Long.toString(value);
            }

            @Override
            public String describe() {
                return unitWord(unit);
            }
        };
    }

    private static String unitWord(TimeUnit unit) {
        return switch (unit) {
            case MICROSECONDS -> "microseconds";
            case MILLISECONDS -> "milliseconds";
            case SECONDS -> "seconds";
            default -> unit.name().toLowerCase(Locale.ROOT);
        };
    }

    /** One of an enum's words ({@code word} gives each constant's), case-insensitive. */
    static <E extends Enum<E>> KeyType<E> words(Class<E> type, Function<E, String> word) {
        return new KeyType<>() {
            @Override
            public E parse(String text) {
                String t = text.trim().toLowerCase(Locale.ROOT);
                for (E e : type.getEnumConstants()) {
                    if (word.apply(e).equals(t)) {
                        return e;
                    }
                }
                throw new IllegalArgumentException("is not " + describe());
            }

            @Override
            public String format(E value) {
                return word.apply(value);
            }

            @Override
            public String describe() {
                String[] all = Arrays.stream(type.getEnumConstants()).map(word).toArray(String[]::new);
                return all.length == 1 ? all[0] : Arrays.stream(all, 0, all.length - 1).collect(Collectors.joining(", "))
                        + " or " + all[all.length - 1];
            }
        };
    }
}
