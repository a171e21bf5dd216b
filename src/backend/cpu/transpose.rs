//! Squares of words moved through registers: line `j` of the output is word `j` of every input
//! line, in order, for lines of 64 bytes and words of 4 or 8 bytes (16 x 16 or 8 x 8 words).
//! Unstack and stack of rows of one word along an inner axis are such squares; word by word, each
//! word took a load and a store to a line being assembled in memory, whose read back as a vector
//! then waited for those stores (benches/REPORT.md).
//!
//! Both forms transpose within 128-bit lanes first (unpacks of words, then of word pairs), then
//! move whole lanes: AVX-512 a line a register, AVX2 a square in four quarters of half lines.

#[cfg(target_arch = "x86_64")]
use super::{has_avx2, has_avx512};

/// A form of the square for one word size: writes into the line at `dst[j]` word `j` of each of
/// the lines at `src[0]`, `src[1]`, ..., for `j` below `64 / W`, the square's side; with streaming
/// stores when its `bool` is true and a store is aligned to its size. The entries past the side
/// are not read.
///
/// # Safety
/// Each of the first `64 / W` entries of `src` is valid for reads of 64 bytes, and of `dst` for
/// writes of 64 bytes, none of them overlapping a line of `src`.
pub(crate) type Transpose = unsafe fn(&[*const u8; 16], &[*mut u8; 16], bool);

/// The form of the square for words of `W` bytes on this CPU, chosen once by a caller for all its
/// squares: AVX-512F's or AVX2's for `W` 4 or 8, else none.
pub(crate) fn transposer<const W: usize>() -> Option<Transpose> {
    #[cfg(target_arch = "x86_64")]
    if W == 4 || W == 8 {
        if has_avx512() {
            return Some(lines_avx512::<W>);
        }
        if has_avx2() {
            return Some(lines_avx2::<W>);
        }
    }
    None
}

/// Within each 128-bit lane of `r[..2C]` (C = 16 / W words a lane): afterwards register
/// `c + C * i` holds, in lane `l`, word `C * l + c` of lines `C * i ..= C * i + C - 1`. The same
/// steps for either register width, as `$lo32`/`$hi32` and `$lo64`/`$hi64` unpack words of 4 and
/// 8 bytes.
macro_rules! in_lanes {
    ($w:expr, $r:expr, $lines:expr, $lo32:ident, $hi32:ident, $lo64:ident, $hi64:ident) => {{
        let (r, mut u) = ($r, $r);
        if $w == 4 {
            let mut t = r;
            for i in 0..$lines / 2 {
                t[2 * i] = $lo32(r[2 * i], r[2 * i + 1]);
                t[2 * i + 1] = $hi32(r[2 * i], r[2 * i + 1]);
            }
            for i in 0..$lines / 4 {
                u[4 * i] = $lo64(t[4 * i], t[4 * i + 2]);
                u[4 * i + 1] = $hi64(t[4 * i], t[4 * i + 2]);
                u[4 * i + 2] = $lo64(t[4 * i + 1], t[4 * i + 3]);
                u[4 * i + 3] = $hi64(t[4 * i + 1], t[4 * i + 3]);
            }
        } else {
            for i in 0..$lines / 2 {
                u[2 * i] = $lo64(r[2 * i], r[2 * i + 1]);
                u[2 * i + 1] = $hi64(r[2 * i], r[2 * i + 1]);
            }
        }
        u
    }};
}

/// A [`Transpose`] with a line a register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn lines_avx512<const W: usize>(src: &[*const u8; 16], dst: &[*mut u8; 16], stream: bool) {
    use std::arch::x86_64::*;
    let side = 64 / W;
    let mut r = [_mm512_setzero_si512(); 16];
    for (v, &s) in r.iter_mut().zip(src).take(side) {
        *v = _mm512_loadu_si512(s.cast());
    }
    let u = in_lanes!(
        W,
        r,
        side,
        _mm512_unpacklo_epi32,
        _mm512_unpackhi_epi32,
        _mm512_unpacklo_epi64,
        _mm512_unpackhi_epi64
    );
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

