package io.ivcuda.common;

import java.util.ArrayList;
import java.util.List;

/**
 * ivcuda's one line in a domain's {@code <description>}, where virt-manager shows it (Overview →
 * Description, and the tooltip of the VM in the main window): what the domain gets, or why it does not.
 * The provisioner keeps it current; everything else in the description is the user's and stays as it is.
 *
 * <p>The line is found by its {@link #MARKER}: the first line that starts with {@code [ivcuda] } is ours
 * and is replaced in place; without one, ours becomes the first line. A problem reads
 * {@code [ivcuda] error: <cause>}; the hook shows that cause when it refuses a domain the provisioner
 * did not provision.
 */
public final class DescriptionNote {
    /** Starts our line; documented in docs/operations.md, so users know which line is ours. */
    public static final String MARKER = "[ivcuda] ";
    /** Starts the text of a note that says why the domain is not (or not correctly) provisioned. */
    public static final String ERROR = "error: ";

    private DescriptionNote() {
    }

    /** The note for a provisioned domain, e.g. {@code GPU 0 shared, 256 MiB region, plain mode; no save or migration}. */
    public static String provisioned(VmSettings settings) {
        return "GPU " + settings.gpu() + " shared, " + ByteSize.describe(settings.regionSize()) + " region, "
                + settings.mode().word() + " mode"
                + (settings.memoryQuota() == 0 ? "" : ", " + ByteSize.describe(settings.memoryQuota()) + " GPU memory quota")
                + (settings.shared() ? ", " + settings.computeShare() + " % of its SMs" : "")
                + "; no save or migration";
    }

    /** The note for a domain with a problem: {@code error: <cause>}. */
    public static String error(String cause) {
        return ERROR + oneLine(cause);
    }

    /** The text of our note in {@code description} (without the marker), or null when there is none. */
    public static String find(String description) {
        if (description == null) {
            return null;
        }
        for (String line : description.split("\n", -1)) {
            if (line.startsWith(MARKER)) {
                return line.substring(MARKER.length()).strip();
            }
        }
        return null;
    }

    /** The cause of an {@link #error} note in {@code description}, or null when there is none. */
    public static String errorCause(String description) {
        String note = find(description);
        return note != null && note.startsWith(ERROR) ? note.substring(ERROR.length()) : null;
    }

    /**
     * {@code description} with our note set to {@code note}: our line replaced where it is, or added as the
     * first line; {@code note == null} removes our line. Other lines are kept as they are. Null when
     * nothing is left (the domain then needs no {@code <description>}); a description without our line
     * and no note to add comes back unchanged.
     */
    public static String apply(String description, String note) {
        List<String> lines = new ArrayList<>();
        if (description != null && !description.isEmpty()) {
            lines.addAll(List.of(description.split("\n", -1)));
        }
        String ours = note == null ? null : MARKER + oneLine(note);
        if (ours == null && find(description) == null) {
            return description; // nothing of ours: not even whitespace is touched
        }
        boolean placed = false;
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).startsWith(MARKER)) {
                if (ours == null || placed) {
                    lines.remove(i--);
                } else {
                    lines.set(i, ours);
                    placed = true;
                }
            }
        }
        if (ours != null && !placed) {
            lines.add(0, ours);
        }
        String result = String.join("\n", lines);
        return result.isBlank() ? null : result;
    }

    private static String oneLine(String text) {
        StringBuilder b = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            b.append(Character.isISOControl(c) ? ' ' : c);
        }
        return b.toString().strip();
    }
}
