package io.ivcuda.api;

import java.util.Locale;
import java.util.Set;

/** How the description's names and types are spelled in the generated Java (server and tests). */
final class JavaNames {
    static final String PACKAGE = "io.ivcuda.server.gen";
    static final int MAX_INSTR = 4096;

    /** Java's keywords, and the generated code's own names (in, r, h, c, off, len): a parameter so named gets a _. */
    private static final Set<String> JAVA_KEYWORDS = Set.of("abstract", "assert", "boolean", "break", "byte",
            "case", "catch", "char", "class", "const", "continue", "default", "do", "double", "else", "enum",
            "extends", "final", "finally", "float", "for", "goto", "if", "implements", "import", "instanceof",
            "int", "interface", "long", "native", "new", "package", "private", "protected", "public", "return",
            "short", "static", "strictfp", "super", "switch", "synchronized", "this", "throw", "throws",
            "transient", "try", "void", "volatile", "while", "var", "record", "yield", "in", "r", "h", "c", "off", "len");

    private JavaNames() {
    }

    static String constantName(String name) {
        return name.replaceAll("([a-z0-9])([A-Z])", "$1_$2").toUpperCase(Locale.ROOT);
    }

    static String javaName(String name) {
        return JAVA_KEYWORDS.contains(name) ? name + "_" : name;
    }

    static boolean needsBuffer(Function f) {
        return f.requestParams().stream().anyMatch(p -> p.direction() == Direction.INBUF
                || (p.direction() == Direction.IN && p.type().wire() == WireKind.BYTES));
    }

    static String javaType(TypeInfo t) {
        return switch (t.wire()) {
            case I32, U32 -> "int";
            case I64, U64, HANDLE -> "long";
            case F32 -> "float";
            case BYTES -> "int";
        };
    }
}
