package org.lodtensor;

/** The status codes of the C API (lodtensor_status_t). */
public enum Status {
    OK(0), NULL_ARGUMENT(1), INVALID_ARGUMENT(2), INVALID_LOD(3), OUT_OF_RANGE(4), BUFFER_TOO_SMALL(5),
    UNSUPPORTED(6), OUT_OF_MEMORY(7), INTERNAL(8), CALLBACK_FAILED(9), UNKNOWN(-1);

    private final int code;

    Status(int code) {
        this.code = code;
    }

    /** The C value. */
    public int code() {
        return code;
    }

    /** The library's static name of the status ("invalid LoD", ...). */
    public String label() {
        return LodTensorLib.INSTANCE.lodtensor_status_str(code);
    }

    public static Status of(int code) {
        for (Status s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        return UNKNOWN;
    }
}
