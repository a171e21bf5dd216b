//! The smaller sequence operators of Paddle (semantics spec §6): softmax, concat, slice, reverse,
//! mask, enumerate, erase, reshape and conv. Each checks its arguments, naming the argument, the index
//! and the rule, then runs the host kernel.
//!
//! Rules of our own (where Paddle misbehaves or is silent):
//! - `sequence_softmax` subtracts each sequence's maximum (Paddle's CPU kernel overflows).
//! - `sequence_concat` reads level 0 as absolute rows (Paddle reads its offsets as rows, which is
//!   only right for 1-level inputs); the output has one level.
//! - `sequence_slice` also takes int32 offsets/lengths, shaped `[N]` or `[N, 1]`.
//! - `sequence_mask` with `maxlen < 0` uses `max(0, max(trunc(x)))`, so empty `x` gives 0.
//! - `sequence_enumerate` windows stay inside the sequences of the last LoD level (Paddle reads
//!   level 0 as rows, the same for 1-level inputs).
//! - Byte-moving operators (concat, slice, reverse, reshape) accept every dtype.
//!
//! On a CUDA place (all inputs on one device; mixed places are an error naming both) every op runs
//! on the device and, but for softmax (to float rounding), gives the CPU's result exactly (conv:
//! see `sequence_conv`). The LoD and attributes live on the host; inputs whose values decide the
//! output's shape are read there: `sequence_slice`'s offset/length (both in one copy),
//! `sequence_erase`'s x (see there) and `sequence_mask`'s x when `maxlen < 0` are copied to the
//! host (a synchronous copy of a small index tensor).

use super::common_place;
use super::host_inputs::{all_on_host, on_host};
use super::support::{ensure_column, gather_into_new, int_column, last_level, one_level, row_runs};
use crate::backend::cpu::convert::{chunk_bounds, dispatch_any_dtype, elements_mut, CHUNK};
use crate::backend::cpu::rows::gather_row_ranges;
use crate::backend::cpu::sequence as kernels;
use crate::backend::cpu::softmax::softmax_segments;
use crate::backend::cuda;
use crate::dim::{Dim, MAX_DIMS};
use crate::dtype::{dispatch_dtype, DType, Scalar};
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;
use std::borrow::Cow;

/// Softmax within each sequence of the last LoD level: `out[r] = exp(x[r] - m) / Σ exp(x[s] - m)`
/// over the rows `s` of r's sequence, `m` their maximum. `x` holds one element per row (`[N]` or
/// `[N, 1]`); float16, bfloat16, float32 (exponentials in f32, sums in f64) and float64. Same shape,
/// LoD and place as `x` (on a CUDA device: equal to float rounding, the sum being taken in another
/// order).
pub fn sequence_softmax(x: &LoDTensor) -> Result<LoDTensor> {
    const OP: &str = "sequence_softmax";
    let place = common_place(&[("x", x.tensor())])?;
    let level = last_level(x, "x", OP)?;
    let offsets = level.offsets();
    ensure_column(x.tensor(), "x", OP)?;
    let out = match place {
        crate::place::Place::Cpu => {
            let mut out = Tensor::uninit(x.tensor().dtype(), *x.dims())?;
            dispatch_dtype!(x.tensor().dtype(), "x", [F16, BF16, F32, F64], |T| {
                let (xs, out) = (x.tensor().as_slice::<T>()?, out.as_mut_slice::<T>()?);
                match x.tensor().dtype() {
                    DType::F64 => softmax_segments::<T, f64>(xs, offsets, false, out),
                    _ => softmax_segments::<T, f32>(xs, offsets, false, out),
                }
            })?;
            out
        }
        crate::place::Place::Cuda(_) => {
            // The CPU path's dtype check, with its message.
            dispatch_dtype!(x.tensor().dtype(), "x", [F16, BF16, F32, F64], |T| Ok(()))?;
            crate::backend::cuda::softmax_segments(x.tensor(), crate::backend::cuda::Segments::Bounds(level), false)?
        }
    };
    LoDTensor::new(out, x.lod().clone())
}

