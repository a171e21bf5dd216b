package org.lodtensor;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Cleaner;

/** A growable array of tensors (Paddle's LoDTensorArray), owning one C handle. */
public final class TensorArray implements AutoCloseable {
    private static final LodTensorLib LIB = LodTensorLib.INSTANCE;

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;

    private TensorArray(Pointer p) {
        handle = new NativeHandle(p, LIB::tensor_array_destroy);
        cleanable = NativeHandle.CLEANER.register(this, handle);
    }

    private static TensorArray out(int status, PointerByReference out) {
        NativeHandle.check(status);
        return new TensorArray(out.getValue());
    }

    Pointer ptr() {
        return handle.get();
    }

    /** An empty array. */
    public static TensorArray create() {
        PointerByReference out = new PointerByReference();
        return out(LIB.tensor_array_create(out), out);
    }

    /** Destroys the array and its elements (tensors read from it stay valid). Idempotent. */
    @Override
    public void close() {
        cleanable.clean();
    }

    /** The number of elements; UNSUPPORTED past Integer.MAX_VALUE. */
    public int size() {
        LongByReference r = new LongByReference();
        NativeHandle.check(() -> LIB.tensor_array_size(ptr(), r), this);
        return NativeHandle.intCount(r.getValue(), "TensorArray.size");
    }

    /** Element index, sharing its memory (copy false) or as a private copy. */
    public Tensor read(int index, boolean copy) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.tensor_array_read(ptr(), index, copy, out), this), out);
    }

    /** Stores t at index (shared or copied), growing the array if needed. */
    public void write(int index, Tensor t, boolean copy) {
        NativeHandle.check(() -> LIB.tensor_array_write(ptr(), index, t.ptr(), copy), this, t);
    }

    public void clear() {
        NativeHandle.check(() -> LIB.tensor_array_clear(ptr()), this);
    }

    /** Concatenates (stack false) or stacks the elements along axis. */
    public Tensor toTensor(long axis, boolean stack) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.tensor_array_to_tensor(ptr(), axis, stack, out, null, 0), this),
                out);
    }

    /** Splits x along axis into an array. */
    public static TensorArray unstack(Tensor x, long axis) {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(() -> LIB.tensor_array_unstack(x.ptr(), axis, out), x), out);
    }

    /** Splits x into time steps by table (Paddle's lod_tensor_to_array). */
    public static TensorArray unpack(Tensor x, RankTable table) {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(() -> LIB.tensor_array_unpack(x.ptr(), table.ptr(), out), x, table), out);
    }

    /** Puts the time steps back in the original order (Paddle's array_to_lod_tensor). */
    public Tensor pack(RankTable table) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.tensor_array_pack(ptr(), table.ptr(), out), this, table), out);
    }
}
