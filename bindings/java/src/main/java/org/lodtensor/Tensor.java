package org.lodtensor;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.StringArray;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;

/**
 * A tensor with a LoD (a dense row-major array plus offsets of variable-length sequences),
 * owning one C handle. Close it (try-with-resources); a Cleaner frees forgotten ones only as a
 * safety net. A closed tensor answers every call with a {@link LodTensorException} of status
 * NULL_ARGUMENT. Data is copied in from Java arrays and copied out to Java arrays; {@link #view()}
 * is a zero-copy view of the library's memory.
 *
 * <p>Threads: any number of threads may read one tensor at once; setLod, clearLod, writing
 * through {@link #view()} and close need exclusive access. The library's last error message is
 * per thread, and a Java (platform) thread stays on its OS thread, so errors are read correctly.
 */
public final class Tensor implements AutoCloseable {
    private static final LodTensorLib LIB = LodTensorLib.INSTANCE;

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;

    private Tensor(Pointer p, boolean owned) {
        handle = new NativeHandle(p, owned ? LIB::lodtensor_destroy : null);
        cleanable = owned ? NativeHandle.CLEANER.register(this, handle) : null;
    }

    /** Takes ownership of a new handle from the library. */
    static Tensor adopt(Pointer p) {
        return new Tensor(p, true);
    }

    /** A tensor lent by the library (a step function's inputs): never destroyed by Java. */
    static Tensor borrow(Pointer p) {
        return new Tensor(p, false);
    }

    static Tensor out(int status, PointerByReference out) {
        NativeHandle.check(status);
        return adopt(out.getValue());
    }

    Pointer ptr() {
        return handle.get();
    }

    /** Hands the handle to the library (a step function's result); this tensor is empty afterwards. */
    Pointer take() {
        Pointer p = handle.take();
        if (cleanable != null) {
            cleanable.clean(); // the handle is gone, so this only unregisters
        }
        return p;
    }

    void forget() {
        handle.forget();
    }

    /** Destroys the handle (the memory goes with its last handle). Idempotent. */
    @Override
    public void close() {
        if (cleanable != null) {
            cleanable.clean();
        }
    }

    // ---- creation -----------------------------------------------------------------------------

    /** A host tensor of any dtype from bytes in native order (copied). */
    public static Tensor create(DType dtype, long[] dims, ByteBuffer data, Lod lod) {
        int n = data.remaining();
        Memory m = n == 0 ? null : new Memory(n);
        if (m != null) {
            m.getByteBuffer(0, n).put(data.duplicate());
        }
        return create(dtype, dims, m, n, lod);
    }

    /**
     * What {@link #fromBuffer} runs when the library releases a buffer, by loan number (the
     * buffer's user data), from the loan until then.
     */
    private static final Map<Long, Runnable> LENT = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_LOAN = new AtomicLong(1);
    // One callback object for every loan, kept reachable for the life of the class.
    private static final LodTensorLib.ReleaseFn RELEASE = (data, userData) -> {
        Runnable release = LENT.remove(Pointer.nativeValue(userData));
        try {
            release.run();
        } catch (Throwable e) {
            // Not through the library's frames: the thread's handler reports it, as it does an
            // exception that ends a thread.
            Thread t = Thread.currentThread();
            t.getUncaughtExceptionHandler().uncaughtException(t, e);
        }
    };

    /**
     * A tensor over a direct buffer without copying it (zero copy): the buffer's remaining bytes
     * are the elements (native byte order, aligned to the element size). The library holds the
     * buffer until the last handle using it (this tensor, its shares, slices and pieces) is
     * closed; writes through either side are seen by the other.
     */
    public static Tensor wrap(DType dtype, long[] dims, ByteBuffer direct, Lod lod) {
        if (!direct.isDirect()) {
            throw new LodTensorException(Status.INVALID_ARGUMENT, "wrap: the buffer must be direct");
        }
        ByteBuffer lent = direct.slice();
        long address = lent.capacity() == 0 ? 0 : Pointer.nativeValue(Native.getDirectBufferPointer(lent));
        // The release keeps the buffer reachable, so its memory stays, until the library is done.
        return fromBuffer(1, 0, dtype, dims, address, lent.capacity(), lod, () -> Reference.reachabilityFence(lent));
    }