/// Concatenates sequence by sequence: output sequence `i` is sequence `i` (of LoD level 0) of
/// `xs[0]`, then of `xs[1]`, ... At least 2 inputs, each with a LoD and the same number of level-0
/// sequences, the same dtype and the same row width (product of `dims[1..]`); the output takes
/// `xs[0]`'s trailing dims and has one LoD level (the sums of the inputs' sequence row counts).
/// Any dtype.
pub fn sequence_concat(xs: &[&LoDTensor]) -> Result<LoDTensor> {
    const OP: &str = "sequence_concat";
    ensure!(xs.len() >= 2, InvalidArgument, "xs: {OP} needs at least 2 inputs, got {}", xs.len());
    let names = lists::collect((0..xs.len()).map(|i| format!("xs[{i}]")), "xs: names")?;
    let tensors = lists::collect(names.iter().map(String::as_str).zip(xs.iter().map(|x| x.tensor())), "xs")?;
    let place = common_place(&tensors)?;
    let first = xs[0].tensor();
    // Each input's level-0 sequences in rows: its level itself when it has one level (no copy of
    // millions of offsets), else the absolute offsets made for this call.
    let abs = xs.iter().enumerate().map(|(j, x)| {
        last_level(x, &names[j], OP)?;
        Ok(match x.lod().num_levels() {
            1 => Cow::Borrowed(x.lod().level(0)?),
            _ => Cow::Owned(x.lod().abs_level(0)?),
        })
    });
    let abs = lists::try_collect(xs.len(), abs, "xs: LoD levels")?;
    let sequences = abs[0].len() - 1;
    for (j, x) in xs.iter().enumerate().skip(1) {
        let t = x.tensor();
        ensure!(
            abs[j].len() - 1 == sequences,
            InvalidLod,
            "xs[{j}]: has {} sequences at LoD level 0, xs[0] has {sequences}; all inputs need the same number",
            abs[j].len() - 1
        );
        ensure!(
            t.dtype() == first.dtype(),
            InvalidArgument,
            "xs[{j}]: dtype {} differs from xs[0]'s {}",
            t.dtype(),
            first.dtype()
        );
        ensure!(
            t.dims().row_width() == first.dims().row_width(),
            InvalidArgument,
            "xs[{j}]: dims {:?} give rows of {} elements, xs[0]'s dims {:?} give {}; row widths must match",
            t.dims(),
            t.dims().row_width(),
            first.dims(),
            first.dims().row_width()
        );
    }
    // Rows of zero width take no memory, so their counts can add up past usize. Offsets rise, so
    // the last one's sum is the largest: if it fits, every sum does, and the sums that make the
    // output's offsets (concat_offsets) cannot overflow.
    let rows = abs
        .iter()
        .try_fold(0usize, |acc, a| acc.checked_add(a[sequences]))
        .ok_or_else(|| err!(OutOfMemory, "xs: the total row count overflows"))?;
    let dims = first.dims().with_rows(rows)?;
    let levels = lists::collect(abs.iter().map(|a| &a[..]), "xs: LoD levels")?;
    let srcs = lists::collect(xs.iter().map(|x| x.tensor()), "xs")?;
    match place {
        Place::Cpu => {
            let out_lod = concat_offsets(&levels)?;
            let mut out = Tensor::uninit(first.dtype(), dims)?;
            let bytes = lists::try_collect(srcs.len(), srcs.iter().map(|t| t.bytes()), "xs")?;
            kernels::concat_sequences(&bytes, &levels, first.row_bytes(), out_lod.level(0)?, out.bytes_mut()?)?;
            LoDTensor::new(out, out_lod)
        }
        Place::Cuda(_) => {
            // The device sums the inputs' offsets for itself and moves the rows while the host
            // makes the output LoD's own offsets: none of them is uploaded.
            let lods = lists::collect(xs.iter().map(|x| x.lod()), "xs: LoDs")?;
            let (out, kept) = cuda::concat_rows(&srcs, &lods, &levels, first.row_bytes(), dims)?;
            let out_lod = concat_offsets(&levels)?;
            if let Some(kept) = kept {
                out_lod.lod_level(0)?.copy_at(place, |_| Ok(kept))?;
            }
            LoDTensor::new(out, out_lod)
        }
    }
}

