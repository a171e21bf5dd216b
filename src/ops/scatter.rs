//! `sequence_scatter` (spec §3): sequence `i` of `ids` adds `updates` into row `i` of `x`, at the
//! column each id names (the row flattened). Out of place (a new tensor) or in place.
//!
//! On a CUDA place (`x`, `ids` and `updates` on one device; mixed places are an error naming
//! both) the device checks the ids and sorts them by the element they update, stably, then adds
//! each element's updates in id order, so the result equals the CPU's exactly (integers wrap,
//! floats round after every add, as on the CPU; only the payload of a NaN result may differ, a GPU
//! making its own canonical NaN). The ids are copied to the host only to name one out of range;
//! the sort takes device scratch of about 42 bytes per id for the call.

use super::common_place;
use super::host_inputs::on_host;
use crate::backend::cpu::scatter::scatter_add_rows;
use crate::backend::cuda;
use crate::dtype::{dispatch_dtype, DType, Scalar};
use crate::error::{ensure, err, Result};
use crate::lod_tensor::LoDTensor;
use crate::place::Place;
use crate::tensor::Tensor;

/// What the checks found: the row width of `x`, the offsets of `ids`' sequences and the inputs'
/// place. The ids' values are checked here on the host; on a device, by the scatter itself.
struct Plan<'a> {
    width: usize,
    offsets: &'a [usize],
    place: Place,
}

fn check<'a>(x: &Tensor, ids: &'a LoDTensor, updates: &LoDTensor) -> Result<Plan<'a>> {
    let place = common_place(&[("x", x), ("ids", ids.tensor()), ("updates", updates.tensor())])?;
    let rows = x.rows().map_err(|_| err!(InvalidArgument, "x: is 0-d; sequence_scatter updates rows of x"))?;
    ensure!(
        matches!(ids.tensor().dtype(), DType::I64 | DType::I32),
        Unsupported,
        "ids: dtype {} is not supported here; supported: int64, int32",
        ids.tensor().dtype()
    );
    ensure!(
        ids.lod().num_levels() == 1,
        InvalidLod,
        "ids: has {} LoD levels; sequence_scatter takes ids with exactly 1 (sequence i updates row i of x)",
        ids.lod().num_levels()
    );
    ensure!(
        updates.lod().num_levels() == 1,
        InvalidLod,
        "updates: has {} LoD levels; sequence_scatter takes updates with exactly 1",
        updates.lod().num_levels()
    );
    let m = ids.dims().rows().expect("a tensor with a LoD has rows");
    ensure!(
        ids.tensor().numel() == m,
        InvalidArgument,
        "ids: has dims {:?}; it must hold one id per row ([M] or [M, 1])",
        ids.dims()
    );
    ensure!(
        updates.dims().rows() == Some(m) && updates.tensor().numel() == m,
        InvalidArgument,
        "updates: has dims {:?}, but ids has {m} rows; updates must hold one value per id ([M] or [M, 1])",
        updates.dims()
    );
    ensure!(
        updates.tensor().dtype() == x.dtype(),
        InvalidArgument,
        "updates: dtype {} differs from x's {}; they must be the same",
        updates.tensor().dtype(),
        x.dtype()
    );
    let offsets = ids.lod().level(0)?;
    let sequences = offsets.len() - 1;
    ensure!(
        sequences <= rows,
        OutOfRange,
        "ids: has {sequences} sequences, but x has {rows} rows; sequence i updates row i of x, so ids may have at most {rows}"
    );
    place.ensure_usable()?;
    // Before the ids' values, which the CPU checks here and a device only in its kernel: a bool x
    // is refused alike on every place, whatever its ids hold.
    dispatch_dtype!(x.dtype(), "x", [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| Ok(()))?;
    let plan = Plan { width: x.dims().row_width(), offsets, place };
    if place == Place::Cpu {
        check_ids(&plan, ids.tensor())?;
    }
    Ok(plan)
}

/// Every id in `[0, width)`, else `OutOfRange` naming the first that is not (read from a host
/// copy of device ids).
fn check_ids(plan: &Plan, ids: &Tensor) -> Result<()> {
    let ids = on_host(ids)?;
    match ids.dtype() {
        DType::I32 => check_id_values(ids.as_slice::<i32>()?, plan.offsets, plan.width),
        _ => check_id_values(ids.as_slice::<i64>()?, plan.offsets, plan.width),
    }
}

fn check_id_values<I: Copy + Into<i64>>(ids: &[I], offsets: &[usize], width: usize) -> Result<()> {
    for (i, w) in offsets.windows(2).enumerate() {
        for (p, &id) in ids.iter().enumerate().take(w[1]).skip(w[0]) {
            let v: i64 = id.into();
            ensure!(
                v >= 0 && (v as u64) < width as u64,
                OutOfRange,
                "ids: ids[{p}] = {v} is out of range [0, {width}) for row {i} of x"
            );
        }
    }
    Ok(())
}

