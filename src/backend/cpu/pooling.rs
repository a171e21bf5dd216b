//! The kernels of `sequence_pool`: per sequence of rows, per column, a sum (scaled), a selected row,
//! or the row of the extreme value. Parallel over output rows (one per sequence). Each sequence
//! is read in memory order (whole rows, up to `WIDE_BLOCK` columns per pass) with the
//! accumulators on the stack or in registers; nothing is allocated per sequence.

use super::pool::for_each_segment;
use crate::dtype::Scalar;
use crate::error::{ensure, err, Result};
use std::sync::atomic::{AtomicI32, Ordering};

/// Element offsets of the output rows: `i * width`.
fn row_bounds(sequences: usize, width: usize) -> Result<Vec<usize>> {
    let mut bounds = Vec::new();
    bounds.try_reserve_exact(sequences + 1).map_err(|_| err!(OutOfMemory, "sequence_pool: {sequences} row bounds"))?;
    bounds.extend((0..=sequences).map(|i| i * width));
    Ok(bounds)
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
    let bounds = row_bounds(offsets.len() - 1, width)?;
    for_each_segment(out, &bounds, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end || width == 0 {
            seg.fill(pad);
            return;
        }
        let d = divisor(end - start);
        // One bounds check for the whole sequence; the block loops below index inside it.
        let rows = &x[start * width..end * width];
        if width > 2 * SUM_BLOCK {
            // Wide rows: one pass over the sequence in memory order per WIDE_BLOCK columns, the
            // accumulators in L1 (a register block per pass would read one line per row at the
            // row stride, 8 passes for 128 columns, which ran at a third of the read bandwidth).
            for c0 in (0..width).step_by(WIDE_BLOCK) {
                let c1 = (c0 + WIDE_BLOCK).min(width);
                let mut acc = [0f64; WIDE_BLOCK];
                for row in rows.chunks_exact(width) {
                    for (a, v) in acc.iter_mut().zip(&row[c0..c1]) {
                        *a += v.to_f64();
                    }
                }
                for (o, a) in seg[c0..c1].iter_mut().zip(&acc) {
                    *o = T::from_f64(a / d);
                }
            }
            return;
        }
        let mut c0 = 0;
        while c0 + SUM_BLOCK <= width {
            let mut acc = [0f64; SUM_BLOCK];
            for row in rows.chunks_exact(width) {
                let v: &[T; SUM_BLOCK] = row[c0..c0 + SUM_BLOCK].try_into().expect("a block of the row");
                for (a, v) in acc.iter_mut().zip(v) {
                    *a += v.to_f64();
                }
            }
            for (o, a) in seg[c0..c0 + SUM_BLOCK].iter_mut().zip(&acc) {
                *o = T::from_f64(a / d);
            }
            c0 += SUM_BLOCK;
        }
        if c0 < width {
            let mut acc = [0f64; SUM_BLOCK];
            for row in rows.chunks_exact(width) {
                for (a, v) in acc.iter_mut().zip(&row[c0..]) {
                    *a += v.to_f64();
                }
            }
            for (o, a) in seg[c0..].iter_mut().zip(&acc) {
                *o = T::from_f64(a / d);
            }
        }
    })
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
    let bounds = row_bounds(offsets.len() - 1, width)?;
    for_each_segment(out, &bounds, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            seg.fill(pad);
        } else {
            let r = pick(start, end);
            seg.copy_from_slice(&x[r * width..(r + 1) * width]);
        }
    })
}

