//! `sequence_pool`'s sums over rows of 1, 2, 4 or 8 float32 columns, in vector lanes, with the
//! bits of the row-order loop. Over such narrow rows that loop is one chain of dependent f64
//! additions a column (a few rows of values a vector at most), which held the sums to a third of
//! the read bandwidth or less (benches/REPORT.md).
//!
//! **Why the lanes give the row-order bits.** The sum is in f64 in row order, so that the CPU and
//! the device agree to the bit. An addition in f64 is exact when its result is representable, and
//! if every partial sum of a column is, every order of its additions gives the same value: the
//! exact sum. Every float32 value `v != 0` of biased exponent `e` is a multiple of
//! 2^(max(e, 1) - 150) and below 2^(e - 126) in magnitude. So with `lo` and `hi` the least and
//! greatest exponents of the nonzero values, every partial sum of at most `n` of them is a
//! multiple of 2^(max(lo, 1) - 150) below n * 2^(hi - 126), that is below
//! n * 2^(hi - max(lo, 1) + 24) units, and representable in f64's 53 bits when
//! n * 2^(hi - max(lo, 1)) <= 2^29. Values that break that bound, or an infinity or a NaN among
//! them, are left to the row-order loop.
//!
//! **The lanes.** A vector of a sequence's values holds whole rows, `W` dividing its lane count, so
//! lane `j` always holds column `j % W`; the lanes' sums are folded by column at the end. The bound
//! is checked once for a group of sequences, on the greatest and least magnitudes of all its values
//! and its longest sequence, kept in registers across the group (with a check a sequence, two
//! reductions across the lanes each, one column of 2^18 sequences of U[1,32] rows took 3.0 ms
//! against 2.0). A group that breaks the bound is summed again a sequence at a time, and a sequence
//! that breaks it in the row-order loop.

#[cfg(target_arch = "x86_64")]
use super::lane_extremes::across_lanes;
use super::read_ahead;
use crate::dtype::{retyped, retyped_mut, Scalar};
use std::ops::Range;

/// Sequences a check of the bound: the reductions it costs are spread over them, and a group that
/// breaks the bound is read again.
const GROUP: usize = 32;

/// A build of the group kernel: sums the sequences `seqs` of `offsets` (row offsets into `x`) into
/// `out` (a row of results each), divided by `divisor(rows)` and rounded to float32, `pad` for an
/// empty sequence; returns whether the bound held, without which `out` is not the row-order result.
type Form<D> = unsafe fn(&[f32], &[usize], Range<usize>, &D, f32, &mut [f32]) -> bool;

/// The sums of [`Form`] for the sequences `seqs` of `offsets`, rows of `width` columns of `x`,
/// into `out` (`width` results a sequence), bit for bit those of `row_order(i, out_row)`, which
/// is called for each sequence that breaks the bound. Returns false, having done nothing, where
/// `x` is not float32 or this CPU has no lanes for rows of `width`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sum_sequences<T: Scalar, D: Fn(usize) -> f64>(
    x: &[T],
    width: usize,
    offsets: &[usize],
    seqs: Range<usize>,
    divisor: &D,
    pad: T,
    out: &mut [T],
    row_order: impl Fn(usize, &mut [T]),
) -> bool {
    let (Some(x), Some(form)) = (retyped::<T, f32>(x), form::<D>(width)) else {
        return false;
    };
    let pad = pad.to_f64() as f32; // a float32, so exact
    let first = seqs.start;
    for group in seqs.clone().step_by(GROUP).map(|g| g..(g + GROUP).min(seqs.end)) {
        let rows = &mut out[(group.start - first) * width..(group.end - first) * width];
        // SAFETY: `form` gives only builds this CPU supports.
        if unsafe { form(x, offsets, group.clone(), divisor, pad, retyped_mut(rows).expect("float32 like x")) } {
            continue;
        }
        for (i, row) in group.clone().zip(rows.chunks_exact_mut(width)) {
            // SAFETY: as above.
            if !unsafe { form(x, offsets, i..i + 1, divisor, pad, retyped_mut(row).expect("float32 like x")) } {
                row_order(i, row);
            }
        }
    }
    true
}

/// Whether this CPU has lanes for rows of `width` float32 columns.
pub(crate) fn takes(width: usize) -> bool {
    form::<fn(usize) -> f64>(width).is_some()
}

