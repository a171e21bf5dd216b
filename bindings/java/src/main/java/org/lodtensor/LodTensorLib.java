package org.lodtensor;

import com.sun.jna.Callback;
import com.sun.jna.Library;
import com.sun.jna.Native;
import com.sun.jna.Pointer;
import com.sun.jna.Structure;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;

/**
 * The C API of liblodtensor as JNA sees it (package-private: use {@link Tensor} and friends).
 * size_t is mapped to Java long, so the binding needs a 64-bit platform. The library is loaded by
 * the name in the system property {@code lodtensor.library} (default "lodtensor", searched on
 * {@code jna.library.path}, then the system's library path).
 */
interface LodTensorLib extends Library {
    LodTensorLib INSTANCE = load();

    private static LodTensorLib load() {
        if (Native.POINTER_SIZE != 8) {
            throw new UnsatisfiedLinkError("the lodtensor Java binding needs a 64-bit platform");
        }
        return Native.load(System.getProperty("lodtensor.library", "lodtensor"), LodTensorLib.class);
    }

    @Structure.FieldOrder({"code", "bits", "lanes"})
    class DTypeT extends Structure implements Structure.ByValue {
        public byte code;
        public byte bits;
        public short lanes;

        DTypeT() {}

        DTypeT(DType d) {
            code = (byte) d.code();
            bits = (byte) d.bits();
            lanes = (short) d.lanes();
        }
    }

    @Structure.FieldOrder({"code", "bits", "lanes"})
    class DTypeOut extends Structure {
        public byte code;
        public byte bits;
        public short lanes;
    }

    @Structure.FieldOrder({"device_type", "device_id"})
    class PlaceOut extends Structure {
        public int device_type;
        public int device_id;
    }

    /** lodtensor_release_fn. */
    interface ReleaseFn extends Callback {
        void invoke(Pointer data, Pointer userData);
    }

    @Structure.FieldOrder({"device_type", "device_id"})
    class PlaceT extends Structure implements Structure.ByValue {
        public int device_type;
        public int device_id;

        PlaceT() {}

        PlaceT(int deviceType, int deviceId) {
            device_type = deviceType;
            device_id = deviceId;
        }
    }

    @Structure.FieldOrder({"version", "beam_size", "vocab_size", "start_id", "end_id", "max_length", "min_length",
            "length_penalty", "num_hypotheses"})
    class DecoderOptionsT extends Structure {
        public int version;
        public long beam_size;
        public long vocab_size;
        public long start_id;
        public long end_id;
        public long max_length;
        public long min_length;
        public double length_penalty;
        public long num_hypotheses;
    }

    @Structure.FieldOrder({"step", "num_sources", "source_offsets", "num_prefixes", "ids", "parent_idx", "scores",
            "vocab_size", "parent_idx_tensor"})
    class StepInfoT extends Structure {
        public long step;
        public long num_sources;
        public Pointer source_offsets;
        public long num_prefixes;
        public Pointer ids;
        public Pointer parent_idx;
        public Pointer scores;
        public long vocab_size;
        public Pointer parent_idx_tensor;

        public StepInfoT(Pointer p) {
            super(p);
            read();
        }
    }

    /** beam_search_step_fn. */
    interface BeamStepFn extends Callback {
        int invoke(Pointer info, Pointer logProbs, Pointer userData);
    }

    /** beam_search_tensor_step_fn. */
    interface BeamTensorStepFn extends Callback {
        int invoke(Pointer info, Pointer outLogProbs, Pointer userData);
    }

    /** tensor_array_step_fn. */
    interface StepFn extends Callback {
        int invoke(long step, Pointer stepInput, Pointer prevState, Pointer stepOutput, Pointer newState,
                   Pointer userData);
    }

    String lodtensor_version();

    String lodtensor_status_str(int code);

    String lodtensor_last_error_message();

    int lodtensor_selftest_panic();

    int lodtensor_set_num_threads(long n);

    int lodtensor_num_threads(LongByReference out);

    int lodtensor_set_host_cache_limit(long bytes);

    int lodtensor_host_cache_info(LongByReference outKept, LongByReference outLimit);

    int lodtensor_create(DTypeT dtype, long[] dims, long ndim, Pointer data, long dataLen, int lodKind,
                         long[] levelSizes, long numLevels, long[] lod, long lodLen, PointerByReference out);

    int lodtensor_from_buffer(PlaceT place, DTypeT dtype, long[] dims, long ndim, Pointer data, long dataLen,
                              int lodKind, long[] levelSizes, long numLevels, long[] lod, long lodLen,
                              ReleaseFn release, Pointer userData, PointerByReference out);

    void lodtensor_destroy(Pointer t);

    int lodtensor_to_place(Pointer t, PlaceT place, PointerByReference out);

    int lodtensor_synchronize(PlaceT place);

    int lodtensor_to_dlpack(Pointer t, PointerByReference out);

