package io.ivcuda.api;

/**
 * One parameter of a described function.
 *
 * @param direction how it travels
 * @param type      its type; for INSTR and INBUF a byte type ({@code char})
 * @param name      the C parameter name
 * @param lengthParam for INBUF / OUTBUF the parameter holding the length (elements); else null
 */
public record Param(Direction direction, TypeInfo type, String name, String lengthParam) {
}
