package org.lodtensor;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;

/** The sequence operators. Every result is a new tensor the caller closes. */
public final class Sequence {
    private static final LodTensorLib LIB = LodTensorLib.INSTANCE;

    /** sequence_pool types (LODTENSOR_POOL_*). */
    public static final int POOL_SUM = 0;
    public static final int POOL_AVERAGE = 1;
    public static final int POOL_SQRT = 2;
    public static final int POOL_MAX = 3;
    public static final int POOL_MIN = 4;
    public static final int POOL_FIRST = 5;
    public static final int POOL_LAST = 6;

    private Sequence() {}

    /** Two results; {@link #second} may be null. Closing it closes both. */
    public record Pair(Tensor first, Tensor second) implements AutoCloseable {
        @Override
        public void close() {
            first.close();
            if (second != null) {
                second.close();
            }
        }
    }

    private static Pair pair(int status, PointerByReference a, PointerByReference b) {
        NativeHandle.check(status);
        Pointer second = b.getValue();
        return new Pair(Tensor.adopt(a.getValue()), second == null ? null : Tensor.adopt(second));
    }

    /** Repeats x's sequences (or rows) as level refLevel of y's LoD says (-1: the last level). */
    public static Tensor expand(Tensor x, Tensor y, long refLevel) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_expand(x.ptr(), y.ptr(), refLevel, out), x, y), out);
    }

    /** Repeats row h of x by the length of y's sequence h; the result takes y's LoD. */
    public static Tensor expandAs(Tensor x, Tensor y) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_expand_as(x.ptr(), y.ptr(), out), x, y), out);
    }

    /** Pads x's sequences to paddedLength (-1: the longest): (padded, int64 lengths). */
    public static Pair pad(Tensor x, Tensor padValue, long paddedLength) {
        PointerByReference a = new PointerByReference();
        PointerByReference b = new PointerByReference();
        return pair(NativeHandle.call(() -> LIB.sequence_pad(x.ptr(), padValue.ptr(), paddedLength, a, b), x, padValue),
                a, b);
    }

    /** Keeps the first length[i] steps of row i of x. */
    public static Tensor unpad(Tensor x, Tensor length) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_unpad(x.ptr(), length.ptr(), out), x, length), out);
    }

    /** Reduces each last-level sequence: (out, int32 max index for POOL_MAX/POOL_MIN else null). */
    public static Pair pool(Tensor x, int poolType, double padValue) {
        PointerByReference a = new PointerByReference();
        PointerByReference b = new PointerByReference();
        return pair(NativeHandle.call(() -> LIB.sequence_pool(x.ptr(), poolType, padValue, a, b), x), a, b);
    }

    public static Tensor firstStep(Tensor x) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_first_step(x.ptr(), out), x), out);
    }

    public static Tensor lastStep(Tensor x) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_last_step(x.ptr(), out), x), out);
    }

    /** x plus the updates: out[i][ids[p]] += updates[p] for the ids of sequence i. */
    public static Tensor scatter(Tensor x, Tensor ids, Tensor updates) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_scatter(x.ptr(), ids.ptr(), updates.ptr(), out), x, ids,
                updates), out);
    }

    /** The softmax over each sequence (one element per row). */
    public static Tensor softmax(Tensor x) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_softmax(x.ptr(), out), x), out);
    }

    /** Concatenates the i-th sequences of every input (at least 2). */
    public static Tensor concat(Tensor... xs) {
        Pointer[] raw = new Pointer[xs.length];
        for (int i = 0; i < xs.length; i++) {
            raw[i] = xs[i].ptr();
        }
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_concat(raw, raw.length, out), (Object[]) xs), out);
    }

    /** Keeps length[i] rows from offset[i] of each sequence i. */
    public static Tensor slice(Tensor x, Tensor offset, Tensor length) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_slice(x.ptr(), offset.ptr(), length.ptr(), out), x,
                offset, length), out);
    }

    public static Tensor reverse(Tensor x) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_reverse(x.ptr(), out), x), out);
    }

    /** The mask of lengths x (maxlen &lt; 0: the largest length), of dtype outDType. */
    public static Tensor mask(Tensor x, long maxlen, DType outDType) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(
                () -> LIB.sequence_mask(x.ptr(), maxlen, new LodTensorLib.DTypeT(outDType), out), x), out);
    }

    /** Sliding windows of winSize ids within each sequence (padValue past its end). */
    public static Tensor enumerate(Tensor x, long winSize, long padValue) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_enumerate(x.ptr(), winSize, padValue, out), x), out);
    }

    /** Removes the given tokens from each sequence. */
    public static Tensor erase(Tensor x, long... tokens) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_erase(x.ptr(), tokens, tokens.length, out), x), out);
    }

    /** Regroups the elements of each sequence into rows of newDim. */
    public static Tensor reshape(Tensor x, long newDim) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_reshape(x.ptr(), newDim, out), x), out);
    }

    /** Paddle's sequence_conv; paddingData may be null unless paddingTrainable. */
    public static Tensor conv(Tensor x, Tensor filter, Tensor paddingData, long contextLength, long contextStart,
                              long contextStride, boolean paddingTrainable) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.sequence_conv(x.ptr(), filter.ptr(),
                paddingData == null ? null : paddingData.ptr(), contextLength, contextStart, contextStride,
                paddingTrainable, out), x, filter, paddingData), out);
    }

    /** scatter into x's own (possibly shared) memory. */
    public static void scatterInPlace(Tensor x, Tensor ids, Tensor updates) {
        NativeHandle.check(() -> LIB.sequence_scatter_inplace(x.ptr(), ids.ptr(), updates.ptr()), x, ids, updates);
    }
}
