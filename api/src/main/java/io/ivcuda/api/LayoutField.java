package io.ivcuda.api;

/**
 * One field of a {@link WireLayout}.
 *
 * @param offset from the layout's start
 * @param type   how it is stored
 * @param name   the protocol's name, e.g. {@code req_seq}
 * @param length bytes: 4 or 8 for numbers, n for {@code char[n]}, 0 for an area's start
 * @param shared both sides touch it while the other runs: it gets ordered accessors
 */
public record LayoutField(int offset, Type type, String name, int length, boolean shared) {

    /** Field types of the layout language. */
    public enum Type {
        I32, U32, U64, CHARS, AREA;

        /** The spelling in the description and in docs/protocol.md's tables. */
        public String spelling(int length) {
            return this == CHARS ? "char[" + length + "]" : name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    public String spelling() {
        return type.spelling(length);
    }

    public boolean isNumber() {
        return type == Type.I32 || type == Type.U32 || type == Type.U64;
    }
}
