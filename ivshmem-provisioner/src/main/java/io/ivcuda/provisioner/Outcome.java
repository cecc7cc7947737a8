package io.ivcuda.provisioner;

/** What reconciling one domain did, and why. {@link #detail} is the line logged and shown by the CLI. */
public record Outcome(String domain, Action action, String detail) {

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
        SKIPPED;

        public boolean isProblem() {
            return this == REFUSED || this == INVALID;
        }
    }

    @Override
    public String toString() {
        return domain + ": " + action.name().toLowerCase(java.util.Locale.ROOT) + (detail.isEmpty() ? "" : " — " + detail);
    }
}
