package io.ivcuda.api;

/**
 * One exported symbol of the guest library.
 *
 * @param symbol  the ELF symbol, e.g. {@code cuMemAlloc_v2}
 * @param base    the name cuGetProcAddress is asked for, e.g. {@code cuMemAlloc}
 * @param version the CUDA version from which cuGetProcAddress(base, v) returns this symbol
 */
public record Export(String symbol, String base, int version) {
}
