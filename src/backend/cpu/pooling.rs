//! The kernels of `sequence_pool`: per sequence of rows, per column, a sum (scaled), a selected row,
//! or the row of the extreme value. Parallel over chunks of whole sequences (one output row each).
//! Each sequence is read in memory order (whole rows, up to `WIDE_BLOCK` columns per pass) with
//! the accumulators on the stack or in registers; nothing is allocated per sequence.

use super::lane_extremes;
use super::lane_sums;
use super::pool::for_each_sequence_chunk;
use super::rows::{copy_elements, TASK_BYTES};
use super::{has_avx2, has_avx512, has_avx512bw, read_ahead};
use crate::dtype::{retyped, retyped_mut, DType, Scalar};
use crate::error::{ensure, Result};
use std::ops::Range;
use std::sync::atomic::{AtomicI32, Ordering};

/// Runs `task(seqs, rows)` over tasks of whole sequences of about `TASK_BYTES` of `x` each, `rows`
/// being the output rows of sequences `seqs` (`width` elements of `out` each).
fn for_each_sequence_task<T: Scalar>(
    out: &mut [T],
    width: usize,
    offsets: &[usize],
    task: impl Fn(Range<usize>, &mut [T]) + Sync + Send,
) -> Result<()> {
    if width == 0 {
        return Ok(()); // no element to write
    }
    let share = TASK_BYTES.div_ceil(width * std::mem::size_of::<T>());
    for_each_sequence_chunk(out, offsets, share, |i| i * width, task)
}

/// Runs `pool(i, row)` for each sequence `i` of `offsets` and its output row (`width` elements of
/// `out`), in the tasks of [`for_each_sequence_task`].
fn for_each_sequence<T: Scalar>(
    out: &mut [T],
    width: usize,
    offsets: &[usize],
    pool: impl Fn(usize, &mut [T]) + Sync + Send,
) -> Result<()> {
    for_each_sequence_task(out, width, offsets, |seqs, seg| {
        for (i, row) in seqs.zip(seg.chunks_exact_mut(width)) {
            pool(i, row);
        }
    })
}

/// Columns per register block of the sum and max/min kernels: 16 f64 accumulators take 8 of the
/// 16 SSE registers, so the row loop keeps them in registers instead of loading and storing them
/// for every row (the former 64-column stack block did; benches/REPORT.md).
const SUM_BLOCK: usize = 16;

/// Columns per pass of the sum over wide rows (2 KiB of f64 accumulators on the stack).
const WIDE_BLOCK: usize = 256;

/// `out[i][c] = (sum of x[r][c] over rows r of sequence i) / divisor(len)`, summed in f64 in row
/// order and rounded once; an empty sequence gives `pad`. `offsets` are row offsets into `x`.
pub fn pool_sum<T: Scalar>(
    x: &[T],
    width: usize,
    offsets: &[usize],
    divisor: impl Fn(usize) -> f64 + Sync + Send,
    pad: T,
    out: &mut [T],
) -> Result<()> {
    let avx2 = has_avx2();
    let avx512 = has_avx512bw();
    // A sequence's sums in row order.
    let one = |i: usize, seg: &mut [T]| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            seg.fill(pad);
            return;
        }
        let d = divisor(end - start);
        if width == 1 {
            // One column: the values folded straight from the slice (the one-column block's loop,
            // with its row arithmetic, ran about 10% slower).
            seg[0] = T::cast_f64(x[start..end].iter().fold(0.0, |sum, v| sum + v.to_f64()) / d);
            return;
        }
        // One bounds check for the whole sequence; the block loops below index inside it.
        let rows = &x[start * width..end * width];
        if width > 2 * SUM_BLOCK {
            // Wide rows: one pass over the sequence in memory order per WIDE_BLOCK columns, the
            // accumulators in L1 (a register block per pass would read one line per row at the
            // row stride, 8 passes for 128 columns, which ran at a third of the read bandwidth).
            for c0 in (0..width).step_by(WIDE_BLOCK) {
                let c1 = (c0 + WIDE_BLOCK).min(width);
                let mut acc = Lines([0f64; WIDE_BLOCK]); // on lines: see `Lines`
                if avx2 {
                    // SAFETY: the CPU has AVX2 (checked above).
                    unsafe { sum_columns_avx2(rows, width, c0..c1, &mut acc.0) }
                } else {
                    sum_columns(rows, width, c0..c1, &mut acc.0)
                }
                for (o, a) in seg[c0..c1].iter_mut().zip(&acc.0) {
                    *o = T::cast_f64(a / d);
                }
            }
            return;
        }
        read_ahead(rows);
        if avx512 {
            // SAFETY: the CPU has AVX-512F and BW (checked above).
            unsafe { sum_narrow_avx512(rows, width, d, seg) }
        } else if avx2 {
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe { sum_narrow_avx2(rows, width, d, seg) }
        } else {
            sum_narrow(rows, width, d, seg)
        }
    };
    if lanes_pay::<T>(width, offsets) {
        // Float32 rows of 1, 2, 4 or 8 columns in vector lanes, with the same bits (`lane_sums`).
        return for_each_sequence_task(out, width, offsets, |seqs, seg| {
            if !lane_sums::sum_sequences(x, width, offsets, seqs.clone(), &divisor, pad, seg, one) {
                seqs.zip(seg.chunks_exact_mut(width)).for_each(|(i, row)| one(i, row));
            }
        });
    }
    for_each_sequence(out, width, offsets, one)
}

