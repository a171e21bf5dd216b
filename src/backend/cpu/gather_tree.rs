//! gather_tree's fast path: all `batch * beam` chains followed one step at a time, so each step
//! reads and writes one contiguous `[batch, beam]` slab and the chains' loads overlap (one chain
//! at a time is a chain of dependent loads `T` long: 0.13 of a copy, benches/REPORT.md). With
//! AVX-512 and a beam that fits one register, a batch entry's step is two lane permutes (the ids
//! and the parents the entry's chains follow) instead of `2 * beam` dependent scalar loads.
//!
//! Both loops walk a step's entries from last to first, as they walk the steps, so that memory is
//! read and written in one descending sweep, which the hardware prefetchers follow. Walking the
//! entries upwards while the steps go down makes short rising streams that they follow the wrong
//! way: the scalar loop took twice as long that way with its inputs in memory (benches/REPORT.md,
//! tenth round).

#[cfg(target_arch = "x86_64")]
use super::has_avx512;
use crate::error::Result;
use crate::memory::lists;

/// The dtypes of gather_tree's ids and parents (int32 and int64).
pub trait TreeIndex: Copy + Into<i64> {
    /// Elements in a 512-bit register: the widest beam the AVX-512 path takes.
    const LANES: usize;

    /// The first `mask.count_ones()` elements at `from`, zeros above.
    ///
    /// # Safety
    /// AVX-512F is available, and `from` is valid for reads of the masked elements.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load(mask: u16, from: *const Self) -> std::arch::x86_64::__m512i;

    /// # Safety
    /// AVX-512F is available, and `to` is valid for writes of the masked elements.
    #[cfg(target_arch = "x86_64")]
    unsafe fn store(mask: u16, to: *mut Self, v: std::arch::x86_64::__m512i);

    /// Lane `i` of the result is lane `index[i] mod LANES` of `v`.
    ///
    /// # Safety
    /// AVX-512F is available.
    #[cfg(target_arch = "x86_64")]
    unsafe fn permute(index: std::arch::x86_64::__m512i, v: std::arch::x86_64::__m512i) -> std::arch::x86_64::__m512i;

    /// The lanes of `mask` whose value is outside `[0, beam)` (negative ones included).
    ///
    /// # Safety
    /// AVX-512F is available.
    #[cfg(target_arch = "x86_64")]
    unsafe fn outside(mask: u16, v: std::arch::x86_64::__m512i, beam: usize) -> u16;
}

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// The impls differ only in the element width: the intrinsics and the width of their lane mask.
macro_rules! tree_index {
    ($t:ty, $lanes:expr, $mask:ty, $load:ident, $store:ident, $permute:ident, $cmpge:ident, $splat:ident) => {
        impl TreeIndex for $t {
            const LANES: usize = $lanes;

            #[cfg(target_arch = "x86_64")]
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn load(mask: u16, from: *const $t) -> __m512i {
                $load(mask as $mask, from)
            }

            #[cfg(target_arch = "x86_64")]
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn store(mask: u16, to: *mut $t, v: __m512i) {
                $store(to, mask as $mask, v)
            }

            #[cfg(target_arch = "x86_64")]
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn permute(index: __m512i, v: __m512i) -> __m512i {
                $permute(index, v)
            }

            #[cfg(target_arch = "x86_64")]
            #[inline]
            #[target_feature(enable = "avx512f")]
            unsafe fn outside(mask: u16, v: __m512i, beam: usize) -> u16 {
                // Unsigned: a negative parent reads as a huge one.
                $cmpge(mask as $mask, v, $splat(beam as $t)) as u16
            }
        }
    };
}

tree_index!(
    i32,
    16,
    u16,
    _mm512_maskz_loadu_epi32,
    _mm512_mask_storeu_epi32,
    _mm512_permutexvar_epi32,
    _mm512_mask_cmpge_epu32_mask,
    _mm512_set1_epi32
);
tree_index!(
    i64,
    8,
    u8,
    _mm512_maskz_loadu_epi64,
    _mm512_mask_storeu_epi64,
    _mm512_permutexvar_epi64,
    _mm512_mask_cmpge_epu64_mask,
    _mm512_set1_epi64
);

