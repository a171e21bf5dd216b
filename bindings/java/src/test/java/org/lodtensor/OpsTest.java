package org.lodtensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The second batch of operators (sequence softmax, concat, slice, reverse, mask, enumerate,
 * erase, reshape, conv; fill, cast, gatherRows, scatterRows, logSoftmax, topk) and the beam-search blocks
 * (step, fused step, gatherState, gatherTree). Expected values are worked by hand or the spec's.
 */
class OpsTest {
    private final List<AutoCloseable> open = new ArrayList<>();

    <T extends AutoCloseable> T keep(T t) {
        open.add(t);
        return t;
    }

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open) {
            c.close();
        }
    }

    static long[] l(long... v) {
        return v;
    }

    Tensor floats(float[] data, long[] dims, Lod lod) {
        return keep(Tensor.ofFloats(data, dims, lod));
    }

    Tensor longs(long[] data, long[] dims, Lod lod) {
        return keep(Tensor.ofLongs(data, dims, lod));
    }

    static void near(float[] got, double... want) {
        assertEquals(want.length, got.length);
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], got[i], 1e-5, "element " + i);
        }
    }

    @Test
    void sequenceOps() {
        Tensor x = floats(new float[] {1, 2, 3, 4, 5}, l(5, 1), Lod.offsets(l(0, 3, 5)));
        Tensor xs = floats(new float[] {1, 1, 1, 2, 2}, l(5, 1), Lod.offsets(l(0, 3, 5)));
        near(keep(Sequence.softmax(xs)).toFloatArray(), 1 / 3.0, 1 / 3.0, 1 / 3.0, 0.5, 0.5);

        Tensor a = floats(new float[] {1, 2, 3}, l(3, 1), Lod.offsets(l(0, 1, 3)));
        Tensor b = floats(new float[] {10, 20, 30}, l(3, 1), Lod.offsets(l(0, 2, 3)));
        Tensor cat = keep(Sequence.concat(a, b));
        assertArrayEquals(new float[] {1, 10, 20, 2, 3, 30}, cat.toFloatArray());
        assertArrayEquals(l(0, 3, 6), cat.lodOffsets(0));

        Tensor sl = keep(Sequence.slice(x, longs(l(1, 0), l(2, 1), Lod.NONE), longs(l(2, 1), l(2, 1), Lod.NONE)));
        assertArrayEquals(new float[] {2, 3, 4}, sl.toFloatArray());
        assertArrayEquals(l(0, 2, 3), sl.lodOffsets(0));

        assertArrayEquals(new float[] {3, 2, 1, 5, 4}, keep(Sequence.reverse(x)).toFloatArray());

        Tensor mask = keep(Sequence.mask(longs(l(2, 0, 3), l(3), Lod.NONE), -1, DType.INT32));
        assertArrayEquals(l(3, 3), mask.dims());
        assertArrayEquals(new int[] {1, 1, 0, 0, 0, 0, 1, 1, 1}, mask.toIntArray());

        Tensor tok = longs(l(1, 2, 3, 2, 5), l(5, 1), Lod.offsets(l(0, 3, 5)));
        assertArrayEquals(l(1, 2, 2, 3, 3, 0, 2, 5, 5, 0), keep(Sequence.enumerate(tok, 2, 0)).toLongArray());
        Tensor er = keep(Sequence.erase(tok, 2));
        assertArrayEquals(l(1, 3, 5), er.toLongArray());
        assertArrayEquals(l(0, 2, 3), er.lodOffsets(0));

        Tensor r = keep(Sequence.reshape(floats(new float[] {1, 2, 3, 4, 5, 6, 7, 8}, l(4, 2),
                Lod.offsets(l(0, 2, 4))), 4));
        assertArrayEquals(l(2, 4), r.dims());
        assertArrayEquals(l(0, 1, 2), r.lodOffsets(0));

        Tensor cx = floats(new float[] {1, 2, 3, 4, 5, 6}, l(3, 2), Lod.offsets(l(0, 3)));
        Tensor eye = floats(new float[] {1, 0, 0, 1}, l(2, 2), Lod.NONE);
        assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, keep(Sequence.conv(cx, eye, null, 1, 0, 1, false)).toFloatArray());
        // Rows (t-1, t) summed: out[t] = x[t-1] + x[t], zero before the sequence.
        Tensor sum2 = floats(new float[] {1, 0, 0, 1, 1, 0, 0, 1}, l(4, 2), Lod.NONE);
        assertArrayEquals(new float[] {1, 2, 4, 6, 8, 10},
                keep(Sequence.conv(cx, sum2, null, 2, -1, 1, false)).toFloatArray());
    }

    @Test
    void denseOps() {
        assertArrayEquals(new float[] {1.5f, 1.5f, 1.5f, 1.5f}, keep(Ops.fill(DType.FLOAT32, l(2, 2), 1.5)).toFloatArray());
        assertEquals(Status.INVALID_ARGUMENT,
                assertThrows(LodTensorException.class, () -> Ops.fill(DType.INT32, l(1), 0.5)).status());
        Tensor ints = keep(Tensor.ofInts(new int[] {1, -2, 3}, l(3), Lod.NONE));
        assertArrayEquals(new double[] {1, -2, 3}, keep(Ops.cast(ints, DType.FLOAT64)).toDoubleArray());
        Tensor g = keep(Ops.gatherRows(floats(new float[] {1, 2, 3}, l(3, 1), Lod.NONE), longs(l(2, 0), l(2), Lod.NONE)));
        assertArrayEquals(new float[] {3, 1}, g.toFloatArray());
        // Paddle's scatter example: x [[1,1],[2,2],[3,3]], index [2,1,0,1], updates [[1,1],[2,2],[3,3],[4,4]]:
        // overwrite (the last of row 1 wins) [[3,3],[4,4],[1,1]]; add [[1+3,1+3],[2+2+4,2+2+4],[3+1,3+1]].
        Tensor sx = floats(new float[] {1, 1, 2, 2, 3, 3}, l(3, 2), Lod.NONE);
        Tensor si = longs(l(2, 1, 0, 1), l(4), Lod.NONE);
        Tensor su = floats(new float[] {1, 1, 2, 2, 3, 3, 4, 4}, l(4, 2), Lod.NONE);
        assertArrayEquals(new float[] {3, 3, 4, 4, 1, 1},
                keep(Ops.scatterRows(sx, si, su, Ops.SCATTER_OVERWRITE)).toFloatArray());
        assertArrayEquals(new float[] {4, 4, 8, 8, 4, 4}, keep(Ops.scatterRows(sx, si, su, Ops.SCATTER_ADD)).toFloatArray());
        Tensor far = longs(l(3), l(1), Lod.NONE);
        Tensor one = floats(new float[] {0, 0}, l(1, 2), Lod.NONE);
        LodTensorException e =
                assertThrows(LodTensorException.class, () -> Ops.scatterRows(sx, far, one, Ops.SCATTER_ADD));
        assertEquals(Status.OUT_OF_RANGE, e.status());
        assertTrue(e.getMessage().contains("index[0] = 3"), e.getMessage());
        assertEquals(Status.INVALID_ARGUMENT,
                assertThrows(LodTensorException.class, () -> Ops.scatterRows(sx, si, su, 2)).status());
        near(keep(Ops.logSoftmax(floats(new float[] {0, 0}, l(1, 2), Lod.NONE))).toFloatArray(),
                -Math.log(2), -Math.log(2));
        try (Sequence.Pair top = Ops.topk(floats(new float[] {1, 3, 2}, l(1, 3), Lod.NONE), 2, true)) {
            assertArrayEquals(new float[] {3, 2}, top.first().toFloatArray());
            assertArrayEquals(l(1, 2), top.second().toLongArray());
        }
    }

    @Test
    void beamBlocks() {
        // Spec §4.4 gather_tree.
        Tensor tree = keep(BeamSearch.gatherTree(longs(l(2, 2, 6, 1, 3, 9, 6, 1, 0, 1, 9, 0), l(3, 2, 2), Lod.NONE),
                longs(l(0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1), l(3, 2, 2), Lod.NONE)));
        assertArrayEquals(l(2, 2, 1, 6, 3, 3, 6, 1, 0, 1, 9, 0), tree.toLongArray());

        // One source with one prefix (token 5, score 0), log-probs [-1, -0.2, -3], beam 2: tokens 1
        // (-0.2) and 0 (-1), both extending prefix row 0.
        Lod first = Lod.offsets(l(0, 1), l(0, 1));
        Tensor preIds = longs(l(5), l(1, 1), first);
        Tensor preScores = floats(new float[] {0}, l(1, 1), first);
        try (BeamSearch.Selection fused = BeamSearch.fusedStep(preIds, preScores,
                floats(new float[] {-1, -0.2f, -3}, l(1, 3), Lod.NONE), 2, 9);
             BeamSearch.Selection step = BeamSearch.step(preIds, preScores, longs(l(1, 0), l(1, 2), first),
                floats(new float[] {-0.2f, -1}, l(1, 2), first), 0, 2, 9, true)) {
            for (BeamSearch.Selection sel : List.of(fused, step)) {
                long[] ids = sel.ids().toLongArray();
                float[] scores = sel.scores().toFloatArray();
                assertEquals(2, ids.length);
                int i1 = ids[0] == 1 ? 0 : 1; // the order within a prefix is the library's
                assertEquals(1, ids[i1]);
                assertEquals(0, ids[1 - i1]);
                assertEquals(-0.2, scores[i1], 1e-6);
                assertEquals(-1.0, scores[1 - i1], 1e-6);
                assertArrayEquals(new int[] {0, 0}, sel.parentIdx().toIntArray());
            }
        }
        Tensor g = keep(BeamSearch.gatherState(floats(new float[] {10, 20}, l(2, 1), Lod.NONE),
                longs(l(1, 1, 0), l(3), Lod.NONE)));
        assertArrayEquals(new float[] {20, 20, 10}, g.toFloatArray());
        Tensor a = floats(new float[] {10, 20}, l(2, 1), Lod.NONE);
        Tensor b = floats(new float[] {7, 8, 9}, l(3), Lod.NONE);
        Tensor[] both = BeamSearch.gatherStates(new Tensor[] {a, b}, longs(l(1, 1, 0), l(3), Lod.NONE));
        assertEquals(2, both.length);
        assertArrayEquals(new float[] {20, 20, 10}, keep(both[0]).toFloatArray());
        assertArrayEquals(new float[] {8, 8, 7}, keep(both[1]).toFloatArray());
        assertEquals(0, BeamSearch.gatherStates(new Tensor[0], longs(new long[0], l(0), Lod.NONE)).length);
        LodTensorException e = assertThrows(LodTensorException.class,
                () -> BeamSearch.gatherStates(new Tensor[] {b, a}, longs(l(2), l(1), Lod.NONE)));
        assertEquals(Status.OUT_OF_RANGE, e.status());
        assertTrue(e.getMessage().contains("states[1]"), e.getMessage());
    }
}