/// The sums of columns of a sequence's `rows` (rows of `width`, at most `2 * SUM_BLOCK`), divided
/// by `d` and rounded into `out`: blocks of `SUM_BLOCK` columns, then the columns left in one
/// block of their number.
#[inline(always)]
fn sum_narrow<T: Scalar>(rows: &[T], width: usize, d: f64, out: &mut [T]) {
    let mut c0 = 0;
    while c0 + SUM_BLOCK <= width {
        SumColumns { rows, width, c0, d, out: &mut out[c0..c0 + SUM_BLOCK] }.run::<SUM_BLOCK>();
        c0 += SUM_BLOCK;
    }
    if c0 < width {
        narrow_columns(width - c0, SumColumns { rows, width, c0, d, out: &mut out[c0..] });
    }
}

/// [`sum_narrow`] compiled with AVX2 enabled: 4 values widened and added an instruction instead
/// of 2. The same additions in the same order (AVX2 brings no FMA), so the same sums; on an
/// Intel Xeon with AVX-512, rows of 16 columns pooled 1.1x faster than in the baseline build
/// (benches/REPORT.md).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn sum_narrow_avx2<T: Scalar>(rows: &[T], width: usize, d: f64, out: &mut [T]) {
    sum_narrow(rows, width, d, out)
}

/// [`sum_narrow`] compiled with AVX-512 enabled: 8 values an instruction, the same sums; rows of
/// 16 columns pooled 1.06x faster than in the AVX2 build, 1.17x than in the baseline one
/// (benches/REPORT.md).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f,avx512bw"))]
unsafe fn sum_narrow_avx512<T: Scalar>(rows: &[T], width: usize, d: f64, out: &mut [T]) {
    sum_narrow(rows, width, d, out)
}

/// Sequences this many values long on average or longer go through the lane kernels
/// (`lane_sums`, `lane_extremes`): a sequence there costs a few reductions across the lanes, which
/// took 6.8 ns for a one-row sequence of one column against 1.7 in the plain loop; at U[1,4]
/// rows (2.5 on average) both ran alike, at U[1,8] the lanes took 3.6 ms against 5.3
/// (benches/REPORT.md).
const LANES_MIN_VALUES: usize = 4;

/// Rows a sequence must average for the max/min over rows of 4 or 8 columns to go through the lanes:
/// their fold by column costs more than the reductions of one column. Over rows of 4 columns, the
/// lanes took 13.8 ms against 7.5 for 2^20 sequences of one row, 8.8 against 8.4 for 2^19 of U[1,8]
/// rows, 5.1 against 5.2 and 5.9 against 6.9 for 2^18 of U[1,16] and U[1,32] (benches/REPORT.md).
const FOLD_MIN_ROWS: usize = 8;

/// Whether the sequences of `offsets` average `rows` rows or more.
fn long_enough(offsets: &[usize], rows: usize) -> bool {
    let total = offsets.last().copied().unwrap_or(0) - offsets.first().copied().unwrap_or(0);
    total >= rows.saturating_mul(offsets.len().saturating_sub(1))
}

/// Whether `pool_sum` takes the sequences of `offsets`, rows of `width` elements of `T`, to the
/// lane kernels (`lane_sums`): float32 rows of a width they take on this CPU, sequences of
/// `LANES_MIN_VALUES` values or more on average.
fn lanes_pay<T: Scalar>(width: usize, offsets: &[usize]) -> bool {
    T::DTYPE == DType::F32 && lane_sums::takes(width) && long_enough(offsets, LANES_MIN_VALUES.div_ceil(width))
}

/// The lane kernel of `pool_extreme` (`lane_extremes`) for the sequences of `offsets`, rows of
/// `width` elements of `T`, the max if `max`, else the min: for float32 rows of a width it takes
/// on this CPU, sequences of `LANES_MIN_VALUES` rows or more on average (`FOLD_MIN_ROWS` for
/// rows of 4 or 8 columns).
fn lane_extreme_form<T: Scalar>(width: usize, offsets: &[usize], max: bool) -> Option<lane_extremes::Form> {
    let rows = if width >= 4 { FOLD_MIN_ROWS } else { LANES_MIN_VALUES };
    (T::DTYPE == DType::F32 && long_enough(offsets, rows)).then(|| lane_extremes::form(width, max)).flatten()
}

