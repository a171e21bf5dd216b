//! The kernels of `sequence_pad` and `sequence_unpad`: each sequence goes to the front of its
//! fixed-size slot and the rest of the slot is filled with a pad row, and back. Bytes, so one
//! kernel serves every dtype.

use super::pool::{for_each_row_chunk, for_each_sequence_rows_chunk};
use super::rows::{copy, copy_pieces, store_fence, streams, TASK_BYTES};
use crate::error::{ensure, Result};

/// The padding is written from a run of pad rows at least this long, not row by row: a call per
/// row of a few bytes (a padded id column) costs far more than the bytes.
const PATTERN_MIN_BYTES: usize = 4096;

/// Slots of this many bytes or more are far enough apart that each starts a new read stream, which
/// the unpad copy prefetches for itself; below it the slots read as one stream, which the
/// hardware follows, and the prefetch's work a piece cost more than the piece.
const SPARSE_SLOT_BYTES: usize = 1024;

/// Slot `i` of `out` (`padded_length` rows of `row_bytes`) receives rows `offsets[i]..offsets[i+1]`
/// of `src`, then copies of `pad_row` up to `padded_length` rows. The caller has checked that no
/// sequence is longer than `padded_length` and that the offsets lie within `src`. Large outputs
/// of large slots are written with streaming stores, by the row gathers' rule (`rows::streams`).
pub fn pad_sequences(
    src: &[u8],
    row_bytes: usize,
    offsets: &[usize],
    padded_length: usize,
    pad_row: &[u8],
    out: &mut [u8],
) -> Result<()> {
    ensure!(pad_row.len() == row_bytes, Internal, "pad row of {} bytes for rows of {row_bytes}", pad_row.len());
    let slot = padded_length * row_bytes;
    // Whole pad rows, so every piece of padding (a whole number of rows) is a prefix of it.
    let pattern = pad_row.repeat(PATTERN_MIN_BYTES.div_ceil(row_bytes.max(1)).min(padded_length));
    let stream = streams(out.len(), offsets.len().saturating_sub(1));
    for_each_row_chunk(out, slot, TASK_BYTES.div_ceil(slot.max(1)), |slots, seg| {
        for (i, seg) in slots.zip(seg.chunks_exact_mut(slot)) {
            let used = (offsets[i + 1] - offsets[i]) * row_bytes;
            copy(&mut seg[..used], &src[offsets[i] * row_bytes..offsets[i + 1] * row_bytes], stream);
            for piece in seg[used..].chunks_mut(pattern.len().max(1)) {
                copy(piece, &pattern[..piece.len()], stream);
            }
        }
        if stream {
            store_fence();
        }
    })
}

/// `out[i] = offsets[i + 1] - offsets[i]`: sequence_pad's Length, written once, in chunks on the
/// pool (a batch of millions of sequences has a Length of tens of MiB).
pub fn sequence_lengths(offsets: &[usize], out: &mut [i64]) -> Result<()> {
    ensure!(out.len() + 1 == offsets.len(), Internal, "{} lengths for {} offsets", out.len(), offsets.len());
    let per_task = TASK_BYTES / std::mem::size_of::<i64>();
    for_each_row_chunk(out, 1, per_task, |seqs, seg| {
        for (o, w) in seg.iter_mut().zip(offsets[seqs.start..=seqs.end].windows(2)) {
            *o = (w[1] - w[0]) as i64;
        }
    })
}

/// The first `offsets[i + 1] - offsets[i]` rows of slot `i` of `src` (slots of `padded_length`
/// rows of `row_bytes`) into `out` at row `offsets[i]`: sequence_unpad's rows. The caller has
/// checked that no sequence is longer than `padded_length`. Each task copies its sequences with no
/// list of the pieces (for sequences of a few rows such a list cost more than the rows;
/// benches/REPORT.md), from slots of `SPARSE_SLOT_BYTES` or more as one gather of pieces
/// prefetched ahead of the copy.
pub fn unpad_sequences(
    src: &[u8],
    row_bytes: usize,
    offsets: &[usize],
    padded_length: usize,
    out: &mut [u8],
) -> Result<()> {
    let sequences = offsets.len() - 1;
    let slot = padded_length * row_bytes;
    ensure!(
        sequences.checked_mul(slot) == Some(src.len()) && offsets[sequences].checked_mul(row_bytes) == Some(out.len()),
        Internal,
        "unpad: {sequences} slots of {slot} bytes in {} bytes, {} rows of {row_bytes} bytes in {}",
        src.len(),
        offsets[sequences],
        out.len()
    );
    // Each slot counted as a run of its own: full slots continue the one before, so the runs are
    // at least this long, and streaming is never chosen for runs shorter than it needs.
    let stream = streams(out.len(), sequences);
    for_each_sequence_rows_chunk(out, offsets, row_bytes, |seqs, seg| {
        let first = seqs.start;
        let piece = |k: usize| {
            let i = first + k;
            &src[i * slot..i * slot + (offsets[i + 1] - offsets[i]) * row_bytes]
        };
        if slot < SPARSE_SLOT_BYTES {
            let mut at = 0;
            for k in 0..seqs.len() {
                let p = piece(k);
                copy(&mut seg[at..at + p.len()], p, stream);
                at += p.len();
            }
        } else {
            copy_pieces(seqs.len(), piece, seg, stream);
        }
        if stream {
            store_fence();
        }
    })
}
