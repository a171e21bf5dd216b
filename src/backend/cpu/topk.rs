//! Top-k along the last axis: one pass over each row with a sorted buffer of k entries (k is
//! small: a beam), never a sort of the row. Blocks of the row that cannot enter the buffer are
//! rejected with a branch-free comparison the compiler vectorizes, so the common case costs about
//! one read of the row.

use super::pool::for_each_segment_with_work;
use super::{has_avx2, has_avx512bw, read_ahead};
use crate::dtype::Scalar;
use crate::error::Result;

/// Rows per parallel task: enough work to amortize the task's scratch buffer.
const ROWS_PER_TASK: usize = 64;
/// Elements checked at once before looking at any of them one by one (the one-pass scan and
/// [`select_row_reaching`]).
const ONE_PASS_BLOCK: usize = 64;

/// Whether `a` ranks before `b` (equal values: the caller keeps scan order, so the smaller index
/// wins). NaN ranks above every number: first when `LARGEST`, last otherwise.
#[inline(always)]
#[allow(clippy::eq_op)]
fn beats<T: Scalar, const LARGEST: bool>(a: T, b: T) -> bool {
    let (a_nan, b_nan) = (a != a, b != b);
    if LARGEST {
        a > b || (a_nan && !b_nan)
    } else {
        a < b || (b_nan && !a_nan)
    }
}

/// A superset of `beats(v, worst)` without NaN branches (true for any NaN operand), cheap enough
/// to run over a whole block.
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn may_beat<T: Scalar, const LARGEST: bool>(v: T, worst: T) -> bool {
    if LARGEST {
        !(v <= worst)
    } else {
        !(v >= worst)
    }
}

/// Inserts `(v, i)` into the sorted entries `0..n` of `vals`/`idx`, giving `n + 1` entries
/// (`n + 1 <= vals.len()`; with `n = len - 1` the old last entry is dropped). Equal values stay
/// behind the entries already there (they have smaller indices).
#[inline(always)]
fn insert<T: Scalar, const LARGEST: bool>(vals: &mut [T], idx: &mut [usize], n: usize, v: T, i: usize) {
    let mut pos = n;
    while pos > 0 && beats::<T, LARGEST>(v, vals[pos - 1]) {
        vals[pos] = vals[pos - 1];
        idx[pos] = idx[pos - 1];
        pos -= 1;
    }
    vals[pos] = v;
    idx[pos] = i;
}

/// Elements per block of the threshold pass (see [`select_row`]).
const BLOCK: usize = 64;
/// Blocks per chunk of the threshold pass: their summaries live on the stack.
const CHUNK_BLOCKS: usize = 128;
/// The largest k that takes the threshold path: the first chunk must hold k blocks, so that its
/// bar fills the buffer. (At 16, top-k of 32000 values in one pass ran 1.2-1.4x slower for k =
/// 17-32 and 1.7x for k = 50-100: benches/REPORT.md.)
const THRESHOLD_MAX_K: usize = CHUNK_BLOCKS;
/// At most this many bisection steps to find the bar of a chunk ([`kth_bar`]).
const BISECTION_STEPS: usize = 12;
/// Lanes of the threshold pass: 16 independent running bests per block, so the compiler keeps
/// them in vector registers.
const LANES: usize = 16;
/// A mask with one bit per lane.
const ALL_LANES: u32 = (1 << LANES) - 1;

