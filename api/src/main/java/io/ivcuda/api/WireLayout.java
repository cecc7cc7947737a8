package io.ivcuda.api;

import java.util.List;

/**
 * One layout of the region (api/region.layout): the header page, a channel's control words, the
 * request, response and ring-record headers.
 *
 * @param name     the layout's name, e.g. {@code header}
 * @param prefix   the prefix of its C offset constants ({@code IVC_<prefix>_<FIELD>})
 * @param sizeName the C name of its size ({@code IVC_<sizeName>}), or null when its size varies
 * @param size     its size in bytes, or -1 when it varies
 * @param fields   its fields, by offset
 * @param values   named values of its fields
 */
public record WireLayout(String name, String prefix, String sizeName, int size, List<LayoutField> fields,
                         List<FieldValue> values) {

    public boolean sized() {
        return size >= 0;
    }

    public LayoutField field(String fieldName) {
        return fields.stream().filter(f -> f.name().equals(fieldName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("layout " + name + " has no field " + fieldName));
    }

    /** The value named {@code valueName} (without prefix), e.g. MAGIC of header.magic. */
    public FieldValue value(String valueName) {
        return values.stream().filter(v -> v.name().equals(valueName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("layout " + name + " has no value " + valueName));
    }
}
