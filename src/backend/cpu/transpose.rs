//! Squares of words moved through registers: line `j` of the output is word `j` of every input
//! line, in order, for lines of 64 bytes and words of 1, 2, 4 or 8 bytes (64 x 64, 32 x 32,
//! 16 x 16 or 8 x 8 words). Unstack and stack of rows of one word along an inner axis are such
//! squares; word by word, each word took a load and a store to a line being assembled in memory,
//! whose read back as a vector then waited for those stores (benches/REPORT.md).
//!
//! The two x86 forms transpose within 128-bit lanes first (unpacks of words, then of word pairs),
//! then move whole lanes: AVX-512 a line a register, AVX2 a square in four quarters of half lines.
//! There, words of 1 or 2 bytes go as 4-byte words: the 4 / W lines of a bundle interleaved make,
//! for each column, a 4-byte word of the bundle's words in that column, so the square is one of
//! 4-byte words with bundles for lines, once for each of the 4 / W sets of columns that the
//! interleave puts in one register. Other CPUs move words of 1 or 2 bytes in 64-bit integers.

#[cfg(target_arch = "x86_64")]
use super::{has_avx2, has_avx512bw};

/// A form of the square for one word size: writes into the line at `dst[j]` word `j` of each of
/// the lines at `src[0]`, `src[1]`, ..., for `j` below `64 / W`, the square's side; with streaming
/// stores when its `bool` is true and a store is aligned to its size (not under Miri, which has
/// none). The entries past the side are not read.
///
/// # Safety
/// Each of the first `64 / W` entries of `src` is valid for reads of 64 bytes, and of `dst` for
/// writes of 64 bytes, none of them overlapping a line of `src`.
pub(crate) type Transpose = unsafe fn(&[*const u8; 64], &[*mut u8; 64], bool);

/// A form of the square, and how it stores an output line.
#[derive(Clone, Copy)]
pub(crate) struct Square {
    pub transpose: Transpose,
    /// Whether it stores each output line in two halves, one after the other (AVX2's), rather
    /// than whole (AVX-512's, a line a register) or in plain stores (the portable form's). Where
    /// the output streams, a caller may assemble whole lines first: half lines streamed straight
    /// to the output were the slower way on Zen 3, whole lines the faster on Zen 4.
    pub half_lines: bool,
}

/// The form of the square for words of `W` bytes on this CPU, chosen once by a caller for all its
/// squares: for `W` 1, 2, 4 or 8, AVX-512's (F and BW), else AVX2's; else the portable one for `W`
/// 1 or 2; else none. Rows of 4 or 8 bytes keep assembling lines without AVX2: the portable
/// squares unstacked a [4096, 512] float matrix's columns slower (2.5-2.6 ms against 1.6-1.8) and
/// stacked them faster (1.7-1.8 against 2.3-2.5), where rows of a byte took 4 ms against 17
/// (benches/REPORT.md).
pub(crate) fn transposer<const W: usize>() -> Option<Square> {
    if !matches!(W, 1 | 2 | 4 | 8) {
        return None;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx512bw() {
            return Some(Square { transpose: lines_avx512::<W>, half_lines: false });
        }
        if has_avx2() {
            return Some(Square { transpose: lines_avx2::<W>, half_lines: true });
        }
    }
    (W < 4).then_some(Square { transpose: lines_portable::<W>, half_lines: false })
}

/// A [`Transpose`] in 64-bit integers, for any CPU: the square as 8 x 8 blocks, each of 8 / W
/// rows of 8 bytes (a block's words a side), each block transposed in rounds from halves of a
/// row's 8 bytes down to single words. Plain stores: there is no portable streaming store.
unsafe fn lines_portable<const W: usize>(src: &[*const u8; 64], dst: &[*mut u8; 64], _stream: bool) {
    let rows = 8 / W;
    for bi in 0..8 {
        for bj in 0..8 {
            let mut r = [0u64; 8];
            for (i, v) in r.iter_mut().enumerate().take(rows) {
                *v = u64::from_le_bytes(src[bi * rows + i].add(8 * bj).cast::<[u8; 8]>().read_unaligned());
            }
            // In each part of `2 * bits` bits of the rows, the high half of row i trades places
            // with the low half of row i + d (d: the words in `bits`), for each i whose d-bit is
            // clear.
            let mut bits = 32;
            while bits >= 8 * W {
                let d = bits / (8 * W);
                let low: u64 = u64::MAX / ((1u64 << bits) + 1);
                for i in (0..rows).filter(|i| i & d == 0) {
                    let t = ((r[i] >> bits) ^ r[i + d]) & low;
                    r[i] ^= t << bits;
                    r[i + d] ^= t;
                }
                bits /= 2;
            }
            for (i, v) in r.iter().enumerate().take(rows) {
                dst[bj * rows + i].add(8 * bi).cast::<[u8; 8]>().write_unaligned(v.to_le_bytes());
            }
        }
    }
}

