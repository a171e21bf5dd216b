//! What the kernel launchers share: the device of an input, a dtype's kernel-name suffix, counts
//! and offsets as the kernels take them.

use super::device::{device, Device};
use super::launch::upload;
use crate::dtype::DType;
use crate::error::{err, Result};
use crate::memory::Allocation;
use crate::place::Place;
use crate::tensor::Tensor;
use std::sync::Arc;

/// The device `t` is on; `op` names the launcher in the (internal) error for a host tensor.
pub(crate) fn device_of(t: &Tensor, op: &str) -> Result<Arc<Device>> {
    match t.place() {
        Place::Cuda(ordinal) => device(ordinal),
        p => Err(err!(Internal, "{op}: the CUDA kernel got a tensor on {p}")),
    }
}

/// The kernel-name suffix of a computing dtype (the callers have checked the dtype).
pub(crate) fn dtype_suffix(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::U8 => "u8",
        DType::I8 => "i8",
        DType::I16 => "i16",
        DType::I32 => "i32",
        DType::I64 => "i64",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        DType::Bool => return Err(err!(Internal, "no CUDA kernel computes on bool")),
    })
}

/// The kernel-name suffix of a float dtype (the callers have checked the dtype).
pub(crate) fn float_suffix(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        DType::F32 => "f32",
        DType::F64 => "f64",
        other => return Err(err!(Internal, "no float kernel for {other}")),
    })
}

/// A count of sequences (or ranges) as the kernels' u32; `what` names the argument.
pub(crate) fn count_u32(n: usize, what: &str) -> Result<u32> {
    u32::try_from(n).map_err(|_| err!(Unsupported, "{what}: {n} sequences; the CUDA kernel takes up to 2^32 - 1"))
}

/// `offsets` (row or element offsets) uploaded as i64, as they are: a usize is an i64's size on
/// every target the library builds for, and offsets are at most isize::MAX, so the bytes are the
/// same (no converted copy of a LoD level that may hold millions of offsets).
pub(crate) fn upload_offsets(d: &Arc<Device>, offsets: &[usize]) -> Result<Arc<Allocation>> {
    const _: () = assert!(
        std::mem::size_of::<usize>() == std::mem::size_of::<i64>()
            && std::mem::align_of::<usize>() == std::mem::align_of::<i64>()
    );
    debug_assert!(offsets.iter().all(|&o| o <= isize::MAX as usize));
    // SAFETY: same size and alignment (asserted above), and every usize value up to isize::MAX
    // has the same bytes as that i64.
    let table = unsafe { std::slice::from_raw_parts(offsets.as_ptr().cast::<i64>(), offsets.len()) };
    upload(d, table)
}

/// The widest word (16, 8, 4, 2 or 1 bytes) dividing `row_bytes` and every address: the unit in
/// which the row-movement kernels copy.
pub(crate) fn word_for(row_bytes: usize, addrs: impl IntoIterator<Item = u64> + Clone) -> usize {
    [16usize, 8, 4, 2, 1]
        .into_iter()
        .find(|&w| row_bytes.is_multiple_of(w) && addrs.clone().into_iter().all(|a| a % w as u64 == 0))
        .expect("1 divides everything")
}
