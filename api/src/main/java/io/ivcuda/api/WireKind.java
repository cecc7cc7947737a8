package io.ivcuda.api;

/** How one value travels in a payload (docs/protocol.md §5). */
public enum WireKind {
    I32, U32, I64, U64, F32,
    /** An opaque server-minted id; {@link TypeInfo#handleKind()} says which table. */
    HANDLE,
    /** A fixed-size struct copied as bytes, e.g. CUuuid. */
    BYTES;

    /** Every kind but BYTES occupies one 8-byte slot. */
    public boolean isSlot() {
        return this != BYTES;
    }
}