/// gather_tree over `[steps, batch, beam]` slices (`steps > 0`, every slice that long): `dst[T-1]
/// = src[T-1]` and, following the parents back, `dst[t, b, k] = src[t, b, p]`, `p = par[t, b,
/// p]`. `false` (with `dst` partly written) when a followed parent is outside `[0, beam)`; the
/// parents of step 0 are never followed, so they are not checked. `OutOfMemory` when there is no
/// memory for the chains' slots (one per chain).
pub fn gather_tree_by_step<T: TreeIndex>(
    src: &[T],
    par: &[T],
    batch: usize,
    beam: usize,
    steps: usize,
    dst: &mut [T],
) -> Result<bool> {
    let n = batch * beam;
    assert!(steps > 0 && src.len() == steps * n && par.len() == src.len() && dst.len() == src.len());
    if n == 0 {
        return Ok(true); // no chains (and a beam of 0 has no slots to chunk by)
    }
    #[cfg(target_arch = "x86_64")]
    if (1..=T::LANES).contains(&beam) && has_avx512() {
        // SAFETY: AVX-512F is available; the slices' lengths were checked above.
        return unsafe { by_step_avx512(src, par, batch, beam, steps, dst) };
    }
    by_step_scalar(src, par, batch, beam, steps, dst)
}

fn by_step_scalar<T: TreeIndex>(
    src: &[T],
    par: &[T],
    batch: usize,
    beam: usize,
    steps: usize,
    dst: &mut [T],
) -> Result<bool> {
    let n = batch * beam;
    let last = (steps - 1) * n;
    dst[last..].copy_from_slice(&src[last..]);
    // parent[j]: the beam slot chain j (batch j / beam) follows at the step being written.
    let mut parent = lists::collect(par[last..].iter().map(|&v| v.into()), "gather_tree: chains")?;
    for t in (0..steps - 1).rev() {
        let (src, par, dst) = (&src[t * n..(t + 1) * n], &par[t * n..(t + 1) * n], &mut dst[t * n..(t + 1) * n]);
        // One batch entry (`beam` chains) at a time, the last first: its slot `q` indexes its own
        // slice.
        let entries = dst.chunks_exact_mut(beam).zip(parent.chunks_exact_mut(beam));
        for ((dst, parent), (src, par)) in entries.zip(src.chunks_exact(beam).zip(par.chunks_exact(beam))).rev() {
            for (d, p) in dst.iter_mut().zip(parent.iter_mut()) {
                // Unsigned: a negative parent reads as a huge one, so one comparison checks both
                // ends.
                if *p as u64 >= beam as u64 {
                    return Ok(false);
                }
                let q = *p as usize;
                *d = src[q];
                *p = par[q].into();
            }
        }
    }
    Ok(true)
}

