package org.lodtensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.lodtensor.LodTensorTest.expectError;
import static org.lodtensor.LodTensorTest.iota;
import static org.lodtensor.LodTensorTest.l;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * {@link Tensor#fromBuffer} over memory the caller owns (another tensor's), on the host and on a
 * CUDA device, with its errors; {@link Tensor#address}; a CUDA tensor's elements read through a
 * host copy, and refused by {@link Tensor#view}.
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

    private static int cudaDevices() {
        try {
            return Tensor.cudaDeviceCount();
        } catch (LodTensorException none) {
            return 0;
        }
    }
}
