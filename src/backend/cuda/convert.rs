//! Launchers of `kernels/convert.cu`: `cast` between any two of the ten dtypes, one launch; bool
//! elements packed into Arrow's bits and unpacked from them.

use super::device::{device, new_tensor};
use super::launch::{launch_unrolled, Args};
use super::seq_common::device_of;
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;

/// A new device tensor with `x`'s dims and every element converted to `dtype` with the CPU's
/// rules (`backend::cpu::convert`), bit for bit.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Tensor> {
    let d = device_of(x, "cast")?;
    let mut out = new_tensor(&d, dtype, *x.dims())?;
    let n = x.numel() as u64;
    if n == 0 {
        return Ok(out);
    }
    let args = Args::new().ptr(x).arg(out.as_mut_ptr() as u64).arg(n);
    launch_unrolled(&d, "convert.cu", &format!("cast_{}_{}", x.dtype().name(), dtype.name()), n, args)?;
    Ok(out)
}

/// The bool elements of device tensor `x` (any non-zero byte true) as Arrow's bits, 8 to a byte,
/// least significant first, the spare bits of the last byte 0: a new uint8 device tensor of
/// `ceil(numel / 8)` bytes.
pub fn pack_bits(x: &Tensor) -> Result<Tensor> {
    let d = device_of(x, "pack_bits")?;
    let n = x.numel();
    let bytes = n.div_ceil(8);
    let mut out = new_tensor(&d, DType::U8, Dim::new(&[bytes])?)?;
    if bytes > 0 {
        let args = Args::new().ptr(x).arg(out.as_mut_ptr() as u64).arg(n as u64);
        launch_unrolled(&d, "convert.cu", "pack_bits", bytes as u64, args)?;
    }
    Ok(out)
}

/// Bits `[first, first + numel(dims))` of the device buffer at `bits` on device `ordinal` (Arrow's
/// bits, least significant first) as a new bool tensor of `dims` there. The buffer is read by a
/// kernel queued on the device's stream: it must stay until that has run.
///
/// # Safety
/// `bits` holds those bits on the device (`check_device_buffer`).
pub unsafe fn unpack_bits(ordinal: u32, bits: *const u8, first: usize, dims: Dim) -> Result<Tensor> {
    let d = device(ordinal)?;
    let n = dims.numel();
    let mut out = new_tensor(&d, DType::Bool, dims)?;
    if n > 0 {
        let args = Args::new().arg(bits as u64).arg(first as u64).arg(out.as_mut_ptr() as u64).arg(n as u64);
        launch_unrolled(&d, "convert.cu", "unpack_bits", n as u64, args)?;
    }
    Ok(out)
}

/// `n` offsets of an Arrow list at `src` on device `ordinal` (`width` 4 or 8 bytes each), each
/// less `first`, as a new device block of 8-byte offsets: a LoD level's copy on the device, as
/// `level_on` would upload it. The offsets are read by a kernel queued on the device's stream:
/// they must stay until it has run.
///
/// # Safety
/// `src` holds those offsets on the device, none less than `first`.
pub unsafe fn rebase_offsets(
    ordinal: u32,
    src: *const u8,
    width: usize,
    n: usize,
    first: usize,
) -> Result<std::sync::Arc<crate::memory::Allocation>> {
    let d = device(ordinal)?;
    let out = d.allocation(n * 8)?;
    if n > 0 {
        let args = Args::new().arg(src as u64).arg(n as u64).arg(first as u64).arg(out.as_ptr() as u64);
        let kernel = if width == 8 { "rebase_offsets_i64" } else { "rebase_offsets_i32" };
        launch_unrolled(&d, "convert.cu", kernel, n as u64, args)?;
    }
    Ok(out)
}