    /**
     * A tensor over {@code nbytes} bytes at {@code address} on a place (deviceType 1 = CPU, 2 =
     * CUDA, as {@link #toPlace}), without copying them (zero copy): native memory on the host, or a
     * CUDA device's memory from other CUDA code (a device pointer's value). {@code nbytes} must be
     * exactly the elements' size and the address aligned to the element size. The memory must
     * stay valid until {@code release} runs: once, when the last handle over it (this tensor, its
     * shares, slices and split pieces) is closed, on the thread that closes it (for a CUDA place,
     * after the work queued on the device has finished); null when the memory outlives every such
     * handle. An exception thrown by {@code release} goes to that thread's uncaught-exception
     * handler. On failure nothing is taken and {@code release} never runs.
     *
     * <p>A CUDA device reads the memory in the order of its stream ({@link #cudaStream}): what
     * other code writes there must be queued on that stream, or finished, first. A CUDA place
     * whose device cannot use the memory (another device's, or host memory the driver does not
     * know on a GPU that cannot read pageable memory) is INVALID_ARGUMENT naming data.
     */
    public static Tensor fromBuffer(int deviceType, int deviceId, DType dtype, long[] dims, long address,
                                    long nbytes, Lod lod, Runnable release) {
        long loan = release == null ? 0 : NEXT_LOAN.getAndIncrement();
        if (release != null) {
            LENT.put(loan, release);
        }
        PointerByReference out = new PointerByReference();
        int s = LIB.lodtensor_from_buffer(new LodTensorLib.PlaceT(deviceType, deviceId),
                new LodTensorLib.DTypeT(dtype), dims, dims.length, address == 0 ? null : new Pointer(address),
                nbytes, lod.kind, lod.levelSizes, lod.levelSizes.length, lod.values, lod.values.length,
                release == null ? null : RELEASE, release == null ? null : new Pointer(loan), out);
        if (s != 0) {
            LENT.remove(loan); // nothing was taken
        }
        return out(s, out);
    }

    /** How many buffers given to {@link #fromBuffer} (or {@link #wrap}) the library still holds. */
    static int lentBuffers() {
        return LENT.size();
    }

    /**
     * The address of the first element: host memory for the CPU ({@link #view()} reads it), a
     * device address for a CUDA place, for other CUDA code. Valid while any handle on the memory is
     * open.
     */
    public long address() {
        return Pointer.nativeValue(data());
    }

    private static Tensor create(DType dtype, long[] dims, Pointer data, long nbytes, Lod lod) {
        PointerByReference out = new PointerByReference();
        int s = LIB.lodtensor_create(new LodTensorLib.DTypeT(dtype), dims, dims.length, data, nbytes, lod.kind,
                lod.levelSizes, lod.levelSizes.length, lod.values, lod.values.length, out);
        return out(s, out);
    }

    private static Memory memory(long nbytes) {
        return nbytes == 0 ? null : new Memory(nbytes);
    }

    public static Tensor ofFloats(float[] data, long[] dims, Lod lod) {
        Memory m = memory(4L * data.length);
        if (m != null) {
            m.write(0, data, 0, data.length);
        }
        return create(DType.FLOAT32, dims, m, 4L * data.length, lod);
    }

    public static Tensor ofFloats(float[] data, long... dims) {
        return ofFloats(data, dims, Lod.NONE);
    }

    public static Tensor ofDoubles(double[] data, long[] dims, Lod lod) {
        Memory m = memory(8L * data.length);
        if (m != null) {
            m.write(0, data, 0, data.length);
        }
        return create(DType.FLOAT64, dims, m, 8L * data.length, lod);
    }

    public static Tensor ofInts(int[] data, long[] dims, Lod lod) {
        Memory m = memory(4L * data.length);
        if (m != null) {
            m.write(0, data, 0, data.length);
        }
        return create(DType.INT32, dims, m, 4L * data.length, lod);
    }

    public static Tensor ofLongs(long[] data, long[] dims, Lod lod) {
        Memory m = memory(8L * data.length);
        if (m != null) {
            m.write(0, data, 0, data.length);
        }
        return create(DType.INT64, dims, m, 8L * data.length, lod);
    }

    public static Tensor ofLongs(long[] data, long... dims) {
        return ofLongs(data, dims, Lod.NONE);
    }

    // ---- reading ------------------------------------------------------------------------------

    private long size(int status, LongByReference r) {
        NativeHandle.check(status);
        return r.getValue();
    }

    public DType dtype() {
        LodTensorLib.DTypeOut d = new LodTensorLib.DTypeOut();
        NativeHandle.check(() -> LIB.lodtensor_dtype(ptr(), d), this);
        d.read();
        return new DType(d.code & 0xff, d.bits & 0xff, d.lanes & 0xffff);
    }

    /** The place as {device_type, device_id}: 1 = CPU, 2 = CUDA. */
    public int[] place() {
        LodTensorLib.PlaceOut p = new LodTensorLib.PlaceOut();
        NativeHandle.check(() -> LIB.lodtensor_place(ptr(), p), this);
        p.read();
        return new int[] {p.device_type, p.device_id};
    }

    public long[] dims() {
        long[] buf = new long[9];
        LongByReference n = new LongByReference();
        NativeHandle.check(() -> LIB.lodtensor_dims(ptr(), buf, buf.length, n), this);
        return java.util.Arrays.copyOf(buf, (int) n.getValue());
    }

    public long numel() {
        LongByReference r = new LongByReference();
        return size(NativeHandle.call(() -> LIB.lodtensor_numel(ptr(), r), this), r);
    }

    public long nbytes() {
        LongByReference r = new LongByReference();
        return size(NativeHandle.call(() -> LIB.lodtensor_nbytes(ptr(), r), this), r);
    }

    /** The number of LoD levels; UNSUPPORTED past Integer.MAX_VALUE. */
    public int lodLevels() {
        LongByReference r = new LongByReference();
        return NativeHandle.intCount(size(NativeHandle.call(() -> LIB.lodtensor_lod_num_levels(ptr(), r), this), r),
                "Tensor.lodLevels");
    }

