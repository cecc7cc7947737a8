package io.ivcuda.api;

/**
 * A named value of a layout field, e.g. READY of header.server_state.
 *
 * @param field  the field it is a value of
 * @param prefix the prefix of its constant ({@code STATE} → IVC_STATE_READY), or null for none
 * @param name   the value's name
 * @param value  the value
 */
public record FieldValue(LayoutField field, String prefix, String name, long value) {

    /** The constant's name without the language's own prefix: STATE_READY, MAGIC. */
    public String constantName() {
        return prefix == null ? name : prefix + "_" + name;
    }
}
