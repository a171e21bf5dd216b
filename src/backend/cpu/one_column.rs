//! `sequence_pool` over rows of one float32 column, in vector lanes, with the bits and rows of
//! the row-order loops. Over one column those loops are one chain of dependent steps a value (an
//! addition, or a compare and a select), which held the sum and the max of 2^18 sequences of
//! U[1,128] values to a fifth of the read bandwidth (benches/REPORT.md).
//!
//! **The sum** is in f64 in row order, so that the CPU and the device agree to the bit. An
//! addition in f64 is exact when its result is representable, and if every partial sum of a
//! run is, every order of the additions gives the same value: the exact sum. Every float32 value
//! `v != 0` of biased exponent `e` is a multiple of 2^(max(e, 1) - 150) and below 2^(e - 126) in
//! magnitude. So with `lo` and `hi` the least and greatest exponents of the run's nonzero values,
//! every partial sum of `n` values is a multiple of 2^(max(lo, 1) - 150) below n * 2^(hi - 126),
//! that is below n * 2^(hi - max(lo, 1) + 24) units, and representable in f64's 53 bits when
//! n * 2^(hi - max(lo, 1)) <= 2^29. Runs that break that bound, or hold an infinity or a NaN, are
//! left to the row-order loop.
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

/// The sum of `values` in f64, bit for bit the row-order fold from +0 (`fold(0.0, |s, v| s + v
/// as f64)`), computed in vector lanes where the CPU has them and the bound above holds;
/// `None` where it is left to the row-order loop.
#[inline]
pub(crate) fn lane_sum(values: &[f32]) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_avx512() {
            // SAFETY: the CPU has AVX-512F (checked above).
            return unsafe { lane_sum_avx512(values) };
        }
        if super::has_avx2() {
            // SAFETY: the CPU has AVX2 (checked above).
            return unsafe { lane_sum_avx2(values) };
        }
    }
    let _ = values;
    None
}

/// `total` if it is the exact sum of `n` float32 values whose magnitudes' bits (the value's bits
/// without the sign) have the greatest `hi` and, for the nonzero ones, the least `lo + 1`
/// (`lo` = u32::MAX where every value is zero).
fn exact(total: f64, hi: u32, lo: u32, n: usize) -> Option<f64> {
    if lo == u32::MAX {
        return Some(total); // all zeros: +0 either way
    }
    // Subnormals (exponent 0) count as exponent 1, whose unit they share.
    let (hi, lo) = ((hi >> 23).max(1), ((lo + 1) >> 23).max(1));
    let span = hi - lo; // hi >= lo: the greatest magnitude is at least the least nonzero one
    (hi < 255 && span <= 29 && n <= 1usize << (29 - span)).then_some(total)
}

/// [`lane_sum`] in 512-bit registers: 16 values a step, in two f64 sums of 8 lanes.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn lane_sum_avx512(values: &[f32]) -> Option<f64> {
    use std::arch::x86_64::*;
    let (mut low, mut high) = (_mm512_setzero_pd(), _mm512_setzero_pd());
    // The greatest magnitude's bits, and the least nonzero one's less one (zero wraps to the top).
    let (mut hi, mut lo) = (_mm512_setzero_si512(), _mm512_set1_epi32(-1));
    let (magnitude, one) = (_mm512_set1_epi32(0x7fff_ffff), _mm512_set1_epi32(1));
    let mut step = |v: __m512| {
        low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
        let upper = _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v));
        high = _mm512_add_pd(high, _mm512_cvtps_pd(_mm256_castpd_ps(upper)));
        let m = _mm512_and_si512(_mm512_castps_si512(v), magnitude);
        hi = _mm512_max_epu32(hi, m);
        lo = _mm512_min_epu32(lo, _mm512_sub_epi32(m, one));
    };
    let chunks = values.chunks_exact(16);
    let tail = chunks.remainder();
    for c in chunks {
        read_ahead(c);
        step(_mm512_loadu_ps(c.as_ptr()));
    }
    if !tail.is_empty() {
        read_ahead(tail);
        // The lanes past the tail load as +0, which changes neither the sum nor the bounds.
        step(_mm512_maskz_loadu_ps((1u16 << tail.len()).wrapping_sub(1), tail.as_ptr()));
    }
    let total = _mm512_reduce_add_pd(_mm512_add_pd(low, high));
    exact(total, _mm512_reduce_max_epu32(hi), _mm512_reduce_min_epu32(lo), values.len())
}

/// [`lane_sum`] in 256-bit registers: 8 values a step, in two f64 sums of 4 lanes.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lane_sum_avx2(values: &[f32]) -> Option<f64> {
    use std::arch::x86_64::*;
    let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
    let (mut hi, mut lo) = (_mm256_setzero_si256(), _mm256_set1_epi32(-1));
    let (magnitude, one) = (_mm256_set1_epi32(0x7fff_ffff), _mm256_set1_epi32(1));
    let mut step = |v: __m256| {
        low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
        high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)));
        let m = _mm256_and_si256(_mm256_castps_si256(v), magnitude);
        hi = _mm256_max_epu32(hi, m);
        lo = _mm256_min_epu32(lo, _mm256_sub_epi32(m, one));
    };
    let chunks = values.chunks_exact(8);
    let tail = chunks.remainder();
    for c in chunks {
        read_ahead(c);
        step(_mm256_loadu_ps(c.as_ptr()));
    }
    if !tail.is_empty() {
        read_ahead(tail);
        // Lanes below the tail's length load (their mask's top bit set), the rest as +0.
        let mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(tail.len() as i32), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        step(_mm256_maskload_ps(tail.as_ptr(), mask));
    }
    let sum = _mm256_add_pd(low, high);
    let pair = _mm_add_pd(_mm256_castpd256_pd128(sum), _mm256_extractf128_pd::<1>(sum));
    let total = _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
    let (hi, lo) = (across_lanes(hi, |a, b| _mm256_max_epu32(a, b)), across_lanes(lo, |a, b| _mm256_min_epu32(a, b)));
    exact(total, _mm256_cvtsi256_si32(hi) as u32, _mm256_cvtsi256_si32(lo) as u32, values.len())
}

