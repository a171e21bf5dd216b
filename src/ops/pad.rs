//! `sequence_pad` and `sequence_unpad` (spec §6): between a one-level LoDTensor and a dense
//! `[sequences, padded_length, ...]` tensor plus the lengths. Both only move rows, so they work for
//! every dtype (Paddle's CPU kernels list float32/float64/int32/int64).

use super::common_place;
use super::support::{gather_into_new, lod_of_built_level};
use crate::backend::cpu::pad::{pad_sequences, sequence_lengths, unpad_sequences};
use crate::backend::cuda;
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;

/// Paddle's `sequence_pad`. Returns `(out, length)`: `out` is `[sequences, padded_length,
/// x.dims[1..]...]` (no LoD), slot `i` holding sequence `i` of `x` followed by copies of
/// `pad_value`; `length` is int64 `[sequences]`, the sequence lengths.
///
/// `x` has rank >= 2 and exactly one LoD level (our rule: Paddle accepts more levels but then
/// returns rows that disagree with `length`). `pad_value` has `x`'s dtype and either one element
/// (used for every element of a padding step) or dims `x.dims[1..]` (one whole step); its LoD is
/// ignored. `padded_length` is -1 (the longest sequence) or at least the longest sequence. On a
/// CUDA device both outputs are on it.
pub fn sequence_pad(x: &LoDTensor, pad_value: &LoDTensor, padded_length: i64) -> Result<(LoDTensor, LoDTensor)> {
    let place = common_place(&[("x", x.tensor()), ("pad_value", pad_value.tensor())])?;
    ensure!(
        x.dims().ndim() >= 2,
        InvalidArgument,
        "x: has dims {:?} (rank {}); sequence_pad needs rank >= 2 (rows x step shape)",
        x.dims(),
        x.dims().ndim()
    );
    ensure!(
        x.dims().ndim() < crate::dim::MAX_DIMS,
        InvalidArgument,
        "x: has {} dims; the padded output has one more, and a tensor has at most {}",
        x.dims().ndim(),
        crate::dim::MAX_DIMS
    );
    ensure!(
        x.lod().num_levels() == 1,
        InvalidLod,
        "x: has {} LoD levels; sequence_pad takes x with exactly 1 (our rule: with more levels Paddle's Out and Length disagree)",
        x.lod().num_levels()
    );
    let (xt, pt) = (x.tensor(), pad_value.tensor());
    ensure!(
        pt.dtype() == xt.dtype(),
        InvalidArgument,
        "pad_value: dtype {} differs from x's {}; they must be the same",
        pt.dtype(),
        xt.dtype()
    );
    let step = &x.dims().as_slice()[1..];
    let width = x.dims().row_width();
    ensure!(
        pt.numel() == 1 || pt.dims().as_slice() == step,
        InvalidArgument,
        "pad_value: has dims {:?}; it must have 1 element or the dims of one step of x, {step:?}",
        pt.dims()
    );
    let level = x.lod().lod_level(0)?;
    let offsets = level.offsets();
    let sequences = offsets.len().saturating_sub(1);
    let lengths = || offsets.iter().skip(1).zip(offsets).map(|(end, start)| end - start);
    // The LoD's own measure (made once per LoD); which sequence is the longest is looked up only
    // for the error.
    let longest = level.longest();
    let padded = match padded_length {
        -1 => longest,
        n if n < -1 => {
            return Err(err!(
                InvalidArgument,
                "padded_length: {n} is negative; use -1 (the longest sequence) or a length"
            ))
        }
        n => {
            let n = usize::try_from(n).map_err(|_| err!(InvalidArgument, "padded_length: {n} is too large"))?;
            if n < longest {
                let longest_at = lengths().position(|len| len == longest).unwrap_or(0);
                return Err(err!(
                    InvalidArgument,
                    "padded_length: {n} is less than the longest sequence (sequence {longest_at} has {longest} rows)"
                ));
            }
            n
        }
    };
    let mut dims = vec![sequences, padded];
    dims.extend_from_slice(step);
    let dims = Dim::new(&dims)?;
    let (out, length) = match place {
        Place::Cpu => {
            let mut out = Tensor::uninit(xt.dtype(), dims)?;
            let pad_bytes = pt.bytes()?;
            let pad_row: Vec<u8> = if pt.numel() == 1 { pad_bytes.repeat(width) } else { pad_bytes.to_vec() };
            pad_sequences(xt.bytes()?, xt.row_bytes(), offsets, padded, &pad_row, out.bytes_mut()?)?;
            let mut length = Tensor::uninit(DType::I64, Dim::new(&[sequences])?)?;
            sequence_lengths(offsets, length.as_mut_slice::<i64>()?)?;
            (out, length)
        }
        // The lengths are made on the device, from the offsets' device copy the slots' launch reads.
        Place::Cuda(_) => cuda::pad_sequences(xt, xt.row_bytes(), level, padded, pt, dims)?,
    };
    Ok((LoDTensor::dense(out), LoDTensor::dense(length)))
}

