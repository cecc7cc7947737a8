package io.ivcuda.api;

/**
 * What the server checks of one {@code in} parameter before its handler runs (the words after the
 * parameter's name in the description).
 *
 * @param space      {@code device} or {@code pool} for a range check, else null
 * @param sizeParam  the parameter giving the range's length, or null for a constant
 * @param sizeConst  the constant length (when {@code sizeParam} is null)
 * @param multiplier the range's length is {@code sizeParam * multiplier}
 * @param nullable   a handle that may be 0
 * @param release    a handle the call destroys
 * @param elseResult the CUresult name a refusal answers, or null for CUDA_ERROR_INVALID_VALUE
 */
public record ParamCheck(String space, String sizeParam, long sizeConst, int multiplier, boolean nullable,
                         boolean release, String elseResult) {

    static final ParamCheck NONE = new ParamCheck(null, null, 0, 1, false, false, null);

    public boolean isRange() {
        return space != null;
    }

    public boolean isPool() {
        return "pool".equals(space);
    }
}
