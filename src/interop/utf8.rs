//! The UTF-8 check of text: tensors of uint8 bytes whose last LoD level's sequences are strings,
//! each of which must be UTF-8 (as Arrow's `large_utf8` strings must be). Bytes that are UTF-8 as
//! a whole and have every string start at a character are UTF-8 string by string, so the bytes
//! are checked whole, with each string's first byte: on the host in SIMD, 4 KiB at a time with the
//! strings that start there (in pieces on the pool's threads when they are many); on a device by a
//! kernel where they lie. Only text that fails is read string by string, to name the first string
//! that breaks.

use super::host_reads::read_bytes;
use crate::backend::cpu::pool::{for_each_segment_with_work, num_threads, PARALLEL_MIN_BYTES};
use crate::error::{err, Result};
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;

/// Checks that every string of each of `texts` (a 1-d uint8 tensor with a LoD, all of them on one
/// place, each with its name for errors) is UTF-8. On a device the texts are checked there
/// together, and the call reads back one count: it returns whether it waited for the device that
/// way, after which the work queued there before the call has finished.
///
/// Errors: `InvalidArgument` naming the first text, string and byte that is not UTF-8;
/// `OutOfMemory` (no device memory for the check, or no host memory for a copy of a device's text
/// that is not UTF-8); `Internal` for a check of the bytes whole that fails where no string does,
/// or a CUDA driver failure.
pub(crate) fn check_texts(texts: &[(&LoDTensor, String)]) -> Result<bool> {
    let Some(place) = texts.first().map(|(x, _)| x.tensor().place()) else { return Ok(false) };
    if place != Place::Cpu {
        let levels =
            lists::try_collect(texts.len(), texts.iter().map(|(x, _)| Ok((x.tensor(), last_level(x)?))), "texts")?;
        if crate::backend::cuda::are_utf8_strings(&levels)? {
            return Ok(true);
        }
    }
    for (x, arg) in texts {
        let t = x.tensor();
        let level = last_level(x)?;
        let offsets = level.offsets();
        if place == Place::Cpu && is_utf8_strings(t.bytes()?, offsets)? {
            continue;
        }
        // SAFETY: the tensor's own bytes, on its place.
        let bytes = unsafe { read_bytes(place, t.as_ptr().cast(), 0, t.nbytes(), arg)? };
        if let Some((i, at)) = first_broken(&bytes, offsets) {
            let level = x.lod().num_levels() - 1;
            let (start, end) = (offsets[i], offsets[i + 1]);
            return Err(err!(
                InvalidArgument,
                "{arg}: sequence {i} of LoD level {level} (bytes {start}..{end}) is not UTF-8 at byte {at}"
            ));
        }
        if place == Place::Cpu {
            return Err(err!(Internal, "{arg}: the UTF-8 check of the bytes whole failed, but every string is UTF-8"));
        }
    }
    match place {
        Place::Cpu => Ok(false),
        Place::Cuda(_) => Err(err!(Internal, "the device's UTF-8 check of the text failed, but every string is UTF-8")),
    }
}

/// The last LoD level of a text, which the exports have checked it to have.
fn last_level(x: &LoDTensor) -> Result<crate::lod::LodLevel<'_>> {
    x.lod().lod_level(x.lod().num_levels().checked_sub(1).ok_or_else(|| err!(Internal, "text without a LoD"))?)
}

/// Bytes checked at a time: each block's strings' first bytes are checked while the block is still
/// in the core's cache, so the bytes are read from memory once.
const BLOCK: usize = 4096;

/// Whether `bytes` are UTF-8 and every offset below their end starts a character: in one piece a
/// thread of the pool when they are many, each piece in blocks.
fn is_utf8_strings(bytes: &[u8], offsets: &[usize]) -> Result<bool> {
    let len = bytes.len();
    let pieces = if len < PARALLEL_MIN_BYTES { 1 } else { num_threads()? };
    if pieces == 1 {
        return Ok(piece_is_utf8_strings(bytes, 0..len, offsets));
    }
    let mut bounds = lists::with_capacity(pieces + 1, "UTF-8 check pieces")?;
    bounds.push(0);
    for k in 1..pieces {
        bounds.push(char_start_from(bytes, len / pieces * k, len));
    }
    bounds.push(len);
    let mut ok = lists::filled(pieces, false, "UTF-8 check pieces")?;
    let each = lists::collect(0..pieces + 1, "UTF-8 check pieces")?;
    for_each_segment_with_work(&mut ok, &each, len + std::mem::size_of_val(offsets), |i, out| {
        out[0] = piece_is_utf8_strings(bytes, bounds[i]..bounds[i + 1], offsets);
    })?;
    Ok(ok.iter().all(|&b| b))
}

