//! Dense tensor operations that sequence pipelines need around the sequence operators: a tensor
//! filled with one value, dtype conversion, gathering rows by index, and log-softmax over the last
//! axis.

use super::host_inputs::on_host;
use super::support::{gather_each_into_new, int_column, is_column, row_runs};
use super::{common_place, common_place_of};
use crate::backend::cpu::convert::{self, dispatch_any_dtype, elements, elements_mut, CastElem, Value};
use crate::backend::cpu::softmax::softmax_segments;
use crate::backend::cuda;
use crate::dim::Dim;
use crate::dtype::{dispatch_dtype, DType};
use crate::error::{err, Result};
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;

/// 2^63, exactly.
const TWO_TO_63: f64 = 9_223_372_036_854_775_808.0;

/// `value` as a `T`, or an error if that would change it: integers and bool take only the values
/// they hold exactly (no fraction, inside the range; bool only 0 and 1); floats round to nearest
/// but must not overflow to infinity (NaN and ±infinity are kept).
pub(crate) fn exact<T: CastElem>(value: f64, name: &str) -> Result<T> {
    let t = T::from_value(Value::Float(value));
    let ok = match t.to_value() {
        // The range test first: i64::MAX as f64 is 2^63, which i64 cannot hold. The bound is a
        // literal: `powi`'s precision is unspecified (Miri, for one, perturbs it).
        Value::Int(i) => (-TWO_TO_63..TWO_TO_63).contains(&value) && i as f64 == value,
        Value::Float(f) => value.is_nan() || f.is_infinite() == value.is_infinite(),
    };
    if ok {
        return Ok(t);
    }
    Err(match T::DTYPE {
        DType::Bool => err!(InvalidArgument, "{name}: {value} is not a bool; only 0 and 1 are"),
        DType::F16 | DType::BF16 | DType::F32 => {
            err!(InvalidArgument, "{name}: {value} overflows {} (it would become infinity)", T::DTYPE)
        }
        d => err!(InvalidArgument, "{name}: {value} is not exactly representable in {d} (a fraction, or out of range)"),
    })
}

/// A new host tensor of `dtype` and `dims`, every element `value`, without LoD. The value must be
/// exactly representable in integer and bool dtypes, and must not overflow a float dtype (where it
/// is rounded to nearest); see [`exact`]. Any dtype. Host only (there is no place argument; move
/// the result with `to_place`).
pub fn fill(dtype: DType, dims: Dim, value: f64) -> Result<LoDTensor> {
    let mut out = Tensor::uninit(dtype, dims)?;
    dispatch_any_dtype!(dtype, "dtype", |T| convert::fill(elements_mut::<T>(&mut out)?, exact::<T>(value, "value")?))?;
    Ok(LoDTensor::dense(out))
}

/// `x`'s elements converted to `dtype` (any of the ten, to any of the ten) with the rules of
/// `backend::cpu::convert`: Rust's `as` (integers wrap, floats to integers truncate and saturate,
/// NaN to 0, to float rounds to nearest even), correctly rounded to float16/bfloat16, bool 0/1
/// and `!= 0`. A new tensor with `x`'s dims and LoD, also when `dtype` is `x`'s, on `x`'s place (a
/// CUDA device converts with the same rules, bit for bit).
pub fn cast(x: &LoDTensor, dtype: DType) -> Result<LoDTensor> {
    let place = common_place(&[("x", x.tensor())])?;
    let t = x.tensor();
    let out = match place {
        Place::Cpu => {
            let mut out = Tensor::uninit(dtype, *t.dims())?;
            dispatch_any_dtype!(t.dtype(), "x", |S| {
                let src = elements::<S>(t)?;
                dispatch_any_dtype!(dtype, "dtype", |D| convert::cast(src, elements_mut::<D>(&mut out)?))
            })?;
            out
        }
        Place::Cuda(_) => cuda::cast(t, dtype)?,
    };
    LoDTensor::new(out, x.lod().clone())
}

/// Rows `x[index[0]], x[index[1]], ...` as a new tensor of dims `[K, x.dims[1..]]` without LoD.
/// `index` is int32 or int64, `[K]` or `[K, 1]`; every value must be in `[0, rows of x)`. Any dtype.
/// On a CUDA place (`x` and `index` on one device) the rows are gathered there in one launch that
/// reads `index` where it is and checks it; only when a value is out of range is `index` copied
/// to the host, to name it.
pub fn gather_rows(x: &LoDTensor, index: &LoDTensor) -> Result<LoDTensor> {
    gather_rows_named(x, "x", index, "index")
}

