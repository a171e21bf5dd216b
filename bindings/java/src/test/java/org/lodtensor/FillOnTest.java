package org.lodtensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** {@link Ops#fillOn}: a host fill, its errors, and (with a usable CUDA device) a fill on cuda:0. */
class FillOnTest {
    @Test
    void fillOn() {
        try (Tensor x = Ops.fillOn(1, 0, DType.FLOAT32, new long[] {2, 2}, 2.5)) {
            assertArrayEquals(new float[] {2.5f, 2.5f, 2.5f, 2.5f}, x.toFloatArray());
        }
        LodTensorException e = assertThrows(LodTensorException.class,
                () -> Ops.fillOn(1, 0, DType.INT32, new long[] {1}, 0.5));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.detail().contains("value"), e.detail());
        int devices;
        try {
            devices = Tensor.cudaDeviceCount();
        } catch (LodTensorException none) {
            devices = 0;
        }
        if (devices == 0) {
            assertEquals(Status.UNSUPPORTED, assertThrows(LodTensorException.class,
                    () -> Ops.fillOn(2, 0, DType.FLOAT32, new long[] {1}, 0)).status());
            System.out.println("FillOnTest: CUDA part skipped: no CUDA device");
            return;
        }
        try (Tensor d = Ops.fillOn(2, 0, DType.INT64, new long[] {3, 2}, -4);
             Tensor h = d.toPlace(1, 0)) {
            assertArrayEquals(new int[] {2, 0}, d.place());
            assertArrayEquals(new long[] {-4, -4, -4, -4, -4, -4}, h.toLongArray());
        }
    }
}