/// A kernel over `W` columns of a sequence's rows, `W` a constant: its state is fixed-size arrays
/// indexed by constants, which stay in registers and become vector instructions.
trait ColumnBlock {
    fn run<const W: usize>(self);
}

// The arms of `narrow_columns`.
const _: () = assert!(SUM_BLOCK == 16);

/// Runs `block` with `W = n`, for the columns a row has under a block (`n` in `1..SUM_BLOCK`):
/// unrolled for their number, as the blocks are. A loop of run-time length per row took 20-30
/// cycles a row at one column, a fifth of the read bandwidth or less.
#[inline(always)]
fn narrow_columns(n: usize, block: impl ColumnBlock) {
    match n {
        1 => block.run::<1>(),
        2 => block.run::<2>(),
        3 => block.run::<3>(),
        4 => block.run::<4>(),
        5 => block.run::<5>(),
        6 => block.run::<6>(),
        7 => block.run::<7>(),
        8 => block.run::<8>(),
        9 => block.run::<9>(),
        10 => block.run::<10>(),
        11 => block.run::<11>(),
        12 => block.run::<12>(),
        13 => block.run::<13>(),
        14 => block.run::<14>(),
        15 => block.run::<15>(),
        _ => unreachable!("{n} columns are not fewer than a block"),
    }
}

/// The sums of columns `c0..c0 + W` of a sequence's `rows` (rows of `width`), divided by `d` and
/// rounded into `out`.
struct SumColumns<'a, T> {
    rows: &'a [T],
    width: usize,
    c0: usize,
    d: f64,
    out: &'a mut [T],
}

impl<T: Scalar> ColumnBlock for SumColumns<'_, T> {
    #[inline(always)]
    fn run<const W: usize>(self) {
        // A row of W columns is read with W as its constant stride: no division per sequence
        // (chunks_exact's) and no bounds check per row.
        let acc = if self.width == W {
            sum_block::<T, W>(self.rows, W, 0)
        } else {
            sum_block::<T, W>(self.rows, self.width, self.c0)
        };
        for (o, a) in self.out.iter_mut().zip(&acc) {
            *o = T::cast_f64(a / self.d);
        }
    }
}

/// The sums in f64, in row order, of columns `c0..c0 + W` of `rows` (rows of `width`), the
/// accumulators in registers. chunks_exact's exact rows keep the loop free of bounds checks,
/// which cost more than its one division (sequences of 1-32 rows of 16 columns: 0.70 of the
/// ceiling, 0.65 with a bounds check a row).
#[inline(always)]
fn sum_block<T: Scalar, const W: usize>(rows: &[T], width: usize, c0: usize) -> [f64; W] {
    let mut acc = [0f64; W];
    for row in rows.chunks_exact(width) {
        let v: &[T; W] = row[c0..c0 + W].try_into().expect("a block of the row");
        for (a, v) in acc.iter_mut().zip(v) {
            *a += v.to_f64();
        }
    }
    acc
}

/// Adds columns `cols` of every row (rows of `width`) to `acc`, in row order: one pass over the
/// sequence in memory order.
#[inline(always)]
fn sum_columns<T: Scalar>(rows: &[T], width: usize, cols: std::ops::Range<usize>, acc: &mut [f64; WIDE_BLOCK]) {
    for row in rows.chunks_exact(width) {
        for (a, v) in acc.iter_mut().zip(&row[cols.clone()]) {
            *a += v.to_f64();
        }
    }
}

/// [`sum_columns`] compiled with AVX2 enabled: 4 f32 widened and added per instruction instead
/// of 2, which the baseline build needed too many instructions for to keep up with memory. The
/// same additions in the same order (AVX2 brings no FMA), so the sums are identical.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn sum_columns_avx2<T: Scalar>(
    rows: &[T],
    width: usize,
    cols: std::ops::Range<usize>,
    acc: &mut [f64; WIDE_BLOCK],
) {
    sum_columns(rows, width, cols, acc)
}

/// `out[i]` = row `pick(start, end)` of `x` for sequence `i` (rows `start..end`, non-empty), or
/// `pad` in every column for an empty sequence.
pub fn pool_select<T: Scalar>(
    x: &[T],
    width: usize,
    offsets: &[usize],
    pick: impl Fn(usize, usize) -> usize + Sync + Send,
    pad: T,
    out: &mut [T],
) -> Result<()> {
    if width == 1 {
        // One column: the element assigned, not copied as a row (a call to the row copy for each
        // of 2^22 one-row sequences took twice as long; benches/REPORT.md).
        return for_each_sequence(out, 1, offsets, |i, seg| {
            let (start, end) = (offsets[i], offsets[i + 1]);
            seg[0] = if start == end { pad } else { x[pick(start, end)] };
        });
    }
    for_each_sequence(out, width, offsets, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            seg.fill(pad);
        } else {
            let r = pick(start, end);
            copy_elements(seg, &x[r * width..(r + 1) * width], false);
        }
    })
}

