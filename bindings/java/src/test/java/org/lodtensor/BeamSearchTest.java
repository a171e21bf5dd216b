package org.lodtensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.ref.WeakReference;
import java.nio.FloatBuffer;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Beam search through the Java binding: decode (spec §4.3) and the decoder with a Java model. */
class BeamSearchTest {
    static long[] l(long... v) {
        return v;
    }

    @Test
    void decodeWorkedExample() {
        // Spec §4.3: beam_size 2, end_id 1, 2 sources, 5 steps; scores equal the ids.
        long[][][] lods = {
            {{0, 1, 2}, {0, 1, 2}}, {{0, 1, 2}, {0, 2, 4}}, {{0, 2, 4}, {0, 2, 2, 4, 4}},
            {{0, 2, 4}, {0, 1, 2, 3, 4}}, {{0, 2, 4}, {0, 0, 0, 2, 2}}};
        long[][] stepIds = {{0, 0}, {2, 3, 4, 5}, {3, 1, 5, 4}, {1, 1, 3, 5}, {5, 1}};
        try (TensorArray ids = TensorArray.create(); TensorArray scores = TensorArray.create()) {
            for (int t = 0; t < stepIds.length; t++) {
                float[] f = new float[stepIds[t].length];
                for (int i = 0; i < f.length; i++) {
                    f[i] = stepIds[t][i];
                }
                long[] dims = {stepIds[t].length, 1};
                try (Tensor it = Tensor.ofLongs(stepIds[t], dims, Lod.offsets(lods[t]));
                     Tensor st = Tensor.ofFloats(f, dims, Lod.offsets(lods[t]))) {
                    ids.write(t, it, false);
                    scores.write(t, st, false);
                }
            }
            try (Sequence.Pair r = BeamSearch.decode(ids, scores, 2, 1)) {
                long[] want = {0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1};
                assertArrayEquals(l(0, 2, 4), r.first().lodOffsets(0));
                assertArrayEquals(l(0, 4, 7, 12, 17), r.first().lodOffsets(1));
                assertArrayEquals(want, r.first().toLongArray());
                float[] wantScores = new float[want.length];
                for (int i = 0; i < want.length; i++) {
                    wantScores[i] = want[i];
                }
                assertArrayEquals(wantScores, r.second().toFloatArray());
            }
        }
    }

    // The toy model: tokens 0 = start, 1 = end, 2, 3; the next token's log-probability depends on
    // the source and the last token only (row 1 is never used: ended prefixes are not extended).
    static final double NEG_INF = Double.NEGATIVE_INFINITY;
    static final double[][][] TABLE = {
        {{NEG_INF, -1.2137, -0.4131, -0.9377}, {0, 0, 0, 0}, {NEG_INF, -0.7219, -1.1043, -0.8311},
         {NEG_INF, -0.5077, -1.3359, -1.6123}},
        {{NEG_INF, -0.3071, -1.5233, -1.1189}, {0, 0, 0, 0}, {NEG_INF, -0.9463, -0.6007, -1.4251},
         {NEG_INF, -1.0391, -0.2113, -2.0447}}};

    record Sentence(List<Long> tokens, double score) {}

    /**
     * Every sentence of source s of at most maxLen tokens (ending with 1, or cut at maxLen)
     * without the banned token, best first, the first n. With a beam wider than every candidate
     * set the decoder prunes nothing, so it must find exactly these.
     */
    static List<Sentence> exhaustive(int s, int maxLen, long banned, int n) {
        List<Sentence> all = new ArrayList<>();
        List<Sentence> open = List.of(new Sentence(List.of(), 0));
        for (int len = 1; len <= maxLen; len++) {
            List<Sentence> next = new ArrayList<>();
            for (Sentence p : open) {
                int last = p.tokens().isEmpty() ? 0 : p.tokens().get(p.tokens().size() - 1).intValue();
                for (long tok = 1; tok < 4; tok++) {
                    if (tok == banned) {
                        continue;
                    }
                    List<Long> tokens = new ArrayList<>(p.tokens());
                    tokens.add(tok);
                    Sentence q = new Sentence(tokens, p.score() + TABLE[s][last][(int) tok]);
                    (tok == 1 || len == maxLen ? all : next).add(q);
                }
            }
            open = next;
        }
        all.sort(Comparator.comparingDouble(Sentence::score).reversed()); // List.sort is stable
        return all.subList(0, Math.min(n, all.size()));
    }