/// The best `vals.len()` entries of `row` (which must have at least that many), best first, with
/// their column indices: descending (`LARGEST`) or ascending values, NaN above every number, equal
/// values by smaller index.
///
/// For k up to `THRESHOLD_MAX_K` over a row of at least 4k blocks (a beam, or the candidates of
/// a top-k sample, over a vocabulary) the row is read in chunks of
/// `CHUNK_BLOCKS` blocks of `BLOCK` elements. A first, vectorized pass over a chunk notes each
/// block's best element and whether the chunk may hold a NaN. Without a NaN, the k-th best of the
/// block bests, `t`, is the k-th best of k real elements, so no element ranking below `t` can be
/// in the result, and a second pass visits, in index order, only the blocks whose best ranks at
/// least `t` and offers their elements to the sorted buffer (a chunk with a NaN is scanned
/// whole). With scores in random order a one-pass scan inserts about k ln(V / k) times, mostly in
/// the first few thousand elements, each in a block it then scans element by element (0.08-0.16
/// of a read of the logits for k = 10, V = 5000); with the threshold about k blocks are scanned.
pub fn select_row<T: Scalar, const LARGEST: bool>(row: &[T], vals: &mut [T], idx: &mut [usize]) {
    let k = vals.len();
    if k == 0 {
        return;
    }
    if k > THRESHOLD_MAX_K || row.len() < 4 * k * BLOCK {
        select_row_one_pass::<T, LARGEST>(row, vals, idx)
    } else if has_avx512bw() {
        // SAFETY: the CPU has AVX-512F and BW (checked at run time).
        unsafe { select_row_threshold_avx512::<T, LARGEST>(row, vals, idx) }
    } else if has_avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time).
        unsafe { select_row_threshold_avx2::<T, LARGEST>(row, vals, idx) }
    } else {
        threshold_body::<T, LARGEST>(row, vals, idx)
    }
}

/// [`threshold_body`] compiled with AVX2 enabled.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn select_row_threshold_avx2<T: Scalar, const LARGEST: bool>(row: &[T], vals: &mut [T], idx: &mut [usize]) {
    threshold_body::<T, LARGEST>(row, vals, idx)
}

/// [`threshold_body`] compiled with AVX-512 enabled: its compares of 16 float32 a vector and
/// masks (benches/REPORT.md).
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f,avx512bw"))]
unsafe fn select_row_threshold_avx512<T: Scalar, const LARGEST: bool>(row: &[T], vals: &mut [T], idx: &mut [usize]) {
    threshold_body::<T, LARGEST>(row, vals, idx)
}

/// The threshold path of [`select_row`] (k <= `THRESHOLD_MAX_K`, at least 4k blocks).
#[inline(always)]
fn threshold_body<T: Scalar, const LARGEST: bool>(row: &[T], vals: &mut [T], idx: &mut [usize]) {
    let k = vals.len();
    let mut n = 0;
    for (c, chunk) in row.chunks(CHUNK_BLOCKS * BLOCK).enumerate() {
        let base = c * CHUNK_BLOCKS * BLOCK;
        let mut best = [T::ZERO; CHUNK_BLOCKS];
        let mut nan_lanes = [0u32; 8];
        let blocks = chunk.chunks_exact(BLOCK);
        let rest = blocks.remainder();
        let nb = chunk.len() / BLOCK;
        for (b, block) in best.iter_mut().zip(blocks) {
            read_ahead(block);
            (*b, nan_lanes) = block_summary::<T, LARGEST>(block.try_into().expect("a whole block"), nan_lanes);
        }
        let nan = std::hint::black_box(nan_lanes).iter().fold(0, |x, &b| x | b) != 0;
        // The bar an element must reach: one that k block bests reach, or, once the buffer is
        // full, its last entry if that ranks higher. The first chunk has at least k blocks (the
        // row has 4k, checked above, and k <= CHUNK_BLOCKS), so the buffer is full after it.
        let mut t = if nb >= k && !nan { Some(kth_bar::<T, LARGEST>(&best[..nb], k)) } else { None };
        if n == k {
            let worst = vals[k - 1];
            t = Some(match t {
                Some(t) if beats::<T, LARGEST>(t, worst) => t,
                _ => worst,
            });
        }
        match t {
            Some(t) if !nan => {
                // Without a NaN in the chunk, a plain comparison decides; a NaN bar (the buffer's
                // last entry) ranks above every number when LARGEST (no block), below otherwise.
                #[allow(clippy::eq_op)]
                let t_nan = t != t;
                for (b, block) in chunk.chunks_exact(BLOCK).enumerate() {
                    let visit = if t_nan { !LARGEST } else { !plain_better::<T, LARGEST>(t, best[b]) };
                    if visit {
                        scan::<T, LARGEST>(block, base + b * BLOCK, Some(t), vals, idx, &mut n);
                    }
                }
                scan::<T, LARGEST>(rest, base + nb * BLOCK, Some(t), vals, idx, &mut n);
            }
            _ => scan::<T, LARGEST>(chunk, base, t, vals, idx, &mut n),
        }
    }
    debug_assert_eq!(n, k);
}

