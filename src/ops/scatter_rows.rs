//! `scatter_rows`: whole rows of `updates` written or added into the rows of `x` that `index`
//! names (Paddle's `scatter` with `overwrite` true or false, `index_add` along axis 0).

use super::common_place;
use super::support::check_int_column;
use crate::backend::cpu::scatter_rows::{scatter_add_rows_sorted, scatter_overwrite_rows, sort_by_row};
use crate::backend::cuda;
use crate::dtype::{dispatch_dtype, DType};
use crate::error::{ensure, err, Result};
use crate::lod_tensor::LoDTensor;
use crate::place::Place;
use crate::tensor::Tensor;

/// How [`scatter_rows`] combines an update row with the output row it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterMode {
    /// The update replaces the row; of several updates to one row, the last (highest position)
    /// wins.
    Overwrite,
    /// The update is added to the row; several updates to one row all add up, in position order.
    Add,
}

/// A new tensor equal to `x` (its dims, dtype and LoD), with row `index[i]` replaced by, or
/// increased by, row `i` of `updates` for every `i` (`mode`).
///
/// - `x`: rank >= 1, `[N, ...]`, any LoD (kept on the result).
/// - `index`: int32 or int64, `[M]` or `[M, 1]`, every value in `[0, N)` (negative values are
///   errors, they do not count from the end). Its LoD is ignored.
/// - `updates`: `[M, x.dims[1..]...]` (the same row shape as `x`: for a 1-d `x`, `[M]`), `x`'s
///   dtype. Its LoD is ignored.
///
/// [`ScatterMode::Overwrite`] takes every dtype; when an index repeats, the last position wins
/// (Paddle's `scatter(overwrite=True)`). [`ScatterMode::Add`] takes every numeric dtype (bool is
/// `Unsupported`): `out[index[i]] += updates[i]` for every `i`, each row's updates added in
/// increasing `i` onto `x`'s row, exactly as the sequential loop does, so results are
/// reproducible and the same for any thread count. Integers wrap on overflow; float16 and bfloat16
/// compute each addition in float32 and round it to the dtype (per-add rounding, as the loop in
/// the dtype does).
///
/// Errors: `InvalidArgument` for a 0-d `x`, an `index` that is not `[M]`/`[M, 1]`, `updates` of
/// another dtype or not `[M, x.dims[1..]...]`, or inputs on different places; `OutOfRange` for an
/// index outside `[0, N)` (naming its position and value); `Unsupported` for an `index` that is
/// not int32/int64, bool with `Add`, or a build without CUDA for inputs on a CUDA device.
///
/// On a CUDA device the result is the CPU's, bit for bit (each row's updates are added in the
/// same order), and `index` is read where it is; only when a value is out of range is it copied
/// to the host, to name it. `Overwrite`: one launch finds each row's last writer and checks the
/// index, a second gathers the rows. `Add`: one launch checks the index, a stable radix sort on
/// the device groups the updates by row, and one launch writes every output element (x's plus its
/// row's updates, in order); it takes device scratch of about 42 bytes per update and 8 per row of
/// `x` for the call.
pub fn scatter_rows(x: &LoDTensor, index: &LoDTensor, updates: &LoDTensor, mode: ScatterMode) -> Result<LoDTensor> {
    let place = common_place(&[("x", x.tensor()), ("index", index.tensor()), ("updates", updates.tensor())])?;
    let (xt, ut) = (x.tensor(), updates.tensor());
    let rows = xt
        .rows()
        .map_err(|_| err!(InvalidArgument, "x: is 0-d; scatter_rows writes rows of x, so x needs rank >= 1"))?;
    let m = check_int_column(index.tensor(), "index", None)?;
    let (xd, ud) = (xt.dims().as_slice(), ut.dims().as_slice());
    ensure!(
        ud.len() == xd.len() && ud[0] == m && ud[1..] == xd[1..],
        InvalidArgument,
        "updates: has dims {ud:?}; with {m} indices and x of dims {xd:?} it must be {:?} (one row of x's shape per index)",
        [&[m], &xd[1..]].concat()
    );
    ensure!(
        ut.dtype() == xt.dtype(),
        InvalidArgument,
        "updates: dtype {} differs from x's {}; they must be the same",
        ut.dtype(),
        xt.dtype()
    );
    ensure!(
        !(mode == ScatterMode::Add && xt.dtype() == DType::Bool),
        Unsupported,
        "x: dtype bool cannot be added (LODTENSOR_SCATTER_ADD takes numeric dtypes; OVERWRITE takes bool)"
    );
    if let Place::Cuda(_) = place {
        // The index stays on the device; a bad value is reported below, from a host copy.
        let out = match mode {
            ScatterMode::Overwrite => cuda::scatter_rows_overwrite(xt, index.tensor(), ut)?,
            ScatterMode::Add => cuda::scatter_rows_add(xt, index.tensor(), ut)?,
        };
        if let Some(out) = out {
            return LoDTensor::new(out, x.lod().clone());
        }
    }
    let index = match place {
        Place::Cpu => index.tensor().index_values("index")?,
        Place::Cuda(_) => cuda::copy_to_host(index.tensor())?.index_values("index")?,
    };
    for (i, &v) in index.iter().enumerate() {
        ensure!(
            (0..rows as i64).contains(&v),
            OutOfRange,
            "index: index[{i}] = {v} is out of range [0, {rows}) of x's rows (negative indices are errors, not counted from the end)"
        );
    }
    ensure!(
        place == Place::Cpu,
        Internal,
        "scatter_rows: the device counted an index out of range that its host copy has not"
    );
    let mut out = Tensor::uninit(xt.dtype(), *xt.dims())?;
    match mode {
        ScatterMode::Overwrite => {
            scatter_overwrite_rows(xt.bytes()?, ut.bytes()?, xt.row_bytes(), &index, out.bytes_mut()?)?;
        }
        ScatterMode::Add => {
            let by_row = sort_by_row(&index, rows)?;
            let width = xt.dims().row_width();
            dispatch_dtype!(xt.dtype(), "x", [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
                scatter_add_rows_sorted(
                    xt.as_slice::<T>()?,
                    width,
                    &by_row,
                    ut.as_slice::<T>()?,
                    out.as_mut_slice::<T>()?,
                )
            })?;
        }
    }
    LoDTensor::new(out, x.lod().clone())
}