    static void checkDecoded(BeamSearch.Result r, long banned) {
        List<Long> ids = new ArrayList<>();
        List<Double> scores = new ArrayList<>();
        List<Long> l0 = new ArrayList<>(List.of(0L));
        List<Long> l1 = new ArrayList<>(List.of(0L));
        for (int s = 0; s < 2; s++) {
            for (Sentence sentence : exhaustive(s, 3, banned, 5)) {
                ids.addAll(sentence.tokens());
                l1.add((long) ids.size());
                scores.add(sentence.score());
            }
            l0.add((long) l1.size() - 1);
        }
        assertArrayEquals(l0.stream().mapToLong(Long::longValue).toArray(), r.ids().lodOffsets(0));
        assertArrayEquals(l1.stream().mapToLong(Long::longValue).toArray(), r.ids().lodOffsets(1));
        assertArrayEquals(ids.stream().mapToLong(Long::longValue).toArray(), r.ids().toLongArray());
        float[] got = r.scores().toFloatArray();
        assertEquals(scores.size(), got.length);
        for (int i = 0; i < got.length; i++) {
            assertEquals(scores.get(i), got[i], 1e-4, "score " + i);
        }
    }

    @Test
    void decoderWithJavaModel() {
        BeamSearch.Options o = BeamSearch.Options.defaults();
        assertEquals(4, o.beamSize);
        o.vocabSize = 4;
        o.startId = 0;
        o.endId = 1;
        o.beamSize = 16; // wider than any candidate set: nothing is pruned
        o.maxLength = 3;
        o.numHypotheses = 5;
        try (BeamSearch decoder = BeamSearch.decoder(o)) {
            int[] calls = {0};
            BeamSearch.Model model = (info, logProbs) -> {
                assertEquals(calls[0]++, info.step());
                assertEquals(2, info.numSources());
                assertEquals(4, info.vocabSize());
                assertEquals(info.numPrefixes(), info.sourceOffsets()[2]);
                assertEquals(info.numPrefixes() * 4, logProbs.capacity());
                if (info.step() == 0) {
                    assertArrayEquals(l(0, 1), info.parentIdx()); // the sources
                }
                for (int s = 0; s < 2; s++) {
                    for (int p = (int) info.sourceOffsets()[s]; p < info.sourceOffsets()[s + 1]; p++) {
                        for (int v = 0; v < 4; v++) {
                            logProbs.put(p * 4 + v, (float) TABLE[s][(int) info.ids()[p]][v]);
                        }
                    }
                }
            };
            try (BeamSearch.Result r = decoder.run(2, model, null)) {
                assertEquals(3, calls[0]);
                checkDecoded(r, -1);
            }
            // An edit function banning token 3.
            calls[0] = 0;
            BeamSearch.Model ban3 = (info, logProbs) -> {
                for (int p = 0; p < info.numPrefixes(); p++) {
                    logProbs.put(p * info.vocabSize() + 3, Float.NEGATIVE_INFINITY);
                }
            };
            try (BeamSearch.Result r = decoder.run(2, model, ban3)) {
                checkDecoded(r, 3);
            }
            // An exception from the model stops decoding and is the cause of CALLBACK_FAILED.
            IllegalStateException boom = new IllegalStateException("model failed");
            LodTensorException e = assertThrows(LodTensorException.class, () -> decoder.run(2, (info, lp) -> {
                if (info.step() == 1) {
                    throw boom;
                }
                fill(lp);
            }, null));
            assertEquals(Status.CALLBACK_FAILED, e.status());
            assertTrue(e.detail().contains("step 1"), e.detail());
            assertSame(boom, e.getCause());
            assertEquals(Status.INVALID_ARGUMENT,
                    assertThrows(LodTensorException.class, () -> decoder.run(0, model, null)).status());
            assertEquals(Status.NULL_ARGUMENT,
                    assertThrows(LodTensorException.class, () -> decoder.run(2, null, null)).status());
        }
        o.vocabSize = 0;
        LodTensorException bad = assertThrows(LodTensorException.class, () -> BeamSearch.decoder(o));
        assertEquals(Status.INVALID_ARGUMENT, bad.status());
        assertTrue(bad.detail().contains("vocab_size"), bad.detail());
    }

    /** decoderWithJavaModel's options: the toy table's model, nothing pruned. */
    static BeamSearch.Options tableOptions() {
        BeamSearch.Options o = BeamSearch.Options.defaults();
        o.vocabSize = 4;
        o.startId = 0;
        o.endId = 1;
        o.beamSize = 16;
        o.maxLength = 3;
        o.numHypotheses = 5;
        return o;
    }

