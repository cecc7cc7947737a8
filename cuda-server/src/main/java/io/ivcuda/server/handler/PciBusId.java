package io.ivcuda.server.handler;

/** PCI bus ids as CUDA spells them: {@code [domain:]bus:device.function}, hexadecimal. */
final class PciBusId {

    private PciBusId() {
    }

    /** @return {domain, bus, device, function}, or null when the text is not a bus id */
    static long[] parse(String text) {
        if (text == null) {
            return null;
        }
        String[] parts = text.trim().split(":");
        if (parts.length < 2 || parts.length > 3) {
            return null;
        }
        String[] devFn = parts[parts.length - 1].split("\\.");
        if (devFn.length != 2) {
            return null;
        }
        try {
            long domain = parts.length == 3 ? Long.parseLong(parts[0], 16) : 0;
            long bus = Long.parseLong(parts[parts.length - 2], 16);
            long device = Long.parseLong(devFn[0], 16);
            long function = Long.parseLong(devFn[1], 16);
            if (domain < 0 || domain > 0xffffffffL || bus < 0 || bus > 0xff || device < 0 || device > 0x1f
                    || function < 0 || function > 7) {
                return null;
            }
            return new long[] {domain, bus, device, function};
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