/// sequence_concat's output LoD: the sums of the inputs' level-0 offsets in rows.
fn concat_offsets(levels: &[&[usize]]) -> Result<Lod> {
    // Sums of offsets that start at 0 and never decrease do the same: a valid level.
    Ok(Lod::from_built_offsets(vec![kernels::sum_offsets(levels)?]))
}

/// Rows `[L[i] + offset[i], L[i] + offset[i] + length[i])` of each sequence `i` of `x` (exactly
/// one LoD level `L`), concatenated; the output LoD is `[[0, cumsum(length)]]`. `offset` and
/// `length` are int64 or int32, `[N]` or `[N, 1]` with `N` the number of sequences; every value
/// must be >= 0 and every slice must stay inside its sequence. Any dtype. On a CUDA place
/// `offset` and `length` (on the device with `x`) are copied to the host to be checked, in one copy
/// (one wait for the device).
pub fn sequence_slice(x: &LoDTensor, offset: &LoDTensor, length: &LoDTensor) -> Result<LoDTensor> {
    const OP: &str = "sequence_slice";
    let place = common_place(&[("x", x.tensor()), ("offset", offset.tensor()), ("length", length.tensor())])?;
    let lod = one_level(x, "x", OP)?.offsets();
    let n = lod.len() - 1;
    let [offset_host, length_host] = all_on_host([offset.tensor(), length.tensor()])?;
    let offsets = int_column(&offset_host, "offset", Some(n))?;
    let lengths = int_column(&length_host, "length", Some(n))?;
    let mut ranges = lists::with_capacity(n, "sequence_slice: row ranges")?;
    let mut out_lod = lists::with_capacity(n + 1, "sequence_slice: output LoD")?;
    out_lod.push(0usize);
    for i in 0..n {
        let (o, l) = (offsets[i], lengths[i]);
        ensure!(o >= 0, InvalidArgument, "offset: offset[{i}] = {o} is negative (sequence {i})");
        ensure!(l >= 0, InvalidArgument, "length: length[{i}] = {l} is negative (sequence {i})");
        let rows = lod[i + 1] - lod[i];
        ensure!(
            o as i128 + l as i128 <= rows as i128,
            OutOfRange,
            "offset, length: sequence {i} has {rows} rows, but offset[{i}] + length[{i}] = {o} + {l} = {} goes past \
             its end",
            o as i128 + l as i128
        );
        let start = lod[i] + o as usize;
        ranges.push(start..start + l as usize);
        out_lod.push(out_lod[i] + l as usize);
    }
    place.ensure_usable()?;
    let t = x.tensor();
    let out = gather_into_new(t, t.row_bytes(), &ranges, t.dims().with_rows(out_lod[n])?)?;
    LoDTensor::new(out, Lod::from_offsets(vec![out_lod])?)
}

/// The rows of each sequence in reverse order. `x` has rank >= 2 and exactly one LoD level; the
/// output has the same shape and LoD. Any dtype.
pub fn sequence_reverse(x: &LoDTensor) -> Result<LoDTensor> {
    const OP: &str = "sequence_reverse";
    let place = common_place(&[("x", x.tensor())])?;
    let level = one_level(x, "x", OP)?;
    let lod = level.offsets();
    ensure!(x.dims().ndim() >= 2, InvalidArgument, "x: dims {:?}; {OP} needs rank >= 2", x.dims());
    let t = x.tensor();
    let out = match place {
        Place::Cpu => {
            let mut out = Tensor::uninit(t.dtype(), *t.dims())?;
            kernels::reverse_rows(t.bytes()?, t.row_bytes(), lod, out.bytes_mut()?)?;
            out
        }
        Place::Cuda(_) => cuda::sequence_reverse_rows(t, level)?,
    };
    LoDTensor::new(out, x.lod().clone())
}

