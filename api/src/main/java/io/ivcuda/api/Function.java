package io.ivcuda.api;

import java.util.List;

/**
 * One described function.
 *
 * @param opcode  wire opcode, or -1 for custom functions
 * @param name    the C name of the implementation
 * @param mode    how it is carried
 * @param cached  the guest may answer repeats with equal inputs from a cache
 * @param ptds    also exported with the per-thread default stream suffixes
 * @param params  parameters in C order
 * @param exports exported symbols (empty for internal operations)
 * @param section the server handler section it belongs to (null before the first {@code section})
 * @param streams the parameter whose value is the byte count that follows through the window, or null
 * @param streamsIn whether those bytes go to the server (else they come from it)
 */
public record Function(int opcode, String name, Mode mode, boolean cached, boolean ptds,
                       List<Param> params, List<Export> exports, String section, String streams, boolean streamsIn) {

    public List<Param> requestParams() {
        return params.stream().filter(p -> p.direction().travelsInRequest()).toList();
    }

    public List<Param> responseParams() {
        return params.stream().filter(p -> p.direction().travelsInResponse()).toList();
    }
}