/// For each sequence `i` and column `c`: `out[i][c]` = the value of column `c` in sequence `i`
/// that no later value `beats`, i.e. a value replaces the current best only if `beats(value,
/// best)` (so with a strict comparison the first extreme wins and NaN never replaces), and
/// `index[i][c]` = its row (absolute in `x`); an empty sequence gives `pad` and -1. Rows must fit
/// in i32 (the caller checks). Values and rows are written in the same pass over `x` (gathering
/// the values afterwards by index read `x` a second time, in random order: 10x slower).
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
    let bounds = row_bounds(offsets.len() - 1, width)?;
    // The task that writes output row i also writes index row i, through a shared view: relaxed
    // stores to disjoint elements are plain stores, and no two tasks hold `&mut` to one element.
    // SAFETY: AtomicI32 has the size and alignment of i32, and `index` is borrowed exclusively
    // for the whole call, so nothing else reads or writes it meanwhile.
    let index: &[AtomicI32] = unsafe { &*(index as *mut [i32] as *const [AtomicI32]) };
    let avx2 = has_avx2();
    for_each_segment(out, &bounds, |i, seg| {
        let (start, end) = (offsets[i], offsets[i + 1]);
        let idx = &index[i * width..(i + 1) * width];
        if start == end || width == 0 {
            seg.fill(pad);
            idx.iter().for_each(|a| a.store(-1, Ordering::Relaxed));
            return;
        }
        let rows = &x[start * width..end * width];
        // Whole 16-column blocks, WIDE_BLOCK columns per pass over the sequence in memory order
        // (a pass per 16 columns would read one line per row at the row stride: slow, as for sums).
        let full = width / SUM_BLOCK * SUM_BLOCK;
        if full == SUM_BLOCK {
            // One block: best and rows stay in registers for the whole sequence.
            let (b, a) = if avx2 {
                // SAFETY: the CPU has AVX2 (checked at run time above).
                unsafe { extreme_block_avx2(rows, width, start, &beats) }
            } else {
                extreme_block(rows, width, start, &beats)
            };
            seg[..SUM_BLOCK].copy_from_slice(&b);
            for (d, &a) in idx[..SUM_BLOCK].iter().zip(&a) {
                d.store(a, Ordering::Relaxed);
            }
        }
        for c0 in (0..if full == SUM_BLOCK { 0 } else { full }).step_by(WIDE_BLOCK) {
            let c1 = (c0 + WIDE_BLOCK).min(full);
            let blocks = (c1 - c0) / SUM_BLOCK;
            let mut best = [[T::ZERO; SUM_BLOCK]; WIDE_BLOCK / SUM_BLOCK];
            let mut at = [[start as i32; SUM_BLOCK]; WIDE_BLOCK / SUM_BLOCK];
            for (b, first) in best[..blocks].iter_mut().zip(rows[c0..c1].chunks_exact(SUM_BLOCK)) {
                b.copy_from_slice(first);
            }
            for (k, row) in rows.chunks_exact(width).enumerate().skip(1) {
                let r = (start + k) as i32;
                let blocks_of_row = row[c0..c1].chunks_exact(SUM_BLOCK);
                for ((b, a), v) in best[..blocks].iter_mut().zip(&mut at[..blocks]).zip(blocks_of_row) {
                    extreme_step(v.try_into().expect("a whole block"), b, a, r, &beats);
                }
            }
            let outs = seg[c0..c1].chunks_exact_mut(SUM_BLOCK).zip(idx[c0..c1].chunks_exact(SUM_BLOCK));
            for ((b, a), (o, d)) in best[..blocks].iter().zip(&at[..blocks]).zip(outs) {
                o.copy_from_slice(b);
                for (d, &a) in d.iter().zip(a) {
                    d.store(a, Ordering::Relaxed);
                }
            }
        }
        if full < width {
            let (c0, n) = (full, width - full);
            let mut best = [T::ZERO; SUM_BLOCK];
            let mut at = [start as i32; SUM_BLOCK];
            best[..n].copy_from_slice(&rows[c0..width]);
            for (k, row) in rows.chunks_exact(width).enumerate().skip(1) {
                let r = (start + k) as i32;
                for ((b, a), &v) in best[..n].iter_mut().zip(&mut at[..n]).zip(&row[c0..]) {
                    let take = beats(v, *b);
                    *b = if take { v } else { *b };
                    *a = if take { r } else { *a };
                }
            }
            seg[c0..].copy_from_slice(&best[..n]);
            for (d, &a) in idx[c0..].iter().zip(&at[..n]) {
                d.store(a, Ordering::Relaxed);
            }
        }
    })
}

/// The extreme values and their rows over all rows of a sequence (`rows`, rows of `width`, the
/// first being row `start` of `x`) for its first `SUM_BLOCK` columns, in registers.
#[inline(always)]
fn extreme_block<T: Scalar>(
    rows: &[T],
    width: usize,
    start: usize,
    beats: &impl Fn(T, T) -> bool,
) -> ([T; SUM_BLOCK], [i32; SUM_BLOCK]) {
    let mut best: [T; SUM_BLOCK] = rows[..SUM_BLOCK].try_into().expect("a block of the first row");
    let mut at = [start as i32; SUM_BLOCK];
    for (k, row) in rows.chunks_exact(width).enumerate().skip(1) {
        let v: &[T; SUM_BLOCK] = row[..SUM_BLOCK].try_into().expect("a block of the row");
        extreme_step(v, &mut best, &mut at, (start + k) as i32, beats);
    }
    (best, at)
}

/// Whether the CPU has AVX2: the library is built for baseline x86-64 (SSE2, where a blend is
/// three instructions on 4 lanes); the one-block max/min kernel also exists compiled for AVX2
/// (one `vblendvps` on 8 lanes).
fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// [`extreme_block`] compiled with AVX2 enabled.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn extreme_block_avx2<T: Scalar>(
    rows: &[T],
    width: usize,
    start: usize,
    beats: &impl Fn(T, T) -> bool,
) -> ([T; SUM_BLOCK], [i32; SUM_BLOCK]) {
    extreme_block(rows, width, start, beats)
}

/// One row's step of the max/min kernel over one block of columns: `best`/`at` take `v`/`r`
/// where `v` beats them. Fixed-size arrays indexed by constants, copied to locals, so the compare
/// and both selects become vector compares and blends (over a slice of run-time length LLVM
/// emitted a compare and a branch per element, which mispredicts whenever the extreme moves).
#[inline(always)]
fn extreme_step<T: Scalar>(
    v: &[T; SUM_BLOCK],
    best: &mut [T; SUM_BLOCK],
    at: &mut [i32; SUM_BLOCK],
    r: i32,
    beats: &impl Fn(T, T) -> bool,
) {
    let (mut b, mut a) = (*best, *at);
    for j in 0..SUM_BLOCK {
        let take = beats(v[j], b[j]);
        b[j] = if take { v[j] } else { b[j] };
        a[j] = if take { r } else { a[j] };
    }
    (*best, *at) = (b, a);
}
