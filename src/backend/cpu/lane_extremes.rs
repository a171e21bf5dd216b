//! `sequence_pool`'s max and min over rows of 1, 2, 4 or 8 float32 columns, in vector lanes, with
//! the values and rows of the row-order loop. Over narrow rows that loop is one chain of dependent
//! steps a column (a compare and a select a row), which held the max of 2^18 sequences of U[1,128]
//! values to a fifth of the read bandwidth (benches/REPORT.md). The sums are in `lane_sums`.
//!
//! **The max** (or min) of the row-order loop, where a value replaces the best only if greater
//! (a strict compare, under which NaN never replaces and is never replaced), is, column by column:
//! the first value if it is NaN; else the greatest value `m` of those not NaN, from the first row
//! that holds a value equal to `m` (values before it are below `m`, so it replaces, and none after
//! it is above `m`). A vector of a sequence's values holds whole rows, so lane `j` always holds
//! column `j % W`; each lane keeps the row-order loop over its share of the rows, from minus
//! infinity (where NaN then never enters); then `m` is the greatest of the column's lanes and the
//! row the least among those equal to it, found by folding lanes onto the first `W` in pairs (for
//! one column, by reductions across the lanes). A sequence with a column whose `m` is minus
//! infinity is left to the row-order loop: no lane took a row of it. The min is the same with the
//! order reversed.

use super::read_ahead;
use std::sync::atomic::AtomicI32;

/// A build of the lane kernel for one non-empty sequence: the extremes of the columns of `values`
/// (rows `start..` of the tensor) into `out` and their rows into `idx`, as the row-order loop finds
/// them (the module's doc); returns false, with `out` and `idx` not written, where the sequence is
/// left to that loop. The rows fit in i32.
pub(crate) type Form = unsafe fn(&[f32], usize, &mut [f32], &[AtomicI32]) -> bool;

/// The build for rows of `width` columns on this CPU, of the max if `max`, else of the min: AVX-512
/// for 1, 2, 4 and 8 columns, AVX2 for 1.
pub(crate) fn form(width: usize, max: bool) -> Option<Form> {
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_avx512() {
            return match (width, max) {
                (1, true) => Some(extremes_avx512::<true, 1>),
                (2, true) => Some(extremes_avx512::<true, 2>),
                (4, true) => Some(extremes_avx512::<true, 4>),
                (8, true) => Some(extremes_avx512::<true, 8>),
                (1, false) => Some(extremes_avx512::<false, 1>),
                (2, false) => Some(extremes_avx512::<false, 2>),
                (4, false) => Some(extremes_avx512::<false, 4>),
                (8, false) => Some(extremes_avx512::<false, 8>),
                _ => None,
            };
        }
        if super::has_avx2() {
            return match (width, max) {
                (1, true) => Some(extreme_avx2::<true>),
                (1, false) => Some(extreme_avx2::<false>),
                _ => None,
            };
        }
    }
    let _ = (width, max);
    None
}

/// The extreme that every lane starts from: a run whose extreme it is is left to the row-order
/// loop (the module's doc).
fn start_value<const MAX: bool>() -> f32 {
    if MAX {
        f32::NEG_INFINITY
    } else {
        f32::INFINITY
    }
}