    /** The toy table's log-probs for the live prefixes of two sources, row-major. */
    static float[] tableLogProbs(BeamSearch.StepInfo info) {
        float[] lp = new float[info.numPrefixes() * 4];
        for (int s = 0; s < 2; s++) {
            for (int p = (int) info.sourceOffsets()[s]; p < info.sourceOffsets()[s + 1]; p++) {
                for (int v = 0; v < 4; v++) {
                    lp[p * 4 + v] = (float) TABLE[s][(int) info.ids()[p]][v];
                }
            }
        }
        return lp;
    }

    /** The decoder of the last run on a temporary decoder, watched for collection. */
    static final List<WeakReference<BeamSearch>> DECODERS = new ArrayList<>();

    static BeamSearch temporaryDecoder() {
        BeamSearch d = BeamSearch.decoder(tableOptions());
        DECODERS.clear();
        DECODERS.add(new WeakReference<>(d));
        return d;
    }

    /** A run on a decoder that nothing but the call refers to. */
    static BeamSearch.Result runOnTemporary(BeamSearch.Model model) {
        return temporaryDecoder().run(2, model, null);
    }

    static BeamSearch.Result runTensorsOnTemporary(BeamSearch.TensorModel model) {
        return temporaryDecoder().runTensors(2, model);
    }

    /**
     * A decoder stays reachable while it runs, though only the call refers to it (see
     * LodTensorTest.tensorsOutliveTheCallsOnThem): the model collects garbage at the first step
     * once the runs are compiled.
     */
    @Test
    void aDecoderOutlivesItsRuns() throws Exception {
        BeamSearch.Model model = (info, lp) -> lp.put(tableLogProbs(info));
        BeamSearch.TensorModel tensorModel =
                info -> Tensor.ofFloats(tableLogProbs(info), info.numPrefixes(), info.vocabSize());
        for (int i = 0; i < 1000; i++) {
            runOnTemporary(model).close();
            runTensorsOnTemporary(tensorModel).close();
        }
        boolean[] collected = {false, false};
        try (BeamSearch.Result r = runOnTemporary((info, lp) -> {
            if (info.step() == 0) {
                collected[0] = LodTensorTest.collects(DECODERS, 25);
            }
            model.apply(info, lp);
        })) {
            assertFalse(collected[0], "the decoder was collected during run");
            checkDecoded(r, -1);
        }
        try (BeamSearch.Result r = runTensorsOnTemporary(info -> {
            if (info.step() == 0) {
                collected[1] = LodTensorTest.collects(DECODERS, 25);
            }
            return tensorModel.apply(info);
        })) {
            assertFalse(collected[1], "the decoder was collected during runTensors");
            checkDecoded(r, -1);
        }
    }

    static void fill(FloatBuffer lp) {
        for (int i = 0; i < lp.capacity(); i++) {
            lp.put(i, -1f);
        }
    }

    /** A deterministic toy model; token 1 (end) is attractive for some prefixes. */
    static float[] toyLogProbs(BeamSearch.StepInfo info) {
        int v = info.vocabSize();
        float[] lp = new float[info.numPrefixes() * v];
        for (int p = 0; p < info.numPrefixes(); p++) {
            for (int t = 0; t < v; t++) {
                long h = info.ids()[p] * 2654435761L + info.parentIdx()[p] * 40503L + t * 9973L + info.step() * 131L;
                h &= 0xffffffffL;
                h ^= h >>> 13;
                h = (h * 0x5bd1e995L) & 0xffffffffL;
                h ^= h >>> 15;
                lp[p * v + t] = t == 1 && h % 3 == 0 ? -0.05f * (h % 5) : -(h % 777) / 101f;
            }
        }
        return lp;
    }

    /** The toy model's log-probs as a [prefixes, vocab] tensor of dtype (rounded to nearest even). */
    static Tensor toyTensor(BeamSearch.StepInfo info, DType dtype) {
        Tensor t = Tensor.ofFloats(toyLogProbs(info), info.numPrefixes(), info.vocabSize());
        if (dtype.equals(DType.FLOAT32)) {
            return t;
        }
        try (t) {
            return Ops.cast(t, dtype);
        }
    }

    static void assertSameResult(BeamSearch.Result want, BeamSearch.Result got) {
        for (int l = 0; l < 2; l++) {
            assertArrayEquals(want.ids().lodOffsets(l), got.ids().lodOffsets(l));
        }
        assertArrayEquals(want.ids().toLongArray(), got.ids().toLongArray());
        assertArrayEquals(want.scores().lodOffsets(0), got.scores().lodOffsets(0));
        assertArrayEquals(want.scores().toFloatArray(), got.scores().toFloatArray());
    }

