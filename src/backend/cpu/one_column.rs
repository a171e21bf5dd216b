//! `sequence_pool`'s max and min over rows of one float32 column, in vector lanes, with the rows
//! of the row-order loop. Over one column that loop is one chain of dependent steps a value (a
//! compare and a select), which held the max of 2^18 sequences of U[1,128] values to a fifth of
//! the read bandwidth (benches/REPORT.md). The sums are in `lane_sums`.
//!
//! **The max** (or min) of the row-order loop, where a value replaces the best only if greater
//! (a strict compare, under which NaN never replaces and is never replaced), is: the first value
//! if it is NaN; else the greatest value `m` of those not NaN, from the first row that holds a
//! value equal to `m` (values before it are below `m`, so it replaces, and none after it is above
//! `m`). Each lane keeps the same loop over its share of the rows, from minus infinity (where NaN
//! then never enters); then `m` is the greatest lane and the row the least among the lanes equal
//! to it. A run whose `m` is minus infinity is left to the row-order loop: no lane took a row of
//! it. The min is the same with the order reversed.

use super::read_ahead;

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

/// The row of the extreme of `values` (rows `start..` of the tensor), as the row-order loop finds
/// it (the module's doc): of the greatest value if `max`, else of the least; found in vector
/// lanes where the CPU has them; `None` where it is left to the row-order loop. `values` is not
/// empty, and its rows fit in i32.
#[inline]
pub(crate) fn lane_extreme(values: &[f32], start: usize, max: bool) -> Option<i32> {
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_avx512() {
            // SAFETY: the CPU has AVX-512F (checked above).
            return unsafe {
                if max {
                    extreme_avx512::<true>(values, start)
                } else {
                    extreme_avx512::<false>(values, start)
                }
            };
        }
        if super::has_avx2() {
            // SAFETY: the CPU has AVX2 (checked above).
            return unsafe {
                if max {
                    extreme_avx2::<true>(values, start)
                } else {
                    extreme_avx2::<false>(values, start)
                }
            };
        }
    }
    let _ = (values, start, max);
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

/// [`lane_extreme`] in 512-bit registers: 16 lanes, the compare a mask, the selects masked moves.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn extreme_avx512<const MAX: bool>(values: &[f32], start: usize) -> Option<i32> {
    use std::arch::x86_64::*;
    if values[0].is_nan() {
        return Some(start as i32);
    }
    let mut best = _mm512_set1_ps(start_value::<MAX>());
    let mut row = _mm512_setzero_si512();
    let lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    let mut rows = _mm512_add_epi32(_mm512_set1_epi32(start as i32), lanes);
    // Ordered compares: false where either side is NaN.
    let mut step = |v: __m512, take: __mmask16| {
        let m = if MAX {
            _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(take, v, best)
        } else {
            _mm512_mask_cmp_ps_mask::<_CMP_LT_OQ>(take, v, best)
        };
        best = _mm512_mask_mov_ps(best, m, v);
        row = _mm512_mask_mov_epi32(row, m, rows);
        rows = _mm512_add_epi32(rows, _mm512_set1_epi32(16));
    };
    let chunks = values.chunks_exact(16);
    let tail = chunks.remainder();
    for c in chunks {
        read_ahead(c);
        step(_mm512_loadu_ps(c.as_ptr()), u16::MAX);
    }
    if !tail.is_empty() {
        read_ahead(tail);
        let take = (1u16 << tail.len()).wrapping_sub(1);
        step(_mm512_maskz_loadu_ps(take, tail.as_ptr()), take);
    }
    // In registers: a vector stored and read back as elements waited for the store.
    let m = if MAX { _mm512_reduce_max_ps(best) } else { _mm512_reduce_min_ps(best) };
    if m == start_value::<MAX>() {
        return None;
    }
    let holders = _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(best, _mm512_set1_ps(m));
    Some(_mm512_mask_reduce_min_epi32(holders, row))
}

