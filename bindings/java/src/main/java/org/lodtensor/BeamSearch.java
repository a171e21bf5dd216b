package org.lodtensor;

import com.sun.jna.Memory;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Cleaner;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;

/** Beam search: Paddle's beam_search_decode, and a decoder driving a model written in Java. */
public final class BeamSearch implements AutoCloseable {
    private static final LodTensorLib LIB = LodTensorLib.INSTANCE;

    /** The decoder's options (see beam_search_decoder_options_t); {@link #defaults()} fills them. */
    public static final class Options {
        public long beamSize;
        public long vocabSize;
        public long startId;
        public long endId;
        public long maxLength;
        public long minLength;
        public double lengthPenalty;
        public long numHypotheses;

        /** The library's defaults (vocabSize 0 must still be set). */
        public static Options defaults() {
            LodTensorLib.DecoderOptionsT c = new LodTensorLib.DecoderOptionsT();
            NativeHandle.check(LIB.beam_search_decoder_options_init(c));
            c.read();
            Options o = new Options();
            o.beamSize = c.beam_size;
            o.vocabSize = c.vocab_size;
            o.startId = c.start_id;
            o.endId = c.end_id;
            o.maxLength = c.max_length;
            o.minLength = c.min_length;
            o.lengthPenalty = c.length_penalty;
            o.numHypotheses = c.num_hypotheses;
            return o;
        }
    }

    /**
     * What a decoder callback sees at one step (copied; the log-probs buffer is not).
     * {@code parentIdxTensor}: in {@link #runTensors}, after a step on a CUDA device, parentIdx as
     * an int32 tensor there ({@link #gatherStates} then reorders state on the device without an
     * upload), closed after the call ({@link Tensor#share} keeps it); null otherwise.
     */
    public record StepInfo(long step, int numSources, long[] sourceOffsets, long[] ids, long[] parentIdx,
                           float[] scores, int vocabSize, Tensor parentIdxTensor) {
        public int numPrefixes() {
            return ids.length;
        }
    }

    /**
     * A decoder callback: the step function fills {@code logProbs} (numPrefixes x vocabSize,
     * row-major, a view of the library's memory valid only during the call) with the next-token
     * log-probabilities; the edit function may then change them. Anything thrown stops decoding;
     * {@link #run} then throws CALLBACK_FAILED with it as the cause.
     */
    @FunctionalInterface
    public interface Model {
        void apply(StepInfo info, FloatBuffer logProbs) throws Exception;
    }

    /**
     * A decoder callback of {@link #runTensors}: returns the next-token log-probabilities of the
     * live prefixes as a new [numPrefixes, vocabSize] tensor, float32, float16 or bfloat16, on the
     * host or on a CUDA device (see beam_search_tensor_step_fn). The decoder takes the tensor over:
     * it is empty (closed) after the call, so return a {@link Tensor#share} of a tensor the model
     * keeps. Anything thrown stops decoding; {@link #runTensors} then throws CALLBACK_FAILED with
     * it as the cause.
     */
    @FunctionalInterface
    public interface TensorModel {
        Tensor apply(StepInfo info) throws Exception;
    }

    /** Sentences and their scores; closing it closes both. */
    public record Result(Tensor ids, Tensor scores) implements AutoCloseable {
        @Override
        public void close() {
            ids.close();
            scores.close();
        }
    }

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;

    private BeamSearch(Pointer p) {
        handle = new NativeHandle(p, LIB::beam_search_decoder_destroy);
        cleanable = NativeHandle.CLEANER.register(this, handle);
    }

    /** A decoder with these options. Immutable: any number of threads may run it at once. */
    public static BeamSearch decoder(Options o) {
        LodTensorLib.DecoderOptionsT c = new LodTensorLib.DecoderOptionsT();
        NativeHandle.check(LIB.beam_search_decoder_options_init(c));
        c.read();
        c.beam_size = o.beamSize;
        c.vocab_size = o.vocabSize;
        c.start_id = o.startId;
        c.end_id = o.endId;
        c.max_length = o.maxLength;
        c.min_length = o.minLength;
        c.length_penalty = o.lengthPenalty;
        c.num_hypotheses = o.numHypotheses;
        c.write();
        PointerByReference out = new PointerByReference();
        NativeHandle.check(LIB.beam_search_decoder_create(c, out));
        return new BeamSearch(out.getValue());
    }

    @Override
    public void close() {
        cleanable.clean();
    }