    int lodtensor_from_dlpack(Pointer managed, int lodKind, long[] levelSizes, long numLevels, long[] lod,
                              long lodLen, PointerByReference out);

    int lodtensor_to_dlpack_legacy(Pointer t, PointerByReference out);

    int lodtensor_from_dlpack_legacy(Pointer managed, int lodKind, long[] levelSizes, long numLevels, long[] lod,
                                     long lodLen, PointerByReference out);

    int lodtensor_to_arrow(Pointer t, Pointer outSchema, Pointer outArray);

    int lodtensor_from_arrow(Pointer schema, Pointer array, PointerByReference out);

    int lodtensor_to_arrow_device(Pointer t, Pointer outSchema, Pointer outArray);

    int lodtensor_to_arrow_strings(Pointer t, int encoding, Pointer outSchema, Pointer outArray);

    int lodtensor_to_arrow_device_strings(Pointer t, int encoding, Pointer outSchema, Pointer outArray);

    int lodtensor_from_arrow_device(Pointer schema, Pointer array, PointerByReference out);

    int lodtensor_to_arrow_record_batch_encoded(Pointer[] columns, Pointer names, int[] encodings, long numColumns,
                                                Pointer outSchema, Pointer outArray);

    int lodtensor_to_arrow_device_record_batch_encoded(Pointer[] columns, Pointer names, int[] encodings,
                                                       long numColumns, Pointer outSchema, Pointer outArray);

    int lodtensor_from_arrow_record_batch(Pointer schema, Pointer array, Pointer[] outColumns, long outColumnsLen,
                                          LongByReference outCount);

    int lodtensor_from_arrow_device_record_batch(Pointer schema, Pointer array, Pointer[] outColumns,
                                                 long outColumnsLen, LongByReference outCount);

    int lodtensor_serialize(Pointer t, byte[] buf, long bufLen, LongByReference outLen);

    int lodtensor_deserialize(Pointer buf, long bufLen, LongByReference outConsumed, PointerByReference out);

    int lodtensor_deserialize_slice(Pointer buf, long bufLen, long seek, long[] dims, long ndim,
                                    LongByReference outConsumed, PointerByReference out);

    int lodtensor_cuda_device_count(LongByReference out);

    int lodtensor_cuda_memory_info(int device, LongByReference outInUse, LongByReference outKept);

    int lodtensor_cuda_empty_cache(int device);

    int lodtensor_cuda_load_kernels(int device);

    int lodtensor_cuda_stream(int device, PointerByReference out);

    int lodtensor_cuda_set_cache_limit(int device, long bytes);

    int lodtensor_cuda_cache_limit(int device, LongByReference out);

    int lodtensor_cuda_free_memory(int device, LongByReference outFree, LongByReference outTotal);

    int lodtensor_cuda_counters(int device, long[] out, long len);

    int lodtensor_share(Pointer t, PointerByReference out);

    int lodtensor_copy(Pointer t, PointerByReference out);

    int lodtensor_dtype(Pointer t, DTypeOut out);

    int lodtensor_place(Pointer t, PlaceOut out);

    int lodtensor_ndim(Pointer t, LongByReference out);

    int lodtensor_dims(Pointer t, long[] buf, long bufLen, LongByReference outNdim);

    int lodtensor_numel(Pointer t, LongByReference out);

    int lodtensor_nbytes(Pointer t, LongByReference out);

    int lodtensor_data(Pointer t, PointerByReference out);

    int lodtensor_data_mut(Pointer t, PointerByReference out);

    int lodtensor_lod_num_levels(Pointer t, LongByReference out);

    int lodtensor_lod_offsets(Pointer t, long level, PointerByReference out, LongByReference outLen);

    int lodtensor_set_lod(Pointer t, int lodKind, long[] levelSizes, long numLevels, long[] lod, long lodLen);

    int lodtensor_clear_lod(Pointer t);

    int lodtensor_sequence_rows(Pointer t, long level, long index, LongByReference begin, LongByReference end);

    int lodtensor_slice(Pointer t, long level, long begin, long end, PointerByReference out);

    int lodtensor_split(Pointer t, long numPieces, Pointer[] outPieces, long outPiecesLen, LongByReference outCount);

    int lodtensor_merge(Pointer[] tensors, long count, PointerByReference out);

    int lodtensor_lod_reset(Pointer x, Pointer y, long[] targetLod, long targetLen, boolean append,
                            PointerByReference out);

    int sequence_expand(Pointer x, Pointer y, long refLevel, PointerByReference out);

    int sequence_expand_as(Pointer x, Pointer y, PointerByReference out);

    int sequence_pad(Pointer x, Pointer padValue, long paddedLength, PointerByReference out,
                     PointerByReference outLength);

    int sequence_unpad(Pointer x, Pointer length, PointerByReference out);

    int sequence_pool(Pointer x, int poolType, double padValue, PointerByReference out,
                      PointerByReference outMaxIndex);