/// For each sequence `i` and column `c`: `out[i][c]` = the value of column `c` in sequence `i`
/// that no later value `beats`, i.e. a value replaces the current best only if `beats(value,
/// best)`, and `index[i][c]` = its row (absolute in `x`); an empty sequence gives `pad` and -1.
/// `beats` must be `>` or `<` of the type (a strict order, under which NaN never replaces and the
/// first extreme wins): the wide-row kernel finds the rows afterwards as the first row holding a
/// value equal to the extreme. Rows must fit in i32 (the caller checks). Values and rows are
/// written from the sequence's own pass over `x` (gathering the values afterwards by index read
/// `x` a second time, in random order: 10x slower).
pub fn pool_extreme<T: Scalar>(
    x: &[T],
    width: usize,
    offsets: &[usize],
    beats: impl Fn(T, T) -> bool + Sync + Send,
    pad: T,
    out: &mut [T],
    index: &mut [i32],
) -> Result<()> {
    ensure!(index.len() == out.len(), Internal, "pool index of {} elements for {} outputs", index.len(), out.len());
    // The task that writes output row i also writes index row i, through a shared view: relaxed
    // stores to disjoint elements are plain stores, and no two tasks hold `&mut` to one element.
    // SAFETY: AtomicI32 has the size and alignment of i32, and `index` is borrowed exclusively
    // for the whole call, so nothing else reads or writes it meanwhile.
    let index: &[AtomicI32] = unsafe { &*(index as *mut [i32] as *const [AtomicI32]) };
    // Float32 rows of 1, 2, 4 or 8 columns in vector lanes (`lane_extremes`); `beats` is `>` or
    // `<`, and says which.
    let lanes = lane_extreme_form::<T>(width, offsets, beats(T::ONE, T::ZERO));
    let lanes = lanes.zip(retyped::<T, f32>(x));
    if width == 1 {
        // One column: the sequences the lanes leave, or all, in a plain loop over the values, which
        // compiles to selects (the one-column block compiled to a branch a row, mispredicted
        // whenever the extreme moved, and took twice as long; benches/REPORT.md).
        return for_each_sequence(out, 1, offsets, |i, seg| {
            let (start, end) = (offsets[i], offsets[i + 1]);
            let idx = &index[i..i + 1];
            if start == end {
                seg[0] = pad;
                idx[0].store(-1, Ordering::Relaxed);
                return;
            }
            if let Some((form, x)) = lanes {
                let seg = retyped_mut(seg).expect("float32 like x");
                // SAFETY: `form` is a build this CPU supports; the sequence is not empty.
                if unsafe { form(&x[start..end], start, seg, idx) } {
                    return;
                }
            }
            let (mut best, mut at) = (x[start], start);
            for (r, &v) in x[start + 1..end].iter().enumerate() {
                (best, at) = if beats(v, best) { (v, start + 1 + r) } else { (best, at) };
            }
            seg[0] = best;
            idx[0].store(at as i32, Ordering::Relaxed);
        });
    }
    let forms = Forms {
        avx2: has_avx2(),
        // The one-pass AVX-512 form needs the compare to be one instruction; f16 and bf16 compare
        // in scalar code, and ran 2.5x slower in it than in the two-pass form.
        avx512: has_avx512() && matches!(T::DTYPE, DType::F32 | DType::F64),
    };
    for_each_sequence(out, width, offsets, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        let idx = &index[i * width..(i + 1) * width];
        if start == end {
            seg.fill(pad);
            idx.iter().for_each(|a| a.store(-1, Ordering::Relaxed));
            return;
        }
        let rows = &x[start * width..end * width];
        if let Some((form, x)) = lanes {
            let seg = retyped_mut(seg).expect("float32 like x");
            // SAFETY: `form` is a build this CPU supports; the sequence is not empty.
            if unsafe { form(&x[start * width..end * width], start, seg, idx) } {
                return;
            }
        }
        if width <= 2 * SUM_BLOCK {
            read_ahead(rows); // as pool_sum does, for the same rows
        }
        extreme_sequence(rows, width, start, &beats, forms, seg, idx);
    })
}

/// Columns per pass of the max/min kernel over wide rows: the pass reads whole 512-byte spans of
/// the rows (f32) in memory order; passes of fewer columns leave the rest of each row's cache
/// lines to a later pass and ran at half the read bandwidth.
const EXTREME_WIDE: usize = 128;

/// Columns per block of the search for the rows of a wide pass's extremes: the extremes and rows
/// of a block stay in registers while the sequence, just read, comes from cache.
const EXTREME_ROWS: usize = 32;