/// Paddle's `sequence_unpad`: the first `length[i]` steps of row `i` of `x` (`[N, L, ...]`, rank >=
/// 2, LoD ignored), concatenated. The result is `[sum, x.dims[2..]...]` (`[sum, 1]` for a 2-D `x`)
/// with the one-level LoD of `length` (none when `N` is 0). `length` is int64 (or int32), rank 1,
/// `N` values each in `[0, L]`, on `x`'s place; a device `length` is copied to the host to be
/// checked (a small copy that waits for the device's queued work).
pub fn sequence_unpad(x: &LoDTensor, length: &LoDTensor) -> Result<LoDTensor> {
    let place = common_place(&[("x", x.tensor()), ("length", length.tensor())])?;
    let d = x.dims().as_slice();
    ensure!(
        d.len() >= 2,
        InvalidArgument,
        "x: has dims {d:?} (rank {}); sequence_unpad needs rank >= 2 (sequences x padded length)",
        d.len()
    );
    let lt = length.tensor();
    ensure!(
        lt.dims().ndim() == 1 && lt.dims().as_slice()[0] == d[0],
        InvalidArgument,
        "length: has dims {:?}; it must be [{}], one length per row of x",
        lt.dims(),
        d[0]
    );
    if !matches!(lt.dtype(), DType::I64 | DType::I32) {
        return Err(err!(Unsupported, "length: dtype {} is not supported here; supported: int64, int32", lt.dtype()));
    }
    // A device `length` is read on the host (a small copy that waits for the device's queue):
    // the lengths decide the output's size and LoD.
    let host;
    let lt = match place {
        Place::Cpu => lt,
        Place::Cuda(_) => {
            host = cuda::copy_to_host(lt)?;
            &host
        }
    };
    let padded = d[1];
    let lod = match lt.dtype() {
        DType::I64 => unpad_lod(lt.as_slice::<i64>()?, padded)?,
        _ => unpad_lod(lt.as_slice::<i32>()?, padded)?,
    };
    let mut dims = vec![lod.rows().unwrap_or(0)];
    if d.len() == 2 {
        dims.push(1);
    } else {
        dims.extend_from_slice(&d[2..]);
    }
    let dims = Dim::new(&dims)?;
    let step_bytes = d[2..].iter().product::<usize>() * x.tensor().dtype().size();
    let tensor = match (place, lod.levels().first()) {
        // No sequences: a tensor of no rows on x's place.
        (_, None) => gather_into_new(x.tensor(), step_bytes, &[], dims)?,
        // Each slot's rows found from the output's offsets, which its LoD then keeps on the device.
        (Place::Cuda(_), Some(_)) => cuda::unpad_rows(x.tensor(), step_bytes, padded, lod.lod_level(0)?, dims)?,
        (Place::Cpu, Some(offsets)) => {
            let mut out = Tensor::uninit(x.tensor().dtype(), dims)?;
            unpad_sequences(x.tensor().bytes()?, step_bytes, offsets, padded, out.bytes_mut()?)?;
            out
        }
    };
    LoDTensor::new(tensor, lod)
}

/// sequence_unpad's output LoD from its `lengths`, each checked to lie in `[0, padded]` as its
/// offset is written: one pass over millions of lengths, not a check and then a sum.
fn unpad_lod<T: Copy + Into<i64>>(lengths: &[T], padded: usize) -> Result<Lod> {
    let n = lengths.len();
    let mut offsets = lists::with_capacity(n.saturating_add(1), "output LoD")
        .map_err(|_| err!(OutOfMemory, "output LoD: {n} sequences cannot be listed"))?;
    offsets.push(0usize);
    let mut end = 0usize;
    for (i, &v) in lengths.iter().enumerate() {
        let v: i64 = v.into();
        ensure!(v >= 0, InvalidArgument, "length: length[{i}] = {v} is negative");
        ensure!(
            v as u64 <= padded as u64,
            InvalidArgument,
            "length: length[{i}] = {v} is more than the padded length {padded} of x (dims[1])"
        );
        // Each length is at most `padded`, and the product of x's non-zero dims, `sequences x
        // padded` among them, fits in i64 (Dim's rule), so the sum does too.
        end += v as usize;
        offsets.push(end);
    }
    Ok(lod_of_built_level(offsets))
}