/// `gather_rows` with errors naming the caller's arguments (the decoder's `state`/`parent_idx`).
pub(crate) fn gather_rows_named(x: &LoDTensor, x_name: &str, index: &LoDTensor, index_name: &str) -> Result<LoDTensor> {
    let mut outs = gather_rows_of_all(&[x], &|_| x_name.to_string(), index, index_name)?;
    Ok(outs.pop().expect("one source, one result"))
}

/// `gather_rows` of each of `xs` (`xs[i]` named `name(i)` in its errors, the name made only for
/// one) by one index: the same checks, the first failing source named. On the host one job for
/// all (`gather_each_into_new`); on a CUDA place with the index there, one launch for all the
/// sources of a word size and one wait for all (their bad-value counts are one).
pub(crate) fn gather_rows_of_all(
    xs: &[&LoDTensor],
    name: &dyn Fn(usize) -> String,
    index: &LoDTensor,
    index_name: &str,
) -> Result<Vec<LoDTensor>> {
    if xs.is_empty() {
        return Ok(vec![]);
    }
    let it = index.tensor();
    // The index is the last input.
    let n = xs.len();
    let tensor = |i: usize| if i < n { xs[i].tensor() } else { it };
    let place = common_place_of(n + 1, tensor, |i| if i < n { name(i) } else { index_name.to_string() })?;
    let rows = xs.iter().enumerate().map(|(i, x)| {
        x.tensor().rows().map_err(|_| err!(InvalidArgument, "{}: a 0-d tensor has no rows to gather", name(i)))
    });
    let rows = lists::try_collect(n, rows, "inputs: rows")?;
    if matches!(place, Place::Cuda(_)) && is_column(it) && matches!(it.dtype(), DType::I32 | DType::I64) {
        // The index stays on the device; a bad value is reported below, from a host copy.
        place.ensure_usable()?;
        let k = it.dims().as_slice()[0];
        let srcs = xs.iter().map(|x| Ok((x.tensor(), x.dims().with_rows(k)?)));
        let srcs = lists::try_collect(n, srcs, "inputs: sources")?;
        if let Some(outs) = cuda::gather_rows_by_index(&srcs, it)? {
            return lists::collect(outs.into_iter().map(LoDTensor::dense), "results");
        }
    }
    let index = int_column(&on_host(it)?, index_name, None)?;
    for (i, &rows) in rows.iter().enumerate() {
        if let Some((k, v)) = index.iter().enumerate().find(|(_, &v)| !(0..rows as i64).contains(&v)) {
            return Err(err!(
                OutOfRange,
                "{index_name}: {index_name}[{k}] = {v} is out of range [0, {rows}) of {}'s rows",
                name(i)
            ));
        }
    }
    let ranges = row_runs(index.iter().map(|&i| i as usize), "index: runs of rows")?;
    place.ensure_usable()?;
    let gathers = xs.iter().map(|x| {
        let t = x.tensor();
        Ok((t, t.row_bytes(), &ranges[..], t.dims().with_rows(index.len())?))
    });
    let gathers = lists::try_collect(n, gathers, "inputs: gathers")?;
    lists::collect(gather_each_into_new(&gathers)?.into_iter().map(LoDTensor::dense), "results")
}

/// `out = x - m - ln Σ exp(x - m)` over the last axis (`m` the maximum along it) for float16,
/// bfloat16, float32 (exponentials in f32) and float64; sums in f64. Same dims, LoD and place as
/// `x`, which must have at least 1 dim (on a CUDA device: equal to float rounding, the sum being
/// taken in another order).
pub fn log_softmax(x: &LoDTensor) -> Result<LoDTensor> {
    let place = common_place(&[("x", x.tensor())])?;
    let t = x.tensor();
    let width = *t.dims().as_slice().last().ok_or_else(|| err!(InvalidArgument, "x: a 0-d tensor has no last axis"))?;
    let rows = t.numel().checked_div(width).unwrap_or(0);
    let out = match place {
        Place::Cpu => {
            let bounds = lists::collect((0..rows + 1).map(|r| r * width), "log_softmax: row bounds")?;
            let mut out = Tensor::uninit(t.dtype(), *t.dims())?;
            dispatch_dtype!(t.dtype(), "x", [F16, BF16, F32, F64], |T| {
                let (xs, out) = (t.as_slice::<T>()?, out.as_mut_slice::<T>()?);
                match t.dtype() {
                    DType::F64 => softmax_segments::<T, f64>(xs, &bounds, true, out),
                    _ => softmax_segments::<T, f32>(xs, &bounds, true, out),
                }
            })?;
            out
        }
        Place::Cuda(_) => {
            // The CPU path's dtype check, with its message.
            dispatch_dtype!(t.dtype(), "x", [F16, BF16, F32, F64], |T| Ok(()))?;
            cuda::softmax_segments(t, cuda::Segments::Rows { rows, width }, true)?
        }
    };
    LoDTensor::new(out, x.lod().clone())
}