/// A block's best element by plain comparison (a NaN in the block may or may not be it), and
/// `nan_acc` or-ed with the block's NaN lanes (non-zero where the block may hold a NaN). The
/// block as 8 groups of 8 lanes combined pairwise, lane by lane: a tree of vector selects
/// (`maxps`) and of vector NaN compares (`cmpunordps`, which tests both operands) and ors, then
/// one vector reduced to a value. Written so, with opaque values
/// (`black_box`) between the lane trees and the final reductions, because LLVM otherwise matched
/// the whole as one 64-element reduction and emitted it as scalar pairs and shuffles (3x the
/// instructions), kept the NaN flags as bytes, or vectorized the caller's loop over blocks
/// instead, four blocks at a time with scalar loads.
#[inline(always)]
fn block_summary<T: Scalar, const LARGEST: bool>(block: &[T; BLOCK], nan_acc: [u32; 8]) -> (T, [u32; 8]) {
    let g = |i: usize| -> [T; 8] { block[i * 8..(i + 1) * 8].try_into().expect("8 groups of 8") };
    let best = lanes_best::<T, LARGEST, 8>;
    let m = best(best(best(g(0), g(1)), best(g(2), g(3))), best(best(g(4), g(5)), best(g(6), g(7))));
    let or = |a: [u32; 8], b: [u32; 8]| -> [u32; 8] { std::array::from_fn(|j| a[j] | b[j]) };
    let nan = or(or(lanes_nan(g(0), g(1)), lanes_nan(g(2), g(3))), or(lanes_nan(g(4), g(5)), lanes_nan(g(6), g(7))));
    let m = std::hint::black_box(m);
    let h: [T; 4] = lanes_best::<T, LARGEST, 4>(m[..4].try_into().expect("4"), m[4..].try_into().expect("4"));
    let d: [T; 2] = lanes_best::<T, LARGEST, 2>(h[..2].try_into().expect("2"), h[2..].try_into().expect("2"));
    (if plain_better::<T, LARGEST>(d[1], d[0]) { d[1] } else { d[0] }, or(nan_acc, nan))
}

/// Lane by lane, the better of `a` and `b` by plain comparison (`b` on a NaN in `a`).
#[inline(always)]
fn lanes_best<T: Scalar, const LARGEST: bool, const N: usize>(a: [T; N], b: [T; N]) -> [T; N] {
    std::array::from_fn(|j| if plain_better::<T, LARGEST>(a[j], b[j]) { a[j] } else { b[j] })
}

/// Lane by lane, 1 where `a` or `b` is NaN.
#[inline(always)]
#[allow(clippy::eq_op)]
fn lanes_nan<T: Scalar, const N: usize>(a: [T; N], b: [T; N]) -> [u32; N] {
    std::array::from_fn(|j| ((a[j] != a[j]) as u32) | ((b[j] != b[j]) as u32))
}

/// `a` ranks before `b`, for numbers only (false for any NaN operand).
#[inline(always)]
fn plain_better<T: Scalar, const LARGEST: bool>(a: T, b: T) -> bool {
    if LARGEST {
        a > b
    } else {
        a < b
    }
}

/// A bar that at least `k` of `values` (no NaN, `k <= values.len()`) reach, close to the k-th
/// best of them: bisection between the worst and the best value, counting with one vectorized
/// compare per step how many values reach the midpoint, until exactly k do, the interval cannot
/// shrink, or `BISECTION_STEPS` steps. (An exact k-th best by sorted insertion cost a third of the
/// whole selection: it mispredicted on most insertions, or, branch-free, was a long shuffle chain.)
/// Any bar that k real elements reach is a valid bar: the result is the same, only the number of
/// blocks visited afterwards depends on it. Inlined, so it is compiled for AVX2 with its caller.
#[inline(always)]
fn kth_bar<T: Scalar, const LARGEST: bool>(values: &[T], k: usize) -> T {
    let reach = |bar: T| values.iter().fold(0usize, |n, &v| n + !plain_better::<T, LARGEST>(bar, v) as usize);
    let (mut lo, mut hi) = values.iter().fold((values[0], values[0]), |(lo, hi), &v| {
        (if plain_better::<T, LARGEST>(lo, v) { v } else { lo }, if plain_better::<T, LARGEST>(v, hi) { v } else { hi })
    });
    if reach(hi) >= k {
        return hi;
    }
    for _ in 0..BISECTION_STEPS {
        let mid = T::cast_f64((lo.to_f64() + hi.to_f64()) / 2.0);
        if !(plain_better::<T, LARGEST>(mid, lo) && plain_better::<T, LARGEST>(hi, mid)) {
            break;
        }
        let n = reach(mid);
        if n >= k {
            lo = mid;
            if n == k {
                break;
            }
        } else {
            hi = mid;
        }
    }
    lo
}

