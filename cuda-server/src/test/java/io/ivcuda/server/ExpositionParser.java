package io.ivcuda.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * TEST ONLY: reads the Prometheus text format (version 0.0.4) strictly and fails on anything that does not
 * follow it: every line is a {@code # HELP}, a {@code # TYPE} or a sample; a family's TYPE comes before its
 * samples and once; a counter's samples end in {@code _total}; label values are quoted with the format's
 * escapes; every value is a number. What it returns lets a test look samples up by name and labels.
 */
final class ExpositionParser {
    private static final Pattern NAME = Pattern.compile("[a-zA-Z_:][a-zA-Z0-9_:]*");
    private static final Pattern SAMPLE = Pattern.compile("([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{(.*)\\})? (\\S+)( -?[0-9]+)?");
    private static final Pattern LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\\\n]|\\\\[\\\\\"n])*)\"(,|$)");

    record Sample(String name, Map<String, String> labels, double value) {
    }

    final Map<String, String> types = new HashMap<>();
    final List<Sample> samples = new ArrayList<>();

    static ExpositionParser parse(String text) {
        ExpositionParser p = new ExpositionParser();
        assertTrue(text.endsWith("\n"), "the exposition ends with a newline");
        String family = null;
        for (String line : text.split("\n")) {
            if (line.startsWith("# HELP ")) {
                String name = line.substring(7).split(" ", 2)[0];
                assertTrue(NAME.matcher(name).matches(), line);
            } else if (line.startsWith("# TYPE ")) {
                String[] w = line.substring(7).split(" ");
                assertEquals(2, w.length, line);
                assertTrue(List.of("counter", "gauge", "histogram", "summary", "untyped").contains(w[1]), line);
                assertTrue(p.types.put(w[0], w[1]) == null, "one TYPE line per family: " + line);
                family = w[0];
            } else {
                assertTrue(!line.startsWith("#") && !line.isEmpty(), "not a line of the format: '" + line + "'");
                Matcher m = SAMPLE.matcher(line);
                assertTrue(m.matches(), "not a sample: " + line);
                String name = m.group(1);
                String type = p.types.get(family);
                assertTrue(family != null && (name.equals(family) || name.equals(family + "_total")),
                        "sample " + name + " outside its family " + family);
                if ("counter".equals(type)) {
                    assertTrue(name.endsWith("_total"), "a counter's sample ends in _total: " + line);
                }
                Map<String, String> labels = new LinkedHashMap<>();
                if (m.group(3) != null) {
                    Matcher l = LABEL.matcher(m.group(3));
                    int at = 0;
                    while (at < m.group(3).length()) {
                        assertTrue(l.find(at) && l.start() == at, "bad labels: " + line);
                        labels.put(l.group(1), l.group(2).replace("\\\"", "\"").replace("\\n", "\n").replace("\\\\", "\\"));
                        at = l.end();
                    }
                }
                double value = Double.parseDouble(m.group(4));
                p.samples.add(new Sample(name, labels, value));
            }
        }
        return p;
    }

    /** The value of the one sample {@code name} whose labels include {@code labels}; fails if none or several. */
    double value(String name, Map<String, String> labels) {
        List<Sample> found = samples.stream().filter(s -> s.name().equals(name)
                && s.labels().entrySet().containsAll(labels.entrySet())).toList();
        assertEquals(1, found.size(), name + labels + " in " + samples);
        return found.get(0).value();
    }

    /** How many samples are named {@code name}. */
    long count(String name) {
        return samples.stream().filter(s -> s.name().equals(name)).count();
    }
}
