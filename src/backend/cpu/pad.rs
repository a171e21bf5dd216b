//! The padding kernel of `sequence_pad`: each sequence goes to the front of its fixed-size slot and
//! the rest of the slot is filled with a pad row. Bytes, so one kernel serves every dtype.

use super::pool::for_each_segment;
use crate::error::{ensure, err, Result};

/// Slot `i` of `out` (`padded_length` rows of `row_bytes`) receives rows `offsets[i]..offsets[i+1]`
/// of `src`, then copies of `pad_row` up to `padded_length` rows. The caller has checked that no
/// sequence is longer than `padded_length` and that the offsets lie within `src`.
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
    let slots = offsets.len().saturating_sub(1);
    let mut bounds = Vec::new();
    bounds.try_reserve_exact(slots + 1).map_err(|_| err!(OutOfMemory, "sequence_pad: {slots} slot bounds"))?;
    bounds.extend((0..=slots).map(|i| i * slot));
    for_each_segment(out, &bounds, |i, seg| {
        let used = (offsets[i + 1] - offsets[i]) * row_bytes;
        seg[..used].copy_from_slice(&src[offsets[i] * row_bytes..offsets[i + 1] * row_bytes]);
        if row_bytes > 0 {
            for step in seg[used..].chunks_exact_mut(row_bytes) {
                step.copy_from_slice(pad_row);
            }
        }
    })
}