/// Offers the elements of `part` (whose first is column `start`), in order, to the sorted buffer
/// `vals`/`idx` holding `n` entries (see [`offer_one`]). Of each group of `LANES` elements, only
/// those that may reach the bar (the last entry once the buffer is full, else `t`) are looked at,
/// found with one vectorized compare that gives a bit mask.
#[inline(always)]
fn scan<T: Scalar, const LARGEST: bool>(
    part: &[T],
    start: usize,
    t: Option<T>,
    vals: &mut [T],
    idx: &mut [usize],
    n: &mut usize,
) {
    let k = vals.len();
    let groups = part.chunks_exact(LANES);
    let tail = groups.remainder();
    let mut at = start;
    for group in groups {
        let group: &[T; LANES] = group.try_into().expect("a whole group");
        let bar = if *n == k { Some(vals[k - 1]) } else { t };
        let mut mask = bar.map_or(ALL_LANES, |bar| reach_mask::<T, LARGEST>(group, bar));
        while mask != 0 {
            let o = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            offer_one::<T, LARGEST>(group[o], at + o, t, vals, idx, n);
        }
        at += LANES;
    }
    for (o, &v) in tail.iter().enumerate() {
        offer_one::<T, LARGEST>(v, at + o, t, vals, idx, n);
    }
}

/// Bit `j` set where `group[j]` may reach `bar` ([`may_reach`]).
#[inline(always)]
fn reach_mask<T: Scalar, const LARGEST: bool>(group: &[T; LANES], bar: T) -> u32 {
    let mut mask = 0u32;
    for (j, &v) in group.iter().enumerate() {
        mask |= (may_reach::<T, LARGEST>(v, bar) as u32) << j;
    }
    mask
}

/// Offers element `i` (value `v`) to the sorted buffer `vals`/`idx` holding `n` entries: while it
/// is not full, it enters if it ranks at least `t` (always without a bar); once full, if it beats
/// the last entry.
#[inline(always)]
fn offer_one<T: Scalar, const LARGEST: bool>(
    v: T,
    i: usize,
    t: Option<T>,
    vals: &mut [T],
    idx: &mut [usize],
    n: &mut usize,
) {
    let k = vals.len();
    if *n < k {
        if t.is_none_or(|t| !beats::<T, LARGEST>(t, v)) {
            insert::<T, LARGEST>(vals, idx, *n, v, i);
            *n += 1;
        }
    } else if beats::<T, LARGEST>(v, vals[k - 1]) {
        insert::<T, LARGEST>(vals, idx, k - 1, v, i);
    }
}

/// A superset of "`v` ranks at least `bar`" without NaN branches (true for any NaN operand).
#[inline(always)]
#[allow(clippy::neg_cmp_op_on_partial_ord)]
fn may_reach<T: Scalar, const LARGEST: bool>(v: T, bar: T) -> bool {
    if LARGEST {
        !(v < bar)
    } else {
        !(v > bar)
    }
}

/// Elements per group in [`select_row_reaching`]: a block is tested, then its groups, then
/// single elements.
const REACHING_GROUP: usize = 8;
/// Elements [`select_row_reaching`] reads before it decides whether its bar pays off.
const REACHING_TRIAL: usize = 1024;