/// A [`Transpose`] in four quarters, each a square of `half` = `32 / W` words a side: the
/// halves `b` of input lines `half * a ..` make the halves `a` of output lines `half * b ..`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lines_avx2<const W: usize>(src: &[*const u8; 16], dst: &[*mut u8; 16], stream: bool) {
    use std::arch::x86_64::*;
    let half = 32 / W;
    let c_max = 16 / W;
    for b in 0..2 {
        for a in 0..2 {
            let mut r = [_mm256_setzero_si256(); 8];
            for (i, v) in r.iter_mut().enumerate().take(half) {
                *v = _mm256_loadu_si256(src[half * a + i].add(32 * b).cast());
            }
            let u = in_lanes!(
                W,
                r,
                half,
                _mm256_unpacklo_epi32,
                _mm256_unpackhi_epi32,
                _mm256_unpacklo_epi64,
                _mm256_unpackhi_epi64
            );
            // Lane 0 of registers c and C + c is word c of the quarter's lines; lane 1, word C + c.
            for c in 0..c_max {
                let words = [
                    (c, _mm256_permute2x128_si256::<0x20>(u[c], u[c_max + c])),
                    (c_max + c, _mm256_permute2x128_si256::<0x31>(u[c], u[c_max + c])),
                ];
                for (j, v) in words {
                    let d = dst[half * b + j].add(32 * a);
                    if stream && d.align_offset(32) == 0 {
                        _mm256_stream_si256(d.cast(), v);
                    } else {
                        _mm256_storeu_si256(d.cast(), v);
                    }
                }
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// `form` writes each output line as the column of words of the input lines, with plain and
    /// streaming stores, at aligned and unaligned places.
    fn check<const W: usize>(form: Transpose, name: &str) {
        let side = 64 / W;
        for (shift, stream) in [(0usize, false), (0, true), (3, false), (5, true), (32, true)] {
            // Bytes that differ from their neighbours: a word moved to a wrong place shows.
            let input: Vec<u8> = (0..64 * side + 8).map(|b| (b * 7 % 251) as u8).collect();
            let mut out = vec![0u8; 64 * side + 64 + 32];
            let base = out.as_ptr().align_offset(64) + shift;
            let src: [*const u8; 16] = std::array::from_fn(|i| input[(i % side) * 64 + 1..].as_ptr());
            let dst: [*mut u8; 16] =
                std::array::from_fn(
                    |j| if j < side { out[base + 64 * j..].as_mut_ptr() } else { std::ptr::null_mut() },
                );
            // SAFETY: the form's CPU feature was checked; 64 bytes at each pointer lie in `input`
            // and `out`.
            unsafe { form(&src, &dst, stream) };
            crate::backend::cpu::rows::store_fence();
            for j in 0..side {
                for i in 0..side {
                    let got = &out[base + 64 * j + i * W..][..W];
                    let want = &input[i * 64 + 1 + j * W..][..W];
                    assert_eq!(got, want, "{name}, W {W}, shift {shift}, stream {stream}: word {i} of line {j}");
                }
            }
        }
    }

    /// Both forms, where the CPU has them, and the one `transposer` picks.
    #[test]
    fn moves_words_to_their_transposed_places() {
        let mut forms: Vec<(Transpose, Transpose, &str)> = Vec::new();
        if has_avx512() {
            forms.push((lines_avx512::<4>, lines_avx512::<8>, "AVX-512"));
        }
        if has_avx2() {
            forms.push((lines_avx2::<4>, lines_avx2::<8>, "AVX2"));
        }
        if forms.is_empty() {
            eprintln!("skipped: neither AVX-512F nor AVX2");
            return;
        }
        forms.push((transposer::<4>().unwrap(), transposer::<8>().unwrap(), "transposer"));
        for (four, eight, name) in forms {
            check::<4>(four, name);
            check::<8>(eight, name);
        }
    }
}
