package io.ivcuda.server.core;

import java.util.ArrayList;
import java.util.List;

/**
 * The bytes of the module-scope {@code .global} and {@code .const} variables a PTX text declares
 * ({@link ModuleFootprint}). A small scanner, not a PTX parser: it skips comments, strings and function bodies,
 * cuts the module scope into statements at {@code ;}, and for a statement declaring variables in one of those
 * state spaces adds element size × vector width × array length for each declarator (an unsized array: the
 * number of values of its initialiser). {@code .extern} declarations allocate nothing; a statement it does not
 * understand counts 0. The text ends at its first NUL or at {@code end}.
 */
final class PtxGlobals {
    private PtxGlobals() {
    }

    /** The statement being read: its text before any initialiser, and its initialiser's values counted. */
    private static final class Statement {
        final StringBuilder head = new StringBuilder();
        boolean overlong;
        boolean initialised;
        int initialiserDepth;
        long values;
        boolean valueStarted;

        void reset() {
            head.setLength(0);
            overlong = false;
            initialised = false;
            initialiserDepth = 0;
            values = 0;
            valueStarted = false;
        }

        void append(char c) {
            if (head.length() < ModuleFootprint.MAX_STATEMENT) {
                head.append(c);
            } else {
                overlong = true;
            }
        }
    }

    static long measure(ModuleFootprint.Bytes b, long start, long end) {
        long total = 0;
        Statement s = new Statement();
        int bodyDepth = 0;
        long i = start;
        while (i < end) {
            int c = b.get(i);
            if (c == 0) {
                break;
            }
            // comments and strings are skipped wherever they are (a string stands for a value in an initialiser)
            if (c == '/' && i + 1 < end && b.get(i + 1) == '/') {
                while (i < end && b.get(i) != '\n' && b.get(i) != 0) {
                    i++;
                }
                continue;
            }
            if (c == '/' && i + 1 < end && b.get(i + 1) == '*') {
                i += 2;
                while (i < end && b.get(i) != 0 && !(b.get(i) == '*' && i + 1 < end && b.get(i + 1) == '/')) {
                    i++;
                }
                i += 2;
                continue;
            }
            if (c == '"') {
                i++;
                while (i < end && b.get(i) != '"' && b.get(i) != 0) {
                    i++;
                }
                i++;
                if (bodyDepth == 0) {
                    s.append(' ');
                    s.valueStarted = s.initialised;
                }
                continue;
            }
            i++;
            if (bodyDepth > 0) {
                bodyDepth += c == '{' ? 1 : c == '}' ? -1 : 0;
                continue;
            }
            if (!s.initialised) {
                switch (c) {
                    case ';' -> {
                        total = ModuleFootprint.add(total, declared(s));
                        s.reset();
                    }
                    case '=' -> s.initialised = true;
                    case '{' -> {
                        // a function's body (.entry, .func): nothing in it is module scope
                        bodyDepth = 1;
                        s.reset();
                    }
                    case '}' -> s.reset();
                    default -> s.append((char) c);
                }
                continue;
            }
            switch (c) {
                case '{' -> s.initialiserDepth++;
                case '}' -> s.initialiserDepth--;
                case ',' -> {
                    if (s.valueStarted) {
                        s.values++;
                        s.valueStarted = false;
                    }
                }
                case ';' -> {
                    if (s.initialiserDepth <= 0) {
                        if (s.valueStarted) {
                            s.values++;
                        }
                        total = ModuleFootprint.add(total, declared(s));
                        s.reset();
                    }
                }
                default -> {
                    if (!Character.isWhitespace(c)) {
                        s.valueStarted = true;
                    }
                }
            }
        }
        return total;
    }

