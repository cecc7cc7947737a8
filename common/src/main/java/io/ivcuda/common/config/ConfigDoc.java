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

    static final String TEMPLATE_BEGIN = "# BEGIN generated from ServerKeys (ConfigDoc; TemplatesTest -Divcuda.docs.write=true rewrites it)";
    static final String TEMPLATE_END = "# END generated from ServerKeys";

    /**
     * The cuda-server section of templates/ivcuda.properties: each key an administrator may set (all but
     * {@link ServerKeys#WRITTEN_BY_HOOK}) as its documentation in comment lines and {@code #key=default}.
     */
    public static String templateSection() {
        StringBuilder b = new StringBuilder(TEMPLATE_BEGIN).append('\n');
        b.append("# --- cuda-server keys (docs/operations.md, \"cuda-server keys\") ---------------------------------------\n");
        StringBuilder perVm = new StringBuilder();
        for (ConfigKey<?> key : ServerKeys.WRITTEN_BY_HOOK) {
            perVm.append(perVm.length() == 0 ? "" : ", ").append(key.name());
        }
        comment(b, perVm + " come from the hook's /run/ivcuda/<uuid>.properties: do not set them here.");
        for (ConfigKey<?> key : ServerKeys.ALL.keys()) {
            if (ServerKeys.WRITTEN_BY_HOOK.contains(key)) {
                continue;
            }
            comment(b, key.doc().replace("`", "") + " [" + values(key) + "]");
            b.append('#').append(key.name()).append('=').append(key.defaultValue() == null ? "" : formatted(key)).append('\n');
        }
        return b.append(TEMPLATE_END).append('\n').toString();
    }

    private static <T> String formatted(ConfigKey<T> key) {
        return key.format(key.defaultValue());
    }

    /** {@code text} as comment lines of at most 100 characters, in ASCII (the file is an admin's to edit anywhere). */
    private static void comment(StringBuilder b, String text) {
        String ascii = text.replace("→", "->").replace("–", "..").replace("≥ ", ">= ").replace("§", "section ")
                .replace("…", "...");
        StringBuilder line = new StringBuilder("#");
        for (String word : ascii.split(" ")) {
            if (line.length() > 1 && line.length() + 1 + word.length() > 100) {
                b.append(line).append('\n');
                line = new StringBuilder("#");
            }
            line.append(' ').append(word);
        }
        b.append(line).append('\n');
    }

    /** {@code template} with its generated section written anew (from the begin marker to the end marker). */
    public static String rewriteTemplate(String template) {
        int from = template.indexOf(TEMPLATE_BEGIN);
        int to = template.indexOf(TEMPLATE_END);
        if (from < 0 || to < from) {
            throw new IllegalArgumentException("no generated section: put the lines\n" + TEMPLATE_BEGIN + "\n"
                    + TEMPLATE_END + "\nwhere the cuda-server keys belong");
        }
        return template.substring(0, from) + templateSection() + template.substring(template.indexOf('\n', to) + 1);
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