    int sequence_first_step(Pointer x, PointerByReference out);

    int sequence_last_step(Pointer x, PointerByReference out);

    int sequence_scatter(Pointer x, Pointer ids, Pointer updates, PointerByReference out);

    int sequence_scatter_inplace(Pointer x, Pointer ids, Pointer updates);

    int sequence_softmax(Pointer x, PointerByReference out);

    int sequence_concat(Pointer[] xs, long count, PointerByReference out);

    int beam_search_gather_states(Pointer[] states, long count, Pointer parentIdx, Pointer out);

    int sequence_slice(Pointer x, Pointer offset, Pointer length, PointerByReference out);

    int sequence_reverse(Pointer x, PointerByReference out);

    int sequence_mask(Pointer x, long maxlen, DTypeT outDtype, PointerByReference out);

    int sequence_enumerate(Pointer x, long winSize, long padValue, PointerByReference out);

    int sequence_erase(Pointer x, long[] tokens, long tokensLen, PointerByReference out);

    int sequence_reshape(Pointer x, long newDim, PointerByReference out);

    int sequence_conv(Pointer x, Pointer filter, Pointer paddingData, long contextLength, long contextStart,
                      long contextStride, boolean paddingTrainable, PointerByReference out);

    int lodtensor_fill(DTypeT dtype, long[] dims, long ndim, double value, PointerByReference out);

    int lodtensor_fill_on(PlaceT place, DTypeT dtype, long[] dims, long ndim, double value, PointerByReference out);

    int lodtensor_cast(Pointer x, DTypeT dtype, PointerByReference out);

    int lodtensor_gather_rows(Pointer x, Pointer index, PointerByReference out);

    int lodtensor_scatter_rows(Pointer x, Pointer index, Pointer updates, int mode, PointerByReference out);

    int lodtensor_log_softmax(Pointer x, PointerByReference out);

    int lodtensor_topk(Pointer x, long k, boolean largest, PointerByReference outValues,
                       PointerByReference outIndices);

    int beam_search_step(Pointer preIds, Pointer preScores, Pointer ids, Pointer scores, long level, long beamSize,
                         long endId, boolean isAccumulated, PointerByReference outIds, PointerByReference outScores,
                         PointerByReference outParentIdx);

    int beam_search_fused_step(Pointer preIds, Pointer preScores, Pointer logProbs, long beamSize, long endId,
                               PointerByReference outIds, PointerByReference outScores,
                               PointerByReference outParentIdx);

    int beam_search_gather_state(Pointer state, Pointer parentIdx, PointerByReference out);

    int beam_search_gather_tree(Pointer ids, Pointer parents, PointerByReference out);

    int tensor_array_create(PointerByReference out);

    void tensor_array_destroy(Pointer a);

    int tensor_array_size(Pointer a, LongByReference out);

    int tensor_array_read(Pointer a, long index, boolean copy, PointerByReference out);

    int tensor_array_write(Pointer a, long index, Pointer t, boolean copy);

    int tensor_array_clear(Pointer a);

    int tensor_array_to_tensor(Pointer a, long axis, boolean useStack, PointerByReference out, long[] sizes,
                               long sizesLen);

    int tensor_array_unstack(Pointer x, long axis, PointerByReference out);

    int tensor_array_unpack(Pointer x, Pointer table, PointerByReference out);

    int tensor_array_pack(Pointer a, Pointer table, PointerByReference out);

    int tensor_array_dynamic_rnn(Pointer x, long level, Pointer initState, StepFn stepFn, Pointer userData,
                                 PointerByReference out);

    int beam_search_decode(Pointer ids, Pointer scores, long beamSize, long endId, PointerByReference outIds,
                           PointerByReference outScores);

    int beam_search_decoder_options_init(DecoderOptionsT options);

    int beam_search_decoder_create(DecoderOptionsT options, PointerByReference out);

    void beam_search_decoder_destroy(Pointer decoder);

    int beam_search_decoder_run(Pointer decoder, long numSources, BeamStepFn stepFn, BeamStepFn editFn,
                                Pointer userData, PointerByReference outIds, PointerByReference outScores);

    int beam_search_decoder_run_tensors(Pointer decoder, long numSources, BeamTensorStepFn stepFn, Pointer userData,
                                        PointerByReference outIds, PointerByReference outScores);

    int rank_table_create(Pointer x, long level, PointerByReference out);

    void rank_table_destroy(Pointer table);

    int rank_table_size(Pointer table, LongByReference out);

    int rank_table_level(Pointer table, LongByReference out);

    int rank_table_max_sequence_len(Pointer table, LongByReference out);

    int rank_table_items(Pointer table, long[] indices, long[] lengths, long bufLen, LongByReference outLen);

    int rank_table_shrink_rnn_memory(Pointer table, Pointer x, long step, PointerByReference out);

    int rank_table_reorder(Pointer table, Pointer x, PointerByReference out);
}