/// `by_step_scalar` with one register per batch entry: its chains' slots are the permute index.
///
/// # Safety
/// AVX-512F is available, `1 <= beam <= T::LANES`, `steps > 0` and the three slices are
/// `steps * batch * beam` long.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn by_step_avx512<T: TreeIndex>(
    src: &[T],
    par: &[T],
    batch: usize,
    beam: usize,
    steps: usize,
    dst: &mut [T],
) -> Result<bool> {
    let n = batch * beam;
    let last = (steps - 1) * n;
    dst[last..].copy_from_slice(&src[last..]);
    let mask = ((1u32 << beam) - 1) as u16;
    // A slot outside [0, beam) still permutes in range (the index is taken mod LANES), so the
    // check can wait until the slot is about to be used: the top of the next step.
    let mut bad = 0;
    let slots = (0..batch).map(|b| {
        let p = T::load(mask, par.as_ptr().add(last + b * beam));
        bad |= T::outside(mask, p, beam);
        p
    });
    let mut slots: Vec<__m512i> = lists::collect(slots, "gather_tree: chains")?;
    for t in (0..steps - 1).rev() {
        if bad != 0 {
            return Ok(false);
        }
        for (b, p) in slots.iter_mut().enumerate().rev() {
            let at = t * n + b * beam;
            let ids = T::load(mask, src.as_ptr().add(at));
            let parents = T::load(mask, par.as_ptr().add(at));
            T::store(mask, dst.as_mut_ptr().add(at), T::permute(*p, ids));
            *p = T::permute(*p, parents);
            bad |= T::outside(mask, *p, beam);
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: each chain followed back on its own; `None` at a bad followed parent.
    fn reference(src: &[i64], par: &[i64], batch: usize, beam: usize, steps: usize) -> Option<Vec<i64>> {
        let at = |t: usize, b: usize, k: usize| (t * batch + b) * beam + k;
        let mut out = vec![0; src.len()];
        for b in 0..batch {
            for k in 0..beam {
                out[at(steps - 1, b, k)] = src[at(steps - 1, b, k)];
                let mut p = par[at(steps - 1, b, k)];
                for t in (0..steps - 1).rev() {
                    let q = usize::try_from(p).ok().filter(|&q| q < beam)?;
                    out[at(t, b, k)] = src[at(t, b, q)];
                    p = par[at(t, b, q)];
                }
            }
        }
        Some(out)
    }

    fn check<T: TreeIndex + TryFrom<i64> + std::fmt::Debug>(seed: &mut u64) {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        for beam in 1..=T::LANES + 1 {
            for (steps, batch) in [(1, 3), (2, 1), (9, 7), (7, 2)] {
                let len = steps * batch * beam;
                let src: Vec<i64> = (0..len).map(|_| (next() % 1000) as i64 - 500).collect();
                let par: Vec<i64> = (0..len).map(|_| (next() % beam as u64) as i64).collect();
                // Bad parents (value, placed anywhere or at step 0 only): none, one far out of
                // range, one negative, one just out of range, one at step 0 (never followed, so no
                // error).
                let anywhere = [i64::from(i32::MAX), -1, beam as i64].map(|v| Some((v, len)));
                for bad in [None, Some((-7, batch * beam))].into_iter().chain(anywhere) {
                    let mut par = par.clone();
                    if let Some((v, within)) = bad {
                        par[next() as usize % within] = v;
                    }
                    let want = reference(&src, &par, batch, beam, steps);
                    let cast = |v: &[i64]| v.iter().map(|&x| T::try_from(x).ok().unwrap()).collect::<Vec<T>>();
                    let (s, p) = (cast(&src), cast(&par));
                    let mut paths: Vec<(&str, Vec<T>, bool)> = vec![];
                    let mut dst = vec![s[0]; len];
                    let ok = by_step_scalar(&s, &p, batch, beam, steps, &mut dst).unwrap();
                    paths.push(("scalar", dst, ok));
                    #[cfg(target_arch = "x86_64")]
                    if beam <= T::LANES && has_avx512() {
                        let mut dst = vec![s[0]; len];
                        // SAFETY: AVX-512F is available; beam fits; the lengths match.
                        let ok = unsafe { by_step_avx512(&s, &p, batch, beam, steps, &mut dst) }.unwrap();
                        paths.push(("avx512", dst, ok));
                    }
                    for (path, dst, ok) in paths {
                        let case = format!("{path} beam={beam} steps={steps} batch={batch} bad={bad:?}");
                        match &want {
                            Some(w) => {
                                assert!(ok, "{case}: reported a bad parent");
                                assert_eq!(dst.iter().map(|&v| v.into()).collect::<Vec<i64>>(), *w, "{case}");
                            }
                            None => assert!(!ok, "{case}: missed the bad parent"),
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn every_path_matches_the_chain_by_chain_definition() {
        let mut seed = 7;
        check::<i32>(&mut seed);
        check::<i64>(&mut seed);
    }
}