/// [`Form`] in 512-bit registers: 16 lanes, 16 / W rows a step (the last under a mask), the compare
/// a mask, the selects masked moves.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn extremes_avx512<const MAX: bool, const W: usize>(
    values: &[f32],
    start: usize,
    out: &mut [f32],
    idx: &[AtomicI32],
) -> bool {
    use std::arch::x86_64::*;
    assert!(out.len() == W && idx.len() == W && values.len() >= W, "a row of {W} columns");
    read_ahead(values);
    let columns = (1u16 << W) - 1;
    let mut best = _mm512_set1_ps(start_value::<MAX>());
    let mut row = _mm512_setzero_si512();
    // Lane j of a step holds row (j / W) of its rows.
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let first_rows = _mm512_srlv_epi32(lanes, _mm512_set1_epi32(W.trailing_zeros() as i32));
    let mut rows = _mm512_add_epi32(_mm512_set1_epi32(start as i32), first_rows);
    for at in (0..values.len()).step_by(16) {
        let (v, take) = if values.len() - at >= 16 {
            (_mm512_loadu_ps(values.as_ptr().add(at)), u16::MAX)
        } else {
            let take = u16::MAX >> (16 - (values.len() - at));
            (_mm512_maskz_loadu_ps(take, values.as_ptr().add(at)), take)
        };
        // Ordered compares: false where either side is NaN.
        let m = if MAX {
            _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(take, v, best)
        } else {
            _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(take, v, best)
        };
        best = _mm512_mask_mov_ps(best, m, v);
        row = _mm512_mask_mov_epi32(row, m, rows);
        rows = _mm512_add_epi32(rows, _mm512_set1_epi32((16 / W) as i32));
    }
    if W == 1 {
        // One column: the extreme reduced across the lanes, then the least row of the lanes that
        // hold it (a fold in pairs, as for wider rows, took 5.8 ms against 4.4 for the bench's
        // 2^18 sequences).
        if values[0].is_nan() {
            return write_one(values, start, start, out, idx);
        }
        let m = if MAX { _mm512_reduce_max_ps(best) } else { _mm512_reduce_min_ps(best) };
        if m == start_value::<MAX>() {
            return false;
        }
        let holders = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(best, _mm512_set1_ps(m));
        return write_one(values, start, _mm512_mask_reduce_min_epi32(holders, row) as usize, out, idx);
    }
    // Lanes 8, 4 and 2 apart hold the same column, down to those W apart.
    let mut pair = (best, row);
    pair = keep_beating::<MAX>(
        pair,
        (_mm512_shuffle_f32x4::<0b0100_1110>(pair.0, pair.0), _mm512_shuffle_i32x4::<0b0100_1110>(pair.1, pair.1)),
    );
    if W <= 4 {
        pair = keep_beating::<MAX>(
            pair,
            (_mm512_shuffle_f32x4::<0b1011_0001>(pair.0, pair.0), _mm512_shuffle_i32x4::<0b1011_0001>(pair.1, pair.1)),
        );
    }
    if W <= 2 {
        pair = keep_beating::<MAX>(
            pair,
            (_mm512_permute_ps::<0b0100_1110>(pair.0), _mm512_shuffle_epi32::<0b0100_1110>(pair.1)),
        );
    }
    let (mut best, mut row) = pair;
    if _mm512_mask_cmp_ps_mask::<_CMP_EQ_OQ>(columns, best, _mm512_set1_ps(start_value::<MAX>())) != 0 {
        return false;
    }
    // A column whose first value is NaN has it for its extreme.
    let first = _mm512_maskz_loadu_ps(columns, values.as_ptr());
    let nan = _mm512_mask_cmp_ps_mask::<_CMP_UNORD_Q>(columns, first, first);
    best = _mm512_mask_mov_ps(best, nan, first);
    row = _mm512_mask_mov_epi32(row, nan, _mm512_set1_epi32(start as i32));
    _mm512_mask_storeu_ps(out.as_mut_ptr(), columns, best);
    // The task owns these index elements (the caller's contract): plain stores, as relaxed ones are.
    _mm512_mask_storeu_epi32(idx.as_ptr() as *mut i32, columns, row);
    true
}

/// Of two lanes' extremes and rows, lane by lane, the one that beats the other, of equal ones the
/// lesser row. A function of its own, not a closure: a closure does not take the target features
/// of the function around it, and one left out of line would call each intrinsic.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn keep_beating<const MAX: bool>(
    (best, row): (std::arch::x86_64::__m512, std::arch::x86_64::__m512i),
    (other, other_row): (std::arch::x86_64::__m512, std::arch::x86_64::__m512i),
) -> (std::arch::x86_64::__m512, std::arch::x86_64::__m512i) {
    use std::arch::x86_64::*;
    let beats =
        if MAX { _mm512_cmp_ps_mask::<_CMP_GT_OQ>(other, best) } else { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(other, best) };
    let ties = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(other, best) & _mm512_cmplt_epi32_mask(other_row, row);
    (_mm512_mask_mov_ps(best, beats | ties, other), _mm512_mask_mov_epi32(row, beats | ties, other_row))
}