    /**
     * Decodes numSources sentences around the model (edit may be null): the best sentences per
     * source (int64 ids, LoD [source -> sentences, sentence -> tokens], best first, without the
     * start token) and their float32 scores. Log-probs over Integer.MAX_VALUE bytes do not fit the
     * callbacks' buffer: CALLBACK_FAILED, caused by an UNSUPPORTED {@link LodTensorException}.
     */
    public Result run(long numSources, Model step, Model edit) {
        Throwable[] thrown = new Throwable[1];
        LodTensorLib.BeamStepFn stepFn = step == null ? null : adapt(step, thrown);
        LodTensorLib.BeamStepFn editFn = edit == null ? null : adapt(edit, thrown);
        PointerByReference ids = new PointerByReference();
        PointerByReference scores = new PointerByReference();
        int status = NativeHandle.call(
                () -> LIB.beam_search_decoder_run(handle.get(), numSources, stepFn, editFn, null, ids, scores),
                this, stepFn, editFn);
        return result(status, thrown[0], ids, scores);
    }

    /**
     * Decodes numSources sentences around a model that returns its log-probabilities as a tensor
     * (beam_search_decoder_run_tensors): where that tensor lives on a CUDA device, the step's
     * selection runs there and the log-probs never go through the host. Results as for
     * {@link #run}; a tensor of the wrong dims or dtype throws the library's error.
     */
    public Result runTensors(long numSources, TensorModel step) {
        Throwable[] thrown = new Throwable[1];
        LodTensorLib.BeamTensorStepFn stepFn = step == null ? null : (infoPtr, outLogProbs, userData) -> {
            StepInfo info = null;
            try {
                info = stepInfo(infoPtr, true);
                Tensor t = step.apply(info);
                outLogProbs.setPointer(0, t == null ? null : t.take());
                return 0;
            } catch (Throwable t) {
                // Nothing may propagate into the library's frames (JNA would swallow it).
                thrown[0] = t;
                return -1;
            } finally {
                if (info != null && info.parentIdxTensor() != null) {
                    info.parentIdxTensor().close();
                }
            }
        };
        PointerByReference ids = new PointerByReference();
        PointerByReference scores = new PointerByReference();
        int status = NativeHandle.call(
                () -> LIB.beam_search_decoder_run_tensors(handle.get(), numSources, stepFn, null, ids, scores),
                this, stepFn);
        return result(status, thrown[0], ids, scores);
    }

    /**
     * The decoder's results on success; otherwise the library's error, with what a callback threw
     * as its cause (an {@link Error} is rethrown as it is).
     */
    private static Result result(int status, Throwable thrown, PointerByReference ids, PointerByReference scores) {
        if (status != 0) {
            String message = LIB.lodtensor_last_error_message();
            if (thrown instanceof Error e) {
                throw e;
            }
            throw new LodTensorException(Status.of(status), message, thrown);
        }
        return new Result(Tensor.adopt(ids.getValue()), Tensor.adopt(scores.getValue()));
    }

    /** A copy of the library's step info; the parents' tensor shared where {@code withTensor}. */
    private static StepInfo stepInfo(Pointer infoPtr, boolean withTensor) {
        LodTensorLib.StepInfoT c = new LodTensorLib.StepInfoT(infoPtr);
        int p = NativeHandle.arrayLength(c.num_prefixes, "the step's prefixes");
        int vocab = NativeHandle.arrayLength(c.vocab_size, "the step's vocabulary");
        int sources = NativeHandle.intCount(c.num_sources, "the step's sources");
        long[] sourceOffsets =
                c.source_offsets.getLongArray(0, NativeHandle.arrayLength(c.num_sources + 1, "the step's source offsets"));
        Tensor parents = null;
        if (withTensor && c.parent_idx_tensor != null) {
            PointerByReference shared = new PointerByReference();
            parents = Tensor.out(LIB.lodtensor_share(c.parent_idx_tensor, shared), shared);
        }
        return new StepInfo(c.step, sources, sourceOffsets,
                p == 0 ? new long[0] : c.ids.getLongArray(0, p),
                p == 0 ? new long[0] : c.parent_idx.getLongArray(0, p),
                p == 0 ? new float[0] : c.scores.getFloatArray(0, p), vocab, parents);
    }