/// The max/min kernel for one non-empty sequence (`rows`, rows of `width`, the first row `start`):
/// passes of `EXTREME_WIDE` columns (with AVX-512 the extremes and their rows together, else the
/// extremes, then their rows), then blocks of `SUM_BLOCK` columns (values and rows together, in
/// registers), then the columns left, fewer than a block, in one block of their number
/// (`narrow_columns`); writes all of `seg` and `idx`. The 16-column block and the wide passes are
/// compiled for AVX2 too, each as its own function: with the whole sequence function compiled for
/// AVX2, LLVM turned the 16-column block's index select into a mask and a branch per lane.
#[inline(always)]
fn extreme_sequence<T: Scalar>(
    rows: &[T],
    width: usize,
    start: usize,
    beats: &impl Fn(T, T) -> bool,
    forms: Forms,
    seg: &mut [T],
    idx: &[AtomicI32],
) {
    let mut c0 = 0;
    while forms.avx512 && c0 + EXTREME_WIDE <= width {
        // SAFETY: the CPU has AVX-512F (checked by the caller).
        let (b, a) = unsafe { extreme_wide_avx512(rows, width, c0, start, beats) };
        emit(&b, &a, &mut seg[c0..c0 + EXTREME_WIDE], &idx[c0..c0 + EXTREME_WIDE]);
        c0 += EXTREME_WIDE;
    }
    while c0 + EXTREME_WIDE <= width {
        let best = if forms.avx2 {
            // SAFETY: the CPU has AVX2 (checked by the caller).
            unsafe { extreme_values_avx2::<T, EXTREME_WIDE>(rows, width, c0, beats) }
        } else {
            extreme_values::<T, EXTREME_WIDE>(rows, width, c0, beats)
        };
        for (k, best) in best.chunks_exact(EXTREME_ROWS).enumerate() {
            let best: &[T; EXTREME_ROWS] = best.try_into().expect("a block of the extremes");
            let b0 = c0 + k * EXTREME_ROWS;
            let at = if forms.avx2 {
                // SAFETY: the CPU has AVX2 (checked by the caller).
                unsafe { first_rows_avx2(rows, width, b0, start, best) }
            } else {
                first_rows(rows, width, b0, start, best)
            };
            emit(best, &at, &mut seg[b0..b0 + EXTREME_ROWS], &idx[b0..b0 + EXTREME_ROWS]);
        }
        c0 += EXTREME_WIDE;
    }
    while c0 + SUM_BLOCK <= width {
        let (b, a) = if forms.avx2 {
            // SAFETY: the CPU has AVX2 (checked by the caller).
            unsafe { extreme_block_avx2(rows, width, c0, start, beats) }
        } else {
            extreme_block::<T, SUM_BLOCK>(rows, width, c0, start, beats)
        };
        emit(&b, &a, &mut seg[c0..c0 + SUM_BLOCK], &idx[c0..c0 + SUM_BLOCK]);
        c0 += SUM_BLOCK;
    }
    if c0 < width {
        narrow_columns(
            width - c0,
            ExtremeColumns { rows, width, c0, start, beats, seg: &mut seg[c0..], idx: &idx[c0..] },
        );
    }
}

/// The extremes of columns `c0..c0 + W` of a sequence's `rows` (rows of `width`, the first one
/// row `start`) and their rows, written to `seg` and `idx`.
struct ExtremeColumns<'a, T, B> {
    rows: &'a [T],
    width: usize,
    c0: usize,
    start: usize,
    beats: &'a B,
    seg: &'a mut [T],
    idx: &'a [AtomicI32],
}

impl<T: Scalar, B: Fn(T, T) -> bool> ColumnBlock for ExtremeColumns<'_, T, B> {
    #[inline(always)]
    fn run<const W: usize>(self) {
        // As for the sums: a row of W columns read with W as its constant stride.
        let (best, at) = if self.width == W {
            extreme_block::<T, W>(self.rows, W, 0, self.start, self.beats)
        } else {
            extreme_block::<T, W>(self.rows, self.width, self.c0, self.start, self.beats)
        };
        emit(&best, &at, self.seg, self.idx);
    }
}

/// The compiled forms of the max/min kernels that run, chosen once per call (from the CPU and the
/// dtype) and passed down, so that a test can run every form the CPU supports.
#[derive(Clone, Copy, Debug)]
struct Forms {
    /// The blocks and the two-pass wide form compiled for AVX2 (else for the baseline, SSE2).
    avx2: bool,
    /// The wide passes in the one-pass AVX-512 form.
    avx512: bool,
}

/// Writes extremes and their rows to the output row and the index row.
#[inline(always)]
fn emit<T: Scalar>(best: &[T], at: &[i32], seg: &mut [T], idx: &[AtomicI32]) {
    copy_elements(seg, best, false);
    for (d, &a) in idx.iter().zip(at) {
        d.store(a, Ordering::Relaxed);
    }
}

/// [`extreme_values`] compiled with AVX2 enabled (8 lanes per compare and select; the library
/// is built for SSE2).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn extreme_values_avx2<T: Scalar, const W: usize>(
    rows: &[T],
    width: usize,
    c0: usize,
    beats: &impl Fn(T, T) -> bool,
) -> [T; W] {
    extreme_values::<T, W>(rows, width, c0, beats)
}

