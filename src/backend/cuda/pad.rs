//! Launcher of `kernels/pad.cu`: `sequence_pad`'s slots and lengths, one launch.

use super::device::new_tensor;
use super::launch::{index_width, launch_unrolled, Args};
use super::seq_common::{device_of, level_on, word_for};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, Result};
use crate::lod::LodLevel;
use crate::tensor::Tensor;

/// A new device tensor of `dims` (`[sequences, padded, step...]`, `x`'s dtype) whose slot `i` holds
/// rows `offsets[i]..offsets[i+1]` of `x` (rows of `row_bytes`; the offsets of `level`), then
/// copies of the pad row (or of its one element) up to `padded` rows; and the sequences' lengths,
/// int64 `[sequences]`, made on the device from the same device copy of the offsets. `pad` is on
/// `x`'s device with one element or one row of `row_bytes`. The caller has checked the offsets
/// against `x` and that no sequence is longer than `padded`.
pub fn pad_sequences(
    x: &Tensor,
    row_bytes: usize,
    level: LodLevel,
    padded: usize,
    pad: &Tensor,
    dims: Dim,
) -> Result<(Tensor, Tensor)> {
    let d = device_of(x, "sequence_pad")?;
    let mut out = new_tensor(&d, x.dtype(), dims)?;
    let sequences = level.offsets().len().saturating_sub(1);
    let mut lengths = new_tensor(&d, DType::I64, Dim::new(&[sequences])?)?;
    ensure!(
        sequences * padded * row_bytes == out.nbytes(),
        Internal,
        "sequence_pad: {sequences} slots of {padded} rows of {row_bytes} bytes for {} bytes",
        out.nbytes()
    );
    if sequences == 0 {
        return Ok((out, lengths));
    }
    // A one-element pad value is repeated by the kernel itself (no pad row made first); none is
    // read when the output is empty.
    let pad_elem = if pad.nbytes() == row_bytes || out.nbytes() == 0 {
        0
    } else {
        ensure!(pad.nbytes() == x.dtype().size(), Internal, "sequence_pad: a pad value of {} bytes", pad.nbytes());
        pad.nbytes() as u32
    };
    let offsets = level_on(&d, level)?;
    let word = word_for(row_bytes, [x.as_ptr() as u64, out.as_mut_ptr() as u64, pad.as_ptr() as u64]);
    ensure!(
        word >= pad_elem as usize,
        Internal,
        "sequence_pad: a word of {word} bytes for a pad element of {pad_elem}"
    );
    let row_words = (row_bytes / word) as u64;
    let total = (sequences * padded) as u64 * row_words;
    let args = Args::new()
        .ptr(x)
        .arg(out.as_mut_ptr() as u64)
        .ptr(pad)
        .arg(pad_elem)
        .arg(row_words)
        .arg(padded as u64)
        .buf(&offsets)
        .arg(total)
        .arg(lengths.as_mut_ptr() as u64)
        .arg(sequences as u64);
    let kernel = format!("pad_rows_{word}{}", index_width(total));
    launch_unrolled(&d, "pad.cu", &kernel, total.max(sequences as u64), args)?;
    Ok((out, lengths))
}
