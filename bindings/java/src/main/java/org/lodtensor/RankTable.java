package org.lodtensor;

import com.sun.jna.Pointer;
import com.sun.jna.ptr.LongByReference;
import com.sun.jna.ptr.PointerByReference;
import java.lang.ref.Cleaner;

/** The sequences of one LoD level sorted by length, longest first (Paddle's LoDRankTable). */
public final class RankTable implements AutoCloseable {
    private static final LodTensorLib LIB = LodTensorLib.INSTANCE;

    private final NativeHandle handle;
    private final Cleaner.Cleanable cleanable;

    private RankTable(Pointer p) {
        handle = new NativeHandle(p, LIB::rank_table_destroy);
        cleanable = NativeHandle.CLEANER.register(this, handle);
    }

    Pointer ptr() {
        return handle.get();
    }

    /** Ranks the sequences of LoD level level of x. */
    public static RankTable create(Tensor x, int level) {
        PointerByReference out = new PointerByReference();
        NativeHandle.check(() -> LIB.rank_table_create(x.ptr(), level, out), x);
        return new RankTable(out.getValue());
    }

    @Override
    public void close() {
        cleanable.clean();
    }

    private long size(int status, LongByReference r) {
        NativeHandle.check(status);
        return r.getValue();
    }

    public int size() {
        LongByReference r = new LongByReference();
        return NativeHandle.arrayLength(size(NativeHandle.call(() -> LIB.rank_table_size(ptr(), r), this), r),
                "RankTable.size");
    }

    public int level() {
        LongByReference r = new LongByReference();
        return NativeHandle.intCount(size(NativeHandle.call(() -> LIB.rank_table_level(ptr(), r), this), r),
                "RankTable.level");
    }

    public long maxSequenceLen() {
        LongByReference r = new LongByReference();
        return size(NativeHandle.call(() -> LIB.rank_table_max_sequence_len(ptr(), r), this), r);
    }

    /** The original indices of the sequences, longest first. */
    public long[] indices() {
        long[] idx = new long[size()];
        LongByReference n = new LongByReference();
        NativeHandle.check(() -> LIB.rank_table_items(ptr(), idx, null, idx.length, n), this);
        return idx;
    }

    /** Their lengths, longest first. */
    public long[] lengths() {
        long[] len = new long[size()];
        LongByReference n = new LongByReference();
        NativeHandle.check(() -> LIB.rank_table_items(ptr(), null, len, len.length, n), this);
        return len;
    }

    /** The state of the sequences still alive at step (zero copy). */
    public Tensor shrinkRnnMemory(Tensor x, long step) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.rank_table_shrink_rnn_memory(ptr(), x.ptr(), step, out), this, x),
                out);
    }

    /** x's units (top-level sequences, or rows) in rank order. */
    public Tensor reorder(Tensor x) {
        PointerByReference out = new PointerByReference();
        return Tensor.out(NativeHandle.call(() -> LIB.rank_table_reorder(ptr(), x.ptr(), out), this, x), out);
    }
}