/// `y[..., j] = (j < x[...]) ? 1 : 0` for `j` in `[0, maxlen)`: `y` has `x`'s dims plus
/// `[maxlen]`, dtype `out_dtype` (any of the ten), and no LoD. `maxlen < 0` means
/// `max(0, max(trunc(x)))` (0 for an empty `x`); `maxlen == 0` is an error, as in Paddle. `x` is
/// any numeric dtype (not bool). On a CUDA place with `maxlen < 0`, `x` is copied to the host to
/// find its maximum (the output's shape depends on it).
pub fn sequence_mask(x: &LoDTensor, maxlen: i64, out_dtype: DType) -> Result<LoDTensor> {
    let place = common_place(&[("x", x.tensor())])?;
    ensure!(maxlen != 0, InvalidArgument, "maxlen: must be negative (meaning max(x)) or at least 1, got 0");
    ensure!(
        x.dims().ndim() < MAX_DIMS,
        InvalidArgument,
        "x: has {} dims; the mask adds one and a tensor has at most {MAX_DIMS}",
        x.dims().ndim()
    );
    place.ensure_usable()?;
    let t = x.tensor();
    dispatch_dtype!(t.dtype(), "x", [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |X| {
        let maxlen = if maxlen < 0 {
            let host = on_host(t)?;
            host.as_slice::<X>()?.iter().map(|v| v.to_f64() as i64).max().unwrap_or(0).max(0)
        } else {
            maxlen
        };
        let maxlen = usize::try_from(maxlen)
            .map_err(|_| err!(OutOfMemory, "maxlen: {maxlen} is larger than any tensor can be"))?;
        let mut dims = t.dims().as_slice().to_vec();
        dims.push(maxlen);
        let dims = Dim::new(&dims)?;
        let out = match place {
            Place::Cpu => {
                let mut out = Tensor::uninit(out_dtype, dims)?;
                let xs = t.as_slice::<X>()?;
                dispatch_any_dtype!(out_dtype, "out_dtype", |D| kernels::mask(
                    xs,
                    maxlen,
                    elements_mut::<D>(&mut out)?
                ))?;
                out
            }
            Place::Cuda(_) => {
                let (one, zero) = (bit_pattern(out_dtype, 1.0)?, bit_pattern(out_dtype, 0.0)?);
                cuda::sequence_mask(t, maxlen, out_dtype, one, zero, dims)?
            }
        };
        Ok(LoDTensor::dense(out))
    })
}

/// `value` in `dtype` (converted by the CPU's rules, as `fill` does), as little-endian bits in a
/// u64: what a device kernel writes for it.
fn bit_pattern(dtype: DType, value: f64) -> Result<u64> {
    let t = super::fill(dtype, Dim::new(&[1])?, value)?;
    let mut word = [0u8; 8];
    let bytes = t.tensor().bytes()?;
    word[..bytes.len()].copy_from_slice(bytes);
    Ok(u64::from_le_bytes(word))
}

/// Sliding windows: `out[r][k] = x[r + k]` while row `r + k` is in r's sequence (of the last LoD
/// level), else `pad_value`. `x` is int32 or int64 with one element per row (`[N]` or `[N, 1]`);
/// `win_size >= 2`; `pad_value` must fit `x`'s dtype. The output is `[N, win_size]` with `x`'s LoD.
pub fn sequence_enumerate(x: &LoDTensor, win_size: i64, pad_value: i64) -> Result<LoDTensor> {
    const OP: &str = "sequence_enumerate";
    let place = common_place(&[("x", x.tensor())])?;
    let level = last_level(x, "x", OP)?;
    let offsets = level.offsets();
    ensure_column(x.tensor(), "x", OP)?;
    ensure!(win_size >= 2, InvalidArgument, "win_size: must be at least 2, got {win_size}");
    let win = usize::try_from(win_size)
        .map_err(|_| err!(OutOfMemory, "win_size: {win_size} is larger than any tensor can be"))?;
    place.ensure_usable()?;
    let t = x.tensor();
    let rows = t.numel();
    let dims = Dim::new(&[rows, win])?;
    let out = dispatch_dtype!(t.dtype(), "x", [I32, I64], |T| {
        let pad = T::try_from(pad_value)
            .map_err(|_| err!(InvalidArgument, "pad_value: {pad_value} does not fit in {}", t.dtype()))?;
        match place {
            Place::Cpu => {
                let mut out = Tensor::uninit(t.dtype(), dims)?;
                kernels::enumerate(t.as_slice::<T>()?, offsets, win, pad, out.as_mut_slice::<T>()?)?;
                Ok(out)
            }
            Place::Cuda(_) => cuda::sequence_enumerate(t, level, win, pad_value),
        }
    })?;
    LoDTensor::new(out, x.lod().clone())
}

/// Removes every element equal to one of `tokens`. `x` is int32 or int64 with one element per
/// row (`[N]` or `[N, 1]`) and a LoD; the output keeps `x`'s rank, with every LoD level but the
/// last copied and the last recomputed from the surviving counts. An empty `tokens` copies `x`.
///
/// On a CUDA place `x` is copied to the host: the output's size depends on the data, and `x` is
/// one int per row (token ids), as small as the output. The host finds the surviving runs with
/// the CPU's rule (the very code of the CPU path, so the two cannot disagree) and the device
/// gathers them in one launch. A device count-and-scan would save that copy but needs its own
/// copy back of the counts (the LoD is on the host) and two more launches.
pub fn sequence_erase(x: &LoDTensor, tokens: &[i64]) -> Result<LoDTensor> {
    const OP: &str = "sequence_erase";
    let place = common_place(&[("x", x.tensor())])?;
    let offsets = last_level(x, "x", OP)?.offsets();
    ensure_column(x.tensor(), "x", OP)?;
    place.ensure_usable()?;
    let mut tokens = tokens.to_vec();
    tokens.sort_unstable();
    tokens.dedup();
    let t = x.tensor();
    dispatch_dtype!(t.dtype(), "x", [I32, I64], |T| {
        let host = on_host(t)?;
        let xs = host.as_slice::<T>()?;
        let counts = kernels::erase_counts(xs, offsets, &tokens)?;
        let mut last = lists::with_capacity(counts.len() + 1, "sequence_erase: output LoD")?;
        last.push(0usize);
        for (i, c) in counts.iter().enumerate() {
            last.push(last[i] + c);
        }
        let dims = t.dims().with_rows(last[counts.len()])?;
        let out = match place {
            Place::Cpu => {
                let mut out = Tensor::uninit(t.dtype(), dims)?;
                kernels::erase(xs, offsets, &tokens, &last, out.as_mut_slice::<T>()?)?;
                out
            }
            Place::Cuda(_) => gather_into_new(
                t,
                t.row_bytes(),
                &row_runs(survivors(xs, &tokens), "sequence_erase: surviving runs")?,
                dims,
            )?,
        };
        let upper = &x.lod().levels()[..x.lod().num_levels() - 1];
        let mut levels = lists::copy_of_levels(upper, "sequence_erase: output LoD")?;
        levels.push(last);
        LoDTensor::new(out, Lod::from_offsets(levels)?)
    })
}

/// The rows of `x` that survive erasing `tokens` (sorted), in row order.
fn survivors<'a, T: Copy + Into<i64>>(x: &'a [T], tokens: &'a [i64]) -> impl Iterator<Item = usize> + Clone + 'a {
    (0..x.len()).filter(|&r| tokens.binary_search(&x[r].into()).is_err())
}

/// The same elements as `[N * M / new_dim, new_dim]` (row-major reinterpretation, copied). `x` is
/// `[N, M]` with exactly one LoD level; every sequence's element count `len * M` must be a multiple
/// of `new_dim` (>= 1). The LoD becomes lengths `len * M / new_dim`. Any dtype.
pub fn sequence_reshape(x: &LoDTensor, new_dim: i64) -> Result<LoDTensor> {
    const OP: &str = "sequence_reshape";
    let place = common_place(&[("x", x.tensor())])?;
    let lod = one_level(x, "x", OP)?.offsets();
    ensure!(x.dims().ndim() == 2, InvalidArgument, "x: dims {:?}; {OP} needs rank 2 ([N, M])", x.dims());
    ensure!(new_dim >= 1, InvalidArgument, "new_dim: must be at least 1, got {new_dim}");
    let new_dim = usize::try_from(new_dim).map_err(|_| err!(InvalidArgument, "new_dim: {new_dim} is too large"))?;
    let m = x.dims().as_slice()[1];
    let mut out_lod = lists::with_capacity(lod.len(), "sequence_reshape: output LoD")?;
    out_lod.push(0usize);
    for i in 0..lod.len() - 1 {
        let len = lod[i + 1] - lod[i];
        let elements = len * m; // <= numel, which fits usize
        ensure!(
            elements.is_multiple_of(new_dim),
            InvalidArgument,
            "x: sequence {i} has {len} rows of {m} = {elements} elements, not a multiple of new_dim {new_dim}"
        );
        out_lod.push(out_lod[i] + elements / new_dim);
    }
    let t = x.tensor();
    let dims = Dim::new(&[t.numel() / new_dim, new_dim])?;
    let out = match place {
        Place::Cpu => {
            let mut out = Tensor::uninit(t.dtype(), dims)?;
            let bounds = chunk_bounds(t.numel(), CHUNK);
            let ranges = lists::collect(bounds.windows(2).map(|w| w[0]..w[1]), "sequence_reshape: chunks")?;
            gather_row_ranges(t.bytes()?, t.dtype().size(), &ranges, out.bytes_mut()?)?;
            out
        }
        // One copy on the device (no kernel, no table), seen with the new dims.
        Place::Cuda(_) => t.copy()?.reshaped(dims)?,
    };
    LoDTensor::new(out, Lod::from_offsets(vec![out_lod])?)
}

/// Paddle's `sequence_conv` (context projection, then a matrix product): for each row `r` of a
/// sequence, the `context_length` rows starting `context_start` rows away, side by side, times
/// `filter`. `x` is `[T, N]` with exactly one LoD level, `filter` is `[context_length * N, M]`, both
/// float32 or float64 (the same); the output is `[T, M]` with `x`'s LoD. Context rows outside the
/// row's own sequence are zeros, or with `padding_trainable` rows of `padding`
/// (`[up_pad + down_pad, N]` where `up_pad = max(0, -context_start)` and
/// `down_pad = max(0, context_start + context_length - 1)`): `padding[up_pad + p]` for `p < 0` and
/// `padding[up_pad + p - len]` for `p >= len`. `padding` is ignored unless `padding_trainable`.
/// `context_stride` must be 1; `padding_trainable` with `context_start` 0 and `context_length` 1
/// is an error, as in Paddle.
///
/// On a CUDA place one thread computes each output element, summing in the CPU kernel's order
/// with separately rounded multiplies and adds (no fused multiply-add), so the result equals the
/// CPU's (a NaN result's payload aside); the tests still compare within a float tolerance, which a faster kernel summing in
/// another order would need.
pub fn sequence_conv(
    x: &LoDTensor,
    filter: &LoDTensor,
    padding: Option<&LoDTensor>,
    context_length: i64,
    context_start: i64,
    context_stride: i64,
    padding_trainable: bool,
) -> Result<LoDTensor> {
    const OP: &str = "sequence_conv";
    let padding = padding.filter(|_| padding_trainable);
    let mut inputs = vec![("x", x.tensor()), ("filter", filter.tensor())];
    inputs.extend(padding.map(|p| ("padding_data", p.tensor())));
    let place = common_place(&inputs)?;
    let level = one_level(x, "x", OP)?;
    let offsets = level.offsets();
    let xd = x.dims().as_slice();
    ensure!(xd.len() == 2, InvalidArgument, "x: dims {xd:?}; {OP} needs rank 2 ([T, N])");
    ensure!(context_length > 0, InvalidArgument, "context_length: must be at least 1, got {context_length}");
    ensure!(context_stride == 1, InvalidArgument, "context_stride: must be 1, got {context_stride}");
    ensure!(
        !(padding_trainable && context_start == 0 && context_length == 1),
        InvalidArgument,
        "padding_trainable: must be false when context_start is 0 and context_length is 1 (there is no padding)"
    );
    const LIMIT: i64 = 1 << 62; // keeps every row position arithmetic far from overflow
    ensure!(
        context_start.unsigned_abs() < LIMIT as u64 && context_length < LIMIT,
        InvalidArgument,
        "context_start, context_length: {context_start} and {context_length} must be less than 2^62 in magnitude"
    );
    let n = xd[1];
    let length = usize::try_from(context_length)
        .map_err(|_| err!(InvalidArgument, "context_length: {context_length} is too large"))?;
    let fd = filter.dims().as_slice();
    ensure!(
        fd.len() == 2 && length.checked_mul(n) == Some(fd[0]),
        InvalidArgument,
        "filter: dims {fd:?}; expected [context_length * N, M] = [{}, M]",
        length.saturating_mul(n)
    );
    let dtype = x.tensor().dtype();
    ensure!(
        filter.tensor().dtype() == dtype,
        InvalidArgument,
        "filter: dtype {} differs from x's {dtype}",
        filter.tensor().dtype()
    );
    let up_pad = (-context_start).max(0);
    let down_pad = (context_start + context_length - 1).max(0);
    if padding_trainable {
        let p = padding.ok_or_else(|| err!(NullArgument, "padding_data: required when padding_trainable is true"))?;
        let pd = p.dims().as_slice();
        ensure!(
            pd.len() == 2 && pd[0] as i128 == up_pad as i128 + down_pad as i128 && pd[1] == n,
            InvalidArgument,
            "padding_data: dims {pd:?}; expected [up_pad + down_pad, N] = [{}, {n}]",
            up_pad as i128 + down_pad as i128
        );
        ensure!(
            p.tensor().dtype() == dtype,
            InvalidArgument,
            "padding_data: dtype {} differs from x's {dtype}",
            p.tensor().dtype()
        );
    }
    let shape = kernels::ConvShape {
        width: n,
        out_width: fd[1],
        context_length: length,
        context_start,
        up_pad: up_pad as usize,
    };
    if let Place::Cuda(_) = place {
        dispatch_dtype!(dtype, "x", [F32, F64], |T| Ok(()))?;
        let out = cuda::sequence_conv(x.tensor(), level, filter.tensor(), padding.map(|p| p.tensor()), &shape)?;
        return LoDTensor::new(out, x.lod().clone());
    }
    let mut out = Tensor::uninit(dtype, Dim::new(&[xd[0], fd[1]])?)?;
    dispatch_dtype!(dtype, "x", [F32, F64], |T| {
        let pad = padding.map(|p| p.tensor().as_slice::<T>()).transpose()?;
        kernels::sequence_conv(
            x.tensor().as_slice::<T>()?,
            offsets,
            filter.tensor().as_slice::<T>()?,
            pad,
            &shape,
            out.as_mut_slice::<T>()?,
        )
    })?;
    LoDTensor::new(out, x.lod().clone())
}