/// Whether `bytes[range]` (which starts at a character, or at the start of the bytes) are UTF-8,
/// and every offset within the range starts a character.
fn piece_is_utf8_strings(bytes: &[u8], range: std::ops::Range<usize>, offsets: &[usize]) -> bool {
    let mut o = offsets.partition_point(|&o| o < range.start);
    let mut start = range.start;
    while start < range.end {
        let end = char_start_from(bytes, start.saturating_add(BLOCK), range.end);
        if simdutf8::basic::from_utf8(&bytes[start..end]).is_err() {
            return false;
        }
        while o < offsets.len() && offsets[o] < end {
            if continues(bytes[offsets[o]]) {
                return false;
            }
            o += 1;
        }
        start = end;
    }
    true
}

/// The first byte from `at` on that does not continue a character, looking at most 3 bytes on,
/// and at most `end`. UTF-8 never has 4 continuation bytes in a row, so bytes cut there are each
/// UTF-8 exactly when the whole is: a part that starts on a continuation byte fails, as the whole
/// does.
fn char_start_from(bytes: &[u8], mut at: usize, end: usize) -> usize {
    for _ in 0..3 {
        if at < end && continues(bytes[at]) {
            at += 1;
        }
    }
    at.min(end)
}

/// Whether `b` continues a character (`10xxxxxx`).
fn continues(b: u8) -> bool {
    (b as i8) < -64
}

/// The first string of `offsets` over `bytes` that is not UTF-8, and the byte where it breaks.
fn first_broken(bytes: &[u8], offsets: &[usize]) -> Option<(usize, usize)> {
    offsets
        .windows(2)
        .enumerate()
        .find_map(|(i, w)| std::str::from_utf8(&bytes[w[0]..w[1]]).err().map(|e| (i, w[0] + e.valid_up_to())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings by `offsets` over `bytes`, each checked alone: what the check must say.
    fn each_is_utf8(bytes: &[u8], offsets: &[usize]) -> bool {
        offsets.windows(2).all(|w| std::str::from_utf8(&bytes[w[0]..w[1]]).is_ok())
    }

    /// The check in pieces and blocks agrees with a check string by string, on text large enough
    /// to be cut: characters of every length across each cut between pieces and blocks (the text
    /// shifted a byte at a time), a broken byte at a cut or anywhere, strings that start inside a
    /// character, on 1 to 5 threads.
    #[test]
    fn pieces_and_blocks_agree_with_a_check_string_by_string() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut below = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let unit = "a é 語 😀 ";
        let text = (unit.repeat(PARALLEL_MIN_BYTES * 3 / unit.len()) + "seven b").into_bytes();
        let len = text.len();
        let chars: Vec<usize> = (0..len).filter(|&i| !continues(text[i])).chain([len]).collect();
        // Strings at characters, a few hundred of them, empty ones included.
        let mut at_chars: Vec<usize> = (0..300).map(|_| chars[below(chars.len())]).chain([0, 0, len]).collect();
        at_chars.sort_unstable();
        assert!(each_is_utf8(&text, &at_chars));
        let mut cases = vec![(text.clone(), at_chars.clone()), (text.clone(), vec![0, len])];
        for _ in 0..6 {
            let mut inside = at_chars.clone();
            let k = 1 + below(inside.len() - 2);
            inside[k] = (inside[k - 1]..=inside[k + 1]).find(|&i| i < len && continues(text[i])).unwrap_or(inside[k]);
            cases.push((text.clone(), inside));
        }
        let cuts = [0, 1, BLOCK - 1, BLOCK, BLOCK + 1, len / 2, len / 2 + 1, len / 3, len / 4 * 3, len - 1];
        for at in cuts.into_iter().chain((0..10).map(|_| below(len))) {
            for bad in [0x80u8, 0xC0, 0xE0, 0xED, 0xF4, 0xF5, 0xFF] {
                let mut broken = text.clone();
                broken[at] = bad;
                cases.push((broken, at_chars.clone()));
            }
        }
        for threads in 1..=5 {
            crate::backend::cpu::pool::set_num_threads(threads).unwrap();
            let mut refused = 0;
            for (bytes, offsets) in &cases {
                let want = each_is_utf8(bytes, offsets);
                assert_eq!(is_utf8_strings(bytes, offsets).unwrap(), want, "{threads} threads");
                refused += usize::from(!want);
            }
            assert!(refused > cases.len() / 2, "{refused} of {} cases refused", cases.len());
            for shift in 0..4 {
                let shifted = &text[shift..len - 4 + shift];
                let whole = [0, shifted.len()];
                assert_eq!(is_utf8_strings(shifted, &whole).unwrap(), std::str::from_utf8(shifted).is_ok());
            }
        }
        crate::backend::cpu::pool::set_num_threads(0).unwrap();
    }
}