/// The leading entries of [`select_row`]'s result that rank at least `bar`, for a caller that
/// knows no other entry matters (a beam-search source list whose last item a lower score cannot
/// displace): returns their number `n`, best first in `vals[..n]`/`idx[..n]` (further leading
/// entries below the bar may be included), or `None` when the buffer fills within the first
/// `REACHING_TRIAL` elements (a bar that many elements reach saves nothing) or the row holds a
/// NaN (its score, NaN, would no longer reject lower ones once last in the list): then
/// [`select_row`] should be called instead.
///
/// With a bar few elements reach, the row is read once with vector compares and little else: no
/// bar of its own, no summaries.
pub fn select_row_reaching<T: Scalar, const LARGEST: bool>(
    row: &[T],
    bar: T,
    vals: &mut [T],
    idx: &mut [usize],
) -> Option<usize> {
    if has_avx512bw() {
        // SAFETY: the CPU has AVX-512F and BW (checked at run time).
        unsafe { reaching_avx512::<T, LARGEST>(row, bar, vals, idx) }
    } else if has_avx2() {
        // SAFETY: the CPU has AVX2 (checked at run time).
        unsafe { reaching_avx2::<T, LARGEST>(row, bar, vals, idx) }
    } else {
        reaching_body::<T, LARGEST>(row, bar, vals, idx)
    }
}

/// [`select_row_reaching`] compiled with AVX2 enabled.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx2"))]
unsafe fn reaching_avx2<T: Scalar, const LARGEST: bool>(
    row: &[T],
    bar: T,
    vals: &mut [T],
    idx: &mut [usize],
) -> Option<usize> {
    reaching_body::<T, LARGEST>(row, bar, vals, idx)
}

/// [`select_row_reaching`] compiled with AVX-512 enabled.
///
/// # Safety
/// The CPU must support AVX-512F and AVX-512BW.
#[cfg_attr(target_arch = "x86_64", target_feature(enable = "avx512f,avx512bw"))]
unsafe fn reaching_avx512<T: Scalar, const LARGEST: bool>(
    row: &[T],
    bar: T,
    vals: &mut [T],
    idx: &mut [usize],
) -> Option<usize> {
    reaching_body::<T, LARGEST>(row, bar, vals, idx)
}

/// The body of [`select_row_reaching`]. (A plain `T` bar, tested block, group, element: the
/// `Option` bar of [`scan`] cost a third of the speed here.)
#[inline(always)]
fn reaching_body<T: Scalar, const LARGEST: bool>(
    row: &[T],
    bar: T,
    vals: &mut [T],
    idx: &mut [usize],
) -> Option<usize> {
    let k = vals.len();
    let mut n = 0;
    let blocks = row.chunks_exact(ONE_PASS_BLOCK);
    let rest = blocks.remainder();
    // The running bar: `bar` until the buffer is full, then its last entry (which reached `bar`).
    let mut t = bar;
    for (b, block) in blocks.enumerate() {
        if n == k && b * ONE_PASS_BLOCK < REACHING_TRIAL {
            return None;
        }
        let block: &[T; ONE_PASS_BLOCK] = block.try_into().expect("a whole block");
        read_ahead(block);
        if !any_reaches::<T, LARGEST, ONE_PASS_BLOCK>(block, t) {
            continue;
        }
        for (g, group) in block.chunks_exact(REACHING_GROUP).enumerate() {
            let group: &[T; REACHING_GROUP] = group.try_into().expect("a whole group");
            if !any_reaches::<T, LARGEST, REACHING_GROUP>(group, t) {
                continue;
            }
            for (o, &v) in group.iter().enumerate() {
                if may_reach::<T, LARGEST>(v, t) {
                    #[allow(clippy::eq_op)]
                    if v != v {
                        // A NaN ranks first and, offered as a NaN score, ends up last in the
                        // source list, where it no longer rejects lower scores: the bar does not
                        // hold for this row.
                        return None;
                    }
                    let i = b * ONE_PASS_BLOCK + g * REACHING_GROUP + o;
                    offer_one::<T, LARGEST>(v, i, Some(bar), vals, idx, &mut n);
                    if n == k {
                        t = vals[k - 1];
                    }
                }
            }
        }
    }
    #[allow(clippy::eq_op)]
    if rest.iter().any(|&v| v != v) {
        return None;
    }
    let start = row.len() - rest.len();
    for (o, &v) in rest.iter().enumerate() {
        offer_one::<T, LARGEST>(v, start + o, Some(bar), vals, idx, &mut n);
    }
    Some(n)
}

