//! Squares of words moved through registers: line `j` of the output is word `j` of every input
//! line, in order, for lines of 64 bytes and words of 4 or 8 bytes (16 x 16 or 8 x 8 words).
//! Unstack and stack of rows of one word along an inner axis are such squares; word by word, each
//! word took a load and a store to a line being assembled in memory, whose read back as a vector
//! then waited for those stores (benches/REPORT.md).

use super::has_avx512;

/// Whether [`transpose_lines`] moves words of `W` bytes on this CPU (AVX-512F, `W` 4 or 8).
#[inline]
pub(crate) fn transposes<const W: usize>() -> bool {
    (W == 4 || W == 8) && has_avx512()
}

/// Writes into the line at `dst[j]` word `j` of each of the lines at `src[0]`, `src[1]`, ...,
/// for `j` below `64 / W`, the square's side; with streaming stores when `stream` and the line is
/// 64-byte aligned. The entries past the side are not read.
///
/// # Safety
/// [`transposes::<W>`] is true; each of the first `64 / W` entries of `src` is valid for reads of
/// 64 bytes, and of `dst` for writes of 64 bytes, none of them overlapping a line of `src`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(crate) unsafe fn transpose_lines<const W: usize>(src: &[*const u8; 16], dst: &[*mut u8; 16], stream: bool) {
    use std::arch::x86_64::*;
    let side = 64 / W;
    let mut r = [_mm512_setzero_si512(); 16];
    for (v, &s) in r.iter_mut().zip(src).take(side) {
        *v = _mm512_loadu_si512(s.cast());
    }
    // Within each 128-bit lane first: afterwards register `c + C * i` holds, in lane `l`, word
    // `C * l + c` of lines `C * i ..= C * i + C - 1`, where C = 16 / W words fill a lane.
    let mut u = [_mm512_setzero_si512(); 16];
    if W == 4 {
        let mut t = [_mm512_setzero_si512(); 16];
        for i in 0..8 {
            t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
            t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
        }
        for i in 0..4 {
            u[4 * i] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
            u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
            u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
            u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
        }
    } else {
        for i in 0..4 {
            u[2 * i] = _mm512_unpacklo_epi64(r[2 * i], r[2 * i + 1]);
            u[2 * i + 1] = _mm512_unpackhi_epi64(r[2 * i], r[2 * i + 1]);
        }
    }
    // Then the lanes, for each word `c` of a lane: two rounds of lane shuffles (0x88 takes lanes
    // 0 and 2 of each operand, 0xdd lanes 1 and 3) put the four lanes of word `C * l + c` of
    // every line together, in line order.
    let c_max = 16 / W;
    for c in 0..c_max {
        let v1 = _mm512_shuffle_i32x4::<0x88>(u[c], u[c_max + c]);
        let v2 = _mm512_shuffle_i32x4::<0xdd>(u[c], u[c_max + c]);
        let w1 = _mm512_shuffle_i32x4::<0x88>(u[2 * c_max + c], u[3 * c_max + c]);
        let w2 = _mm512_shuffle_i32x4::<0xdd>(u[2 * c_max + c], u[3 * c_max + c]);
        r[c] = _mm512_shuffle_i32x4::<0x88>(v1, w1);
        r[2 * c_max + c] = _mm512_shuffle_i32x4::<0xdd>(v1, w1);
        r[c_max + c] = _mm512_shuffle_i32x4::<0x88>(v2, w2);
        r[3 * c_max + c] = _mm512_shuffle_i32x4::<0xdd>(v2, w2);
    }
    for (&v, &d) in r.iter().zip(dst).take(side) {
        if stream && d.align_offset(64) == 0 {
            _mm512_stream_si512(d.cast(), v);
        } else {
            _mm512_storeu_si512(d.cast(), v);
        }
    }
}

/// Never called: [`transposes`] is false off x86-64.
///
/// # Safety
/// None needed.
#[cfg(not(target_arch = "x86_64"))]
pub(crate) unsafe fn transpose_lines<const W: usize>(_: &[*const u8; 16], _: &[*mut u8; 16], _: bool) {
    unreachable!("transpose_lines without AVX-512")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every output line is the column of words of the input lines, for both word sizes, with
    /// plain and streaming stores, at aligned and unaligned places.
    #[test]
    fn moves_words_to_their_transposed_places() {
        if !transposes::<4>() {
            eprintln!("skipped: no AVX-512F");
            return;
        }
        fn check<const W: usize>() {
            let side = 64 / W;
            for (shift, stream) in [(0usize, false), (0, true), (3, false), (5, true)] {
                // Word j of line i is the W bytes (i * side + j) * W + b, b < W, with distinct values.
                let input: Vec<u8> = (0..64 * side + 8).map(|b| (b * 7 % 251) as u8).collect();
                let mut out = vec![0u8; 64 * side + 64 + 8];
                let base = out.as_ptr().align_offset(64) + shift;
                let src: [*const u8; 16] = std::array::from_fn(|i| input[(i % side) * 64 + 1..].as_ptr());
                let dst: [*mut u8; 16] = std::array::from_fn(|j| {
                    if j < side {
                        out[base + 64 * j..].as_mut_ptr()
                    } else {
                        std::ptr::null_mut()
                    }
                });
                // SAFETY: AVX-512F checked; 64 bytes at each pointer lie in `input` and `out`.
                unsafe { transpose_lines::<W>(&src, &dst, stream) };
                crate::backend::cpu::rows::store_fence();
                for j in 0..side {
                    for i in 0..side {
                        let got = &out[base + 64 * j + i * W..][..W];
                        let want = &input[i * 64 + 1 + j * W..][..W];
                        assert_eq!(got, want, "W {W}, shift {shift}, stream {stream}: word {i} of line {j}");
                    }
                }
            }
        }
        check::<4>();
        check::<8>();
    }
}
