package org.lodtensor;

/**
 * A failed call into the library: {@link #status()} is the C status code, the message the
 * library's explanation (which argument broke which rule). For {@link Status#CALLBACK_FAILED}
 * caused by a Java step function, {@link #getCause()} is what the step function threw.
 */
public class LodTensorException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final Status status;

    public LodTensorException(Status status, String message) {
        this(status, message, null);
    }

    public LodTensorException(Status status, String message, Throwable cause) {
        super(status.label() + ": " + message, cause);
        this.status = status;
    }

    /** The status code. */
    public Status status() {
        return status;
    }

    /** The library's message without the status prefix. */
    public String detail() {
        String m = getMessage();
        return m.substring(status.label().length() + 2);
    }
}