/// [`lane_extreme`] in 256-bit registers: 8 lanes, the selects blends.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn extreme_avx2<const MAX: bool>(values: &[f32], start: usize) -> Option<i32> {
    use std::arch::x86_64::*;
    if values[0].is_nan() {
        return Some(start as i32);
    }
    let mut best = _mm256_set1_ps(start_value::<MAX>());
    let mut row = _mm256_setzero_ps(); // the rows' bits, blended as floats
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let mut rows = _mm256_add_epi32(_mm256_set1_epi32(start as i32), lanes);
    let mut step = |v: __m256, take: __m256| {
        let m = if MAX { _mm256_cmp_ps::<_CMP_GT_OQ>(v, best) } else { _mm256_cmp_ps::<_CMP_LT_OQ>(v, best) };
        let m = _mm256_and_ps(m, take);
        best = _mm256_blendv_ps(best, v, m);
        row = _mm256_blendv_ps(row, _mm256_castsi256_ps(rows), m);
        rows = _mm256_add_epi32(rows, _mm256_set1_epi32(8));
    };
    let chunks = values.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        read_ahead(c);
        step(_mm256_loadu_ps(c.as_ptr()), _mm256_castsi256_ps(_mm256_set1_epi32(-1)));
    }
    if !tail.is_empty() {
        read_ahead(tail);
        let take = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail.len() as i32), lanes);
        step(_mm256_maskload_ps(tail.as_ptr(), take), _mm256_castsi256_ps(take));
    }
    // The floats' bits move through the lanes as words; the fold compares them as floats.
    let fold = |v: __m256i, w: __m256i| {
        let (v, w) = (_mm256_castsi256_ps(v), _mm256_castsi256_ps(w));
        _mm256_castps_si256(if MAX { _mm256_max_ps(v, w) } else { _mm256_min_ps(v, w) })
    };
    let m = _mm256_castsi256_ps(across_lanes(_mm256_castps_si256(best), fold));
    if _mm256_cvtss_f32(m) == start_value::<MAX>() {
        return None;
    }
    let holders = _mm256_cmp_ps::<_CMP_EQ_OQ>(best, m);
    let rows = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(_mm256_set1_epi32(i32::MAX)), row, holders));
    Some(_mm256_cvtsi256_si32(across_lanes(rows, |a, b| _mm256_min_epi32(a, b))))
}

#[cfg(test)]
mod tests {
    use super::*;

    type ExtremeForm = unsafe fn(&[f32], usize) -> Option<i32>;

    /// Every extreme form this CPU has, for max and for min, with its name.
    fn extreme_forms() -> Vec<([ExtremeForm; 2], &'static str)> {
        let mut forms: Vec<([ExtremeForm; 2], &'static str)> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if crate::backend::cpu::has_avx512() {
                forms.push(([extreme_avx512::<true>, extreme_avx512::<false>], "AVX-512"));
            }
            if crate::backend::cpu::has_avx2() {
                forms.push(([extreme_avx2::<true>, extreme_avx2::<false>], "AVX2"));
            }
        }
        forms
    }

    /// The row-order loop: the row of the value that no later value beats.
    fn row_order_extreme(values: &[f32], start: usize, max: bool) -> i32 {
        let mut at = 0;
        for (r, &v) in values.iter().enumerate().skip(1) {
            if (max && v > values[at]) || (!max && v < values[at]) {
                at = r;
            }
        }
        (start + at) as i32
    }

    #[test]
    fn lane_extremes_find_the_row_order_rows() {
        let mut state = 7u64;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        let special = [0.0, -0.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 3.0, -3.0];
        let forms = extreme_forms();
        let mut found = vec![[0usize; 2]; forms.len()];
        for len in (1..=40).chain([63, 64, 65, 127, 128, 129, 1000]) {
            for trial in 0..40 {
                // Few distinct values, so ties are common; specials now and then, more often in
                // some runs; a NaN first in some.
                let values: Vec<f32> = (0..len)
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
                    for (form, max) in pair.iter().zip([true, false]) {
                        // SAFETY: `extreme_forms` lists only the forms this CPU supports.
                        if let Some(at) = unsafe { form(&values, start) } {
                            let want = row_order_extreme(&values, start, max);
                            assert_eq!(at, want, "{name}, max {max}, {values:?}");
                            found[k][max as usize] += 1;
                        }
                    }
                }
            }
        }
        for counts in found {
            assert!(counts.iter().all(|&c| c > 1500), "the lanes found only {counts:?} rows");
        }
    }

    #[test]
    fn runs_of_only_the_starting_value_are_left_to_the_row_order_loop() {
        let lows = [f32::NEG_INFINITY, f32::NAN, f32::NEG_INFINITY];
        let highs = [f32::INFINITY, f32::INFINITY];
        for ([max, min], name) in extreme_forms() {
            // SAFETY: `extreme_forms` lists only the forms this CPU supports.
            unsafe {
                assert_eq!(max(&lows, 5), None, "{name}");
                assert_eq!(min(&highs, 5), None, "{name}");
                assert_eq!(min(&lows, 5), Some(5), "{name}");
                assert_eq!(max(&highs, 5), Some(5), "{name}");
                assert_eq!(max(&[f32::NAN, 1.0], 5), Some(5), "{name}");
            }
        }
    }
}