    private static LodTensorLib.BeamStepFn adapt(Model model, Throwable[] thrown) {
        return (infoPtr, logProbs, userData) -> {
            try {
                StepInfo info = stepInfo(infoPtr, false);
                int bytes = NativeHandle.bufferCapacity((long) info.numPrefixes() * info.vocabSize(), 4,
                        "the log-probs of " + info.numPrefixes() + " prefixes x " + info.vocabSize() + " tokens");
                FloatBuffer lp = bytes == 0 ? FloatBuffer.allocate(0)
                        : logProbs.getByteBuffer(0, bytes).order(ByteOrder.nativeOrder()).asFloatBuffer();
                model.apply(info, lp);
                return 0;
            } catch (Throwable t) {
                // Nothing may propagate into the library's frames (JNA would swallow it).
                thrown[0] = t;
                return -1;
            }
        };
    }

    /**
     * One beam-search step's result: the selected ids (int64) and scores with the LoD [source -&gt;
     * prefix rows, prefix row -&gt; selected], and the prefix row each extends (int32).
     */
    public record Selection(Tensor ids, Tensor scores, Tensor parentIdx) implements AutoCloseable {
        @Override
        public void close() {
            ids.close();
            scores.close();
            parentIdx.close();
        }
    }

    private static Selection selection(int status, PointerByReference a, PointerByReference b, PointerByReference c) {
        NativeHandle.check(status);
        return new Selection(Tensor.adopt(a.getValue()), Tensor.adopt(b.getValue()), Tensor.adopt(c.getValue()));
    }

    /** Paddle's beam_search op. */
    public static Selection step(Tensor preIds, Tensor preScores, Tensor ids, Tensor scores, long level, long beamSize,
                                 long endId, boolean isAccumulated) {
        PointerByReference a = new PointerByReference();
        PointerByReference b = new PointerByReference();
        PointerByReference c = new PointerByReference();
        return selection(NativeHandle.call(() -> LIB.beam_search_step(preIds.ptr(), preScores.ptr(),
                ids == null ? null : ids.ptr(), scores.ptr(), level, beamSize, endId, isAccumulated, a, b, c),
                preIds, preScores, ids, scores), a, b, c);
    }

    /** Top-k of logProbs, plus the prefix scores, then {@link #step}, in one pass. */
    public static Selection fusedStep(Tensor preIds, Tensor preScores, Tensor logProbs, long beamSize, long endId) {
        PointerByReference a = new PointerByReference();
        PointerByReference b = new PointerByReference();
        PointerByReference c = new PointerByReference();
        return selection(NativeHandle.call(() -> LIB.beam_search_fused_step(preIds.ptr(), preScores.ptr(),
                logProbs.ptr(), beamSize, endId, a, b, c), preIds, preScores, logProbs), a, b, c);
    }

    /** Reorders decoder state: row i is row parentIdx[i] of state. */
    public static Tensor gatherState(Tensor state, Tensor parentIdx) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.beam_search_gather_state(state.ptr(), parentIdx.ptr(), out),
                state, parentIdx), out);
    }

    /**
     * Reorders every tensor of a model's state by one parentIdx (result i is states[i] reordered);
     * on a CUDA device the call waits for the device once, not once a state.
     */
    public static Tensor[] gatherStates(Tensor[] states, Tensor parentIdx) {
        Pointer[] raw = new Pointer[states.length];
        for (int i = 0; i < states.length; i++) {
            raw[i] = states[i].ptr();
        }
        Memory out = states.length == 0 ? null : new Memory((long) Native.POINTER_SIZE * states.length);
        NativeHandle.check(() -> LIB.beam_search_gather_states(raw, raw.length, parentIdx.ptr(), out), states,
                parentIdx);
        Tensor[] result = new Tensor[states.length];
        for (int i = 0; i < states.length; i++) {
            result[i] = Tensor.adopt(out.getPointer((long) i * Native.POINTER_SIZE));
        }
        return result;
    }

    /** Backtracks dense [T, B, beam] ids through their parents. */
    public static Tensor gatherTree(Tensor ids, Tensor parents) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.beam_search_gather_tree(ids.ptr(), parents.ptr(), out), ids,
                parents), out);
    }

    /** Paddle's beam_search_decode: backtracks the steps' arrays into beamSize sentences per source. */
    public static Sequence.Pair decode(TensorArray ids, TensorArray scores, long beamSize, long endId) {
        PointerByReference a = new PointerByReference();
        PointerByReference b = new PointerByReference();
        NativeHandle.check(() -> LIB.beam_search_decode(ids.ptr(), scores.ptr(), beamSize, endId, a, b), ids, scores);
        return new Sequence.Pair(Tensor.adopt(a.getValue()), Tensor.adopt(b.getValue()));
    }
}