    @Test
    void runTensorsGivesTheResultsOfRun() {
        BeamSearch.Options o = BeamSearch.Options.defaults();
        o.vocabSize = 9;
        o.startId = 0;
        o.endId = 1;
        o.beamSize = 4;
        o.numHypotheses = 3;
        o.minLength = 2;
        o.maxLength = 6;
        int devices;
        try {
            devices = Tensor.cudaDeviceCount();
        } catch (LodTensorException e) {
            devices = 0;
            System.out.println("BeamSearchTest: CUDA part skipped: no CUDA device");
        }
        try (BeamSearch decoder = BeamSearch.decoder(o)) {
            for (DType dtype : List.of(DType.FLOAT32, DType.BFLOAT16)) {
                // The host decoder fed the same values through the same rounding.
                try (BeamSearch.Result want = decoder.run(3, (info, lp) -> {
                    try (Tensor t = toyTensor(info, dtype)) {
                        try (Tensor back = Ops.cast(t, DType.FLOAT32)) {
                            lp.put(back.toFloatArray());
                        }
                    }
                }, null)) {
                    assertEquals(9, want.scores().numel());
                    try (BeamSearch.Result got = decoder.runTensors(3, info -> {
                        assertNull(info.parentIdxTensor(), "host log-probs: the parents stay on the host");
                        return toyTensor(info, dtype);
                    })) {
                        assertSameResult(want, got);
                    }
                    // A tensor the model keeps, handed over as a share.
                    Tensor[] kept = {null};
                    try (BeamSearch.Result got = decoder.runTensors(3, info -> {
                        if (kept[0] != null) {
                            kept[0].close();
                        }
                        kept[0] = toyTensor(info, dtype);
                        return kept[0].share();
                    })) {
                        assertSameResult(want, got);
                        assertEquals(2, kept[0].dims().length);
                        kept[0].close();
                    }
                    if (devices > 0) {
                        try (BeamSearch.Result got = decoder.runTensors(3, info -> {
                            // After a step on the device, its parents there: ParentIdx's values.
                            assertEquals(info.step() > 0, info.parentIdxTensor() != null);
                            if (info.parentIdxTensor() != null) {
                                try (Tensor host = info.parentIdxTensor().toPlace(1, 0)) {
                                    int[] parents = host.toIntArray();
                                    for (int i = 0; i < parents.length; i++) {
                                        assertEquals(info.parentIdx()[i], parents[i]);
                                    }
                                }
                            }
                            try (Tensor t = toyTensor(info, dtype)) {
                                return t.toPlace(2, 0);
                            }
                        })) {
                            assertSameResult(want, got);
                        }
                    }
                }
            }
            IllegalStateException boom = new IllegalStateException("model failed");
            LodTensorException e = assertThrows(LodTensorException.class, () -> decoder.runTensors(2, info -> {
                if (info.step() == 1) {
                    throw boom;
                }
                return toyTensor(info, DType.FLOAT32);
            }));
            assertEquals(Status.CALLBACK_FAILED, e.status());
            assertTrue(e.detail().contains("step 1"), e.detail());
            assertSame(boom, e.getCause());
            e = assertThrows(LodTensorException.class, () -> decoder.runTensors(2, info -> null));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.detail().contains("out_log_probs"), e.detail());
            e = assertThrows(LodTensorException.class, () -> decoder.runTensors(2,
                    info -> Tensor.ofDoubles(new double[info.numPrefixes() * info.vocabSize()],
                            new long[] {info.numPrefixes(), info.vocabSize()}, Lod.NONE)));
            assertEquals(Status.UNSUPPORTED, e.status());
            assertTrue(e.detail().contains("log_probs"), e.detail());
            e = assertThrows(LodTensorException.class, () -> decoder.runTensors(2,
                    info -> Tensor.ofFloats(toyLogProbs(info), info.numPrefixes() * info.vocabSize())));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.detail().contains("dims"), e.detail());
            assertEquals(Status.INVALID_ARGUMENT, assertThrows(LodTensorException.class,
                    () -> decoder.runTensors(0, info -> toyTensor(info, DType.FLOAT32))).status());
            assertEquals(Status.NULL_ARGUMENT,
                    assertThrows(LodTensorException.class, () -> decoder.runTensors(2, null)).status());
        }
    }
}
