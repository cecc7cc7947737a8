package io.ivcuda.api;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The layout part of the description language ({@code layout … end}, {@code values}; see the
 * header of api/region.layout). Strict like the rest: fields must be naturally aligned, in
 * ascending order, without overlap and inside the layout, so that a typo cannot silently move a
 * word onto another one's cache line or bytes.
 */
final class LayoutParser {
    private static final Pattern CHARS = Pattern.compile("char\\[(\\d+)]");
    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9_]*");
    private static final Pattern CONSTANT = Pattern.compile("[A-Z][A-Z0-9_]*");

    private final Map<String, Building> layouts = new LinkedHashMap<>();
    private final Set<String> prefixes = new HashSet<>();
    private Building open;

    /** A layout being read: its fields so far, its values. */
    private static final class Building {
        final String name;
        final String prefix;
        final String sizeName;
        final int size;
        final List<LayoutField> fields = new ArrayList<>();
        final List<FieldValue> values = new ArrayList<>();
        int end;

        Building(String name, String prefix, String sizeName, int size) {
            this.name = name;
            this.prefix = prefix;
            this.sizeName = sizeName;
            this.size = size;
        }
    }

    /** Whether the line belongs to the layout language: inside a block, or one of its keywords. */
    boolean accepts(String[] words) {
        return open != null || words[0].equals("layout") || words[0].equals("values");
    }

    void line(String[] words) {
        if (open != null) {
            if (words[0].equals("end")) {
                expect(words, 1, "end");
                layouts.put(open.name, open);
                open = null;
            } else {
                field(words);
            }
            return;
        }
        switch (words[0]) {
            case "layout" -> begin(words);
            case "values" -> values(words);
            default -> throw new IllegalStateException(words[0]);
        }
    }

    private void begin(String[] words) {
        expect(words, 5, "layout <name> <prefix> <size-name> <bytes>");
        String name = name(words[1]);
        if (layouts.containsKey(name)) {
            throw new IllegalArgumentException("layout " + name + " described twice");
        }
        String prefix = constant(words[2]);
        if (!prefixes.add(prefix)) {
            throw new IllegalArgumentException("prefix " + prefix + " used by two layouts");
        }
        boolean varies = words[4].equals("-");
        if (varies != words[3].equals("-")) {
            throw new IllegalArgumentException("layout " + name + ": a size name needs a size, and a size a name");
        }
        int size = varies ? -1 : Integer.decode(words[4]);
        if (!varies && (size <= 0 || size % 8 != 0)) {
            throw new IllegalArgumentException("layout " + name + ": size " + size + " is not a positive multiple of 8");
        }
        open = new Building(name, prefix, varies ? null : constant(words[3]), size);
    }

    private void field(String[] words) {
        boolean shared = words.length == 4 && words[3].equals("shared");
        if (words.length != 3 && !shared) {
            throw new IllegalArgumentException("malformed field: <offset> <type> <name> [shared]");
        }
        int offset = Integer.decode(words[0]);
        String name = name(words[2]);
        LayoutField.Type type;
        int length;
        Matcher chars = CHARS.matcher(words[1]);
        switch (words[1]) {
            case "i32" -> { type = LayoutField.Type.I32; length = 4; }
            case "u32" -> { type = LayoutField.Type.U32; length = 4; }
            case "u64" -> { type = LayoutField.Type.U64; length = 8; }
            case "area" -> { type = LayoutField.Type.AREA; length = 0; }
            default -> {
                if (!chars.matches()) {
                    throw new IllegalArgumentException("unknown field type '" + words[1] + "'");
                }
                type = LayoutField.Type.CHARS;
                length = Integer.parseInt(chars.group(1));
            }
        }
        if (shared && !(type == LayoutField.Type.U32 || type == LayoutField.Type.U64)) {
            throw new IllegalArgumentException(name + ": only u32 and u64 fields can be shared");
        }
        int alignment = type == LayoutField.Type.CHARS ? 1 : type == LayoutField.Type.AREA ? 8 : length;
        if (offset % alignment != 0) {
            throw new IllegalArgumentException(name + ": offset " + hex(offset) + " is not " + alignment + "-byte aligned");
        }
        if (offset < open.end) {
            throw new IllegalArgumentException(name + ": offset " + hex(offset) + " overlaps the field before (ends at "
                    + hex(open.end) + ")");
        }
        if (!open.fields.isEmpty() && open.fields.get(open.fields.size() - 1).type() == LayoutField.Type.AREA) {
            throw new IllegalArgumentException(name + ": nothing follows an area");
        }
        if (open.fields.stream().anyMatch(f -> f.name().equals(name))) {
            throw new IllegalArgumentException("field " + name + " twice in layout " + open.name);
        }
        if (open.size >= 0 && offset + length > open.size) {
            throw new IllegalArgumentException(name + ": ends at " + hex(offset + length) + ", beyond the layout's "
                    + open.size + " bytes");
        }
        open.fields.add(new LayoutField(offset, type, name, length, shared));
        open.end = offset + length;
    }

    private void values(String[] words) {
        if (words.length < 4) {
            throw new IllegalArgumentException("malformed values line: values <layout>.<field> <prefix>|- NAME=value ...");
        }
        int dot = words[1].indexOf('.');
        Building layout = dot < 0 ? null : layouts.get(words[1].substring(0, dot));
        if (layout == null) {
            throw new IllegalArgumentException("values of '" + words[1] + "': no such layout (described before?)");
        }
        String fieldName = words[1].substring(dot + 1);
        LayoutField field = layout.fields.stream().filter(f -> f.name().equals(fieldName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("layout " + layout.name + " has no field " + fieldName));
        if (!field.isNumber()) {
            throw new IllegalArgumentException(words[1] + ": only numbers have named values");
        }
        String prefix = words[2].equals("-") ? null : constant(words[2]);
        for (int w = 3; w < words.length; w++) {
            int eq = words[w].indexOf('=');
            if (eq < 0) {
                throw new IllegalArgumentException("value '" + words[w] + "' needs NAME=value");
            }
            String name = constant(words[w].substring(0, eq));
            long value = Long.decode(words[w].substring(eq + 1));
            if (field.type() != LayoutField.Type.U64 && (value < Integer.MIN_VALUE || value > 0xffffffffL)) {
                throw new IllegalArgumentException(name + " = " + value + " does not fit the 32-bit field " + fieldName);
            }
            FieldValue v = new FieldValue(field, prefix, name, value);
            if (layout.values.stream().anyMatch(o -> o.constantName().equals(v.constantName()))) {
                throw new IllegalArgumentException("value " + v.constantName() + " named twice");
            }
            layout.values.add(v);
        }
    }

    List<WireLayout> finish(String sourceName) {
        if (open != null) {
            throw new IllegalArgumentException(sourceName + ": layout " + open.name + " has no 'end'");
        }
        List<WireLayout> result = new ArrayList<>();
        for (Building b : layouts.values()) {
            result.add(new WireLayout(b.name, b.prefix, b.sizeName, b.size, List.copyOf(b.fields), List.copyOf(b.values)));
        }
        return List.copyOf(result);
    }

    private static String name(String word) {
        if (!NAME.matcher(word).matches()) {
            throw new IllegalArgumentException("'" + word + "' is not a lower-case name");
        }
        return word;
    }

    private static String constant(String word) {
        if (!CONSTANT.matcher(word).matches()) {
            throw new IllegalArgumentException("'" + word + "' is not an upper-case name");
        }
        return word;
    }

    private static void expect(String[] words, int count, String form) {
        if (words.length != count) {
            throw new IllegalArgumentException("malformed line, expected: " + form);
        }
    }

    static String hex(int value) {
        return String.format("0x%03X", value);
    }
}
