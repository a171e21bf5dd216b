package org.lodtensor;

/** A LoD to give to a tensor: its levels, top first, as lengths or offsets. */
public final class Lod {
    static final int OFFSETS = 0;
    static final int LENGTHS = 1;

    /** No LoD. */
    public static final Lod NONE = new Lod(LENGTHS, new long[0][]);

    final int kind;
    final long[] levelSizes;
    final long[] values;

    private Lod(int kind, long[][] levels) {
        this.kind = kind;
        this.levelSizes = new long[levels.length];
        int total = 0;
        for (int i = 0; i < levels.length; i++) {
            levelSizes[i] = levels[i].length;
            total += levels[i].length;
        }
        this.values = new long[total];
        int at = 0;
        for (long[] level : levels) {
            System.arraycopy(level, 0, values, at, level.length);
            at += level.length;
        }
    }

    /** Sequence lengths per level, e.g. {@code Lod.lengths(new long[] {2, 1}, new long[] {2, 3, 2})}. */
    public static Lod lengths(long[]... levels) {
        return new Lod(LENGTHS, levels);
    }

    /** Offsets per level (each starting at 0). */
    public static Lod offsets(long[]... levels) {
        return new Lod(OFFSETS, levels);
    }
}
