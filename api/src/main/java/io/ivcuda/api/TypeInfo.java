package io.ivcuda.api;

/**
 * A C type named in the description and how it travels.
 *
 * @param cName      the C spelling, e.g. {@code CUdevice}
 * @param wire       the wire kind
 * @param handleKind for HANDLE, the handle table ({@code ctx}, {@code module}, ...); else null
 * @param byteSize   for BYTES, the struct size; else 8
 * @param ordinalResult for a device ordinal ({@code i32 ordinal <result>}), the CUresult name another
 *                   ordinal is answered with; else null
 */
public record TypeInfo(String cName, WireKind wire, String handleKind, int byteSize, String ordinalResult) {
}
