package io.ivcuda.common.config;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The key tables of docs/operations.md, written from the declarations ({@link ServerKeys}, {@link HostKeys}):
 * each table stands between a begin and an end marker naming its {@link KeySet}, and ConfigDocTest fails when
 * the document differs from what this writes (run it with {@code -Divcuda.docs.write=true} to rewrite them).
 */
public final class ConfigDoc {
    private ConfigDoc() {
    }

    static String begin(KeySet keys) {
        return "<!-- BEGIN generated key table: " + keys.title()
                + " (ConfigDoc; mvn -pl common test -Dtest=ConfigDocTest -Divcuda.docs.write=true rewrites it) -->";
    }

    static String end(KeySet keys) {
        return "<!-- END generated key table: " + keys.title() + " -->";
    }

    /** The Markdown table of {@code keys}: key, default, values (type and bounds), meaning. */
    public static String table(KeySet keys) {
        StringBuilder b = new StringBuilder("| key | default | values | meaning |\n|---|---|---|---|\n");
        for (ConfigKey<?> key : keys.keys()) {
            b.append("| `").append(key.name()).append("` | ").append(shown(key)).append(" | ")
                    .append(values(key)).append(" | ").append(key.doc()).append(" |\n");
        }
        return b.toString();
    }

    /** The default as code ({@code `1500`}); a word standing for one ({@code auto}, {@code —}) as text. */
    private static String shown(ConfigKey<?> key) {
        String text = key.shownDefault();
        boolean word = key.defaultValue() == null || (key.hasShownDefault() && text.chars().noneMatch(Character::isDigit));
        return word ? text : "`" + text + "`";
    }

    private static String values(ConfigKey<?> key) {
        String type = key.type().describe();
        if (!key.bounded()) {
            return type;
        }
        boolean bytes = key.type() == KeyType.BYTES;
        String min = bytes ? bytes(key.min()) : Long.toString(key.min());
        if (key.max() == Long.MAX_VALUE) {
            return type + ", ≥ " + min;
        }
        return type + ", " + min + "–" + (bytes ? bytes(key.max()) : Long.toString(key.max()));
    }

    /** {@code 1M}, {@code 64T}: a bound as a person writes it. */
    private static String bytes(long n) {
        String[] units = {"T", "G", "M", "K"};
        int[] shifts = {40, 30, 20, 10};
        for (int i = 0; i < units.length; i++) {
            if (n != 0 && n % (1L << shifts[i]) == 0) {
                return (n >> shifts[i]) + units[i];
            }
        }
        return Long.toString(n);
    }

    /** {@code doc} with the table of {@code keys} between its markers written anew; the markers must be there. */
    public static String rewrite(String doc, KeySet keys) {
        Matcher m = Pattern.compile(Pattern.quote(begin(keys)) + "\n.*?" + Pattern.quote(end(keys)), Pattern.DOTALL).matcher(doc);
        if (!m.find()) {
            throw new IllegalArgumentException("no generated key table for " + keys.title() + ": put the lines\n"
                    + begin(keys) + "\n" + end(keys) + "\nwhere it belongs");
        }
        return doc.substring(0, m.start()) + begin(keys) + "\n" + table(keys) + end(keys) + doc.substring(m.end());
    }
}