/// Runs the kernel for `x`'s dtype and `ids`' (int32 or int64) into `out`, copying from `src`.
fn run(
    plan: &Plan,
    ids: &LoDTensor,
    updates: &LoDTensor,
    src: Option<&Tensor>,
    out: &mut [u8],
    dtype: DType,
) -> Result<()> {
    dispatch_dtype!(dtype, "x", [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |T| {
        let out = as_mut_elements::<T>(out);
        let src = src.map(|s| s.as_slice::<T>()).transpose()?;
        let upd = updates.tensor().as_slice::<T>()?;
        match ids.tensor().dtype() {
            DType::I32 => scatter_add_rows(src, plan.width, plan.offsets, ids.tensor().as_slice::<i32>()?, upd, out),
            _ => scatter_add_rows(src, plan.width, plan.offsets, ids.tensor().as_slice::<i64>()?, upd, out),
        }
    })
}

/// The scatter-add into `out`, a device tensor of `x`'s dtype. The device checks the ids; when
/// one is out of range (`out` untouched), a host copy names it.
fn run_device(plan: &Plan, ids: &LoDTensor, updates: &LoDTensor, out: &mut Tensor) -> Result<()> {
    if cuda::sequence_scatter_add(out, plan.width, ids.lod().lod_level(0)?, ids.tensor(), updates.tensor())? {
        return Ok(());
    }
    check_ids(plan, ids.tensor())?;
    Err(err!(Internal, "sequence_scatter: the device counted an id out of range that its host copy has not"))
}

fn as_mut_elements<T: Scalar>(bytes: &mut [u8]) -> &mut [T] {
    // SAFETY: `bytes` are a whole tensor of dtype `T` (checked by the caller's dispatch), aligned
    // as its allocation is, and `T` is plain data.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), bytes.len() / std::mem::size_of::<T>()) }
}

/// Paddle's `sequence_scatter`: a new tensor (no LoD) equal to `x` plus the updates. For every id
/// `p` in sequence `i` of `ids`, `out[i][ids[p]] += updates[p]` (rows flattened; duplicates
/// accumulate, in id order). `ids` is int64 or int32 with one LoD level; `updates` has `x`'s dtype,
/// one value per id and one LoD level (its offsets are not compared with `ids`', as in Paddle).
/// Our rules: an id outside `[0, row width)` and more `ids` sequences than rows of `x` are
/// `OutOfRange` errors. Every numeric dtype works (Paddle: float32/float64/int32/int64); integers
/// wrap; bool is `Unsupported`.
pub fn sequence_scatter(x: &LoDTensor, ids: &LoDTensor, updates: &LoDTensor) -> Result<LoDTensor> {
    let plan = check(x.tensor(), ids, updates)?;
    if let Place::Cuda(device) = plan.place {
        let mut out = cuda::copy_to_device(x.tensor(), device)?;
        run_device(&plan, ids, updates, &mut out)?;
        return Ok(LoDTensor::dense(out));
    }
    let mut out = Tensor::uninit(x.tensor().dtype(), *x.dims())?;
    run(&plan, ids, updates, Some(x.tensor()), out.bytes_mut()?, x.tensor().dtype())?;
    Ok(LoDTensor::dense(out))
}

/// `sequence_scatter` written into `x` itself (its LoD stays). `x`'s memory must not be shared
/// with another tensor (else `InvalidArgument`); see [`sequence_scatter_inplace_shared`].
pub fn sequence_scatter_inplace(x: &mut LoDTensor, ids: &LoDTensor, updates: &LoDTensor) -> Result<()> {
    let plan = check(x.tensor(), ids, updates)?;
    if let Place::Cuda(_) = plan.place {
        // The rule of `Tensor::bytes_mut`, which device memory does not go through.
        ensure!(
            !x.tensor().is_shared(),
            InvalidArgument,
            "tensor: its memory is shared with another tensor; copy it before writing through Rust"
        );
        return run_device(&plan, ids, updates, x.tensor_mut());
    }
    let dtype = x.tensor().dtype();
    run(&plan, ids, updates, None, x.tensor_mut().bytes_mut()?, dtype)
}

/// `sequence_scatter` written into `x`'s memory even when other tensors share it (they see the
/// result): the C API's in-place scatter. `ids` and `updates` must not use `x`'s allocation.
///
/// # Safety
/// No other thread or live reference may read or write `x`'s memory during the call.
pub unsafe fn sequence_scatter_inplace_shared(x: &mut LoDTensor, ids: &LoDTensor, updates: &LoDTensor) -> Result<()> {
    let plan = check(x.tensor(), ids, updates)?;
    for (name, t) in [("ids", ids.tensor()), ("updates", updates.tensor())] {
        ensure!(
            !t.shares_memory_with(x.tensor()),
            InvalidArgument,
            "{name}: uses x's memory; an in-place scatter cannot read from the tensor it writes"
        );
    }
    if let Place::Cuda(_) = plan.place {
        return run_device(&plan, ids, updates, x.tensor_mut());
    }
    let dtype = x.tensor().dtype();
    let n = x.tensor().nbytes();
    // SAFETY: host memory of `n` bytes (checked by `check`), not aliased during the call (the
    // caller's promise and the check above).
    let bytes = std::slice::from_raw_parts_mut(x.tensor_mut().as_mut_ptr(), n);
    run(&plan, ids, updates, None, bytes, dtype)
}
