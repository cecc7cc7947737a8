package io.ivcuda.common;

/**
 * A user-facing configuration problem: a bad metadata attribute, a bad host configuration value,
 * an unreadable file. The message is one line that names the domain (when there is one), the
 * attribute or key and what is wrong with it. The {@link #summary() summary} is the cause in a few
 * words, without the domain: the first thing a user reads where space is short (the first line of
 * the hook's refusal, which virt-manager's error summary cuts off; the domain's description).
 */
public class IvcudaConfigException extends Exception {
    private static final long serialVersionUID = 1L;

    private final String summary;

    public IvcudaConfigException(String message) {
        this(message, message, null);
    }

    public IvcudaConfigException(String message, Throwable cause) {
        this(message, message, cause);
    }

    /** @param summary the cause in a few words, e.g. {@code region size 300M is not a power of two (e.g. 256M)} */
    public IvcudaConfigException(String summary, String message, Throwable cause) {
        super(message, cause);
        this.summary = summary;
    }

    /** The cause in a few words (the whole message where no shorter form was given). */
    public String summary() {
        return summary;
    }
}