    /** The offsets of one LoD level (copied). */
    public long[] lodOffsets(int level) {
        PointerByReference p = new PointerByReference();
        LongByReference n = new LongByReference();
        // The offsets are the tensor's memory: copied before it may go.
        return NativeHandle.keep(() -> {
            NativeHandle.check(LIB.lodtensor_lod_offsets(ptr(), level, p, n));
            return p.getValue().getLongArray(0, NativeHandle.arrayLength(n.getValue(), "lodOffsets"));
        }, this);
    }

    /** The sequence lengths of one LoD level. */
    public long[] lodLengths(int level) {
        long[] off = lodOffsets(level);
        long[] len = new long[off.length - 1];
        for (int i = 0; i < len.length; i++) {
            len[i] = off[i + 1] - off[i];
        }
        return len;
    }

    /** The rows {begin, end} of sequence index at LoD level level. */
    public long[] sequenceRows(int level, long index) {
        LongByReference b = new LongByReference();
        LongByReference e = new LongByReference();
        NativeHandle.check(() -> LIB.lodtensor_sequence_rows(ptr(), level, index, b, e), this);
        return new long[] {b.getValue(), e.getValue()};
    }

    private Pointer data() {
        PointerByReference p = new PointerByReference();
        NativeHandle.check(() -> LIB.lodtensor_data(ptr(), p), this);
        return p.getValue();
    }

    private void requireDType(DType want) {
        DType d = dtype();
        if (!d.equals(want)) {
            throw new LodTensorException(Status.INVALID_ARGUMENT, "the tensor's dtype " + d + " is not " + want);
        }
    }

    /** The place's name in the library's messages: "cpu", "cuda:0", ... */
    private static String placeName(int[] place) {
        return place[0] == 1 ? "cpu" : place[0] == 2 ? "cuda:" + place[1] : "place " + place[0] + ":" + place[1];
    }

    /**
     * {@code read(address, numel)} of this tensor's elements (dtype {@code want}) in host memory:
     * its own, or a host copy of a CUDA tensor's. More elements than a Java array holds are
     * UNSUPPORTED, before any copy.
     */
    private <A> A readOnHost(DType want, String what, BiFunction<Pointer, Integer, A> read) {
        requireDType(want);
        int n = NativeHandle.arrayLength(numel(), what);
        if (place()[0] != 1) {
            try (Tensor host = toPlace(1, 0)) {
                return host.readOnHost(want, what, read);
            }
        }
        // The copy reads this tensor's memory, which must not be freed under it.
        return NativeHandle.keep(() -> read.apply(data(), n), this);
    }

    /**
     * The elements, copied (from a CUDA device through a host copy). More than a Java array
     * holds (2^31 - 9) are UNSUPPORTED; so for the other toArray methods.
     */
    public float[] toFloatArray() {
        return readOnHost(DType.FLOAT32, "toFloatArray", (p, n) -> n == 0 ? new float[0] : p.getFloatArray(0, n));
    }

    /** The elements, copied (from a CUDA device through a host copy). */
    public double[] toDoubleArray() {
        return readOnHost(DType.FLOAT64, "toDoubleArray",
                (p, n) -> n == 0 ? new double[0] : p.getDoubleArray(0, n));
    }

    /** The elements, copied (from a CUDA device through a host copy). */
    public int[] toIntArray() {
        return readOnHost(DType.INT32, "toIntArray", (p, n) -> n == 0 ? new int[0] : p.getIntArray(0, n));
    }

    /** The elements, copied (from a CUDA device through a host copy). */
    public long[] toLongArray() {
        return readOnHost(DType.INT64, "toLongArray", (p, n) -> n == 0 ? new long[0] : p.getLongArray(0, n));
    }

    /**
     * A zero-copy, writable view of the elements (native byte order), which must be on the host
     * (a CUDA tensor is INVALID_ARGUMENT: copy it with {@link #toPlace} first) and at most
     * Integer.MAX_VALUE bytes (more is UNSUPPORTED). Valid only while this tensor (or another
     * handle on the same memory) is open: the view, and every buffer made from it, keeps this
     * tensor from the Cleaner, but {@link #close} frees the memory under it. Writes are seen by
     * every handle sharing the memory.
     */
    public ByteBuffer view() {
        int[] place = place();
        if (place[0] != 1) {
            throw new LodTensorException(Status.INVALID_ARGUMENT, "view: the tensor is on " + placeName(place)
                    + ", not on the host: copy it with toPlace(1, 0)");
        }
        int n = NativeHandle.bufferCapacity(nbytes(), 1, "view");
        PointerByReference p = new PointerByReference();
        NativeHandle.check(() -> LIB.lodtensor_data_mut(ptr(), p), this);
        if (n == 0) {
            return ByteBuffer.allocateDirect(0).order(ByteOrder.nativeOrder());
        }
        ByteBuffer view = p.getValue().getByteBuffer(0, n).order(ByteOrder.nativeOrder());
        // Slices, duplicates and typed views of a direct buffer refer to it, so while any of them
        // is reachable this registration (whose action holds the tensor) stays, and the tensor too.
        NativeHandle.CLEANER.register(view, () -> Reference.reachabilityFence(this));
        return view;
    }

