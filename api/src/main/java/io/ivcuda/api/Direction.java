package io.ivcuda.api;

/** Parameter directions of the description language (see the header of cuda-driver.api). */
public enum Direction {
    IN, OUT, OUTOPT, INSTR, INBUF, OUTBUF;

    public boolean travelsInRequest() {
        return this == IN || this == INSTR || this == INBUF;
    }

    public boolean travelsInResponse() {
        return this == OUT || this == OUTOPT || this == OUTBUF;
    }

    public boolean isBuffer() {
        return this == INSTR || this == INBUF || this == OUTBUF;
    }
}
