package org.lodtensor;

/** An element type in DLPack form: code (0 int, 1 uint, 2 float, 4 bfloat, 6 bool), bits, lanes. */
public record DType(int code, int bits, int lanes) {
    public static final DType BOOL = new DType(6, 8, 1);
    public static final DType UINT8 = new DType(1, 8, 1);
    public static final DType INT8 = new DType(0, 8, 1);
    public static final DType INT16 = new DType(0, 16, 1);
    public static final DType INT32 = new DType(0, 32, 1);
    public static final DType INT64 = new DType(0, 64, 1);
    public static final DType FLOAT16 = new DType(2, 16, 1);
    public static final DType BFLOAT16 = new DType(4, 16, 1);
    public static final DType FLOAT32 = new DType(2, 32, 1);
    public static final DType FLOAT64 = new DType(2, 64, 1);

    /** The element size in bytes. */
    public int byteSize() {
        return bits / 8 * lanes;
    }
}
