package org.lodtensor;

import com.sun.jna.ptr.PointerByReference;

/** Dense operations: fill, cast, gather_rows, scatter_rows, log_softmax and top-k. Results are new tensors. */
public final class Ops {
    private static final LodTensorLib LIB = LodTensorLib.INSTANCE;

    /** scatterRows: the update row replaces the row it names; the last of repeated indices wins. */
    public static final int SCATTER_OVERWRITE = 0;
    /** scatterRows: the update row is added to the row it names; repeated indices add up, in order. */
    public static final int SCATTER_ADD = 1;

    private Ops() {}

    /** A new tensor of dtype and dims with every element value (exactly representable). */
    public static Tensor fill(DType dtype, long[] dims, double value) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(LIB.lodtensor_fill(new LodTensorLib.DTypeT(dtype), dims, dims.length, value, out), out);
    }

    /**
     * {@link #fill} directly on a place (deviceType 1 = CPU, 2 = CUDA): on a CUDA device the
     * elements are written there, without a host tensor and a copy.
     */
    public static Tensor fillOn(int deviceType, int deviceId, DType dtype, long[] dims, double value) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(LIB.lodtensor_fill_on(new LodTensorLib.PlaceT(deviceType, deviceId),
                new LodTensorLib.DTypeT(dtype), dims, dims.length, value, out), out);
    }

    /** x's elements converted to dtype (Rust's {@code as} rules); the LoD is kept. */
    public static Tensor cast(Tensor x, DType dtype) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.lodtensor_cast(x.ptr(), new LodTensorLib.DTypeT(dtype), out), x),
                out);
    }

    /** The rows index[0], index[1], ... of x. */
    public static Tensor gatherRows(Tensor x, Tensor index) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.lodtensor_gather_rows(x.ptr(), index.ptr(), out), x, index), out);
    }

    /**
     * A copy of x (its LoD kept) whose rows index[i] are replaced by (SCATTER_OVERWRITE) or
     * increased by (SCATTER_ADD) the rows updates[i].
     */
    public static Tensor scatterRows(Tensor x, Tensor index, Tensor updates, int mode) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(
                () -> LIB.lodtensor_scatter_rows(x.ptr(), index.ptr(), updates.ptr(), mode, out), x, index, updates),
                out);
    }

    /** The log-softmax over the last axis. */
    public static Tensor logSoftmax(Tensor x) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.lodtensor_log_softmax(x.ptr(), out), x), out);
    }

    /** The k largest (or smallest) entries of every row of the last axis, sorted: (values, int64 indices). */
    public static Sequence.Pair topk(Tensor x, long k, boolean largest) {
        PointerByReference a = new PointerByReference();
        PointerByReference b = new PointerByReference();
        NativeHandle.check(() -> LIB.lodtensor_topk(x.ptr(), k, largest, a, b), x);
        return new Sequence.Pair(Tensor.adopt(a.getValue()), Tensor.adopt(b.getValue()));
    }
}