/// Whether any of `part` may reach `bar` ([`may_reach`]): vector compares and ors over a
/// fixed-size part (over a slice of unknown length the compiler emits a slower general loop).
#[inline(always)]
fn any_reaches<T: Scalar, const LARGEST: bool, const N: usize>(part: &[T; N], bar: T) -> bool {
    part.iter().fold(false, |any, &v| any | may_reach::<T, LARGEST>(v, bar))
}

/// [`select_row`] in one pass: the buffer starts with the first k elements, and blocks of the
/// rest that cannot enter are rejected with one branch-free comparison against its last entry.
fn select_row_one_pass<T: Scalar, const LARGEST: bool>(row: &[T], vals: &mut [T], idx: &mut [usize]) {
    let k = vals.len();
    if k == 0 {
        return;
    }
    for (j, &v) in row[..k].iter().enumerate() {
        insert::<T, LARGEST>(vals, idx, j, v, j);
    }
    let mut worst = vals[k - 1];
    let mut visit = |start: usize, block: &[T], worst: &mut T| {
        if block.iter().fold(false, |any, &v| any | may_beat::<T, LARGEST>(v, *worst)) {
            for (o, &v) in block.iter().enumerate() {
                if beats::<T, LARGEST>(v, *worst) {
                    insert::<T, LARGEST>(vals, idx, k - 1, v, start + o);
                    *worst = vals[k - 1];
                }
            }
        }
    };
    let rest = &row[k..];
    let mut blocks = rest.chunks_exact(ONE_PASS_BLOCK);
    let mut start = k;
    for block in &mut blocks {
        visit(start, block, &mut worst);
        start += ONE_PASS_BLOCK;
    }
    visit(start, blocks.remainder(), &mut worst);
}

/// `select_row` with the direction chosen at run time.
pub fn select_row_dyn<T: Scalar>(row: &[T], largest: bool, vals: &mut [T], idx: &mut [usize]) {
    if largest {
        select_row::<T, true>(row, vals, idx)
    } else {
        select_row::<T, false>(row, vals, idx)
    }
}

