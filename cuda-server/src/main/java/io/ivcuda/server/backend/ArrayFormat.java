package io.ivcuda.server.backend;

/**
 * The byte size of a CUDA array's element (CUarray_format values of cuda.h 13.0), which is what a
 * copy's X offset and width are counted in. Formats whose rows are not whole elements of a fixed
 * size — block-compressed (BCn), the YUV and planar video formats — answer 0: their array sides
 * are not checked against a byte geometry here, so such copies are refused rather than guessed.
 */
public final class ArrayFormat {
    private ArrayFormat() {
    }

    /** Bytes of one element with {@code channels} channels; 0 for a format or channel count this does not know. */
    public static int elementBytes(int format, int channels) {
        int base = switch (format) {
            case 0x01, 0x08 -> 1; // UNSIGNED_INT8, SIGNED_INT8
            case 0x02, 0x09, 0x10 -> 2; // UNSIGNED_INT16, SIGNED_INT16, HALF
            case 0x03, 0x0a, 0x20 -> 4; // UNSIGNED_INT32, SIGNED_INT32, FLOAT
            default -> 0;
        };
        if (base != 0) {
            return channels == 1 || channels == 2 || channels == 4 ? base * channels : 0;
        }
        // UNORM/SNORM_INT8X1/X2/X4 (0xc0-0xc2, 0xc6-0xc8) and INT16X1/X2/X4 (0xc3-0xc5, 0xc9-0xcb):
        // the format names its channel count, which the descriptor must repeat
        if (format >= 0xc0 && format <= 0xcb) {
            int k = (format - 0xc0) % 6;
            int count = new int[] {1, 2, 4}[k % 3];
            int bytes = k < 3 ? 1 : 2;
            return channels == count ? bytes * count : 0;
        }
        if (format == 0x50) { // UNORM_INT_101010_2: one 32-bit word of four channels
            return channels == 4 ? 4 : 0;
        }
        return 0;
    }
}
