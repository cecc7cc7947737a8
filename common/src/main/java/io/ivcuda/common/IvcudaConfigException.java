package io.ivcuda.common;

/**
 * A user-facing configuration problem: a bad metadata attribute, a bad host configuration value,
 * an unreadable file. The message is one line that names the domain (when there is one), the
 * attribute or key and what is wrong with it.
 */
public class IvcudaConfigException extends Exception {
    private static final long serialVersionUID = 1L;

    public IvcudaConfigException(String message) {
        super(message);
    }

    public IvcudaConfigException(String message, Throwable cause) {
        super(message, cause);
    }
}
