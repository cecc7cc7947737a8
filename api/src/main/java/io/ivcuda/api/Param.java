package io.ivcuda.api;

/**
 * One parameter of a described function.
 *
 * @param direction how it travels
 * @param type      its type; for INSTR and INBUF a byte type ({@code char})
 * @param name      the C parameter name
 * @param lengthParam for INBUF / OUTBUF the parameter holding the length (elements); else null
 * @param check     what the server checks before the handler runs (IN only; {@link ParamCheck#NONE} if nothing
 *                  beyond the type's own check)
 */
public record Param(Direction direction, TypeInfo type, String name, String lengthParam, ParamCheck check) {

    /** An IN handle: resolved (kind, owner) to its native value before the handler runs. */
    public boolean isHandle() {
        return direction == Direction.IN && type.wire() == WireKind.HANDLE;
    }

    /** An IN device ordinal: checked and turned into the native device before the handler runs. */
    public boolean isOrdinal() {
        return direction == Direction.IN && type.ordinalResult() != null;
    }
}
