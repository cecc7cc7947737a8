package io.ivcuda.api;

/**
 * A C type named in the description and how it travels.
 *
 * @param cName      the C spelling, e.g. {@code CUdevice}
 * @param wire       the wire kind
 * @param handleKind for HANDLE, the handle table ({@code ctx}, {@code module}, ...); else null
 * @param byteSize   for BYTES, the struct size; else 8
 */
public record TypeInfo(String cName, WireKind wire, String handleKind, int byteSize) {
}