/// The output line of word `j` of 128-bit lane `lane` of an input line, or of column set `set` of
/// a bundle when `W` is below 4 (a lane of the interleave holds 4-byte words of 16 / W columns,
/// 4 of them a set).
#[cfg(target_arch = "x86_64")]
const fn column<const W: usize>(set: usize, lane: usize, j: usize) -> usize {
    let words = if W < 4 { 4 } else { 16 / W };
    (16 / W) * lane + words * set + j
}

/// The registers of the bundle `$l` (its `4 / W` lines as registers; for `W` of 4 or more, the
/// line itself in `$l[0]`), one for each set of columns: within each lane, word `j` of set `k`
/// holds the words of column `4 * k + j` of the lane, of each of the bundle's lines in order.
/// `$lo8` ... `$hi16` are one width's unpacks of bytes and 16-bit words.
#[cfg(target_arch = "x86_64")]
macro_rules! bundle {
    ($w:expr, $l:expr, $lo8:ident, $hi8:ident, $lo16:ident, $hi16:ident) => {{
        let l = $l;
        match $w {
            1 => {
                let (lo, hi) = ($lo8(l[0], l[1]), $hi8(l[0], l[1]));
                let (lo2, hi2) = ($lo8(l[2], l[3]), $hi8(l[2], l[3]));
                [$lo16(lo, lo2), $hi16(lo, lo2), $lo16(hi, hi2), $hi16(hi, hi2)]
            }
            2 => [$lo16(l[0], l[1]), $hi16(l[0], l[1]), l[2], l[3]],
            _ => l,
        }
    }};
}

/// Within each 128-bit lane of `r[..2C]` (C = 16 / W words a lane): afterwards register
/// `c + C * i` holds, in lane `l`, word `C * l + c` of lines `C * i ..= C * i + C - 1`. The same
/// steps for either register width, as `$lo32`/`$hi32` and `$lo64`/`$hi64` unpack words of 4 and
/// 8 bytes.
#[cfg(target_arch = "x86_64")]
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

/// A [`Transpose`] with a line (or a bundle's set) a register.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn lines_avx512<const W: usize>(src: &[*const u8; 64], dst: &[*mut u8; 64], stream: bool) {
    use std::arch::x86_64::*;
    // The square's words (4 or 8 bytes), its side, and the lines of a bundle.
    let word = W.max(4);
    let side = 64 / word;
    let per = 4 / W.min(4);
    let c_max = 16 / word;
    // Each line is loaded once: every bundle's sets first (kept on the stack for bytes). Built in
    // a plain loop: as the closure of `std::array::from_fn`, a bundle was at times made out of
    // line, and the unstack of uint8 columns took 1.2 times as long (benches/REPORT.md).
    let mut bundles = [[_mm512_setzero_si512(); 4]; 16];
    for (i, b) in bundles.iter_mut().enumerate().take(side) {
        let mut l = [_mm512_setzero_si512(); 4];
        for (j, x) in l.iter_mut().enumerate().take(per) {
            *x = _mm512_loadu_si512(src[per * i + j].cast());
        }
        *b = bundle!(W, l, _mm512_unpacklo_epi8, _mm512_unpackhi_epi8, _mm512_unpacklo_epi16, _mm512_unpackhi_epi16);
    }
    for set in 0..per {
        let mut r: [__m512i; 16] = std::array::from_fn(|i| bundles[i][set]);
        let u = in_lanes!(
            word,
            r,
            side,
            _mm512_unpacklo_epi32,
            _mm512_unpackhi_epi32,
            _mm512_unpacklo_epi64,
            _mm512_unpackhi_epi64
        );
        // Then the lanes, for each word `c` of a lane: two rounds of lane shuffles (0x88 takes
        // lanes 0 and 2 of each operand, 0xdd lanes 1 and 3) put the four lanes of word `C * l + c`
        // of every line together, in line order.
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
        for (q, &v) in r.iter().enumerate().take(side) {
            let d = dst[column::<W>(set, q / c_max, q % c_max)];
            if stream && !cfg!(miri) && d.align_offset(64) == 0 {
                _mm512_stream_si512(d.cast(), v);
            } else {
                _mm512_storeu_si512(d.cast(), v);
            }
        }
    }
}

