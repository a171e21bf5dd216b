package org.lodtensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assumptions.assumeTrue;
import static org.lodtensor.LodTensorTest.expectError;
import static org.lodtensor.LodTensorTest.iota;
import static org.lodtensor.LodTensorTest.l;

import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import com.sun.jna.Pointer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link Tensor#fromBuffer} over memory the caller owns (another tensor's), on the host and on a
 * CUDA device, with its errors; {@link Tensor#address}; a CUDA tensor's elements read through a
 * host copy, and refused by {@link Tensor#view}; a tensor larger than a Java array or buffer.
 */
class BufferTest {
    @Test
    void hostMemoryWithoutCopy() {
        int before = Tensor.lentBuffers();
        AtomicInteger released = new AtomicInteger();
        try (Tensor x = Tensor.ofFloats(iota(6), l(3, 2), Lod.lengths(l(2, 1)))) {
            long address = x.address();
            Tensor y = Tensor.fromBuffer(1, 0, DType.FLOAT32, l(3, 2), address, 24, Lod.lengths(l(2, 1)),
                    released::incrementAndGet);
            assertEquals(before + 1, Tensor.lentBuffers());
            assertEquals(address, y.address());
            assertArrayEquals(iota(6), y.toFloatArray());
            assertArrayEquals(l(0, 2, 3), y.lodOffsets(0));
            y.view().asFloatBuffer().put(1, 9f);
            assertEquals(9f, x.toFloatArray()[1]); // a write through the new tensor, seen by the old
            x.view().asFloatBuffer().put(5, 7f);
            assertEquals(7f, y.toFloatArray()[5]); // and the other way
            Tensor share = y.share();
            try (Tensor slice = y.slice(0, 1, 2)) {
                y.close();
                share.close();
                assertEquals(0, released.get()); // the slice still uses the memory
                assertArrayEquals(new float[] {4, 7}, slice.toFloatArray());
            }
            assertEquals(1, released.get()); // released with the last handle
            assertEquals(before, Tensor.lentBuffers());
            // Without a release: the memory is the caller's to keep alive.
            try (Tensor z = Tensor.fromBuffer(1, 0, DType.FLOAT32, l(6), address, 24, Lod.NONE, null)) {
                assertEquals(7f, z.toFloatArray()[5]);
                assertEquals(before, Tensor.lentBuffers());
            }
        }
        assertEquals(1, released.get());
    }

    @Test
    void errorsTakeNothing() {
        int before = Tensor.lentBuffers();
        AtomicInteger released = new AtomicInteger();
        try (Tensor x = Tensor.ofFloats(iota(8), l(8))) {
            long a = x.address();
            Runnable r = released::incrementAndGet;
            expectError(Status.INVALID_ARGUMENT, "aligned",
                    () -> Tensor.fromBuffer(1, 0, DType.FLOAT32, l(4), a + 1, 16, Lod.NONE, r));
            expectError(Status.INVALID_ARGUMENT, "data_len",
                    () -> Tensor.fromBuffer(1, 0, DType.FLOAT32, l(4), a, 12, Lod.NONE, r));
            expectError(Status.INVALID_LOD, "",
                    () -> Tensor.fromBuffer(1, 0, DType.FLOAT32, l(4), a, 16, Lod.lengths(l(5)), r));
            expectError(Status.INVALID_ARGUMENT, "place",
                    () -> Tensor.fromBuffer(7, 0, DType.FLOAT32, l(4), a, 16, Lod.NONE, r));
            expectError(Status.NULL_ARGUMENT, "data",
                    () -> Tensor.fromBuffer(1, 0, DType.FLOAT32, l(4), 0, 16, Lod.NONE, r));
            if (cudaDevices() == 0) {
                expectError(Status.UNSUPPORTED, "",
                        () -> Tensor.fromBuffer(2, 0, DType.FLOAT32, l(4), a, 16, Lod.NONE, r));
            }
        }
        assertEquals(0, released.get());
        assertEquals(before, Tensor.lentBuffers());
    }

    @Test
    void anExceptionFromReleaseGoesToTheThreadsHandler() {
        Thread thread = Thread.currentThread();
        Thread.UncaughtExceptionHandler saved = thread.getUncaughtExceptionHandler();
        List<Throwable> caught = new ArrayList<>();
        IllegalStateException thrown = new IllegalStateException("from release");
        thread.setUncaughtExceptionHandler((t, e) -> caught.add(e));
        try (Tensor x = Tensor.ofFloats(iota(2), l(2))) {
            Tensor y = Tensor.fromBuffer(1, 0, DType.FLOAT32, l(2), x.address(), 8, Lod.NONE, () -> {
                throw thrown;
            });
            y.close(); // returns normally
            assertEquals(1, caught.size());
            assertSame(thrown, caught.get(0));
        } finally {
            thread.setUncaughtExceptionHandler(saved);
        }
    }

    @Test
    void deviceMemory() {
        int devices = cudaDevices();
        if (devices == 0) {
            System.out.println("BufferTest: CUDA part skipped: no CUDA device");
            return;
        }
        AtomicInteger released = new AtomicInteger();
        try (Tensor x = Tensor.ofFloats(iota(6), l(3, 2))) {
            Tensor d = x.toPlace(2, 0);
            long address = d.address();
            Tensor y = Tensor.fromBuffer(2, 0, DType.FLOAT32, l(3, 2), address, 24, Lod.lengths(l(1, 2)), () -> {
                released.incrementAndGet();
                d.close();
            });
            assertArrayEquals(new int[] {2, 0}, y.place());
            assertArrayEquals(iota(6), y.toFloatArray()); // through a host copy
            expectError(Status.INVALID_ARGUMENT, "cuda:0", y::view);
            try (Tensor reversed = Sequence.reverse(y)) {
                assertArrayEquals(new float[] {0, 1, 4, 5, 2, 3}, reversed.toFloatArray());
            }
            if (devices > 1) {
                expectError(Status.INVALID_ARGUMENT, "cuda:1", () -> Tensor.fromBuffer(2, 1, DType.FLOAT32, l(3, 2),
                        address, 24, Lod.NONE, released::incrementAndGet));
            }
            y.close();
        }
        assertEquals(1, released.get());
    }

    /** Sizes past a Java array (2^31 - 9 elements) or a ByteBuffer (2^31 - 1 bytes) are refused. */
    @Test
    void sizesPastJavaLimitsAreRefused() {
        assertEquals(NativeHandle.MAX_ARRAY_LENGTH, NativeHandle.arrayLength(NativeHandle.MAX_ARRAY_LENGTH, "a"));
        expectError(Status.UNSUPPORTED, "toIntArray: 2147483640 elements do not fit a Java array (at most 2147483639)",
                () -> NativeHandle.arrayLength(NativeHandle.MAX_ARRAY_LENGTH + 1L, "toIntArray"));
        expectError(Status.UNSUPPORTED, "a: 4294967299 elements",
                () -> NativeHandle.arrayLength((1L << 32) + 3, "a"));
        assertEquals(Integer.MAX_VALUE, NativeHandle.bufferCapacity(Integer.MAX_VALUE, 1, "view"));
        expectError(Status.UNSUPPORTED, "view: 2147483648 bytes do not fit a ByteBuffer (at most 2147483647)",
                () -> NativeHandle.bufferCapacity(1L << 31, 1, "view"));
        // The beam search callbacks' log-probs, 4-byte floats.
        assertEquals(Integer.MAX_VALUE - 3, NativeHandle.bufferCapacity((1L << 29) - 1, 4, "log-probs"));
        expectError(Status.UNSUPPORTED, "log-probs: 536870912 x 4 bytes",
                () -> NativeHandle.bufferCapacity(1L << 29, 4, "log-probs"));
        expectError(Status.UNSUPPORTED, "log-probs: 4611686018427387904 x 4 bytes",
                () -> NativeHandle.bufferCapacity(1L << 62, 4, "log-probs"));
        // Counts returned as int (TensorArray.size, Tensor.lodLevels, RankTable.level).
        assertEquals(Integer.MAX_VALUE, NativeHandle.intCount(Integer.MAX_VALUE, "TensorArray.size"));
        expectError(Status.UNSUPPORTED, "TensorArray.size: 2147483648 does not fit a Java int (at most 2147483647)",
                () -> NativeHandle.intCount(1L << 31, "TensorArray.size"));
        expectError(Status.UNSUPPORTED, "Tensor.lodLevels: 18446744073709551615 does not fit a Java int",
                () -> NativeHandle.intCount(-1L, "Tensor.lodLevels"));
    }

    /** The C library's mmap and munmap. */
    interface LibC extends Library {
        LibC C = Native.load("c", LibC.class);

        Pointer mmap(Pointer addr, long length, int prot, int flags, int fd, long offset);

        int munmap(Pointer addr, long length);
    }

    /**
     * A host tensor of more elements than a Java array holds, over 8 GiB of address space that is
     * never backed (read-only anonymous memory reads as zeros): copying it out or viewing it is
     * UNSUPPORTED, not cut short.
     */
    @Test
    void aTensorPastJavaLimits() {
        assumeTrue(Platform.isLinux(), "mmap's flags are Linux's");
        long numel = (1L << 31) + 3;
        long nbytes = 4 * numel;
        // PROT_READ; MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE (not counted against overcommit).
        Pointer p = LibC.C.mmap(null, nbytes, 1, 0x02 | 0x20 | 0x4000, -1, 0);
        assumeTrue(Pointer.nativeValue(p) != -1, "no room for 8 GiB of address space");
        try (Tensor t = Tensor.fromBuffer(1, 0, DType.INT32, l(numel), Pointer.nativeValue(p), nbytes, Lod.NONE,
                null)) {
            assertEquals(numel, t.numel());
            expectError(Status.UNSUPPORTED, "toIntArray: 2147483651 elements do not fit a Java array", t::toIntArray);
            expectError(Status.UNSUPPORTED, "view: 8589934604 bytes do not fit a ByteBuffer", t::view);
            try (Tensor head = Tensor.fromBuffer(1, 0, DType.INT32, l(4), Pointer.nativeValue(p), 16, Lod.NONE,
                    null)) {
                assertArrayEquals(new int[4], head.toIntArray()); // the same memory, within the limits
            }
        } finally {
            LibC.C.munmap(p, nbytes);
        }
    }

    private static int cudaDevices() {
        try {
            return Tensor.cudaDeviceCount();
        } catch (LodTensorException none) {
            return 0;
        }
    }
}