/// [`first_rows`] compiled with AVX2 enabled.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn first_rows_avx2<T: Scalar>(
    rows: &[T],
    width: usize,
    c0: usize,
    start: usize,
    best: &[T; EXTREME_ROWS],
) -> [i32; EXTREME_ROWS] {
    first_rows(rows, width, c0, start, best)
}

/// [`extreme_block`] compiled with AVX2 enabled.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn extreme_block_avx2<T: Scalar>(
    rows: &[T],
    width: usize,
    c0: usize,
    start: usize,
    beats: &impl Fn(T, T) -> bool,
) -> ([T; SUM_BLOCK], [i32; SUM_BLOCK]) {
    extreme_block::<T, SUM_BLOCK>(rows, width, c0, start, beats)
}

/// [`extreme_block`] of `EXTREME_WIDE` columns compiled with AVX-512F, a different algorithm from
/// the AVX2 wide pass: the compare writes a mask register and both selects are masked moves, so
/// tracking the rows with the values costs little and one pass over the sequence finds both (the
/// AVX2 form needs a values pass, then a rows pass over the cached sequence).
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f"))]
unsafe fn extreme_wide_avx512<T: Scalar>(
    rows: &[T],
    width: usize,
    c0: usize,
    start: usize,
    beats: &impl Fn(T, T) -> bool,
) -> ([T; EXTREME_WIDE], [i32; EXTREME_WIDE]) {
    extreme_block::<T, EXTREME_WIDE>(rows, width, c0, start, beats)
}

/// The extreme values of columns `c0..c0 + W` over all rows of a sequence, read in memory order.
/// Values only: tracking the rows as well doubled the work per element and the pass fell behind
/// memory; the rows come from [`first_rows`] while the sequence is still in cache.
#[inline(always)]
fn extreme_values<T: Scalar, const W: usize>(
    rows: &[T],
    width: usize,
    c0: usize,
    beats: &impl Fn(T, T) -> bool,
) -> [T; W] {
    let mut best: [T; W] = rows[c0..c0 + W].try_into().expect("W columns of the first row");
    for row in rows.chunks_exact(width).skip(1) {
        let v: &[T; W] = row[c0..c0 + W].try_into().expect("W columns of the row");
        let mut b = best;
        for j in 0..W {
            b[j] = if beats(v[j], b[j]) { v[j] } else { b[j] };
        }
        best = b;
    }
    best
}

/// For columns `c0..c0 + EXTREME_ROWS`, the first row (absolute, the sequence starting at row
/// `start`) whose value equals the column's extreme `best`. Under a strict `beats` the extreme
/// is the value of exactly that row: a row before it equal to the extreme would have held the
/// extreme first, and a later equal value never replaces it. A NaN extreme can only come from the
/// first row (nothing replaces it, and it replaces nothing), and equals no row: `start` is kept.
/// The rows are scanned last to first, so the last match is the first row.
#[inline(always)]
fn first_rows<T: Scalar>(
    rows: &[T],
    width: usize,
    c0: usize,
    start: usize,
    best: &[T; EXTREME_ROWS],
) -> [i32; EXTREME_ROWS] {
    let mut at = [start as i32; EXTREME_ROWS];
    for (k, row) in rows.chunks_exact(width).enumerate().rev() {
        let v: &[T; EXTREME_ROWS] = row[c0..c0 + EXTREME_ROWS].try_into().expect("a block of the row");
        let r = (start + k) as i32;
        let mut a = at;
        for j in 0..EXTREME_ROWS {
            a[j] = if v[j] == best[j] { r } else { a[j] };
        }
        at = a;
    }
    at
}

/// The extreme values and their rows of columns `c0..c0 + SUM_BLOCK` over all rows of a sequence,
/// in registers: fixed-size arrays indexed by constants, copied to locals per row, so the compare
/// and both selects become vector compares and blends (over a slice of run-time length LLVM
/// emitted a compare and a branch per element, which mispredicts whenever the extreme moves).
#[inline(always)]
fn extreme_block<T: Scalar, const W: usize>(
    rows: &[T],
    width: usize,
    c0: usize,
    start: usize,
    beats: &impl Fn(T, T) -> bool,
) -> ([T; W], [i32; W]) {
    let mut best = Lines::<[T; W]>(rows[c0..c0 + W].try_into().expect("a block of the first row"));
    let mut at = Lines([start as i32; W]);
    for (k, row) in rows.chunks_exact(width).enumerate().skip(1) {
        let v: &[T; W] = row[c0..c0 + W].try_into().expect("a block of the row");
        let r = (start + k) as i32;
        let (mut b, mut a) = (best, at);
        // Indexed, not zipped: zipped iterators over the three arrays ran the AVX-512 wide pass
        // 1.6x slower.
        #[allow(clippy::needless_range_loop)]
        for j in 0..W {
            let take = beats(v[j], b.0[j]);
            b.0[j] = if take { v[j] } else { b.0[j] };
            a.0[j] = if take { r } else { a.0[j] };
        }
        (best, at) = (b, a);
    }
    (best.0, at.0)
}

