package io.ivcuda.hook;

/** A reason to refuse the operation; the message is shown to the user by libvirt (our stderr). */
final class HookException extends Exception {
    private static final long serialVersionUID = 1L;

    HookException(String message) {
        super(message);
    }

    HookException(String message, Throwable cause) {
        super(message, cause);
    }
}
