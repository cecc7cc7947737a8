package io.ivcuda.hook;

/**
 * A reason to refuse the operation; libvirt shows the user what the hook writes to stderr, after a
 * long prefix of its own (the hook's command line and environment) that pushes the end of a long
 * message out of virt-manager's one-line error summary. So the message is the cause in a few words
 * ({@link #getMessage()}: written first, on the first line), and the {@link #detail()} — which domain,
 * what to run, log lines — follows on the next lines.
 */
final class HookException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String detail;

    HookException(String summary) {
        this(summary, (String) null);
    }

    HookException(String summary, Throwable cause) {
        super(summary, cause);
        this.detail = null;
    }

    /** @param detail the lines after the summary, or null */
    HookException(String summary, String detail) {
        super(summary);
        this.detail = detail;
    }

    /** What follows the summary (may span lines), or null. */
    String detail() {
        return detail;
    }
}
