package io.ivcuda.api;

/** How a described function is carried (see the header of cuda-driver.api). */
public enum Mode {
    SYNC, ASYNC, CUSTOM, INTERNAL;

    /** Whether the function has an opcode and a generated encoding. */
    public boolean onWire() {
        return this != CUSTOM;
    }
}