/// The build of the group kernel for rows of `width` columns on this CPU, if any: AVX-512 for 1,
/// 2, 4 and 8 columns, AVX2 for 1, 2 and 4 (8 would fill a vector with one row).
fn form<D: Fn(usize) -> f64>(width: usize) -> Option<Form<D>> {
    #[cfg(target_arch = "x86_64")]
    {
        if super::has_avx512() {
            return match width {
                1 => Some(sums_avx512::<1, D>),
                2 => Some(sums_avx512::<2, D>),
                4 => Some(sums_avx512::<4, D>),
                8 => Some(sums_avx512::<8, D>),
                _ => None,
            };
        }
        if super::has_avx2() {
            return match width {
                1 => Some(sums_avx2::<1, D>),
                2 => Some(sums_avx2::<2, D>),
                4 => Some(sums_avx2::<4, D>),
                _ => None,
            };
        }
    }
    let _ = width;
    None
}

/// Whether sums of at most `n` values whose magnitudes' bits (the value's bits without the sign)
/// have the greatest `hi` and, for the nonzero ones, the least `lo + 1` (`lo` = u32::MAX where
/// every value is zero) are exact in f64 in any order (the module's doc).
fn within_bound(hi: u32, lo: u32, n: usize) -> bool {
    if lo == u32::MAX {
        return true; // all zeros: +0 either way
    }
    // Subnormals (exponent 0) count as exponent 1, whose unit they share.
    let (hi, lo) = ((hi >> 23).max(1), ((lo + 1) >> 23).max(1));
    let span = hi - lo; // hi >= lo: the greatest magnitude is at least the least nonzero one
    hi < 255 && span <= 29 && n <= 1usize << (29 - span)
}

/// [`Form`] in 512-bit registers: 16 values a step (the last under a mask), in two f64 sums of 8
/// lanes.
///
/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sums_avx512<const W: usize, D: Fn(usize) -> f64>(
    x: &[f32],
    offsets: &[usize],
    seqs: Range<usize>,
    divisor: &D,
    pad: f32,
    out: &mut [f32],
) -> bool {
    use std::arch::x86_64::*;
    // The greatest magnitude's bits, and the least nonzero one's less one (zero wraps to the top).
    let (mut hi, mut lo) = (_mm512_setzero_si512(), _mm512_set1_epi32(-1));
    let (magnitude, one) = (_mm512_set1_epi32(0x7fff_ffff), _mm512_set1_epi32(1));
    let mut longest = 0;
    for (i, o) in seqs.zip(out.chunks_exact_mut(W)) {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            o.fill(pad);
            continue;
        }
        longest = longest.max(end - start);
        let values = &x[start * W..end * W];
        read_ahead(values);
        let (mut low, mut high) = (_mm512_setzero_pd(), _mm512_setzero_pd());
        for at in (0..values.len()).step_by(16) {
            // The lanes past the end load as +0, which changes neither the sums nor the bound.
            let take = u16::MAX >> 16usize.saturating_sub(values.len() - at);
            let v = _mm512_maskz_loadu_ps(take, values.as_ptr().add(at));
            low = _mm512_add_pd(low, _mm512_cvtps_pd(_mm512_castps512_ps256(v)));
            let upper = _mm512_extractf64x4_pd::<1>(_mm512_castps_pd(v));
            high = _mm512_add_pd(high, _mm512_cvtps_pd(_mm256_castpd_ps(upper)));
            let m = _mm512_and_si512(_mm512_castps_si512(v), magnitude);
            hi = _mm512_max_epu32(hi, m);
            lo = _mm512_min_epu32(lo, _mm512_sub_epi32(m, one));
        }
        // Lane j holds column j % W; halves, quarters, then pairs of lanes folded onto the first W.
        let mut s = _mm512_add_pd(low, high);
        if W <= 4 {
            s = _mm512_add_pd(s, _mm512_shuffle_f64x2::<0b0100_1110>(s, s));
        }
        if W <= 2 {
            s = _mm512_add_pd(s, _mm512_shuffle_f64x2::<0b1011_0001>(s, s));
        }
        if W == 1 {
            s = _mm512_add_pd(s, _mm512_permute_pd::<0b0101_0101>(s));
        }
        let q = _mm512_cvtpd_ps(_mm512_div_pd(s, _mm512_set1_pd(divisor(end - start))));
        _mm512_mask_storeu_ps(o.as_mut_ptr(), (1 << W) - 1, _mm512_castps256_ps512(q));
    }
    within_bound(_mm512_reduce_max_epu32(hi) as u32, _mm512_reduce_min_epu32(lo) as u32, longest)
}