/// A [`Transpose`] in four quarters for each set of columns, each a square of `half` = `32 / W`
/// words a side (W of 4 or more; 8 bundles of narrower words): the halves `b` of input lines
/// (bundles) `half * a ..` make the halves `a` of the output lines they hold.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn lines_avx2<const W: usize>(src: &[*const u8; 64], dst: &[*mut u8; 64], stream: bool) {
    use std::arch::x86_64::*;
    let word = W.max(4);
    let half = 32 / word;
    let per = 4 / W.min(4);
    let c_max = 16 / word;
    for b in 0..2 {
        // Each half line is loaded once: every bundle's sets first.
        let mut bundles = [[_mm256_setzero_si256(); 4]; 16];
        for (i, out) in bundles.iter_mut().enumerate().take(2 * half) {
            let mut l = [_mm256_setzero_si256(); 4];
            for (j, x) in l.iter_mut().enumerate().take(per) {
                *x = _mm256_loadu_si256(src[per * i + j].add(32 * b).cast());
            }
            *out =
                bundle!(W, l, _mm256_unpacklo_epi8, _mm256_unpackhi_epi8, _mm256_unpacklo_epi16, _mm256_unpackhi_epi16);
        }
        for set in 0..per {
            // Both quarters (halves `a` of the output lines) are made before any is stored, so
            // that each output line's two halves are stored one after the other: stored a
            // quarter at a time, eight lines apart, the stack of a [4096, 512] float matrix's
            // columns took 1.3 times as long on Zen 3 (benches/REPORT.md).
            let mut u = [[_mm256_setzero_si256(); 8]; 2];
            for (a, u) in u.iter_mut().enumerate() {
                let mut r = [_mm256_setzero_si256(); 8];
                for (i, v) in r.iter_mut().enumerate().take(half) {
                    *v = bundles[half * a + i][set];
                }
                *u = in_lanes!(
                    word,
                    r,
                    half,
                    _mm256_unpacklo_epi32,
                    _mm256_unpackhi_epi32,
                    _mm256_unpacklo_epi64,
                    _mm256_unpackhi_epi64
                );
            }
            // Lane 0 of registers c and C + c is word c of a quarter's lines; lane 1, word
            // C + c: lanes 2b and 2b + 1 of the input lines.
            for c in 0..c_max {
                for (lane, high) in [(2 * b, false), (2 * b + 1, true)] {
                    let line = dst[column::<W>(set, lane, c)];
                    for (a, u) in u.iter().enumerate() {
                        let v = if high {
                            _mm256_permute2x128_si256::<0x31>(u[c], u[c_max + c])
                        } else {
                            _mm256_permute2x128_si256::<0x20>(u[c], u[c_max + c])
                        };
                        let d = line.add(32 * a);
                        if stream && !cfg!(miri) && d.align_offset(32) == 0 {
                            _mm256_stream_si256(d.cast(), v);
                        } else {
                            _mm256_storeu_si256(d.cast(), v);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `form` writes each output line as the column of words of the input lines, with plain and
    /// streaming stores, at aligned and unaligned places.
    fn check<const W: usize>(form: Transpose, name: &str) {
        let side = 64 / W;
        for (shift, stream) in [(0usize, false), (0, true), (3, false), (5, true), (32, true)] {
            // Bytes that differ from their neighbours and across lines: a word moved to a wrong
            // place shows.
            let input: Vec<u8> = (0..64 * side + 8).map(|b| (b * 7 % 251) as u8).collect();
            let mut out = vec![0u8; 64 * side + 64 + 32];
            let base = out.as_ptr().align_offset(64) + shift;
            let src: [*const u8; 64] = std::array::from_fn(|i| input[(i % side) * 64 + 1..].as_ptr());
            let dst: [*mut u8; 64] =
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

    /// One form for each word size.
    type Forms = [Transpose; 4];

    /// The portable form, the x86 ones the CPU has, and the one `transposer` picks.
    #[test]
    fn moves_words_to_their_transposed_places() {
        let mut forms: Vec<(Forms, &str)> =
            vec![([lines_portable::<1>, lines_portable::<2>, lines_portable::<4>, lines_portable::<8>], "portable")];
        #[cfg(target_arch = "x86_64")]
        {
            if has_avx512bw() {
                forms.push(([lines_avx512::<1>, lines_avx512::<2>, lines_avx512::<4>, lines_avx512::<8>], "AVX-512"));
            }
            if has_avx2() {
                forms.push(([lines_avx2::<1>, lines_avx2::<2>, lines_avx2::<4>, lines_avx2::<8>], "AVX2"));
            }
        }
        let picked = [transposer::<1>(), transposer::<2>(), transposer::<4>(), transposer::<8>()]
            .map(|s| s.map(|s| s.transpose));
        if let [Some(one), Some(two), Some(four), Some(eight)] = picked {
            forms.push(([one, two, four, eight], "transposer"));
        }
        assert!(transposer::<3>().is_none() && transposer::<16>().is_none(), "no form for 3 or 16 bytes");
        for ([one, two, four, eight], name) in forms {
            check::<1>(one, name);
            check::<2>(two, name);
            check::<4>(four, name);
            check::<8>(eight, name);
        }
    }
}