/// Top-k of every row of `x` (rows of `width`, `1 <= k <= width`): writes the column indices
/// (`rows * k`, row-major) into `indices` and the values into `values`.
pub fn top_k<T: Scalar>(
    x: &[T],
    width: usize,
    k: usize,
    largest: bool,
    values: &mut [T],
    indices: &mut [i64],
) -> Result<()> {
    let rows = indices.len() / k.max(1);
    let bounds: Vec<usize> =
        (0..rows.div_ceil(ROWS_PER_TASK)).map(|t| t * ROWS_PER_TASK * k).chain(std::iter::once(rows * k)).collect();
    for_each_segment_with_work(indices, &bounds, std::mem::size_of_val(x), |t, seg| {
        let mut vals = vec![T::ZERO; k];
        let mut idx = vec![0usize; k];
        for (i, out) in seg.chunks_exact_mut(k).enumerate() {
            let r = t * ROWS_PER_TASK + i;
            select_row_dyn(&x[r * width..(r + 1) * width], largest, &mut vals, &mut idx);
            for (o, &j) in out.iter_mut().zip(&idx) {
                *o = j as i64;
            }
        }
    })?;
    for (r, (vals, idx)) in values.chunks_exact_mut(k).zip(indices.chunks_exact(k)).enumerate() {
        for (v, &j) in vals.iter_mut().zip(idx) {
            *v = x[r * width + j as usize];
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    type Threshold = unsafe fn(&[f32], &mut [f32], &mut [usize]);
    type Reaching = unsafe fn(&[f32], f32, &mut [f32], &mut [usize]) -> Option<usize>;

    /// Every form of the threshold path and of the reaching scan this CPU has, with its name:
    /// the portable body and each instruction set's build of it.
    fn forms<const LARGEST: bool>() -> Vec<(Threshold, Reaching, &'static str)> {
        let mut forms: Vec<(Threshold, Reaching, &'static str)> =
            vec![(threshold_body::<f32, LARGEST>, reaching_body::<f32, LARGEST>, "portable")];
        if has_avx2() {
            forms.push((select_row_threshold_avx2::<f32, LARGEST>, reaching_avx2::<f32, LARGEST>, "AVX2"));
        }
        if has_avx512bw() {
            forms.push((select_row_threshold_avx512::<f32, LARGEST>, reaching_avx512::<f32, LARGEST>, "AVX-512"));
        }
        forms
    }

    /// The columns of `row` best first, by a stable sort: NaN first when `LARGEST`, else last;
    /// equal values (zeros of either sign among them) by smaller column.
    fn ranked<const LARGEST: bool>(row: &[f32]) -> Vec<usize> {
        let key = |v: f32| match (v.is_nan(), LARGEST) {
            (true, true) => f64::INFINITY,
            (true, false) => f64::NEG_INFINITY,
            (false, true) => v as f64,
            (false, false) => -(v as f64),
        };
        let mut order: Vec<usize> = (0..row.len()).collect();
        order.sort_by(|&a, &b| key(row[b]).partial_cmp(&key(row[a])).expect("keys are not NaN"));
        order
    }

    /// Rows long enough for the threshold path (4k blocks and more, over several chunks), of few
    /// distinct values (ties everywhere) or many, a NaN in some, k of 1 to `THRESHOLD_MAX_K`.
    fn rows(seed: u64) -> Vec<(Vec<f32>, usize)> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        let mut rows = Vec::new();
        for case in 0..60 {
            let k = [1, 2, 3, 5, 8, 13, 16, 17, 32, 50, 100, THRESHOLD_MAX_K][case % 12];
            let len = 4 * k * BLOCK + (next() % 10000) as usize * 2;
            let distinct = if case % 3 == 0 { 5 } else { 1 << 20 };
            let mut row: Vec<f32> = (0..len).map(|_| (next() % distinct) as f32 - (distinct / 2) as f32).collect();
            if case % 4 == 1 {
                let at = (next() % len as u64) as usize;
                row[at] = f32::NAN;
            }
            if case % 8 == 3 {
                // A NaN in the row's last, partial block (lengths here are odd).
                row.push(f32::NAN);
            }
            if case % 5 == 2 {
                // The best values late in the row, after the buffer has filled.
                let at = len - 1 - (next() % 100) as usize;
                row[at] = 2e6;
                row[at - 1] = -2e6;
            }
            rows.push((row, k));
        }
        rows
    }

    /// Checks every form over [`rows`]; returns how many times each form's reaching scan answered.
    fn check<const LARGEST: bool>() -> Vec<usize> {
        let mut answered = vec![0; forms::<LARGEST>().len()];
        for (row, k) in rows(if LARGEST { 1 } else { 2 }) {
            let want = ranked::<LARGEST>(&row);
            for (f, (threshold, reaching, name)) in forms::<LARGEST>().into_iter().enumerate() {
                let (mut vals, mut idx) = (vec![0f32; k], vec![0usize; k]);
                // SAFETY: `forms` lists only what this CPU supports.
                unsafe { threshold(&row, &mut vals, &mut idx) };
                assert_eq!(idx, want[..k], "{name} threshold, k {k}, largest {LARGEST}, {} columns", row.len());
                assert!(vals.iter().zip(&idx).all(|(v, &i)| v.to_bits() == row[i].to_bits()), "{name} values");

                // The reaching scan with a bar some of the k best reach, and with one none does.
                for bar in [row[want[k / 2]], row[want[k - 1]], row[want[(2 * k).min(row.len() - 1)]]] {
                    let (mut vals, mut idx) = (vec![0f32; k], vec![0usize; k]);
                    // SAFETY: as above.
                    let Some(n) = (unsafe { reaching(&row, bar, &mut vals, &mut idx) }) else {
                        continue;
                    };
                    assert!(!row.iter().any(|v| v.is_nan()), "{name} reaching answered for a row with a NaN");
                    answered[f] += 1;
                    let reach = want.iter().take_while(|&&i| !beats::<f32, LARGEST>(bar, row[i])).count().min(k);
                    assert!(n >= reach, "{name} reaching: {n} entries, {reach} reach the bar {bar}");
                    assert_eq!(idx[..n], want[..n], "{name} reaching, k {k}, bar {bar}, largest {LARGEST}");
                }
            }
        }
        answered
    }

    #[test]
    fn every_form_selects_the_sorted_rows_best() {
        for answered in [check::<true>(), check::<false>()] {
            // Of 180 scans, those with a NaN, or whose bar lets k elements in early, may decline.
            assert!(answered.iter().all(|&n| n >= 60), "reaching scans answered: {answered:?}");
        }
    }
}
