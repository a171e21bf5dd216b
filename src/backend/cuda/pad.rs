//! Launcher of `kernels/pad.cu`: `sequence_pad`'s slots and lengths, one launch (two with a
//! one-element pad value, which is first repeated into a pad row).

use super::device::new_tensor;
use super::launch::{launch_1d, launch_unrolled, Args};
use super::seq_common::{device_of, level_on, word_for};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, Result};
use crate::lod::LodLevel;
use crate::tensor::Tensor;

/// A new device tensor of `dims` (`[sequences, padded, step...]`, `x`'s dtype) whose slot `i` holds
/// rows `offsets[i]..offsets[i+1]` of `x` (rows of `row_bytes`; the offsets of `level`), then
/// copies of the pad row up to `padded` rows; and the sequences' lengths, int64 `[sequences]`, made
/// on the device from the same device copy of the offsets. `pad` is on `x`'s device with one
/// element or one row of `row_bytes`. The caller has checked the offsets against `x` and that no
/// sequence is longer than `padded`.
pub fn pad_sequences(
    x: &Tensor,
    row_bytes: usize,
    level: LodLevel,
    padded: usize,
    pad: &Tensor,
    dims: Dim,
) -> Result<(Tensor, Tensor)> {
    pad_with_narrow_up_to(x, row_bytes, level, padded, pad, dims, u32::MAX as u64)
}

/// `pad_sequences`, whose kernel does its index arithmetic in 32 bits (`pad_rows_W`) where the
/// output has at most `narrow_max` words, else in 64 (`pad_rows_wide_W`); a test lowers the limit
/// to run the wide kernel on small inputs.
fn pad_with_narrow_up_to(
    x: &Tensor,
    row_bytes: usize,
    level: LodLevel,
    padded: usize,
    pad: &Tensor,
    dims: Dim,
    narrow_max: u64,
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
    let elem = x.dtype().size();
    // The pad row: the pad value itself, or its one element repeated (one small launch); none is
    // read when the output is empty.
    let row;
    let pad_row = if pad.nbytes() == row_bytes || out.nbytes() == 0 {
        pad
    } else {
        ensure!(pad.nbytes() == elem, Internal, "sequence_pad: a pad value of {} bytes", pad.nbytes());
        let mut r = new_tensor(&d, x.dtype(), Dim::new(&[row_bytes / elem])?)?;
        let args = Args::new().ptr(pad).arg(r.as_mut_ptr() as u64).arg((row_bytes / elem) as u64);
        launch_1d(&d, "pad.cu", &format!("broadcast_{elem}"), (row_bytes / elem) as u64, args)?;
        row = r;
        &row
    };
    let offsets = level_on(&d, level)?;
    let word = word_for(row_bytes, [x.as_ptr() as u64, out.as_mut_ptr() as u64, pad_row.as_ptr() as u64]);
    let row_words = (row_bytes / word) as u64;
    let total = (sequences * padded) as u64 * row_words;
    let args = Args::new()
        .ptr(x)
        .arg(out.as_mut_ptr() as u64)
        .ptr(pad_row)
        .arg(row_words)
        .arg(padded as u64)
        .buf(&offsets)
        .arg(total)
        .arg(lengths.as_mut_ptr() as u64)
        .arg(sequences as u64);
    let kernel = if total <= narrow_max { format!("pad_rows_{word}") } else { format!("pad_rows_wide_{word}") };
    launch_unrolled(&d, "pad.cu", &kernel, total.max(sequences as u64), args)?;
    Ok((out, lengths))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lod::Lod;
    use crate::ops::transfer::to_place;
    use crate::{LoDTensor, Place};

    /// The 64-bit kernels, which only outputs of 2^32 words or more reach, pad as the 32-bit ones
    /// do: every word size, empty sequences, and one sequence of the longest length.
    #[test]
    fn wide_and_narrow_kernels_pad_alike() {
        if super::super::device::devices_for_test().is_none() {
            return;
        }
        let on_device = |t: Tensor| to_place(&LoDTensor::dense(t), Place::Cuda(0)).unwrap().tensor().clone();
        let lengths = vec![3usize, 0, 5, 1, 0, 2];
        let lod = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
        let rows: usize = lengths.iter().sum();
        for row_bytes in [1usize, 2, 4, 8, 16, 48] {
            let bytes: Vec<u8> = (0..rows * row_bytes).map(|i| (i * 13 + 1) as u8).collect();
            let x = on_device(Tensor::from_bytes(DType::U8, Dim::new(&[rows, row_bytes]).unwrap(), &bytes).unwrap());
            let pad = on_device(
                Tensor::from_bytes(DType::U8, Dim::new(&[row_bytes]).unwrap(), &vec![0xEE; row_bytes]).unwrap(),
            );
            let dims = Dim::new(&[lengths.len(), 5, row_bytes]).unwrap();
            let level = lod.lod_level(0).unwrap();
            let run = |narrow_max| {
                let (out, len) = pad_with_narrow_up_to(&x, row_bytes, level, 5, &pad, dims, narrow_max).unwrap();
                let host = |t: &Tensor| {
                    to_place(&LoDTensor::dense(t.clone()), Place::Cpu).unwrap().tensor().bytes().unwrap().to_vec()
                };
                (host(&out), host(&len))
            };
            let (narrow, wide) = (run(u32::MAX as u64), run(0));
            assert_eq!(narrow, wide, "rows of {row_bytes} bytes");
            // Slot 2 holds sequence 2's five rows; slot 1 (empty) is all pad.
            assert_eq!(narrow.0[2 * 5 * row_bytes..3 * 5 * row_bytes], bytes[3 * row_bytes..8 * row_bytes]);
            assert!(narrow.0[5 * row_bytes..2 * 5 * row_bytes].iter().all(|&b| b == 0xEE));
        }
    }
}