/// [`Form`] for one column in 256-bit registers: 8 lanes, the selects blends.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn extreme_avx2<const MAX: bool>(values: &[f32], start: usize, out: &mut [f32], idx: &[AtomicI32]) -> bool {
    use std::arch::x86_64::*;
    assert!(out.len() == 1 && idx.len() == 1 && !values.is_empty(), "a row of one column");
    read_ahead(values);
    let at = if values[0].is_nan() {
        start
    } else {
        let mut best = _mm256_set1_ps(start_value::<MAX>());
        let mut row = _mm256_setzero_ps(); // the rows' bits, blended as floats
        let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut rows = _mm256_add_epi32(_mm256_set1_epi32(start as i32), lanes);
        for at in (0..values.len()).step_by(8) {
            let (v, take) = if values.len() - at >= 8 {
                (_mm256_loadu_ps(values.as_ptr().add(at)), _mm256_set1_epi32(-1))
            } else {
                // Lanes below the values left load (their mask's top bit set), the rest as +0.
                let take = _mm256_cmpgt_epi32(_mm256_set1_epi32((values.len() - at) as i32), lanes);
                (_mm256_maskload_ps(values.as_ptr().add(at), take), take)
            };
            let m = if MAX { _mm256_cmp_ps::<_CMP_GT_OQ>(v, best) } else { _mm256_cmp_ps::<_CMP_LT_OQ>(v, best) };
            let m = _mm256_and_ps(m, _mm256_castsi256_ps(take));
            best = _mm256_blendv_ps(best, v, m);
            row = _mm256_blendv_ps(row, _mm256_castsi256_ps(rows), m);
            rows = _mm256_add_epi32(rows, _mm256_set1_epi32(8));
        }
        // The floats' bits move through the lanes as words; the fold compares them as floats.
        let fold = |v: __m256i, w: __m256i| {
            let (v, w) = (_mm256_castsi256_ps(v), _mm256_castsi256_ps(w));
            _mm256_castps_si256(if MAX { _mm256_max_ps(v, w) } else { _mm256_min_ps(v, w) })
        };
        let m = _mm256_castsi256_ps(across_lanes(_mm256_castps_si256(best), fold));
        if _mm256_cvtss_f32(m) == start_value::<MAX>() {
            return false;
        }
        let holders = _mm256_cmp_ps::<_CMP_EQ_OQ>(best, m);
        let rows =
            _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX)), row, holders));
        _mm256_cvtsi256_si32(across_lanes(rows, |a, b| _mm256_min_epi32(a, b))) as usize
    };
    write_one(values, start, at as usize, out, idx)
}

/// Writes the extreme of one column, row `at` of `values` (rows `start..`), and its row; returns
/// true. The value is read from its row: of equal zeros, a reduction across lanes may give the
/// other sign.
fn write_one(values: &[f32], start: usize, at: usize, out: &mut [f32], idx: &[AtomicI32]) -> bool {
    out[0] = values[at - start];
    idx[0].store(at as i32, std::sync::atomic::Ordering::Relaxed);
    true
}

