package org.lodtensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.jna.Callback;
import com.sun.jna.CallbackReference;
import com.sun.jna.Function;
import com.sun.jna.Memory;
import com.sun.jna.Pointer;
import java.lang.ref.Reference;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The Java binding over the core, the sequence operators, TensorArray and the RNN driver. */
class LodTensorTest {
    static long[] l(long... v) {
        return v;
    }

    static float[] iota(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = i;
        }
        return v;
    }

    /** Native memory of `size` bytes, zeroed: a struct for the library to fill. */
    static Memory zeroed(long size) {
        Memory m = new Memory(size);
        m.clear();
        return m;
    }

    /** The UTF-8 bytes of `text` in a direct buffer, for a uint8 tensor to wrap. */
    static ByteBuffer utf8(String text) {
        byte[] bytes = text.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        return ByteBuffer.allocateDirect(bytes.length).put(bytes).flip();
    }

    static LodTensorException expectError(Status status, String substring, Runnable r) {
        LodTensorException e = assertThrows(LodTensorException.class, r::run);
        assertEquals(status, e.status(), e.getMessage());
        assertTrue(e.detail().contains(substring), () -> "message \"" + e.detail() + "\" lacks " + substring);
        return e;
    }

    /**
     * DLPack: a round trip lends and takes back the same memory, with a LoD given on the way
     * back; a LoD that does not fit leaves the managed tensor with the caller. In both forms.
     */
    @Test
    void dlpackRoundTrip() {
        Tensor x = Tensor.ofLongs(l(4, 5, 6, 7), 2, 2);
        long address = x.address();
        long m = x.toDlpack();
        // The managed tensor keeps the memory.
        x.close();
        expectError(Status.INVALID_LOD, "rows", () -> Tensor.fromDlpack(m, Lod.offsets(l(0, 1, 3))));
        try (Tensor y = Tensor.fromDlpack(m, Lod.offsets(l(0, 1, 2)))) {
            assertEquals(address, y.address());
            assertArrayEquals(l(4, 5, 6, 7), y.toLongArray());
            assertArrayEquals(l(0, 1, 2), y.lodOffsets(0));
        }
        expectError(Status.NULL_ARGUMENT, "managed", () -> Tensor.fromDlpack(0, Lod.offsets()));
        // The same in the form before DLPack 1.0.
        Tensor z = Tensor.ofLongs(l(8, 9), 2);
        long legacy = z.toDlpackLegacy();
        long zAddress = z.address();
        z.close();
        expectError(Status.INVALID_LOD, "rows", () -> Tensor.fromDlpackLegacy(legacy, Lod.offsets(l(0, 3))));
        try (Tensor w = Tensor.fromDlpackLegacy(legacy, Lod.offsets(l(0, 2)))) {
            assertEquals(zAddress, w.address());
            assertArrayEquals(l(8, 9), w.toLongArray());
        }
        expectError(Status.NULL_ARGUMENT, "managed", () -> Tensor.fromDlpackLegacy(0, Lod.offsets()));
    }

    /** An ArrowArray's release callback. */
    public interface ArrowRelease extends Callback {
        void invoke(Pointer array);
    }

    /**
     * The release callback of the ArrowArray in {@code array} (at byte 64), replaced by this one,
     * which counts its calls and then calls it. The library calls it through its native address,
     * so the caller keeps it reachable until the array is released.
     */
    static final class CountedRelease implements ArrowRelease {
        final AtomicInteger calls = new AtomicInteger();
        private final Function release;

        CountedRelease(Pointer array) {
            release = Function.getFunction(array.getPointer(64));
            array.setPointer(64, CallbackReference.getFunctionPointer(this));
        }

        @Override
        public void invoke(Pointer array) {
            calls.incrementAndGet();
            release.invokeVoid(new Object[] {array});
        }
    }

    /**
     * Arrow: float [5, 2] rows under one LoD level go out as large_list<fixed_size_list<float, 2>>
     * over the tensor's memory and come back as the same memory and LoD, the array moved and
     * released once, at the last close; an array that does not match its schema is refused and
     * left alone. The structs are native memory, read at the offsets of Arrow's abi.h.
     */
    @Test
    void arrowRoundTrip() {
        Memory schema = zeroed(72), array = zeroed(80);
        long schemaAddress = Pointer.nativeValue(schema), arrayAddress = Pointer.nativeValue(array);
        Tensor x = Tensor.ofFloats(iota(10), l(5, 2), Lod.offsets(l(0, 2, 5)));
        long address = x.address();
        x.toArrow(schemaAddress, arrayAddress);

        // ArrowSchema: format 0, name 8, flags 24, n_children 32, children 40, release 56.
        assertEquals("+L", schema.getPointer(0).getString(0));
        assertEquals("", schema.getPointer(8).getString(0));
        assertArrayEquals(l(0, 1), schema.getLongArray(24, 2));
        Pointer rows = schema.getPointer(40).getPointer(0);
        assertEquals("+w:2", rows.getPointer(0).getString(0));
        assertEquals("item", rows.getPointer(8).getString(0));
        Pointer elements = rows.getPointer(40).getPointer(0);
        assertEquals("f", elements.getPointer(0).getString(0));
        assertEquals(0, elements.getLong(32));
        // ArrowArray: length, null_count, offset, n_buffers, n_children, then buffers 40,
        // children 48, release 64.
        assertArrayEquals(l(2, 0, 0, 2, 1), array.getLongArray(0, 5));
        assertNull(array.getPointer(40).getPointer(0));
        assertArrayEquals(l(0, 2, 5), array.getPointer(40).getPointer(8).getLongArray(0, 3));
        Pointer fixed = array.getPointer(48).getPointer(0);
        assertArrayEquals(l(5, 0, 0, 1, 1), fixed.getLongArray(0, 5));
        Pointer values = fixed.getPointer(48).getPointer(0);
        assertArrayEquals(l(10, 0, 0, 2, 0), values.getLongArray(0, 5));
        Pointer data = values.getPointer(40).getPointer(8);
        assertEquals(address, Pointer.nativeValue(data));
        assertArrayEquals(iota(10), data.getFloatArray(0, 10));

        expectError(Status.INVALID_ARGUMENT, "child(ren)",
                () -> Tensor.fromArrow(Pointer.nativeValue(elements), arrayAddress));
        assertNotNull(array.getPointer(64)); // a refused array stays the caller's

        CountedRelease counting = new CountedRelease(array);
        Tensor y = Tensor.fromArrow(schemaAddress, arrayAddress);
        assertNull(array.getPointer(64)); // moved
        expectError(Status.INVALID_ARGUMENT, "released", () -> Tensor.fromArrow(schemaAddress, arrayAddress));
        Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
        assertNull(schema.getPointer(56));
        assertEquals(address, y.address());
        assertArrayEquals(l(5, 2), y.dims());
        assertArrayEquals(l(0, 2, 5), y.lodOffsets(0));
        x.close();
        Tensor share = y.share();
        y.close();
        assertArrayEquals(iota(10), share.toFloatArray());
        assertEquals(0, counting.calls.get()); // a handle still uses the memory
        share.close();
        assertEquals(1, counting.calls.get());
        Reference.reachabilityFence(counting);
    }

    /**
     * Arrow record batches: a LoD column and a plain one lent as one struct ("+s"), named, over
     * the tensors' memory, and taken back as two tensors sharing the array, released once at the
     * last close; a column of another length, and names that do not match the columns, are
     * refused; the device form goes out on ARROW_DEVICE_CPU.
     */
    @Test
    void arrowRecordBatchRoundTrip() {
        Memory schema = zeroed(72), array = zeroed(80);
        long schemaAddress = Pointer.nativeValue(schema), arrayAddress = Pointer.nativeValue(array);
        try (Tensor ids = Tensor.ofLongs(l(1, 2, 3, 4, 5), l(5), Lod.offsets(l(0, 2, 5)));
             Tensor scores = Tensor.ofFloats(new float[] {0.5f, 1.5f}, l(2), Lod.offsets());
             Tensor three = Tensor.ofFloats(iota(3), l(3), Lod.offsets())) {
            Tensor.toArrowRecordBatch(new Tensor[] {ids, scores}, new String[] {"ids", "scores"}, schemaAddress,
                    arrayAddress);
            assertEquals("+s", schema.getPointer(0).getString(0));
            assertEquals(2, schema.getLong(32));
            assertEquals("ids", schema.getPointer(40).getPointer(0).getPointer(8).getString(0));
            assertEquals("scores", schema.getPointer(40).getPointer(8).getPointer(8).getString(0));
            assertArrayEquals(l(2, 0, 0, 1, 2), array.getLongArray(0, 5));
            Pointer scoreColumn = array.getPointer(48).getPointer(8);
            assertEquals(scores.address(), Pointer.nativeValue(scoreColumn.getPointer(40).getPointer(8)));

            CountedRelease counting = new CountedRelease(array);
            Tensor[] back = Tensor.fromArrowRecordBatch(schemaAddress, arrayAddress);
            assertNull(array.getPointer(64)); // moved
            Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
            assertEquals(2, back.length);
            assertEquals(ids.address(), back[0].address());
            assertArrayEquals(l(0, 2, 5), back[0].lodOffsets(0));
            assertArrayEquals(new float[] {0.5f, 1.5f}, back[1].toFloatArray());
            back[0].close();
            assertEquals(0, counting.calls.get()); // the other column still uses the array
            back[1].close();
            assertEquals(1, counting.calls.get());
            Reference.reachabilityFence(counting);

            expectError(Status.INVALID_ARGUMENT, "columns[1]: 3 entries, columns[0] 2",
                    () -> Tensor.toArrowRecordBatch(new Tensor[] {ids, three}, new String[] {"a", "b"},
                            schemaAddress, arrayAddress));
            assertThrows(IllegalArgumentException.class,
                    () -> Tensor.toArrowRecordBatch(new Tensor[] {ids}, new String[] {}, schemaAddress,
                            arrayAddress));
            expectError(Status.NULL_ARGUMENT, "schema", () -> Tensor.fromArrowRecordBatch(0, arrayAddress));
            expectError(Status.INVALID_ARGUMENT, "schema: has been released", // released above
                    () -> Tensor.fromArrowRecordBatch(schemaAddress, arrayAddress));

            Memory device = new Memory(128);
            device.clear();
            long deviceAddress = Pointer.nativeValue(device);
            Tensor.toArrowDeviceRecordBatch(new Tensor[] {scores}, new String[] {"scores"}, schemaAddress,
                    deviceAddress);
            assertEquals(1, device.getInt(88)); // ARROW_DEVICE_CPU
            Tensor[] taken = Tensor.fromArrowDeviceRecordBatch(schemaAddress, deviceAddress);
            Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
            assertEquals(scores.address(), taken[0].address());
            taken[0].close();
        }
    }

    /**
     * A record batch with a text column beside its scores: the text as large_utf8 over the
     * tensor's bytes, the scores as values; broken text and an unknown encoding refused, and
     * encodings of another count than the columns.
     */
    @Test
    void arrowRecordBatchWithText() {
        Memory schema = zeroed(72), array = zeroed(80);
        long schemaAddress = Pointer.nativeValue(schema), arrayAddress = Pointer.nativeValue(array);
        ByteBuffer bytes = utf8("Grüße!");
        try (Tensor words = Tensor.wrap(DType.UINT8, l(8), bytes, Lod.offsets(l(0, 7, 8)));
                Tensor split = Tensor.wrap(DType.UINT8, l(8), bytes, Lod.offsets(l(0, 3, 8)));
                Tensor scores = Tensor.ofFloats(new float[] {0.5f, 1.5f}, l(2), Lod.offsets())) {
            Tensor[] columns = {words, scores};
            String[] names = {"text", "score"};
            Tensor.toArrowRecordBatch(columns, names, new int[] {Tensor.ARROW_UTF8, Tensor.ARROW_VALUES},
                    schemaAddress, arrayAddress);
            assertEquals("U", schema.getPointer(40).getPointer(0).getPointer(0).getString(0));
            assertEquals("f", schema.getPointer(40).getPointer(8).getPointer(0).getString(0));
            Pointer strings = array.getPointer(48).getPointer(0);
            assertEquals(words.address(), Pointer.nativeValue(strings.getPointer(40).getPointer(16)));
            Function.getFunction(array.getPointer(64)).invokeVoid(new Object[] {array});
            Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
            expectError(Status.INVALID_ARGUMENT, "columns[0]: sequence 0 of LoD level 0 (bytes 0..3)",
                    () -> Tensor.toArrowRecordBatch(new Tensor[] {split, scores}, names,
                            new int[] {Tensor.ARROW_UTF8, Tensor.ARROW_VALUES}, schemaAddress, arrayAddress));
            expectError(Status.INVALID_ARGUMENT, "encodings[1]: 9 is not",
                    () -> Tensor.toArrowDeviceRecordBatch(columns, names, new int[] {Tensor.ARROW_BINARY, 9},
                            schemaAddress, arrayAddress));
            assertNull(array.getPointer(64)); // not written
            assertThrows(IllegalArgumentException.class,
                    () -> Tensor.toArrowRecordBatch(columns, names, new int[] {Tensor.ARROW_UTF8}, schemaAddress,
                            arrayAddress));
        }
    }

    /** A column name with a NUL, which a C string would cut, is refused; nothing is written. */
    @Test
    void arrowColumnNamesWithNulAreRefused() {
        Memory schema = zeroed(72), array = zeroed(80);
        long schemaAddress = Pointer.nativeValue(schema), arrayAddress = Pointer.nativeValue(array);
        try (Tensor ids = Tensor.ofLongs(l(1, 2), 2); Tensor scores = Tensor.ofFloats(new float[] {1, 2}, 2)) {
            Tensor[] columns = {ids, scores};
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> Tensor.toArrowRecordBatch(columns, new String[] {"ids", "score\0s_v2"}, schemaAddress,
                            arrayAddress));
            assertTrue(e.getMessage().contains("names[1]"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> Tensor.toArrowDeviceRecordBatch(columns,
                    new String[] {"\0", "scores"}, schemaAddress, arrayAddress));
            assertNull(schema.getPointer(56)); // not written
            assertNull(array.getPointer(64));
        }
    }

    /**
     * Arrow's C device data interface: a host tensor goes out on ARROW_DEVICE_CPU (device -1, no
     * sync event) in arrowRoundTrip's form over the tensor's memory and comes back as the same
     * memory and LoD, the embedded array moved and released once, at the last close; another
     * device type is refused, the array left to the caller to release. ArrowDeviceArray: the
     * ArrowArray 0-80, device_id 80, device_type 88, sync_event 96, reserved 104-128.
     */
    @Test
    void arrowDeviceRoundTrip() {
        Memory schema = zeroed(72), array = zeroed(128);
        long schemaAddress = Pointer.nativeValue(schema), arrayAddress = Pointer.nativeValue(array);
        Tensor x = Tensor.ofFloats(iota(10), l(5, 2), Lod.offsets(l(0, 2, 5)));
        long address = x.address();
        x.toArrowDevice(schemaAddress, arrayAddress);

        assertEquals(1, array.getInt(88)); // ARROW_DEVICE_CPU
        assertEquals(-1, array.getLong(80));
        assertNull(array.getPointer(96));
        assertArrayEquals(l(0, 0, 0), array.getLongArray(104, 3));
        assertEquals("+L", schema.getPointer(0).getString(0));
        assertEquals("", schema.getPointer(8).getString(0));
        Pointer rows = schema.getPointer(40).getPointer(0);
        assertEquals("+w:2", rows.getPointer(0).getString(0));
        assertEquals("item", rows.getPointer(8).getString(0));
        assertEquals("f", rows.getPointer(40).getPointer(0).getPointer(0).getString(0));
        assertArrayEquals(l(2, 0, 0, 2, 1), array.getLongArray(0, 5));
        assertArrayEquals(l(0, 2, 5), array.getPointer(40).getPointer(8).getLongArray(0, 3));
        Pointer fixed = array.getPointer(48).getPointer(0);
        assertArrayEquals(l(5, 0, 0, 1, 1), fixed.getLongArray(0, 5));
        Pointer values = fixed.getPointer(48).getPointer(0);
        assertArrayEquals(l(10, 0, 0, 2, 0), values.getLongArray(0, 5));
        assertEquals(address, Pointer.nativeValue(values.getPointer(40).getPointer(8)));

        CountedRelease counting = new CountedRelease(array);
        Tensor y = Tensor.fromArrowDevice(schemaAddress, arrayAddress);
        assertNull(array.getPointer(64)); // moved
        Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
        assertEquals(address, y.address());
        assertArrayEquals(new int[] {1, 0}, y.place());
        assertArrayEquals(l(5, 2), y.dims());
        assertArrayEquals(l(0, 2, 5), y.lodOffsets(0));
        assertArrayEquals(iota(10), y.toFloatArray());
        y.close();
        assertEquals(1, counting.calls.get());
        Reference.reachabilityFence(counting);

        x.toArrowDevice(schemaAddress, arrayAddress);
        array.setInt(88, 7); // ARROW_DEVICE_VULKAN
        expectError(Status.UNSUPPORTED, "device_type", () -> Tensor.fromArrowDevice(schemaAddress, arrayAddress));
        assertNotNull(array.getPointer(64)); // a refused array stays the caller's
        Function.getFunction(array.getPointer(64)).invokeVoid(new Object[] {array});
        assertNull(array.getPointer(64));
        Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
        x.close();
    }

    /**
     * Text lent as Arrow strings (large_utf8) over the tensor's bytes and taken back; bytes that are
     * not UTF-8 string by string refused, and lent as binary on the CPU through the device form.
     * ArrowArray: length 0, n_buffers 24, n_children 32, buffers 40, release 64.
     */
    @Test
    void arrowStrings() {
        Memory schema = zeroed(72), array = zeroed(128);
        long schemaAddress = Pointer.nativeValue(schema), arrayAddress = Pointer.nativeValue(array);
        ByteBuffer bytes = utf8("Grüße!");
        try (Tensor x = Tensor.wrap(DType.UINT8, l(8), bytes, Lod.offsets(l(0, 7, 8)));
                Tensor split = Tensor.wrap(DType.UINT8, l(8), bytes, Lod.offsets(l(0, 3, 8)))) {
            x.toArrowStrings(Tensor.ARROW_UTF8, schemaAddress, arrayAddress);
            assertEquals("U", schema.getPointer(0).getString(0));
            assertArrayEquals(l(2, 0, 0, 3, 0), array.getLongArray(0, 5));
            assertArrayEquals(l(0, 7, 8), array.getPointer(40).getPointer(8).getLongArray(0, 3));
            assertEquals(x.address(), Pointer.nativeValue(array.getPointer(40).getPointer(16)));
            try (Tensor y = Tensor.fromArrow(schemaAddress, arrayAddress)) {
                assertArrayEquals(l(0, 7, 8), y.lodOffsets(0));
                assertEquals(x.address(), y.address());
            }
            Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
            expectError(Status.INVALID_ARGUMENT, "is not UTF-8 at byte 2",
                    () -> split.toArrowStrings(Tensor.ARROW_UTF8, schemaAddress, arrayAddress));
            assertNull(array.getPointer(64)); // not written
            expectError(Status.INVALID_ARGUMENT, "encoding: 9",
                    () -> split.toArrowStrings(9, schemaAddress, arrayAddress));
            split.toArrowDeviceStrings(Tensor.ARROW_BINARY, schemaAddress, arrayAddress);
            assertEquals("Z", schema.getPointer(0).getString(0));
            assertEquals(1, array.getInt(88)); // ARROW_DEVICE_CPU
            Function.getFunction(array.getPointer(64)).invokeVoid(new Object[] {array});
            Function.getFunction(schema.getPointer(56)).invokeVoid(new Object[] {schema});
        }
    }

    /**
     * Paddle's format: the spec's worked example (float32 [5,1], LoD [[0,2,5]]) and a second
     * record after it, as a save_combine file holds them, read back in turn from a heap buffer
     * and from a direct one; a partial load of the second.
     */
    @Test
    void serializeAndDeserialize() {
        try (Tensor x = Tensor.ofFloats(new float[] {1.5f, -2f, 3f, 0.25f, 8f}, l(5, 1), Lod.offsets(l(0, 2, 5)));
                Tensor ids = Tensor.ofLongs(l(7, -1, 9), 3)) {
            byte[] first = x.serialize();
            assertEquals(78, first.length);
            assertArrayEquals(new byte[] {6, 0, 0, 0, 0x08, 0x05, 0x10, 0x05, 0x10, 0x01},
                    java.util.Arrays.copyOfRange(first, 48, 58));
            byte[] second = ids.serialize();
            ByteBuffer heap = ByteBuffer.allocate(first.length + second.length).put(first).put(second).flip();
            ByteBuffer direct = ByteBuffer.allocateDirect(heap.remaining()).put(heap.duplicate()).flip();
            for (ByteBuffer file : new ByteBuffer[] {heap, direct}) {
                try (Tensor a = Tensor.deserialize(file)) {
                    assertEquals(78, file.position());
                    assertArrayEquals(new float[] {1.5f, -2f, 3f, 0.25f, 8f}, a.toFloatArray());
                    assertArrayEquals(l(0, 2, 5), a.lodOffsets(0));
                }
                try (Tensor b = Tensor.deserialize(file)) {
                    assertEquals(0, file.remaining());
                    assertArrayEquals(l(7, -1, 9), b.toLongArray());
                }
                file.position(1);
                expectError(Status.INVALID_ARGUMENT, "version", () -> Tensor.deserialize(file));
                assertEquals(1, file.position());
                // A partial load of the second record (no LoD): elements 1 and 2.
                file.position(first.length);
                try (Tensor c = Tensor.deserializeSlice(file, 1, 2)) {
                    assertEquals(0, file.remaining());
                    assertArrayEquals(l(2), c.dims());
                    assertArrayEquals(l(-1, 9), c.toLongArray());
                }
                file.position(0);
                expectError(Status.INVALID_ARGUMENT, "without LoD", () -> Tensor.deserializeSlice(file, 0, 1));
                assertEquals(0, file.position());
            }
        }
    }

    @Test
    void createAndRead() {
        // Spec §1.2: lengths [[2,1],[2,2,3]] are offsets [[0,2,3],[0,2,4,7]], shape [7, 2].
        try (Tensor x = Tensor.ofFloats(iota(14), l(7, 2), Lod.lengths(l(2, 1), l(2, 2, 3)))) {
            assertArrayEquals(l(7, 2), x.dims());
            assertEquals(14, x.numel());
            assertEquals(56, x.nbytes());
            assertEquals(DType.FLOAT32, x.dtype());
            assertArrayEquals(new int[] {1, 0}, x.place());
            assertEquals(2, x.lodLevels());
            assertArrayEquals(l(0, 2, 3), x.lodOffsets(0));
            assertArrayEquals(l(0, 2, 4, 7), x.lodOffsets(1));
            assertArrayEquals(l(2, 2, 3), x.lodLengths(1));
            assertArrayEquals(l(4, 7), x.sequenceRows(0, 1));
            assertArrayEquals(iota(14), x.toFloatArray());

            // A zero-copy write is seen by a share, not by a copy.
            try (Tensor share = x.share(); Tensor copy = x.copy()) {
                x.view().asFloatBuffer().put(0, 42f);
                assertEquals(42f, share.toFloatArray()[0]);
                assertEquals(0f, copy.toFloatArray()[0]);
            }
            x.setLod(Lod.offsets(l(0, 7)));
            assertArrayEquals(l(0, 7), x.lodOffsets(0));
            x.clearLod();
            assertEquals(0, x.lodLevels());
            expectError(Status.INVALID_ARGUMENT, "dtype", x::toDoubleArray);
        }
        try (Tensor i = Tensor.ofLongs(l(5, -6, 7), 3);
             Tensor d = Tensor.ofDoubles(new double[] {2.5}, new long[0], Lod.NONE);
             Tensor n = Tensor.ofInts(new int[] {1, 2}, l(2), Lod.NONE)) {
            assertArrayEquals(l(5, -6, 7), i.toLongArray());
            assertEquals(0, d.dims().length);
            assertEquals(2.5, d.toDoubleArray()[0]);
            assertArrayEquals(new int[] {1, 2}, n.toIntArray());
        }
        try (Tensor empty = Tensor.ofFloats(new float[0], 0, 2)) {
            assertArrayEquals(l(0, 2), empty.dims());
            assertEquals(0, empty.toFloatArray().length);
            assertEquals(0, empty.view().capacity());
        }
        ByteBuffer bytes = ByteBuffer.allocate(2).put((byte) 1).put((byte) 0).flip();
        try (Tensor b = Tensor.create(DType.BOOL, l(2), bytes, Lod.NONE)) {
            assertEquals(DType.BOOL, b.dtype());
            assertEquals(1, b.view().get(0));
        }
    }

    @Test
    void wrapDirectBufferWithoutCopy() {
        int before = Tensor.lentBuffers();
        ByteBuffer direct = ByteBuffer.allocateDirect(6 * 4).order(java.nio.ByteOrder.nativeOrder());
        for (int i = 0; i < 6; i++) {
            direct.putFloat(4 * i, i);
        }
        Tensor t = Tensor.wrap(DType.FLOAT32, l(6, 1), direct, Lod.lengths(l(4, 2)));
        assertEquals(before + 1, Tensor.lentBuffers());
        direct.putFloat(0, 42f); // the tensor sees the caller's buffer
        assertEquals(42f, t.toFloatArray()[0]);
        try (Tensor tail = t.slice(0, 1, 2)) {
            t.close();
            assertEquals(before + 1, Tensor.lentBuffers()); // the slice still uses it
            assertArrayEquals(new float[] {4, 5}, tail.toFloatArray());
        }
        assertEquals(before, Tensor.lentBuffers()); // released with the last handle
        // A failed wrap takes nothing.
        expectError(Status.INVALID_ARGUMENT, "data_len",
                () -> Tensor.wrap(DType.FLOAT32, l(7, 1), direct, Lod.NONE));
        assertEquals(before, Tensor.lentBuffers());
        expectError(Status.INVALID_ARGUMENT, "direct",
                () -> Tensor.wrap(DType.FLOAT32, l(1), ByteBuffer.allocate(4), Lod.NONE));
    }

    @Test
    void places() {
        try (Tensor x = Tensor.ofFloats(iota(6), l(6, 1), Lod.lengths(l(4, 2)));
             Tensor c = x.toPlace(1, 0)) {
            assertArrayEquals(iota(6), c.toFloatArray());
            assertArrayEquals(l(0, 4, 6), c.lodOffsets(0));
            c.view().asFloatBuffer().put(0, 9f);
            assertEquals(0f, x.toFloatArray()[0]); // always a copy
            Tensor.synchronize(1, 0);
            boolean cuda = true;
            try {
                Tensor.cudaDeviceCount();
            } catch (LodTensorException e) {
                assertEquals(Status.UNSUPPORTED, e.status());
                cuda = false;
            }
            if (!cuda) {
                expectError(Status.UNSUPPORTED, "", () -> x.toPlace(2, 0));
                expectError(Status.UNSUPPORTED, "", () -> Tensor.synchronize(2, 0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaMemoryInfo(0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaEmptyCache(0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaLoadKernels(0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaSetCacheLimit(0, 0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaCacheLimit(0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaFreeMemory(0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaCounters(0));
                expectError(Status.UNSUPPORTED, "cuda:0", () -> Tensor.cudaStream(0));
            } else {
                long[] before = Tensor.cudaCounters(0);
                try (Tensor d = x.toPlace(2, 0)) {
                    long[] after = Tensor.cudaCounters(0);
                    assertEquals(1L, after[Tensor.CUDA_COUNTER_UPLOADS] - before[Tensor.CUDA_COUNTER_UPLOADS]);
                    assertEquals(24L, after[Tensor.CUDA_COUNTER_UPLOAD_BYTES] - before[Tensor.CUDA_COUNTER_UPLOAD_BYTES]);
                    assertEquals(2, d.place()[0]);
                    assertTrue(Tensor.cudaMemoryInfo(0)[0] >= 24);
                    Tensor.cudaEmptyCache(0);
                    Tensor.cudaLoadKernels(0);
                    assertEquals(0L, Tensor.cudaMemoryInfo(0)[1]);
                    Tensor.cudaSetCacheLimit(0, 1L << 20);
                    assertEquals(1L << 20, Tensor.cudaCacheLimit(0));
                    Tensor.cudaSetCacheLimit(0, -1L);
                    assertEquals(-1L, Tensor.cudaCacheLimit(0));
                    long[] mem = Tensor.cudaFreeMemory(0);
                    assertTrue(mem[0] > 0 && mem[0] <= mem[1]);
                    assertNotNull(Tensor.cudaStream(0));
                    assertEquals(Tensor.cudaStream(0), Tensor.cudaStream(0));
                }
            }
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaMemoryInfo(-1));
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaEmptyCache(-1));
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaLoadKernels(-1));
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaSetCacheLimit(-1, 0));
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaCacheLimit(-1));
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaFreeMemory(-1));
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaCounters(-1));
            expectError(Status.INVALID_ARGUMENT, "device", () -> Tensor.cudaStream(-1));
            expectError(Status.INVALID_ARGUMENT, "place", () -> x.toPlace(7, 0));
        }
    }

    @Test
    void sliceSplitMergeReset() {
        try (Tensor x = Tensor.ofFloats(iota(20), l(20, 1),
                Lod.lengths(l(2, 1), l(2, 2, 3), l(2, 3, 2, 3, 2, 3, 5)));
             Tensor s = x.slice(0, 1, 2)) {
            assertArrayEquals(l(0, 2, 5, 10), s.lodOffsets(2));
            assertEquals(10f, s.toFloatArray()[0]);
        }
        // Spec §1.8.
        try (Tensor batch = Tensor.ofFloats(iota(20), l(20, 1), Lod.lengths(l(2, 2, 1, 1), l(1, 5, 2, 5, 2, 5)))) {
            Tensor[] pieces = batch.split(2);
            assertEquals(2, pieces.length);
            assertArrayEquals(l(0, 1, 6, 8, 13), pieces[0].lodOffsets(1));
            assertArrayEquals(l(0, 1, 2), pieces[1].lodOffsets(0));
            try (Tensor merged = Tensor.merge(pieces)) {
                assertArrayEquals(l(0, 2, 4, 5, 6), merged.lodOffsets(0));
                assertArrayEquals(iota(20), merged.toFloatArray());
            }
            for (Tensor p : pieces) {
                p.close();
            }
        }
        // Spec §1.11.
        try (Tensor plain = Tensor.ofFloats(iota(10), 10, 1);
             Tensor r = plain.lodReset(l(0, 7, 10), false);
             Tensor r2 = plain.lodReset(r, false)) {
            assertArrayEquals(l(0, 7, 10), r.lodOffsets(0));
            assertArrayEquals(l(0, 7, 10), r2.lodOffsets(0));
            expectError(Status.INVALID_LOD, "rows", () -> plain.lodReset(l(0, 7, 9), false));
        }
    }

    @Test
    void errorsAndClose() {
        expectError(Status.INVALID_LOD, "10", () -> Tensor.ofFloats(iota(10), l(10, 1), Lod.lengths(l(3, 2, 4))));
        expectError(Status.INVALID_ARGUMENT, "data_len", () -> Tensor.ofFloats(iota(10), 5, 1));
        Tensor x = Tensor.ofFloats(iota(10), l(10, 1), Lod.lengths(l(3, 2, 5)));
        LodTensorException e = expectError(Status.OUT_OF_RANGE, "begin", () -> x.slice(0, 2, 2));
        assertTrue(e.getMessage().startsWith("out of range: "), e.getMessage());
        expectError(Status.INTERNAL, "panic", Tensor::selftestPanic);
        x.close();
        x.close(); // idempotent
        expectError(Status.NULL_ARGUMENT, "t", x::numel);
        assertEquals("0.1.0", Tensor.libraryVersion());
        Tensor.setNumThreads(2);
        assertEquals(2, Tensor.numThreads());
        Tensor.setNumThreads(0);
        Tensor.setHostCacheLimit(5L << 20);
        assertEquals(5L << 20, Tensor.hostCacheInfo()[1]);
        Tensor.setHostCacheLimit(0);
        assertEquals(0L, Tensor.hostCacheInfo()[0]);
        Tensor.setHostCacheLimit(256L << 20);
        assertEquals("invalid LoD", Status.INVALID_LOD.label());
    }

    @Test
    void errorMessagesPerThread() throws Exception {
        try (Tensor x = Tensor.ofFloats(iota(10), l(10, 1), Lod.lengths(l(3, 2, 5)))) {
            ExecutorService pool = Executors.newFixedThreadPool(8);
            List<Future<?>> done = new ArrayList<>();
            for (int g = 0; g < 8; g++) {
                int gg = g;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 200; i++) {
                        int level = 1 + (gg + i) % 7;
                        expectError(Status.OUT_OF_RANGE, level + " is out of range", () -> x.lodOffsets(level));
                    }
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            pool.shutdown();
        }
    }

    @Test
    void sequenceOps() {
        try (Tensor x = Tensor.ofFloats(new float[] {1, 2, 3, 4}, l(4, 1), Lod.offsets(l(0, 2, 4)));
             Tensor y = Tensor.ofFloats(new float[8], l(8, 1), Lod.offsets(l(0, 2, 4), l(0, 3, 6, 7, 8)));
             Tensor e = Sequence.expand(x, y, 0)) {
            assertArrayEquals(new float[] {1, 2, 1, 2, 3, 4, 3, 4}, e.toFloatArray());
            assertArrayEquals(l(0, 2, 4, 6, 8), e.lodOffsets(0));
        }
        try (Tensor rows = Tensor.ofFloats(new float[] {1, 2, 3, 4}, 4, 1);
             Tensor y = Tensor.ofFloats(new float[8], l(8, 1), Lod.offsets(l(0, 3, 6, 7, 8)));
             Tensor e = Sequence.expandAs(rows, y)) {
            assertArrayEquals(new float[] {1, 1, 1, 2, 2, 2, 3, 4}, e.toFloatArray());
        }
        // Spec §6 pool.
        try (Tensor p = Tensor.ofFloats(new float[] {1, 3, 2, 4, 6, 5, 1}, l(7, 1), Lod.offsets(l(0, 2, 5, 7, 7)))) {
            try (Sequence.Pair r = Sequence.pool(p, Sequence.POOL_SUM, 0)) {
                assertArrayEquals(new float[] {4, 12, 6, 0}, r.first().toFloatArray());
                assertNull(r.second());
            }
            try (Sequence.Pair r = Sequence.pool(p, Sequence.POOL_AVERAGE, 0)) {
                assertArrayEquals(new float[] {2, 4, 3, 0}, r.first().toFloatArray());
            }
            try (Sequence.Pair r = Sequence.pool(p, Sequence.POOL_MAX, 0)) {
                assertArrayEquals(new float[] {3, 6, 5, 0}, r.first().toFloatArray());
                assertArrayEquals(new int[] {1, 4, 5, -1}, r.second().toIntArray());
            }
            try (Tensor f = Sequence.firstStep(p); Tensor last = Sequence.lastStep(p)) {
                assertArrayEquals(new float[] {1, 2, 5, 0}, f.toFloatArray());
                assertArrayEquals(new float[] {3, 6, 1, 0}, last.toFloatArray());
            }
            expectError(Status.INVALID_ARGUMENT, "pool_type", () -> Sequence.pool(p, 99, 0));
            try (Tensor zero = Tensor.ofFloats(new float[] {0}, 1);
                 Sequence.Pair padded = Sequence.pad(p, zero, -1);
                 Tensor unpadded = Sequence.unpad(padded.first(), padded.second())) {
                assertArrayEquals(l(4, 3, 1), padded.first().dims());
                assertArrayEquals(new float[] {1, 3, 0, 2, 4, 6, 5, 1, 0, 0, 0, 0}, padded.first().toFloatArray());
                assertArrayEquals(l(2, 3, 2, 0), padded.second().toLongArray());
                assertArrayEquals(new float[] {1, 3, 2, 4, 6, 5, 1}, unpadded.toFloatArray());
            }
        }
        try (Tensor sx = Tensor.ofFloats(new float[] {0, 0, 0, 10, 10, 10}, 2, 3);
             Tensor ids = Tensor.ofLongs(l(0, 2, 1, 1), l(4, 1), Lod.lengths(l(2, 2)));
             Tensor upd = Tensor.ofFloats(new float[] {1, 2, 3, 4}, l(4, 1), Lod.lengths(l(2, 2)));
             Tensor bad = Tensor.ofLongs(l(0, 3, 1, 1), l(4, 1), Lod.lengths(l(2, 2)));
             Tensor sc = Sequence.scatter(sx, ids, upd)) {
            assertArrayEquals(new float[] {1, 0, 2, 10, 17, 10}, sc.toFloatArray());
            Sequence.scatterInPlace(sx, ids, upd);
            assertArrayEquals(new float[] {1, 0, 2, 10, 17, 10}, sx.toFloatArray());
            expectError(Status.OUT_OF_RANGE, "ids", () -> Sequence.scatter(sx, bad, upd));
        }
    }

    @Test
    void tensorArrayUnpackPack() {
        // Spec §5.3 level_0.
        try (Tensor x = Tensor.ofFloats(iota(10), l(10, 1), Lod.lengths(l(3, 6, 1)));
             RankTable table = RankTable.create(x, 0);
             TensorArray steps = TensorArray.unpack(x, table);
             Tensor back = steps.pack(table)) {
            assertEquals(3, table.size());
            assertEquals(0, table.level());
            assertEquals(6, table.maxSequenceLen());
            assertArrayEquals(l(1, 0, 2), table.indices());
            assertArrayEquals(l(6, 3, 1), table.lengths());
            assertEquals(6, steps.size());
            float[][] want = {{3, 0, 9}, {4, 1}, {5, 2}, {6}, {7}, {8}};
            for (int i = 0; i < want.length; i++) {
                try (Tensor s = steps.read(i, false)) {
                    assertArrayEquals(want[i], s.toFloatArray(), "step " + i);
                }
            }
            assertArrayEquals(iota(10), back.toFloatArray());
            assertArrayEquals(l(0, 3, 9, 10), back.lodOffsets(0));

            try (Tensor state = Tensor.ofFloats(new float[] {100, 101, 102}, 3, 1);
                 Tensor ranked = table.reorder(state);
                 Tensor shrunk = table.shrinkRnnMemory(ranked, 1)) {
                assertArrayEquals(new float[] {101, 100, 102}, ranked.toFloatArray());
                assertArrayEquals(new float[] {101, 100}, shrunk.toFloatArray());
            }
            TensorArray arr = TensorArray.create();
            try (Tensor s1 = steps.read(1, true)) {
                arr.write(1, s1, false);
            }
            assertEquals(2, arr.size());
            try (Tensor cat = arr.toTensor(0, false)) {
                assertArrayEquals(new float[] {4, 1}, cat.toFloatArray());
            }
            try (Tensor grid = Tensor.ofFloats(new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
                 TensorArray cols = TensorArray.unstack(grid, 1);
                 Tensor stacked = cols.toTensor(0, true)) {
                assertArrayEquals(new float[] {1, 4, 2, 5, 3, 6}, stacked.toFloatArray());
            }
            arr.clear();
            expectError(Status.OUT_OF_RANGE, "index", () -> arr.read(0, false));
            arr.close();
            arr.close();
            expectError(Status.NULL_ARGUMENT, "a", arr::size);
            expectError(Status.INVALID_ARGUMENT, "level", () -> RankTable.create(x, 1));
        }
    }

    // 5 sequences of 3, 0, 5, 1, 2 rows of width 2; h_t = h_(t-1) + x_t, output h_t.
    static final long[] LENS = {3, 0, 5, 1, 2};

    static float[] rnnX() {
        float[] xs = new float[22];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = i % 7 - 2;
        }
        return xs;
    }

    static float[] rnnH0() {
        float[] h0 = new float[10];
        for (int i = 0; i < h0.length; i++) {
            h0[i] = 10 * i;
        }
        return h0;
    }

    static float[] rnnReference() {
        float[] xs = rnnX(), h0 = rnnH0(), want = new float[22];
        for (int s = 0, r = 0; s < LENS.length; s++) {
            float a = h0[2 * s], b = h0[2 * s + 1];
            for (int t = 0; t < LENS[s]; t++, r++) {
                a += xs[2 * r];
                b += xs[2 * r + 1];
                want[2 * r] = a;
                want[2 * r + 1] = b;
            }
        }
        return want;
    }

    /** The Java step function: elementwise input + previous state. */
    static DynamicRnn.StepResult addStep(Tensor in, Tensor prev) {
        float[] a = in.toFloatArray();
        float[] b = prev.toFloatArray();
        for (int i = 0; i < a.length; i++) {
            a[i] += b[i];
        }
        return new DynamicRnn.StepResult(Tensor.ofFloats(a, a.length / 2, 2));
    }

    @Test
    void dynamicRnnWithJavaStep() {
        try (Tensor x = Tensor.ofFloats(rnnX(), l(11, 2), Lod.lengths(LENS));
             Tensor init = Tensor.ofFloats(rnnH0(), 5, 2)) {
            int[] calls = {0};
            Tensor[] kept = {null};
            try (Tensor out = DynamicRnn.run(x, 0, init, (step, in, prev) -> {
                assertEquals(calls[0]++, step);
                kept[0] = in;
                return addStep(in, prev);
            })) {
                assertEquals(5, calls[0]);
                assertArrayEquals(rnnReference(), out.toFloatArray());
                assertArrayEquals(l(0, 3, 3, 8, 9, 11), out.lodOffsets(0));
            }
            expectError(Status.NULL_ARGUMENT, "t", kept[0]::numel); // lent inputs are emptied

            // Separate output and state handles.
            try (Tensor out = DynamicRnn.run(x, 0, init, (step, in, prev) -> {
                Tensor o = addStep(in, prev).output();
                return new DynamicRnn.StepResult(o, o.share());
            })) {
                assertArrayEquals(rnnReference(), out.toFloatArray());
            }

            // A Java exception stops the loop; it is the cause of a CALLBACK_FAILED error.
            IllegalStateException boom = new IllegalStateException("model failed");
            calls[0] = 0;
            LodTensorException e = expectError(Status.CALLBACK_FAILED, "step 1", () ->
                    DynamicRnn.run(x, 0, init, (step, in, prev) -> {
                        calls[0]++;
                        if (step == 1) {
                            throw boom;
                        }
                        return new DynamicRnn.StepResult(in.share());
                    }));
            assertSame(boom, e.getCause());
            assertEquals(2, calls[0]);

            // Returning a lent input is refused by the driver.
            expectError(Status.INVALID_ARGUMENT, "borrowed", () ->
                    DynamicRnn.run(x, 0, init, (step, in, prev) -> new DynamicRnn.StepResult(in)));
            // The driver's own checks.
            expectError(Status.INVALID_ARGUMENT, "level", () ->
                    DynamicRnn.run(x, 2, init, (step, in, prev) -> new DynamicRnn.StepResult(in.share())));
            try (Tensor small = Tensor.ofFloats(new float[4], 2, 2)) {
                expectError(Status.INVALID_ARGUMENT, "init_state", () ->
                        DynamicRnn.run(x, 0, small, (step, in, prev) -> new DynamicRnn.StepResult(in.share())));
            }
        }
    }

    /**
     * Collects garbage until one of the watched objects is collected, for at most {@code tries}
     * rounds of 10 ms; true if one was.
     */
    static boolean collects(List<? extends Reference<?>> watched, int tries) throws InterruptedException {
        for (int i = 0; i < tries; i++) {
            for (Reference<?> r : watched) {
                if (r.refersTo(null)) {
                    return true;
                }
            }
            System.gc();
            Thread.sleep(10);
        }
        return false;
    }

    /** The tensors of the last {@link #rnnOverTemporaries}, watched for collection. */
    static final List<WeakReference<Tensor>> TEMPORARIES = new ArrayList<>();

    static Tensor watched(Tensor t) {
        TEMPORARIES.add(new WeakReference<>(t));
        return t;
    }

    /** The RNN over an x and an initial state that nothing but the call refers to. */
    static Tensor rnnOverTemporaries(DynamicRnn.StepFunction fn) {
        TEMPORARIES.clear();
        return DynamicRnn.run(watched(Tensor.ofFloats(rnnX(), l(11, 2), Lod.lengths(LENS))), 0,
                watched(Tensor.ofFloats(rnnH0(), 5, 2)), fn);
    }

    /**
     * Compiled code drops an object as soon as it no longer needs it, which for a handle's owner
     * is once the handle has been read: the binding must keep a call's tensors reachable until
     * the call returns, or their Cleaner frees them under the library. The run is repeated until
     * it is compiled, then its step function collects garbage while the RNN runs.
     */
    @Test
    void tensorsOutliveTheCallsOnThem() throws Exception {
        for (int i = 0; i < 1000; i++) {
            rnnOverTemporaries((step, in, prev) -> addStep(in, prev)).close();
        }
        boolean[] collected = {false};
        try (Tensor out = rnnOverTemporaries((step, in, prev) -> {
            if (step == 0) {
                collected[0] = collects(TEMPORARIES, 25);
            }
            return addStep(in, prev);
        })) {
            assertFalse(collected[0], "x or initState was collected while the RNN ran on it");
            assertArrayEquals(rnnReference(), out.toFloatArray());
            assertArrayEquals(l(0, 3, 3, 8, 9, 11), out.lodOffsets(0));
        }
    }

    /** A view of a tensor that nothing else refers to. */
    static FloatBuffer viewOfTemporary(List<WeakReference<Tensor>> watch) {
        Tensor t = Tensor.ofFloats(iota(1024), 1024);
        watch.add(new WeakReference<>(t));
        return t.view().asFloatBuffer();
    }

    /** A view (and what is made from it) keeps its tensor, whose Cleaner would free the memory. */
    @Test
    void aViewKeepsItsTensor() throws Exception {
        List<WeakReference<Tensor>> watch = new ArrayList<>();
        FloatBuffer view = viewOfTemporary(watch);
        assertFalse(collects(watch, 20), "the tensor was collected while its view was in use");
        assertEquals(1023f, view.get(1023));
        Reference.reachabilityFence(view);
        view = null;
        assertTrue(collects(watch, 500), "the tensor outlived its view");
    }

    @Test
    void cleanerIsOnlyASafetyNet() {
        for (int i = 0; i < 200; i++) {
            Tensor t = Tensor.ofFloats(iota(4), 4);
            if (i % 2 == 0) {
                t.close();
            }
        }
        System.gc();
    }
}