/// `fold` of the 8 lanes of `v` (32-bit words), in every lane: lanes half the width apart folded
/// in registers, three times. A vector stored and read back as elements waited for the store.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn across_lanes(
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

    fn row_order(values: &[f32]) -> f64 {
        values.iter().fold(0.0, |s, &v| s + v as f64)
    }

    type Form = unsafe fn(&[f32]) -> Option<f64>;

    /// Every form this CPU has, with its name.
    fn forms() -> Vec<(Form, &'static str)> {
        let mut forms: Vec<(Form, &'static str)> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            if crate::backend::cpu::has_avx512() {
                forms.push((lane_sum_avx512, "AVX-512"));
            }
            if crate::backend::cpu::has_avx2() {
                forms.push((lane_sum_avx2, "AVX2"));
            }
        }
        forms
    }

    /// Runs of every length up to 40 and some longer, of values drawn over `exponents` (a range
    /// of powers of two), with zeros and negative zeros among them, and subnormals if `subnormals`:
    /// each form's sum, where it gives one, has the row-order sum's bits. Returns how many runs
    /// each form summed.
    fn check_runs(exponents: std::ops::Range<i32>, subnormals: bool, seed: u64) -> Vec<usize> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        let forms = forms();
        let mut summed = vec![0; forms.len()];
        for len in (0..=40).chain([63, 64, 65, 127, 128, 129, 1000, 4097]) {
            for _ in 0..20 {
                let values: Vec<f32> = (0..len)
                    .map(|_| {
                        let r = next();
                        match r % 16 {
                            0 => 0.0,
                            1 => -0.0,
                            2 if subnormals => f32::from_bits((r >> 8) as u32 & 0x807f_ffff), // subnormal
                            _ => {
                                let span = (exponents.end - exponents.start) as u64;
                                let e = exponents.start + ((r >> 8) % span) as i32;
                                let m = 1.0 + ((r >> 20) & 0xff_ffff) as f32 / (1 << 24) as f32;
                                let v = m * 2f32.powi(e);
                                if r & 16 == 0 {
                                    v
                                } else {
                                    -v
                                }
                            }
                        }
                    })
                    .collect();
                let want = row_order(&values);
                for (k, (form, name)) in forms.iter().enumerate() {
                    // SAFETY: `forms` lists only the forms this CPU supports.
                    if let Some(got) = unsafe { form(&values) } {
                        assert_eq!(got.to_bits(), want.to_bits(), "{name}, {len} values {values:?}");
                        summed[k] += 1;
                    }
                }
            }
        }
        summed
    }

    #[test]
    fn lane_sums_have_the_row_order_bits() {
        // Values within a few powers of two: the bound holds for most runs, and the lanes sum them.
        for summed in check_runs(-3..3, false, 1) {
            assert!(summed > 800, "the lanes summed only {summed} runs");
        }
        // Values of every magnitude: most runs are left to the row-order loop, the rest checked.
        check_runs(-126..127, true, 2);
        check_runs(-40..40, false, 3);
        check_runs(-149..-120, true, 4);
    }

    #[test]
    fn runs_that_round_are_left_to_the_row_order_loop() {
        // Row order rounds 2^60 + 1 to 2^60 and ends at 0, where lanes would find 1.
        let mut rounds = vec![0.0f32; 20];
        (rounds[0], rounds[1], rounds[2]) = (2f32.powi(60), 1.0, -(2f32.powi(60)));
        // Infinities and NaN: their sums are left to the loop, which gives the IEEE results.
        // (Next to values of the top exponents, the span alone would admit them.)
        let infinite = [1.0, f32::INFINITY, 2.0, f32::NEG_INFINITY];
        let nan = [1.0, 2.0, f32::NAN];
        let (big_infinite, big_nan) = ([2f32.powi(100), f32::INFINITY], [f32::NAN, -(2f32.powi(100))]);
        // Exponents 20 apart allow 2^9 values.
        let at_bound = vec![1.0f32; (1 << 9) - 1].into_iter().chain([2f32.powi(-20)]).collect::<Vec<_>>();
        let over_bound = vec![1.0f32; 1 << 9].into_iter().chain([2f32.powi(-20)]).collect::<Vec<_>>();
        for (form, name) in forms() {
            // SAFETY: `forms` lists only the forms this CPU supports.
            unsafe {
                assert_eq!(form(&rounds), None, "{name}");
                assert_eq!(row_order(&rounds), 0.0);
                assert_eq!(form(&infinite), None, "{name}");
                assert_eq!(form(&nan), None, "{name}");
                assert_eq!(form(&big_infinite), None, "{name}");
                assert_eq!(form(&big_nan), None, "{name}");
                assert_eq!(form(&at_bound).map(f64::to_bits), Some(row_order(&at_bound).to_bits()), "{name}");
                assert_eq!(form(&over_bound), None, "{name}");
                assert_eq!(form(&[]).map(f64::to_bits), Some(0f64.to_bits()), "{name}");
                assert_eq!(form(&[-0.0, -0.0]).map(f64::to_bits), Some(0f64.to_bits()), "{name}");
            }
        }
    }

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