/// `fold` of the 8 lanes of `v` (32-bit words), in every lane: lanes half the width apart folded
/// in registers, three times. A vector stored and read back as elements waited for the store.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
pub(crate) unsafe fn across_lanes(
    v: std::arch::x86_64::__m256i,
    fold: impl Fn(std::arch::x86_64::__m256i, std::arch::x86_64::__m256i) -> std::arch::x86_64::__m256i,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let v = fold(v, _mm256_permute2x128_si256::<1>(v, v));
    let v = fold(v, _mm256_shuffle_epi32::<0b0100_1110>(v));
    fold(v, _mm256_shuffle_epi32::<0b1011_0001>(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    /// Every build this CPU has for rows of `width`, for max and for min, with its name.
    fn forms(width: usize) -> Vec<([Form; 2], &'static str)> {
        let mut forms: Vec<([Form; 2], &'static str)> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            let avx512: [[Form; 2]; 4] = [
                [extremes_avx512::<true, 1>, extremes_avx512::<false, 1>],
                [extremes_avx512::<true, 2>, extremes_avx512::<false, 2>],
                [extremes_avx512::<true, 4>, extremes_avx512::<false, 4>],
                [extremes_avx512::<true, 8>, extremes_avx512::<false, 8>],
            ];
            if super::super::has_avx512() {
                forms.push((avx512[width.trailing_zeros() as usize], "AVX-512"));
            }
            if super::super::has_avx2() && width == 1 {
                forms.push(([extreme_avx2::<true>, extreme_avx2::<false>], "AVX2"));
            }
        }
        forms
    }

    /// The row-order loop, column by column: the value that no later value beats, and its row.
    fn row_order(values: &[f32], width: usize, start: usize, max: bool) -> (Vec<f32>, Vec<i32>) {
        (0..width)
            .map(|c| {
                let mut at = 0;
                for r in 1..values.len() / width {
                    let (v, best) = (values[r * width + c], values[at * width + c]);
                    if (max && v > best) || (!max && v < best) {
                        at = r;
                    }
                }
                (values[at * width + c], (start + at) as i32)
            })
            .unzip()
    }

    /// Runs `form` over `values` (rows from `start`): its extremes and rows, where it gives them.
    fn run(form: Form, values: &[f32], width: usize, start: usize) -> Option<(Vec<f32>, Vec<i32>)> {
        let mut out = vec![f32::NAN; width];
        let idx: Vec<AtomicI32> = (0..width).map(|_| AtomicI32::new(-7)).collect();
        // SAFETY: `forms` lists only the builds this CPU supports.
        let done = unsafe { form(values, start, &mut out, &idx) };
        done.then(|| (out, idx.iter().map(|a| a.load(Ordering::Relaxed)).collect()))
    }

    #[test]
    fn lane_extremes_find_the_row_order_values_and_rows() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        let special = [0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3.0, -3.0];
        for width in [1, 2, 4, 8] {
            let forms = forms(width);
            let mut found = vec![[0usize; 2]; forms.len()];
            for len in (1..=40).chain([63, 64, 65, 127, 128, 129, 1000]) {
                for trial in 0..40 {
                    // Few distinct values, so ties are common; specials now and then, more often
                    // in some runs; a NaN first in some.
                    let values: Vec<f32> = (0..len * width)
                        .map(|_| {
                            let r = next();
                            if r % 64 < trial % 8 {
                                special[(r >> 8) as usize % special.len()]
                            } else {
                                (r >> 8) as f32 % 7.0 - 3.0
                            }
                        })
                        .collect();
                    let start = (next() % 1000) as usize;
                    for (k, (pair, name)) in forms.iter().enumerate() {
                        for (&form, max) in pair.iter().zip([true, false]) {
                            if let Some((got, at)) = run(form, &values, width, start) {
                                let (want, want_at) = row_order(&values, width, start, max);
                                let bits = |v: &[f32]| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                                assert_eq!(bits(&got), bits(&want), "{name}, width {width}, max {max}, {values:?}");
                                assert_eq!(at, want_at, "{name}, width {width}, max {max}, {values:?}");
                                found[k][max as usize] += 1;
                            }
                        }
                    }
                }
            }
            for counts in found {
                assert!(counts.iter().all(|&c| c > 1500), "width {width}: the lanes found only {counts:?}");
            }
        }
    }

    #[test]
    fn sequences_of_only_the_starting_value_are_left_to_the_row_order_loop() {
        for width in [1, 2, 4, 8] {
            for ([max, min], name) in forms(width) {
                // A column of only the starting value (or NaN after the first row) beside a column
                // of ordinary values: the sequence is left to the loop.
                let column = |c: &[f32]| -> Vec<f32> {
                    c.iter().flat_map(|&v| std::iter::once(v).chain(std::iter::repeat_n(1.0, width - 1))).collect()
                };
                let lows = column(&[f32::NEG_INFINITY, f32::NAN, f32::NEG_INFINITY]);
                let highs = column(&[f32::INFINITY, f32::INFINITY]);
                assert_eq!(run(max, &lows, width, 5), None, "{name}, width {width}");
                assert_eq!(run(min, &highs, width, 5), None, "{name}, width {width}");
                let (values, rows) = run(min, &lows, width, 5).expect("the min of a column with -inf");
                assert_eq!((values[0], rows[0]), (f32::NEG_INFINITY, 5), "{name}, width {width}");
                let (values, rows) = run(max, &highs, width, 5).expect("the max of a column with +inf");
                assert_eq!((values[0], rows[0]), (f32::INFINITY, 5), "{name}, width {width}");
                // A NaN first is the extreme, its row the first.
                let (values, rows) = run(max, &column(&[f32::NAN, 1.0]), width, 5).expect("a NaN first");
                assert!(values[0].is_nan() && rows[0] == 5, "{name}, width {width}");
            }
        }
    }
}
