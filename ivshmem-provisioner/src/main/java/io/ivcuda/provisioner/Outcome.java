package io.ivcuda.provisioner;

import java.util.List;

/**
 * What reconciling one domain did, and why. {@link #detail} is the line logged and shown by the CLI;
 * {@link #foreign} names the other domains' ivcuda devices found in this one (removed by a
 * reconcile, reported by a preview), each as {@code ivcuda-UUID (the device of domain 'NAME')}.
 */
public record Outcome(String domain, Action action, String detail, List<String> foreign) {

    public Outcome {
        foreign = List.copyOf(foreign);
    }

    public Outcome(String domain, Action action, String detail) {
        this(domain, action, detail, List.of());
    }

    public enum Action {
        /** No ivcuda element and no ivcuda device: never touched. */
        UNTAGGED,
        /** Tagged, and the device already matches. */
        UNCHANGED,
        ADDED,
        UPDATED,
        /** The element was removed, so the device was removed. */
        REMOVED,
        /** Tagged, but its GPU memory quota does not fit on its GPU: left as it was. */
        REFUSED,
        /** The element or the host configuration is wrong: left as it was. */
        INVALID,
        /** Transient domains have no definition to change. */
        SKIPPED,
        /** No domain of this name. */
        NOT_FOUND,
        /** libvirt refused a change or a read (the domain may have been undefined meanwhile). */
        FAILED;

        public boolean isProblem() {
            return this == REFUSED || this == INVALID || this == NOT_FOUND || this == FAILED;
        }
    }

    /** Whether the domain's definition was (or, in a preview, would be) redefined. */
    public boolean redefines() {
        return !foreign.isEmpty() || switch (action) {
            case ADDED, UPDATED, REMOVED -> true;
            default -> false;
        };
    }

    /** A problem for the CLI's exit status: a refused or invalid domain, or one carrying another's device. */
    public boolean isProblem() {
        return action.isProblem() || !foreign.isEmpty();
    }

    static String describeForeign(List<String> foreign) {
        return "another domain's ivcuda device " + String.join(", ", foreign)
                + ", which would share that domain's GPU region (copied by a clone?)";
    }

    @Override
    public String toString() {
        String text = domain + ": " + action.name().toLowerCase(java.util.Locale.ROOT) + (detail.isEmpty() ? "" : " — " + detail);
        return foreign.isEmpty() ? text : text + "; removed " + describeForeign(foreign);
    }
}
