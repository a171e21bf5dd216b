//! The UTF-8 check of text: tensors of uint8 bytes whose last LoD level's sequences are strings,
//! each of which must be UTF-8 (as Arrow's `large_utf8` strings must be). Bytes that are UTF-8 as
//! a whole and have every string start at a character are UTF-8 string by string, so the bytes
//! are checked whole, in SIMD on the host (in pieces on the pool's threads when they are many) or
//! by a kernel where they lie on a device, and each string's first byte after. Only text that
//! fails is read string by string, to name the first string that breaks.

use crate::backend::cpu::pool::{for_each_segment_with_work, num_threads, PARALLEL_MIN_BYTES};
use crate::error::{err, Result};
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use std::borrow::Cow;

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
        let offsets = x.lod().levels().last().map_or(&[][..], |l| &l[..]);
        let bytes = match place {
            Place::Cpu => {
                let bytes = t.bytes()?;
                if is_utf8_strings(bytes, offsets)? {
                    continue;
                }
                Cow::Borrowed(bytes)
            }
            Place::Cuda(_) => {
                let mut host = Vec::new();
                host.try_reserve_exact(t.nbytes())
                    .map_err(|_| err!(OutOfMemory, "{arg}: {} bytes of it cannot be read to the host", t.nbytes()))?;
                host.resize(t.nbytes(), 0);
                if !host.is_empty() {
                    crate::backend::cuda::copy_bytes_to_host(t, &mut host)?;
                }
                Cow::Owned(host)
            }
        };
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

/// Whether `bytes` are UTF-8 and every offset below their end starts a character.
fn is_utf8_strings(bytes: &[u8], offsets: &[usize]) -> Result<bool> {
    let starts_char = |o: usize| o >= bytes.len() || !continues(bytes[o]);
    Ok(is_utf8(bytes)? && offsets.iter().all(|&o| starts_char(o)))
}

/// Whether `b` continues a character (`10xxxxxx`).
fn continues(b: u8) -> bool {
    (b as i8) < -64
}

/// Whether `bytes` are UTF-8 as a whole: checked in one piece a thread of the pool when they are
/// many. A piece starts at the first byte from its share's start that does not continue a
/// character, looking at most 3 bytes on (UTF-8 never has 4 continuation bytes in a row, so a
/// piece that starts on one fails, as the whole does). Pieces so cut are each UTF-8 exactly when
/// the whole is.
fn is_utf8(bytes: &[u8]) -> Result<bool> {
    let len = bytes.len();
    let pieces = if len < PARALLEL_MIN_BYTES { 1 } else { num_threads()? };
    if pieces == 1 {
        return Ok(simdutf8::basic::from_utf8(bytes).is_ok());
    }
    let mut bounds = lists::with_capacity(pieces + 1, "UTF-8 check pieces")?;
    bounds.push(0);
    for k in 1..pieces {
        let mut at = len / pieces * k;
        for _ in 0..3 {
            if at < len && continues(bytes[at]) {
                at += 1;
            }
        }
        bounds.push(at);
    }
    bounds.push(len);
    let mut ok = lists::filled(pieces, false, "UTF-8 check pieces")?;
    let each = lists::collect(0..pieces + 1, "UTF-8 check pieces")?;
    for_each_segment_with_work(&mut ok, &each, len, |i, out| {
        out[0] = simdutf8::basic::from_utf8(&bytes[bounds[i]..bounds[i + 1]]).is_ok();
    })?;
    Ok(ok.iter().all(|&b| b))
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

    /// The pieces' check agrees with one check of the whole on text large enough to be cut, with a
    /// character (of each length) across every cut or a broken byte anywhere, on 1 to 5 threads.
    #[test]
    fn pieces_agree_with_the_whole() {
        let text: Vec<u8> = "a é 語 😀 ".bytes().cycle().take(PARALLEL_MIN_BYTES * 3 + 7).collect();
        let mut cases = vec![text.clone()];
        for at in [0, 1, text.len() / 3, text.len() / 2 + 1, text.len() - 1] {
            for bad in [0x80u8, 0xC0, 0xED, 0xF5, 0xFF] {
                let mut broken = text.clone();
                broken[at] = bad;
                cases.push(broken);
            }
        }
        for threads in 1..=5 {
            crate::backend::cpu::pool::set_num_threads(threads).unwrap();
            for case in &cases {
                assert_eq!(is_utf8(case).unwrap(), std::str::from_utf8(case).is_ok(), "{threads} threads");
            }
            // Every cut at every place within a character: the text shifted a byte at a time.
            for shift in 0..4 {
                let shifted = &text[shift..text.len() - 4 + shift];
                assert_eq!(is_utf8(shifted).unwrap(), std::str::from_utf8(shifted).is_ok());
            }
        }
        crate::backend::cpu::pool::set_num_threads(0).unwrap();
    }
}