    // ---- changing the LoD, views and pieces -----------------------------------------------------

    public void setLod(Lod lod) {
        NativeHandle.check(() -> LIB.lodtensor_set_lod(ptr(), lod.kind, lod.levelSizes, lod.levelSizes.length,
                lod.values, lod.values.length), this);
    }

    public void clearLod() {
        NativeHandle.check(() -> LIB.lodtensor_clear_lod(ptr()), this);
    }

    /** A new handle on the same memory and LoD. */
    public Tensor share() {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(() -> LIB.lodtensor_share(ptr(), out), this), out);
    }

    /** A new tensor with its own copy of the elements. */
    public Tensor copy() {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(() -> LIB.lodtensor_copy(ptr(), out), this), out);
    }

    /** Sequences [begin, end) of LoD level level, sharing this tensor's memory. */
    public Tensor slice(int level, long begin, long end) {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(() -> LIB.lodtensor_slice(ptr(), level, begin, end, out), this), out);
    }

    /** At most numPieces pieces of whole top-level sequences, sharing this tensor's memory. */
    public Tensor[] split(int numPieces) {
        Pointer[] raw = new Pointer[Math.max(numPieces, 0)];
        LongByReference count = new LongByReference();
        NativeHandle.check(() -> LIB.lodtensor_split(ptr(), numPieces, raw, raw.length, count), this);
        Tensor[] pieces = new Tensor[(int) count.getValue()];
        for (int i = 0; i < pieces.length; i++) {
            pieces[i] = adopt(raw[i]);
        }
        return pieces;
    }

    /** Concatenates tensors along rows (LoD levels appended) into a new tensor. */
    public static Tensor merge(Tensor... tensors) {
        Pointer[] raw = new Pointer[tensors.length];
        for (int i = 0; i < tensors.length; i++) {
            raw[i] = tensors[i].ptr();
        }
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(() -> LIB.lodtensor_merge(raw, raw.length, out), (Object[]) tensors), out);
    }

    /** A new handle on this memory whose LoD is the target offsets (append: added below). */
    public Tensor lodReset(long[] targetOffsets, boolean append) {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(
                () -> LIB.lodtensor_lod_reset(ptr(), null, targetOffsets, targetOffsets.length, append, out), this),
                out);
    }

    /** lodReset taking the target from y (its LoD, or its int32/int64 elements). */
    public Tensor lodReset(Tensor y, boolean append) {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(() -> LIB.lodtensor_lod_reset(ptr(), y.ptr(), null, 0, append, out), this, y),
                out);
    }

    /** A copy (elements and LoD) on a place (deviceType 1 = CPU, 2 = CUDA), always with its own memory. */
    public Tensor toPlace(int deviceType, int deviceId) {
        PointerByReference out = new PointerByReference();
        return out(NativeHandle.call(
                () -> LIB.lodtensor_to_place(ptr(), new LodTensorLib.PlaceT(deviceType, deviceId), out), this), out);
    }

    /**
     * The elements lent as a DLPack managed tensor (lodtensor_to_dlpack), zero copy: the address
     * of a DLManagedTensorVersioned of dlpack.h, for a consumer that calls its deleter once when
     * done. DLPack has no LoD.
     */
    public long toDlpack() {
        PointerByReference out = new PointerByReference();
        NativeHandle.check(() -> LIB.lodtensor_to_dlpack(ptr(), out), this);
        return Pointer.nativeValue(out.getValue());
    }

    /**
     * A tensor that takes over the DLPack managed tensor at {@code address}
     * (lodtensor_from_dlpack), zero copy, with a LoD: the library calls its deleter once, when the
     * last handle over the memory is closed. When this throws, nothing was taken.
     */
    public static Tensor fromDlpack(long address, Lod lod) {
        PointerByReference out = new PointerByReference();
        int s = LIB.lodtensor_from_dlpack(address == 0 ? null : new Pointer(address), lod.kind, lod.levelSizes,
                lod.levelSizes.length, lod.values, lod.values.length, out);
        return out(s, out);
    }

    /**
     * {@link #toDlpack} in the form of DLPack before 1.0 (lodtensor_to_dlpack_legacy): the address
     * of a DLManagedTensor of dlpack.h, for a consumer that has only that form.
     */
    public long toDlpackLegacy() {
        PointerByReference out = new PointerByReference();
        NativeHandle.check(() -> LIB.lodtensor_to_dlpack_legacy(ptr(), out), this);
        return Pointer.nativeValue(out.getValue());
    }

    /**
     * {@link #fromDlpack} for a DLManagedTensor of DLPack before 1.0 at {@code address}
     * (lodtensor_from_dlpack_legacy), with the same ownership.
     */
    public static Tensor fromDlpackLegacy(long address, Lod lod) {
        PointerByReference out = new PointerByReference();
        int s = LIB.lodtensor_from_dlpack_legacy(address == 0 ? null : new Pointer(address), lod.kind,
                lod.levelSizes, lod.levelSizes.length, lod.values, lod.values.length, out);
        return out(s, out);
    }

    /**
     * Lends this tensor to Arrow through the C data interface (lodtensor_to_arrow), zero copy (bool
     * elements are packed into a copy): fills the caller's struct ArrowSchema and struct
     * ArrowArray at these addresses (Arrow Java's {@code ArrowSchema.memoryAddress()} and
     * {@code ArrowArray.memoryAddress()}, say) with one large_list per LoD level, one
     * fixed_size_list per dim after the first, then the elements. The caller releases each once,
     * with its release callback (Arrow's import functions do); the memory stays until the array is
     * released, also after this tensor is closed. When this throws, neither struct was written.
     */
    public void toArrow(long schemaAddress, long arrayAddress) {
        NativeHandle.check(
                () -> LIB.lodtensor_to_arrow(ptr(), nativePointer(schemaAddress), nativePointer(arrayAddress)), this);
    }

    /**
     * A tensor that takes the Arrow array at {@code arrayAddress}, of the type at
     * {@code schemaAddress} (lodtensor_from_arrow), zero copy (bool elements are unpacked into a
     * copy): the array is moved (its release becomes NULL) and released once, when the last handle
     * over its memory is closed. The schema is only read: it stays the caller's to release. When
     * this throws, nothing was taken: the array is untouched.
     */
    public static Tensor fromArrow(long schemaAddress, long arrayAddress) {
        PointerByReference out = new PointerByReference();
        return out(LIB.lodtensor_from_arrow(nativePointer(schemaAddress), nativePointer(arrayAddress), out), out);
    }

    /**
     * Lends this tensor to Arrow through the C device data interface
     * (lodtensor_to_arrow_device), zero copy, in the form {@link #toArrow} makes: fills the
     * caller's struct ArrowSchema and struct ArrowDeviceArray at these addresses. A host tensor
     * goes out as from {@code toArrow}, on ARROW_DEVICE_CPU with device_id -1; a tensor on CUDA
     * device n on ARROW_DEVICE_CUDA with device_id n, its elements and LoD offsets device memory
     * that is ready when the call returns (sync_event NULL). The caller releases the schema and
     * the device array's array once each, as for {@code toArrow}; the memory stays until the array
     * is released. When this throws, neither struct was written.
     */
    public void toArrowDevice(long schemaAddress, long arrayAddress) {
        NativeHandle.check(() -> LIB.lodtensor_to_arrow_device(ptr(), nativePointer(schemaAddress),
                nativePointer(arrayAddress)), this);
    }

    /** {@link #toArrowStrings}: any bytes, as large_binary (LODTENSOR_ARROW_BINARY). */
    public static final int ARROW_BINARY = 0;
    /** {@link #toArrowStrings}: UTF-8 text, as large_utf8, each string checked (LODTENSOR_ARROW_UTF8). */
    public static final int ARROW_UTF8 = 1;
    /** A record batch's column as {@link #toArrow} lends a tensor; no strings (LODTENSOR_ARROW_VALUES). */
    public static final int ARROW_VALUES = 2;

    /**
     * Lends this tensor, a 1-d uint8 tensor with a LoD, to Arrow as strings
     * (lodtensor_to_arrow_strings), zero copy: its last LoD level's sequences are one large_utf8
     * ({@link #ARROW_UTF8}) or large_binary ({@link #ARROW_BINARY}) array, the levels above it
     * large lists as {@link #toArrow} makes them. Released as {@code toArrow}'s structs. When this
     * throws, neither struct was written.
     */
    public void toArrowStrings(int encoding, long schemaAddress, long arrayAddress) {
        NativeHandle.check(() -> LIB.lodtensor_to_arrow_strings(
                ptr(), encoding, nativePointer(schemaAddress), nativePointer(arrayAddress)), this);
    }

    /**
     * {@link #toArrowStrings} through the C device data interface (lodtensor_to_arrow_device_strings),
     * as {@link #toArrowDevice} lends a tensor; UTF-8 on a device is checked there.
     */
    public void toArrowDeviceStrings(int encoding, long schemaAddress, long arrayAddress) {
        NativeHandle.check(() -> LIB.lodtensor_to_arrow_device_strings(
                ptr(), encoding, nativePointer(schemaAddress), nativePointer(arrayAddress)), this);
    }

    /**
     * A tensor that takes the Arrow device array (a struct ArrowDeviceArray) at
     * {@code arrayAddress}, of the type at {@code schemaAddress} (lodtensor_from_arrow_device),
     * zero copy, as {@link #fromArrow} takes an array: on the CPU for ARROW_DEVICE_CPU and
     * ARROW_DEVICE_CUDA_HOST, on CUDA device n for ARROW_DEVICE_CUDA with device_id n (the
     * elements stay in the producer's device memory; a non-NULL sync_event is waited for first).
     * The device array's array is moved (its release becomes NULL) and released once, when the
     * last handle over its memory is closed; the schema stays the caller's to release. When this
     * throws, nothing was taken: the array is untouched.
     */
    public static Tensor fromArrowDevice(long schemaAddress, long arrayAddress) {
        PointerByReference out = new PointerByReference();
        return out(LIB.lodtensor_from_arrow_device(nativePointer(schemaAddress), nativePointer(arrayAddress), out),
                out);
    }

    /**
     * Lends the columns to Arrow as one record batch (lodtensor_to_arrow_record_batch_encoded), zero
     * copy: fills the caller's struct ArrowSchema and struct ArrowArray at these addresses with a
     * struct array whose child i is {@code columns[i]}, named {@code names[i]} (sent as UTF-8), in
     * the form {@code encodings[i]}: {@link #ARROW_VALUES} as {@link #toArrow} lends it,
     * {@link #ARROW_UTF8} or {@link #ARROW_BINARY} as {@link #toArrowStrings} lends text;
     * {@code encodings} null lends every column as values. Each column has one entry per row (its
     * sequences at LoD level 0, or its rows). The caller releases each struct once; the memory
     * stays until the array is released. When this throws, neither struct was written.
     */
    public static void toArrowRecordBatch(Tensor[] columns, String[] names, int[] encodings, long schemaAddress,
                                          long arrayAddress) {
        lendBatch(columns, names, encodings, (c, n, e, k) -> LIB.lodtensor_to_arrow_record_batch_encoded(c, n, e, k,
                nativePointer(schemaAddress), nativePointer(arrayAddress)));
    }

    /** {@link #toArrowRecordBatch} with every column as values. */
    public static void toArrowRecordBatch(Tensor[] columns, String[] names, long schemaAddress, long arrayAddress) {
        toArrowRecordBatch(columns, names, null, schemaAddress, arrayAddress);
    }

    /**
     * {@link #toArrowRecordBatch} through the C device data interface
     * (lodtensor_to_arrow_device_record_batch_encoded), into a struct ArrowDeviceArray: every column
     * on one place, as {@link #toArrowDevice} lends one tensor.
     */
    public static void toArrowDeviceRecordBatch(Tensor[] columns, String[] names, int[] encodings,
                                                long schemaAddress, long arrayAddress) {
        lendBatch(columns, names, encodings, (c, n, e, k) -> LIB.lodtensor_to_arrow_device_record_batch_encoded(c,
                n, e, k, nativePointer(schemaAddress), nativePointer(arrayAddress)));
    }

    /** {@link #toArrowDeviceRecordBatch} with every column as values. */
    public static void toArrowDeviceRecordBatch(Tensor[] columns, String[] names, long schemaAddress,
                                                long arrayAddress) {
        toArrowDeviceRecordBatch(columns, names, null, schemaAddress, arrayAddress);
    }

    /**
     * A record batch export over the columns' handles, their names as UTF-8, their encodings (or
     * null) and their count.
     */
    private interface BatchLend {
        int call(Pointer[] columns, Pointer names, int[] encodings, long count);
    }

    private static void lendBatch(Tensor[] columns, String[] names, int[] encodings, BatchLend lend) {
        if (columns.length != names.length) {
            throw new IllegalArgumentException(
                    columns.length + " columns but " + names.length + " names; a record batch names each column");
        }
        if (encodings != null && encodings.length != columns.length) {
            throw new IllegalArgumentException(columns.length + " columns but " + encodings.length
                    + " encodings; a record batch takes an encoding a column, or none");
        }
        for (int i = 0; i < names.length; i++) {
            // C strings end at the first NUL: such a name would reach Arrow cut short.
            if (names[i] != null && names[i].indexOf('\0') >= 0) {
                throw new IllegalArgumentException("names[" + i + "] \"" + names[i].replace("\0", "\\0")
                        + "\" contains a NUL character, which a C string (Arrow's name) cannot hold");
            }
        }
        Pointer[] raw = new Pointer[columns.length];
        for (int i = 0; i < columns.length; i++) {
            raw[i] = columns[i] == null ? null : columns[i].ptr();
        }
        StringArray utf8 = new StringArray(names, "UTF-8");
        NativeHandle.check(() -> lend.call(raw, utf8, encodings, raw.length), (Object[]) columns);
    }

    /**
     * One tensor a column of the Arrow record batch (a struct array) at {@code arrayAddress}, of
     * the type at {@code schemaAddress} (lodtensor_from_arrow_record_batch), zero copy, each as
     * {@link #fromArrow} takes an array. The columns share the array, which is moved (its release
     * becomes NULL) and released once, when the last handle over its memory is closed; the schema
     * stays the caller's. When this throws, nothing was taken.
     */
    public static Tensor[] fromArrowRecordBatch(long schemaAddress, long arrayAddress) {
        return takeBatch(schemaAddress, (out, count) -> LIB.lodtensor_from_arrow_record_batch(
                nativePointer(schemaAddress), nativePointer(arrayAddress), out, out.length, count));
    }

    /**
     * {@link #fromArrowRecordBatch} for a struct ArrowDeviceArray
     * (lodtensor_from_arrow_device_record_batch), on the place {@link #fromArrowDevice} takes an
     * array on.
     */
    public static Tensor[] fromArrowDeviceRecordBatch(long schemaAddress, long arrayAddress) {
        return takeBatch(schemaAddress, (out, count) -> LIB.lodtensor_from_arrow_device_record_batch(
                nativePointer(schemaAddress), nativePointer(arrayAddress), out, out.length, count));
    }

    /** A record batch import into room for the columns, reporting their count. */
    private interface BatchTake {
        int call(Pointer[] out, LongByReference count);
    }

    private static Tensor[] takeBatch(long schemaAddress, BatchTake take) {
        // Room for the columns the schema says (n_children, at byte 32) unless it is released (its
        // release, at byte 56, NULL); the call checks the schema.
        Pointer schema = nativePointer(schemaAddress);
        long children = schema == null || schema.getPointer(56) == null ? 0 : schema.getLong(32);
        Pointer[] raw = new Pointer[(int) Math.max(0, Math.min(children, Integer.MAX_VALUE - 8))];
        LongByReference count = new LongByReference();
        NativeHandle.check(take.call(raw, count));
        Tensor[] columns = new Tensor[(int) count.getValue()];
        for (int i = 0; i < columns.length; i++) {
            columns[i] = adopt(raw[i]);
        }
        return columns;
    }

    private static Pointer nativePointer(long address) {
        return address == 0 ? null : new Pointer(address);
    }

    /**
     * This tensor as a record of Paddle's tensor file format (lodtensor_serialize): the bytes
     * Paddle's save op writes for it; a save_combine file is such records back to back. A CUDA
     * tensor's elements are copied from the device. A record too long for a Java array (2 GiB) is
     * UNSUPPORTED.
     */
    public byte[] serialize() {
        LongByReference n = new LongByReference();
        NativeHandle.check(() -> LIB.lodtensor_serialize(ptr(), null, 0, n), this);
        if (n.getValue() > NativeHandle.MAX_ARRAY_LENGTH) {
            throw new LodTensorException(Status.UNSUPPORTED,
                    "serialize: the record's " + n.getValue() + " bytes do not fit a Java array");
        }
        byte[] bytes = new byte[(int) n.getValue()];
        NativeHandle.check(() -> LIB.lodtensor_serialize(ptr(), bytes, bytes.length, n), this);
        return bytes;
    }

    /**
     * Reads the record of Paddle's tensor file format at the buffer's position
     * (lodtensor_deserialize): a host tensor holding a copy of its elements. The position moves
     * past the record, to where the next record of a save_combine file starts; on failure it
     * stays. A direct buffer (or a mapped file) is read in place; another buffer's remaining
     * bytes are copied to native memory first.
     */
    public static Tensor deserialize(ByteBuffer buf) {
        return readRecord(buf, (p, n, consumed, out) -> LIB.lodtensor_deserialize(p, n, consumed, out));
    }

    /**
     * Paddle's partial load (lodtensor_deserialize_slice): from the record at the buffer's
     * position, which has no LoD, a host tensor of {@code dims} holding a copy of the elements
     * that start at element {@code seek}. The position moves past the whole record, to where the
     * next record of a save_combine file starts; on failure it stays. The buffer is read as
     * {@link #deserialize} reads it.
     */
    public static Tensor deserializeSlice(ByteBuffer buf, long seek, long... dims) {
        return readRecord(buf, (p, n, consumed, out) ->
                LIB.lodtensor_deserialize_slice(p, n, seek, dims, dims.length, consumed, out));
    }

    /** A call that reads the record at {@code p} ({@code n} bytes). */
    private interface RecordReader {
        int read(Pointer p, long n, LongByReference consumed, PointerByReference out);
    }

    private static Tensor readRecord(ByteBuffer buf, RecordReader reader) {
        int n = buf.remaining();
        Pointer p;
        if (n > 0 && buf.isDirect()) {
            p = Native.getDirectBufferPointer(buf).share(buf.position());
        } else if (n > 0) {
            Memory m = new Memory(n);
            m.getByteBuffer(0, n).put(buf.duplicate());
            p = m;
        } else {
            p = null;
        }
        LongByReference consumed = new LongByReference();
        PointerByReference out = new PointerByReference();
        // A direct buffer's address does not keep the buffer (and its memory) reachable.
        Tensor t = out(NativeHandle.call(() -> reader.read(p, n, consumed, out), p, buf), out);
        buf.position(buf.position() + (int) consumed.getValue());
        return t;
    }

    /** Waits until the work queued on a place has finished (the CPU returns at once). */
    public static void synchronize(int deviceType, int deviceId) {
        NativeHandle.check(LIB.lodtensor_synchronize(new LodTensorLib.PlaceT(deviceType, deviceId)));
    }

    /** The number of CUDA devices; UNSUPPORTED in a build without CUDA, a driver or a device. */
    public static int cudaDeviceCount() {
        LongByReference r = new LongByReference();
        NativeHandle.check(LIB.lodtensor_cuda_device_count(r));
        return (int) r.getValue();
    }

    /** Indices of {@link #cudaCounters}' values (LODTENSOR_CUDA_COUNTER_*): kernels launched. */
    public static final int CUDA_COUNTER_LAUNCHES = 0;
    /** Fills of device memory with one byte value. */
    public static final int CUDA_COUNTER_FILLS = 1;
    /** Copies from device memory to device memory. */
    public static final int CUDA_COUNTER_DEVICE_COPIES = 2;
    /** Copies from host memory to the device. */
    public static final int CUDA_COUNTER_UPLOADS = 3;
    /** The bytes of those uploads. */
    public static final int CUDA_COUNTER_UPLOAD_BYTES = 4;
    /** Copies from the device to host memory (each waits for the device). */
    public static final int CUDA_COUNTER_DOWNLOADS = 5;
    /** The bytes of those downloads. */
    public static final int CUDA_COUNTER_DOWNLOAD_BYTES = 6;
    /** Times a calling thread waited for the device. */
    public static final int CUDA_COUNTER_WAITS = 7;
    /** Device blocks handed out, from the cache or new. */
    public static final int CUDA_COUNTER_ALLOCATIONS = 8;
    /** Of those, blocks the driver was asked for. */
    public static final int CUDA_COUNTER_DRIVER_ALLOCATIONS = 9;
    /** The number of counters (LODTENSOR_CUDA_COUNTERS). */
    public static final int CUDA_COUNTERS = 10;

    /**
     * What the library has asked of a CUDA device so far (lodtensor_cuda_counters): every counter,
     * indexed by the CUDA_COUNTER_* constants. Subtract two readings to see what a call asked.
     */
    public static long[] cudaCounters(int device) {
        long[] values = new long[CUDA_COUNTERS];
        NativeHandle.check(LIB.lodtensor_cuda_counters(device, values, values.length));
        return values;
    }

    /**
     * {inUse, kept}: the device memory the library holds on a CUDA device, in bytes: that of its
     * live tensors (and of the small blocks it keeps zeroed for its counting kernels), and the
     * freed blocks its cache keeps for reuse.
     */
    public static long[] cudaMemoryInfo(int device) {
        LongByReference inUse = new LongByReference();
        LongByReference kept = new LongByReference();
        NativeHandle.check(LIB.lodtensor_cuda_memory_info(device, inUse, kept));
        return new long[] {inUse.getValue(), kept.getValue()};
    }

    /**
     * {free, total}: a CUDA device's free and total memory in bytes, as the driver reports them
     * (blocks the library's cache keeps count as used).
     */
    public static long[] cudaFreeMemory(int device) {
        LongByReference free = new LongByReference();
        LongByReference total = new LongByReference();
        NativeHandle.check(LIB.lodtensor_cuda_free_memory(device, free, total));
        return new long[] {free.getValue(), total.getValue()};
    }

    /**
     * Compiles and loads every kernel file for a CUDA device now, instead of each at the first call
     * that needs it (compiling takes seconds; compiled files are kept on disk for later processes).
     * A server calls it at start-up.
     */
    public static void cudaLoadKernels(int device) {
        NativeHandle.check(LIB.lodtensor_cuda_load_kernels(device));
    }

    /**
     * The stream all the library's work on a CUDA device goes to, in call order: a CUstream
     * (cudaStream_t) the library owns, valid for the life of the process (never destroy it). A
     * model whose kernels run on it hands its tensors to the library's ops with no wait between;
     * work on another stream must be ordered with events (see lodtensor_cuda_stream in
     * lodtensor.h).
     */
    public static Pointer cudaStream(int device) {
        PointerByReference out = new PointerByReference();
        NativeHandle.check(LIB.lodtensor_cuda_stream(device, out));
        return out.getValue();
    }

    /** Gives the freed blocks that a CUDA device's cache keeps back to the driver. */
    public static void cudaEmptyCache(int device) {
        NativeHandle.check(LIB.lodtensor_cuda_empty_cache(device));
    }

    /**
     * Bounds the freed blocks a CUDA device's cache keeps for reuse (bytes, as an unsigned size_t;
     * 0 keeps nothing; -1, all bits set, the initial value, is no bound). Blocks over the new
     * bound go back to the driver now.
     */
    public static void cudaSetCacheLimit(int device, long bytes) {
        NativeHandle.check(LIB.lodtensor_cuda_set_cache_limit(device, bytes));
    }

    /** The bound on the freed blocks a CUDA device's cache keeps, in bytes (-1: none). */
    public static long cudaCacheLimit(int device) {
        LongByReference limit = new LongByReference();
        NativeHandle.check(LIB.lodtensor_cuda_cache_limit(device, limit));
        return limit.getValue();
    }

    // ---- library-wide -------------------------------------------------------------------------

    public static String libraryVersion() {
        return LIB.lodtensor_version();
    }

    public static void setNumThreads(int n) {
        NativeHandle.check(LIB.lodtensor_set_num_threads(n));
    }

    public static int numThreads() {
        LongByReference r = new LongByReference();
        NativeHandle.check(LIB.lodtensor_num_threads(r));
        return (int) r.getValue();
    }

    /** Bounds the freed host memory the library keeps for reuse (bytes; 0 keeps nothing). */
    public static void setHostCacheLimit(long bytes) {
        NativeHandle.check(LIB.lodtensor_set_host_cache_limit(bytes));
    }

    /** {kept, limit}: the freed host memory kept for reuse now and the bound on it, in bytes. */
    public static long[] hostCacheInfo() {
        LongByReference kept = new LongByReference();
        LongByReference limit = new LongByReference();
        NativeHandle.check(LIB.lodtensor_host_cache_info(kept, limit));
        return new long[] {kept.getValue(), limit.getValue()};
    }

    /** Makes the library panic on purpose: always throws INTERNAL (the process survives). */
    public static void selftestPanic() {
        NativeHandle.check(LIB.lodtensor_selftest_panic());
    }
}