/// An array on cache-line boundaries. The 128-column state of the AVX-512 wide pass lives on the
/// stack, and a 64-byte masked store that straddles two lines costs two: unaligned, the pass ran
/// at 0.64-0.72 of the read-only sum instead of 0.94-0.99, depending on where the stack began.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Lines<A>(A);

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule of `pool_extreme`, one column at a time: a value replaces the best only if it
    /// beats it, so the first extreme wins and NaN neither replaces nor is replaced after row 0.
    fn reference<T: Scalar>(
        rows: &[T],
        width: usize,
        start: usize,
        beats: impl Fn(T, T) -> bool,
    ) -> (Vec<T>, Vec<i32>) {
        let mut best = rows[..width].to_vec();
        let mut at = vec![start as i32; width];
        for (k, row) in rows.chunks_exact(width).enumerate().skip(1) {
            for c in 0..width {
                if beats(row[c], best[c]) {
                    (best[c], at[c]) = (row[c], (start + k) as i32);
                }
            }
        }
        (best, at)
    }

    /// Every form of the max/min kernel (baseline, AVX2, AVX-512 where the CPU has them) on every
    /// column shape it splits a row into, against the reference: the public tests reach only the
    /// forms of the CPU they run on.
    fn every_form_matches<T: Scalar>(value: impl Fn(u64) -> T) {
        let mut seed = 0x5EEDu64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        let mut forms = vec![Forms { avx2: false, avx512: false }];
        if has_avx2() {
            forms.push(Forms { avx2: true, avx512: false });
        }
        if has_avx512() {
            forms.extend([Forms { avx2: false, avx512: true }, Forms { avx2: true, avx512: true }]);
        }
        // A wide pass, two wide passes and a 16-column block and a tail, blocks only, and every
        // count of narrow columns: as the whole row, and after a block.
        let narrow = (1..SUM_BLOCK).flat_map(|n| [n, SUM_BLOCK + n]);
        for width in [EXTREME_WIDE, 2 * EXTREME_WIDE + SUM_BLOCK + 5, 3 * SUM_BLOCK].into_iter().chain(narrow) {
            for len in [1, 2, 9, 40] {
                let start = 1000 + len;
                // Few distinct values, so ties are common and the first of equal extremes counts.
                let rows: Vec<T> = (0..len * width).map(|_| value(next() % 7)).collect();
                for max in [true, false] {
                    let beats = move |a: T, b: T| if max { a > b } else { a < b };
                    let (want, want_at) = reference(&rows, width, start, beats);
                    for &f in &forms {
                        let mut got = vec![T::ZERO; width];
                        let mut at = vec![-7; width];
                        // SAFETY: AtomicI32 has the layout of i32; `at` is not used meanwhile.
                        let idx: &[AtomicI32] = unsafe { &*(at.as_mut_slice() as *mut [i32] as *const [AtomicI32]) };
                        extreme_sequence(&rows, width, start, &beats, f, &mut got, idx);
                        let same =
                            got.iter().zip(&want).all(|(g, w)| g == w || (g.to_f64().is_nan() && w.to_f64().is_nan()));
                        assert!(same, "{:?} values, width {width}, {len} rows, max {max}, {f:?}", T::DTYPE);
                        assert_eq!(at, want_at, "{:?} rows, width {width}, {len} rows, max {max}, {f:?}", T::DTYPE);
                    }
                }
            }
        }
    }

    /// `pool_sum` at every row width up to the wide form and past it, over sequences of 0, 1, 2, 9
    /// and 40 rows, against sums in f64 in row order, one column at a time: the narrow widths
    /// each have a kernel of their own.
    #[test]
    fn every_sum_width_matches_the_reference() {
        let lengths = [0usize, 1, 2, 9, 40, 1, 0, 3];
        let mut offsets = vec![0];
        for n in lengths {
            offsets.push(offsets[offsets.len() - 1] + n);
        }
        let rows = offsets[lengths.len()];
        for width in 1..=2 * SUM_BLOCK + 3 {
            let x: Vec<f32> = (0..rows * width).map(|i| ((i * 7919) % 1013) as f32 * 0.37 - 150.0).collect();
            let mut got = vec![f32::NAN; lengths.len() * width];
            pool_sum(&x, width, &offsets, |n| n as f64, -2.5, &mut got).unwrap();
            for (i, seq) in offsets.windows(2).enumerate() {
                for c in 0..width {
                    let want = if seq[0] == seq[1] {
                        -2.5
                    } else {
                        let sum = (seq[0]..seq[1]).fold(0f64, |acc, r| acc + x[r * width + c] as f64);
                        (sum / (seq[1] - seq[0]) as f64) as f32
                    };
                    assert_eq!(got[i * width + c].to_bits(), want.to_bits(), "width {width}, sequence {i}, column {c}");
                }
            }
        }
    }

    /// Every build of the narrow rows' sums this CPU has, at every width they take, against the
    /// row-order sum in f64, bit for bit. The values span 2^-30..2^60 with both signs, so that
    /// another order of the additions rounds differently: that shows in float64 sums, which are
    /// not rounded again to float32.
    fn narrow_sums_add_in_row_order<T: Scalar>() {
        type Form<T> = unsafe fn(&[T], usize, f64, &mut [T]);
        let mut forms: Vec<(Form<T>, &str)> = vec![(sum_narrow::<T>, "baseline")];
        if has_avx2() {
            forms.push((sum_narrow_avx2::<T>, "AVX2"));
        }
        if has_avx512bw() {
            forms.push((sum_narrow_avx512::<T>, "AVX-512"));
        }
        let mut seed = 0x5EEDu64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for width in 1..=2 * SUM_BLOCK {
            for len in [1usize, 2, 9, 40] {
                let x: Vec<T> = (0..len * width)
                    .map(|_| {
                        let v = 2f64.powi((next() % 91) as i32 - 30) * (1.0 + (next() % 1024) as f64 / 1024.0);
                        T::cast_f64(if next() % 2 == 0 { v } else { -v })
                    })
                    .collect();
                for &(form, name) in &forms {
                    let mut got = vec![T::ZERO; width];
                    // SAFETY: `forms` lists only what this CPU supports.
                    unsafe { form(&x, width, 3.0, &mut got) };
                    for (c, g) in got.iter().enumerate() {
                        let sum = (0..len).fold(0f64, |acc, r| acc + x[r * width + c].to_f64());
                        let want = T::cast_f64(sum / 3.0);
                        assert!(
                            g.to_f64().to_bits() == want.to_f64().to_bits(),
                            "{name}: width {width}, {len} rows, column {c}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_form_of_the_narrow_sums_adds_in_row_order() {
        narrow_sums_add_in_row_order::<f32>();
        narrow_sums_add_in_row_order::<f64>();
    }

    /// `pool_extreme` over narrow rows (one column has its own loop, float32 rows of 1, 2, 4 and 8
    /// columns the lanes) against the reference, sequence by sequence: empty sequences, ties, NaN
    /// first and later, and zeros of both signs (the first one's bits are the extreme's).
    fn narrow_extremes_match<T: Scalar>(value: impl Fn(u64) -> T) {
        let mut seed = 0xC0105u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            seed >> 33
        };
        for width in [1, 2, 3, 4, 8] {
            let mut offsets = vec![0];
            for k in 0..300 {
                let len = if k % 7 == 3 { 0 } else { (next() % 50) as usize };
                offsets.push(offsets[k] + len);
            }
            let x: Vec<T> = (0..offsets[300] * width).map(|_| value(next() % 8)).collect();
            for max in [true, false] {
                let beats = move |a: T, b: T| if max { a > b } else { a < b };
                let mut got = vec![T::ZERO; 300 * width];
                let mut at = vec![-7; 300 * width];
                pool_extreme(&x, width, &offsets, beats, value(5), &mut got, &mut at).unwrap();
                for (i, seq) in offsets.windows(2).enumerate() {
                    let (want, want_at) = if seq[0] == seq[1] {
                        (vec![value(5); width], vec![-1; width])
                    } else {
                        reference(&x[seq[0] * width..seq[1] * width], width, seq[0], beats)
                    };
                    let row = i * width..(i + 1) * width;
                    let same = format!("{:?}", &got[row.clone()]) == format!("{want:?}");
                    assert!(
                        same,
                        "{:?} width {width} sequence {i}: {:?} for {want:?}, max {max}",
                        T::DTYPE,
                        &got[row.clone()]
                    );
                    assert_eq!(at[row], want_at, "{:?} width {width} sequence {i}, max {max}", T::DTYPE);
                }
            }
        }
    }

    #[test]
    fn narrow_extremes_match_the_reference() {
        // 6 is NaN, 7 is -0.0 beside 0's +0.0.
        let v = |v: u64| match v {
            6 => f64::NAN,
            7 => -0.0,
            _ => v as f64 - 2.0,
        };
        narrow_extremes_match(|k| v(k) as f32);
        narrow_extremes_match(v);
        narrow_extremes_match(|k| half::f16::from_f64(v(k)));
        narrow_extremes_match(|k| half::bf16::from_f64(v(k)));
    }

    #[test]
    fn every_extreme_form_matches_the_reference() {
        // Value 6 is NaN: in row 0 it stays the extreme, later it never replaces one.
        every_form_matches(|v| if v == 6 { f32::NAN } else { v as f32 });
        every_form_matches(|v| if v == 6 { f64::NAN } else { v as f64 - 3.0 });
        every_form_matches(|v| half::f16::from_f32(v as f32));
    }
}
