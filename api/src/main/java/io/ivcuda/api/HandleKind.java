package io.ivcuda.api;

/**
 * A kind of server-minted handle (docs/protocol.md §5): {@code handle <name> <number> <result>
 * [passthrough <lo>..<hi>]}.
 *
 * @param name         e.g. {@code stream}
 * @param number       its number in the id's top byte
 * @param result       the CUresult name a bad one is answered with
 * @param passthroughLo the lowest value that passes unchecked (the driver's own handles), or -1
 * @param passthroughHi the highest such value, or -1
 */
public record HandleKind(String name, int number, String result, long passthroughLo, long passthroughHi) {

    public boolean hasPassthrough() {
        return passthroughLo >= 0;
    }
}