    /** The bytes a statement declares in .global or .const; 0 for any other statement. */
    static long declared(Statement s) {
        String head = s.head.toString();
        if (s.overlong || head.indexOf('(') >= 0) {
            return 0;
        }
        // directives without a ';' (.version, .target, .address_size, .file) end up before a declaration's own
        String[] tokens = head.trim().split("\\s+");
        int space = -1;
        for (int t = 0; t < tokens.length; t++) {
            if (tokens[t].equals(".global") || tokens[t].equals(".const")) {
                space = t;
                break;
            }
        }
        if (space < 0) {
            return 0;
        }
        for (int t = space - 1; t >= 0; t--) {
            String linkage = tokens[t];
            if (linkage.equals(".extern")) {
                return 0;
            }
            if (!linkage.equals(".visible") && !linkage.equals(".weak") && !linkage.equals(".common")) {
                break;
            }
        }
        int t = space + 1;
        long vector = 1;
        long element = 0;
        while (t < tokens.length) {
            String token = tokens[t++];
            if (token.equals(".align")) {
                t++;
            } else if (token.equals(".v2") || token.equals(".v4") || token.equals(".v8")) {
                vector = Long.parseLong(token.substring(2));
            } else {
                element = elementSize(token);
                break;
            }
        }
        if (element <= 0 || t >= tokens.length) {
            return 0;
        }
        StringBuilder rest = new StringBuilder();
        for (int r = t; r < tokens.length; r++) {
            rest.append(tokens[r]);
        }
        String[] declarators = rest.toString().split(",", -1);
        long total = 0;
        for (int d = 0; d < declarators.length; d++) {
            boolean last = d == declarators.length - 1;
            long bytes = declarator(declarators[d], element, vector, last && s.initialised ? s.values : -1);
            if (bytes < 0) {
                return 0;
            }
            total = ModuleFootprint.add(total, bytes);
        }
        return total;
    }

    /**
     * One declarator, {@code name} or {@code name[N][M]...}: element × vector × the lengths; an unsized array
     * takes {@code values} elements of its initialiser (-1: none, so it allocates nothing here). -1 when it is not
     * a declarator.
     */
    static long declarator(String text, long element, long vector, long values) {
        int bracket = text.indexOf('[');
        String name = bracket < 0 ? text : text.substring(0, bracket);
        if (name.isEmpty() || !name.matches("[A-Za-z_$%][A-Za-z0-9_$]*")) {
            return -1;
        }
        long count = 1;
        boolean unsized = false;
        List<String> dims = new ArrayList<>();
        int at = bracket;
        while (at >= 0 && at < text.length()) {
            int close = text.indexOf(']', at);
            if (text.charAt(at) != '[' || close < 0) {
                return -1;
            }
            dims.add(text.substring(at + 1, close));
            at = close + 1;
        }
        for (String dim : dims) {
            if (dim.isEmpty()) {
                unsized = true;
                continue;
            }
            long n = number(dim);
            if (n < 0) {
                return -1;
            }
            count = multiply(count, n);
        }
        if (unsized) {
            // the initialiser's values are scalars (a vector's components too): its length in elements
            return values < 0 ? 0 : multiply(values, element);
        }
        return multiply(multiply(count, vector), element);
    }

    private static long number(String text) {
        try {
            long n = text.startsWith("0x") || text.startsWith("0X") ? Long.parseLong(text.substring(2), 16)
                    : Long.parseLong(text);
            return n < 0 ? -1 : n;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static long multiply(long a, long b) {
        long high = Math.multiplyHigh(a, b);
        long product = a * b;
        return high != 0 || product < 0 ? Long.MAX_VALUE : product;
    }

    /** A fundamental type's size in bytes; 0 for one without a fixed size here (.texref, .samplerref, .surfref). */
    static long elementSize(String type) {
        return switch (type) {
            case ".b8", ".u8", ".s8", ".e4m3", ".e5m2", ".e2m3", ".e3m2", ".ue8m0" -> 1;
            case ".b16", ".u16", ".s16", ".f16", ".bf16", ".e4m3x2", ".e5m2x2" -> 2;
            case ".b32", ".u32", ".s32", ".f32", ".f16x2", ".bf16x2", ".tf32" -> 4;
            case ".b64", ".u64", ".s64", ".f64" -> 8;
            case ".b128" -> 16;
            default -> 0;
        };
    }
}