/// [`Form`] in 256-bit registers: 8 values a step (the last under a mask), in two f64 sums of 4
/// lanes.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sums_avx2<const W: usize, D: Fn(usize) -> f64>(
    x: &[f32],
    offsets: &[usize],
    seqs: Range<usize>,
    divisor: &D,
    pad: f32,
    out: &mut [f32],
) -> bool {
    use std::arch::x86_64::*;
    let (mut hi, mut lo) = (_mm256_setzero_si256(), _mm256_set1_epi32(-1));
    let (magnitude, one) = (_mm256_set1_epi32(0x7fff_ffff), _mm256_set1_epi32(1));
    let lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    // The first W of 4 lanes, for the store.
    let keep = _mm_cmpgt_epi32(_mm_set1_epi32(W as i32), _mm_setr_epi32(0, 1, 2, 3));
    let mut longest = 0;
    for (i, o) in seqs.zip(out.chunks_exact_mut(W)) {
        let (start, end) = (offsets[i], offsets[i + 1]);
        if start == end {
            o.fill(pad);
            continue;
        }
        longest = longest.max(end - start);
        let values = &x[start * W..end * W];
        read_ahead(values);
        let (mut low, mut high) = (_mm256_setzero_pd(), _mm256_setzero_pd());
        for at in (0..values.len()).step_by(8) {
            let v = if values.len() - at >= 8 {
                _mm256_loadu_ps(values.as_ptr().add(at))
            } else {
                // Lanes below the values left load (their mask's top bit set), the rest as +0.
                // Only there: with a masked load (`vmaskmovps`) every step, rows of 4 columns
                // took 12.4 ms against 4.6 on a Zen 4.
                let take = _mm256_cmpgt_epi32(_mm256_set1_epi32((values.len() - at) as i32), lanes);
                _mm256_maskload_ps(values.as_ptr().add(at), take)
            };
            low = _mm256_add_pd(low, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
            high = _mm256_add_pd(high, _mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)));
            let m = _mm256_and_si256(_mm256_castps_si256(v), magnitude);
            hi = _mm256_max_epu32(hi, m);
            lo = _mm256_min_epu32(lo, _mm256_sub_epi32(m, one));
        }
        let mut s = _mm256_add_pd(low, high);
        if W <= 2 {
            s = _mm256_add_pd(s, _mm256_permute2f128_pd::<1>(s, s));
        }
        if W == 1 {
            s = _mm256_add_pd(s, _mm256_permute_pd::<0b0101>(s));
        }
        let q = _mm256_cvtpd_ps(_mm256_div_pd(s, _mm256_set1_pd(divisor(end - start))));
        _mm_maskstore_ps(o.as_mut_ptr(), keep, q);
    }
    let (hi, lo) = (across_lanes(hi, |a, b| _mm256_max_epu32(a, b)), across_lanes(lo, |a, b| _mm256_min_epu32(a, b)));
    within_bound(_mm256_cvtsi256_si32(hi) as u32, _mm256_cvtsi256_si32(lo) as u32, longest)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The row-order sums of the rows `offsets[i]..offsets[i + 1]` (rows of `width` of `x`),
    /// divided by `divisor`, rounded to float32; `pad` for an empty sequence.
    fn row_order(x: &[f32], width: usize, rows: Range<usize>, divisor: impl Fn(usize) -> f64, pad: f32) -> Vec<f32> {
        (0..width)
            .map(|c| {
                if rows.is_empty() {
                    return pad;
                }
                let sum = rows.clone().fold(0f64, |s, r| s + x[r * width + c] as f64);
                (sum / divisor(rows.len())) as f32
            })
            .collect()
    }

    type TestForm = Form<fn(usize) -> f64>;

    /// Every build this CPU has for rows of `width`, with its name.
    fn forms(width: usize) -> Vec<(TestForm, &'static str)> {
        let mut forms: Vec<(TestForm, &'static str)> = Vec::new();
        #[cfg(target_arch = "x86_64")]
        {
            let avx512: [Option<TestForm>; 4] = [
                Some(sums_avx512::<1, _>),
                Some(sums_avx512::<2, _>),
                Some(sums_avx512::<4, _>),
                Some(sums_avx512::<8, _>),
            ];
            let avx2: [Option<TestForm>; 4] =
                [Some(sums_avx2::<1, _>), Some(sums_avx2::<2, _>), Some(sums_avx2::<4, _>), None];
            let k = width.trailing_zeros() as usize;
            if super::super::has_avx512() {
                forms.extend(avx512[k].map(|f| (f, "AVX-512")));
            }
            if super::super::has_avx2() {
                forms.extend(avx2[k].map(|f| (f, "AVX2")));
            }
        }
        forms
    }

    /// A value drawn over `exponents` (a range of powers of two), with zeros of both signs among
    /// them, and subnormals if `subnormals`.
    fn value(r: u64, exponents: &Range<i32>, subnormals: bool) -> f32 {
        match r % 16 {
            0 => 0.0,
            1 => -0.0,
            2 if subnormals => f32::from_bits((r >> 8) as u32 & 0x807f_ffff),
            _ => {
                let span = (exponents.end - exponents.start) as u64;
                let e = exponents.start + ((r >> 8) % span) as i32;
                let v = (1.0 + ((r >> 20) & 0xff_ffff) as f32 / (1 << 24) as f32) * 2f32.powi(e);
                if r & 16 == 0 {
                    v
                } else {
                    -v
                }
            }
        }
    }

    /// Sequences of every length up to 40 rows and some longer, empty ones among them, of values
    /// drawn over `exponents`: each build, over each sequence alone and over groups of them,
    /// gives the row-order bits wherever it says the bound held. Returns how many sequences each
    /// build summed alone, per width.
    fn check_sums(exponents: Range<i32>, subnormals: bool, seed: u64) -> Vec<usize> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        let mut summed = Vec::new();
        for width in [1, 2, 4, 8] {
            let lengths: Vec<usize> =
                (0..=40).chain([63, 64, 65, 127, 128, 129, 1000, 4097]).flat_map(|n| [n; 4]).collect();
            let mut offsets = vec![0];
            for n in &lengths {
                offsets.push(offsets[offsets.len() - 1] + n);
            }
            let x: Vec<f32> =
                (0..offsets[lengths.len()] * width).map(|_| value(next(), &exponents, subnormals)).collect();
            let divisor: fn(usize) -> f64 = |n| n as f64;
            for (form, name) in forms(width) {
                let mut alone = 0;
                let mut out = vec![f32::NAN; lengths.len() * width];
                for i in 0..lengths.len() {
                    let o = &mut out[i * width..(i + 1) * width];
                    // SAFETY: `forms` lists only the builds this CPU supports.
                    if unsafe { form(&x, &offsets, i..i + 1, &divisor, -2.5, o) } {
                        let want = row_order(&x, width, offsets[i]..offsets[i + 1], divisor, -2.5);
                        let same = o.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits());
                        assert!(same, "{name}, width {width}, sequence {i}: {o:?} for {want:?}");
                        alone += 1;
                    }
                }
                for group in [0..5, 3..30, 40..100, 0..lengths.len()] {
                    let o = &mut out[group.start * width..group.end * width];
                    // SAFETY: as above.
                    if unsafe { form(&x, &offsets, group.clone(), &divisor, -2.5, o) } {
                        for (i, got) in group.clone().zip(o.chunks_exact(width)) {
                            let want = row_order(&x, width, offsets[i]..offsets[i + 1], divisor, -2.5);
                            let same = got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits());
                            assert!(same, "{name}, width {width}, group {group:?}, sequence {i}");
                        }
                    }
                }
                summed.push(alone);
            }
        }
        summed
    }

    #[test]
    fn lane_sums_have_the_row_order_bits() {
        // Values within a few powers of two: the bound holds for most sequences, which the lanes sum.
        for summed in check_sums(-3..3, false, 1) {
            assert!(summed > 190, "the lanes summed only {summed} sequences of 196");
        }
        // Values of every magnitude: most sequences are left to the row-order loop, the rest checked.
        check_sums(-126..127, true, 2);
        check_sums(-40..40, false, 3);
        check_sums(-149..-120, true, 4);
    }

    /// `x`, one column in sequences of `runs`, and its offsets.
    fn column(runs: &[&[f32]]) -> (Vec<f32>, Vec<usize>) {
        let mut offsets = vec![0];
        for r in runs {
            offsets.push(offsets[offsets.len() - 1] + r.len());
        }
        (runs.concat(), offsets)
    }

    #[test]
    fn sequences_that_round_are_left_to_the_row_order_loop() {
        // Row order rounds 2^60 + 1 to 2^60 and ends at 0, where lanes would find 1.
        let mut rounds = vec![0.0f32; 20];
        (rounds[0], rounds[1], rounds[2]) = (2f32.powi(60), 1.0, -(2f32.powi(60)));
        // Infinities and NaN: their sums are left to the loop, which gives the IEEE results.
        // (Next to values of the top exponents, the span alone would admit them.)
        let infinite = [1.0, f32::INFINITY, 2.0, f32::NEG_INFINITY];
        let nan = [1.0, 2.0, f32::NAN];
        let (big_infinite, big_nan) = ([2f32.powi(100), f32::INFINITY], [f32::NAN, -(2f32.powi(100))]);
        // Exponents 20 apart allow 2^9 values.
        let at_bound = [vec![1.0f32; (1 << 9) - 1], vec![2f32.powi(-20)]].concat();
        let over_bound = [vec![1.0f32; 1 << 9], vec![2f32.powi(-20)]].concat();
        let divisor: fn(usize) -> f64 = |_| 1.0;
        for (form, name) in forms(1) {
            // SAFETY: `forms` lists only the builds this CPU supports.
            let sum = |runs: &[&[f32]]| {
                let (x, offsets) = column(runs);
                let mut out = vec![f32::NAN; runs.len()];
                unsafe { form(&x, &offsets, 0..runs.len(), &divisor, 7.0, &mut out) }.then_some(out)
            };
            for breaks in [&rounds[..], &infinite, &nan, &big_infinite, &big_nan, &over_bound] {
                assert_eq!(sum(&[breaks]), None, "{name}: {breaks:?}");
                // In a group, one sequence that breaks the bound fails the group, also where a
                // shorter one follows it.
                assert_eq!(sum(&[&[1.0, 2.0], breaks, &[], &[3.0]]), None, "{name}: {breaks:?} in a group");
            }
            assert_eq!(row_order(&rounds, 1, 0..20, divisor, 0.0), [0.0]);
            assert_eq!(sum(&[&at_bound]), Some(row_order(&at_bound, 1, 0..512, divisor, 0.0)), "{name}");
            // The group's longest sequence sets the count: two at the bound, and the bound admits them.
            assert_eq!(sum(&[&at_bound, &at_bound[..5]]).map(|o| o.len()), Some(2), "{name}");
            let sums = sum(&[&[], &[-0.0, -0.0], &[0.0]]).map(|o| o.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            assert_eq!(sums, Some([7f32, 0.0, 0.0].map(f32::to_bits).to_vec()), "{name}: pad, and +0 for zeros");
        }
    }

    /// `sum_sequences` sums every group that keeps the bound in lanes, and a group that breaks it a
    /// sequence at a time, calling the row-order loop for exactly the sequences that break it.
    #[test]
    fn groups_that_break_the_bound_are_summed_a_sequence_at_a_time() {
        for width in [1usize, 2, 4, 8] {
            if !takes(width) {
                continue;
            }
            let n = 3 * GROUP + 5;
            let breaking = [GROUP + 3, 2 * GROUP + 7, 2 * GROUP + 12]; // of 8, 8 and 4 rows
            let mut offsets = vec![0];
            for i in 0..n {
                offsets.push(offsets[i] + i % 9);
            }
            let mut x: Vec<f32> = (0..offsets[n] * width).map(|k| (k % 13) as f32 * 0.25 - 1.0).collect();
            for &i in &breaking {
                // 2^60, then 1, then -2^60 in column 0: row order gives 0, the lanes 1.
                let r = offsets[i];
                (x[r * width], x[(r + 1) * width], x[(r + 2) * width]) = (2f32.powi(60), 1.0, -(2f32.powi(60)));
            }
            let divisor = |n: usize| (n as f64).sqrt();
            let mut out = vec![f32::NAN; n * width];
            let called = std::sync::Mutex::new(Vec::new());
            let took = sum_sequences(&x, width, &offsets, 0..n, &divisor, -1.5, &mut out, |i, row| {
                called.lock().unwrap().push(i);
                row.copy_from_slice(&row_order(&x, width, offsets[i]..offsets[i + 1], divisor, -1.5));
            });
            assert!(took, "width {width}");
            assert_eq!(called.into_inner().unwrap(), breaking, "width {width}");
            for i in 0..n {
                let want = row_order(&x, width, offsets[i]..offsets[i + 1], divisor, -1.5);
                let got = &out[i * width..(i + 1) * width];
                assert_eq!(got, &want[..], "width {width}, sequence {i}");
            }
        }
        // Rows of 3 columns, and float64 values, are not the lanes'.
        let mut out = [0f32; 3];
        assert!(!sum_sequences(&[1f32; 3], 3, &[0, 1], 0..1, &|_| 1.0, 0.0, &mut out, |_, _| ()));
        let mut out = [0f64; 1];
        assert!(!sum_sequences(&[1f64; 3], 1, &[0, 3], 0..1, &|_| 1.0, 0.0, &mut out, |_, _| ()));
    }
}
