//! Stand-in for the CUDA backend in builds without CUDA: every entry reports that it is missing,
//! so callers need no conditional compilation.

use super::seq_args::{DeviceStep, StepSources};
use crate::dim::Dim;
use crate::error::{err, Error, Result};
use crate::lod::{Lod, LodLevel};
use crate::lod_tensor::LoDTensor;
use crate::memory::Allocation;
use crate::tensor::Tensor;
use std::ops::Range;
use std::sync::Arc;

fn missing(what: &str) -> Error {
    err!(Unsupported, "{what}: lodtensor was built without CUDA (cargo feature `cuda`)")
}

/// A block of device memory; none can exist in a build without CUDA.
pub enum DeviceBlock {}

impl DeviceBlock {
    pub fn ptr(&self) -> *mut u8 {
        match *self {}
    }
}

/// Checks that CUDA device `device` can be used.
pub fn ensure_device(device: u32) -> Result<()> {
    Err(no_device(device))
}

fn no_device(device: u32) -> Error {
    err!(Unsupported, "place: cuda:{device} requested, but lodtensor was built without CUDA")
}

/// The number of CUDA devices.
pub fn device_count() -> Result<usize> {
    Err(missing("device count"))
}

/// Loads every kernel file for `device`.
pub fn load_kernels(device: u32) -> Result<()> {
    Err(no_device(device))
}

/// Waits until the work queued on `device` has finished.
pub fn synchronize(device: u32) -> Result<()> {
    ensure_device(device)
}

/// Makes the work queued on `device` wait for an event.
///
/// # Safety
/// None needed here: no event can be used without CUDA.
pub unsafe fn wait_event(device: u32, _event: *mut std::ffi::c_void) -> Result<()> {
    Err(no_device(device))
}

/// Page-locks host memory for the devices' copies.
///
/// # Safety
/// None needed here: nothing is registered without CUDA.
pub unsafe fn register_host_memory(_ptr: *mut u8, _len: usize) -> Result<()> {
    Err(no_device(0))
}

/// Ends a page-locking of host memory.
///
/// # Safety
/// None needed here: nothing is registered without CUDA.
pub unsafe fn unregister_host_memory(_ptr: *mut u8) -> Result<()> {
    Err(no_device(0))
}

/// Every level of a LoD on `device`.
pub fn lod_levels_on(device: u32, _lod: &crate::lod::Lod) -> Result<Vec<std::sync::Arc<crate::memory::Allocation>>> {
    Err(no_device(device))
}

/// Checks that kernels on `device` can use a caller's buffer.
pub fn check_device_buffer(device: u32, _ptr: *const u8, _len: usize) -> Result<()> {
    Err(no_device(device))
}

/// The stream all work on `device` goes to.
pub fn stream(device: u32) -> Result<*mut std::ffi::c_void> {
    Err(no_device(device))
}

/// What the library has asked of `device`.
pub fn device_counters(device: u32) -> Result<super::CudaCounters> {
    Err(no_device(device))
}

/// The device memory the library holds on `device`: `(in_use, kept)`.
pub fn device_memory_info(device: u32) -> Result<(usize, usize)> {
    Err(no_device(device))
}

/// `(free, total)` device memory of `device`, as the driver reports them.
pub fn device_free_memory(device: u32) -> Result<(usize, usize)> {
    Err(no_device(device))
}

/// Gives the blocks kept by `device`'s cache back to the driver.
pub fn empty_device_cache(device: u32) -> Result<()> {
    Err(no_device(device))
}

/// Sets the bound on the freed blocks `device`'s cache keeps.
pub fn set_device_cache_limit(device: u32, _bytes: usize) -> Result<()> {
    Err(no_device(device))
}

/// The bound on the freed blocks `device`'s cache keeps.
pub fn device_cache_limit(device: u32) -> Result<usize> {
    Err(no_device(device))
}

/// A copy of `src` (any place) on CUDA device `device`.
pub fn copy_to_device(_src: &Tensor, device: u32) -> Result<Tensor> {
    Err(no_device(device))
}

/// A host copy of `src`, a tensor on a CUDA device.
pub fn copy_to_host(src: &Tensor) -> Result<Tensor> {
    Err(err!(Unsupported, "tensor: is on {}, but lodtensor was built without CUDA", src.place()))
}

/// Copies the elements of `src` into `dst`: host tensors only in a build without CUDA.
pub fn copy_bytes_to_host(src: &Tensor, dst: &mut [u8]) -> Result<()> {
    dst.copy_from_slice(src.bytes()?);
    Ok(())
}

/// Host copies of `srcs`.
pub fn copy_all_to_host(srcs: &[&Tensor]) -> Result<Vec<Tensor>> {
    srcs.iter().map(|t| copy_to_host(t)).collect()
}

/// A new device tensor of `dims` whose rows are `ranges` of `src` (rows of `row_bytes` bytes).
pub fn gather_row_ranges(src: &Tensor, _row_bytes: usize, _ranges: &[Range<usize>], _dims: Dim) -> Result<Tensor> {
    copy_to_host(src)
}

/// sequence_expand_as on a CUDA device.
pub fn repeat_rows(src: &Tensor, _row_bytes: usize, _level: LodLevel, _dims: Dim) -> Result<Tensor> {
    copy_to_host(src)
}

/// sequence_expand of an x with a LoD on a CUDA device.
pub fn expand_rows(
    x: &Tensor,
    _row_bytes: usize,
    _x_level: LodLevel,
    _repeats: LodLevel,
    _dims: Dim,
) -> Result<(Tensor, Option<Arc<Allocation>>)> {
    Ok((copy_to_host(x)?, None))
}

/// lod_tensor_to_array of rows on a CUDA device.
pub fn unpack_rows(
    src: &Tensor,
    _row_bytes: usize,
    _firsts: &[usize],
    _step_rows: &[usize],
    _dims: Dim,
) -> Result<Tensor> {
    copy_to_host(src)
}

/// array_to_lod_tensor of rows on a CUDA device.
pub fn pack_rows(
    steps: &[&Tensor],
    _row_bytes: usize,
    _seq_rows: &[usize],
    _position: &[usize],
    _dtype: crate::dtype::DType,
    _dims: Dim,
) -> Result<Tensor> {
    copy_to_host(steps[0])
}

/// gather_rows with its index on a CUDA device, for sources that share it.
pub fn gather_rows_by_index(srcs: &[(&Tensor, Dim)], _index: &Tensor) -> Result<Option<Vec<Tensor>>> {
    srcs.iter().map(|(src, _)| copy_to_host(src)).collect::<Result<Vec<_>>>().map(Some)
}

/// sequence_concat on a CUDA device.
pub fn concat_rows(
    srcs: &[&Tensor],
    _lods: &[&Lod],
    _levels: &[&[usize]],
    _row_bytes: usize,
    _dims: Dim,
) -> Result<(Tensor, Option<Arc<Allocation>>)> {
    Ok((copy_to_host(srcs[0])?, None))
}

/// sequence_unpad on a CUDA device.
pub fn unpad_rows(x: &Tensor, _row_bytes: usize, _padded: usize, _out: LodLevel, _dims: Dim) -> Result<Tensor> {
    copy_to_host(x)
}

/// sequence_reverse on a CUDA device.
pub fn sequence_reverse_rows(src: &Tensor, _level: LodLevel) -> Result<Tensor> {
    copy_to_host(src)
}

/// sequence_mask on a CUDA device.
pub fn sequence_mask(
    x: &Tensor,
    _maxlen: usize,
    _out_dtype: crate::dtype::DType,
    _one: u64,
    _zero: u64,
    _dims: Dim,
) -> Result<Tensor> {
    copy_to_host(x)
}

/// sequence_enumerate on a CUDA device.
pub fn sequence_enumerate(x: &Tensor, _level: LodLevel, _win: usize, _pad: i64) -> Result<Tensor> {
    copy_to_host(x)
}

/// sequence_conv on a CUDA device.
pub fn sequence_conv(
    x: &Tensor,
    _level: LodLevel,
    _filter: &Tensor,
    _padding: Option<&Tensor>,
    _shape: &crate::backend::cpu::sequence::ConvShape,
) -> Result<Tensor> {
    copy_to_host(x)
}

/// The scatter-add of sequence_scatter on a CUDA device.
pub fn sequence_scatter_add(
    out: &mut Tensor,
    _width: usize,
    _level: LodLevel,
    _ids: &Tensor,
    _updates: &Tensor,
) -> Result<bool> {
    copy_to_host(out).map(|_| false)
}

/// `sequence_pad`'s slots and lengths on a CUDA device.
pub fn pad_sequences(
    x: &Tensor,
    _row_bytes: usize,
    _level: LodLevel,
    _padded: usize,
    _pad: &Tensor,
    _dims: Dim,
) -> Result<(Tensor, Tensor)> {
    copy_to_host(x).map(|t| (t.clone(), t))
}

/// `sequence_pool`'s sums on a CUDA device.
pub fn pool_sum(
    x: &Tensor,
    _width: usize,
    _level: LodLevel,
    _divisor: super::SumDivisor,
    _pad: u64,
    _dims: Dim,
) -> Result<Tensor> {
    copy_to_host(x)
}

/// `sequence_pool`'s maxima/minima and their rows on a CUDA device.
pub fn pool_extreme(
    x: &Tensor,
    _width: usize,
    _level: LodLevel,
    _max: bool,
    _pad: u64,
    _dims: Dim,
) -> Result<(Tensor, Tensor)> {
    copy_to_host(x)?;
    Err(missing("sequence_pool"))
}

/// `sequence_pool`'s first/last rows on a CUDA device.
pub fn pool_select(x: &Tensor, _width: usize, _level: LodLevel, _last: bool, _pad: u64, _dims: Dim) -> Result<Tensor> {
    copy_to_host(x)
}

/// Softmax or log-softmax over segments on a CUDA device.
pub fn softmax_segments(x: &Tensor, _segments: super::Segments, _log: bool) -> Result<Tensor> {
    copy_to_host(x)
}

/// `cast` on a CUDA device.
pub fn cast(x: &Tensor, _dtype: crate::dtype::DType) -> Result<Tensor> {
    copy_to_host(x)
}

/// Arrow's bits of a device tensor's bool elements.
pub fn pack_bits(x: &Tensor) -> Result<Tensor> {
    copy_to_host(x)
}

/// A device buffer's Arrow bits as a bool tensor.
///
/// # Safety
/// As the CUDA build's.
pub unsafe fn unpack_bits(ordinal: u32, _bits: *const u8, _first: usize, _dims: Dim) -> Result<Tensor> {
    Err(no_device(ordinal))
}

/// An Arrow list's offsets on `device`, rebased, as a LoD level's device copy.
///
/// # Safety
/// Nothing is read in a build without CUDA.
pub unsafe fn rebase_offsets(
    device: u32,
    _src: *const u8,
    _width: usize,
    _n: usize,
    _first: usize,
) -> Result<std::sync::Arc<crate::memory::Allocation>> {
    Err(no_device(device))
}

/// The UTF-8 check of device tensors' strings.
pub fn are_utf8_strings(_texts: &[(&Tensor, LodLevel)]) -> Result<bool> {
    Err(missing("are_utf8_strings"))
}

/// `top_k` of a device tensor.
pub fn top_k(
    x: &Tensor,
    _rows: usize,
    _width: usize,
    _k: usize,
    _largest: bool,
    _dims: Dim,
) -> Result<(Tensor, Tensor)> {
    Err(copy_to_host(x).err().unwrap_or_else(|| missing("top_k")))
}

/// The fused beam-search step on a device.
#[allow(clippy::too_many_arguments)]
pub fn fused_step(
    _sources: StepSources,
    _beam: usize,
    _log_probs: &Tensor,
    _vocab: usize,
    _pre_ids: &Tensor,
    _pre_scores: &Tensor,
    _end_id: i64,
    _banned: Option<usize>,
    _host_copies: bool,
) -> Result<DeviceStep> {
    Err(missing("beam_search_fused_step"))
}

/// Paddle's beam-search step on a device.
#[allow(clippy::too_many_arguments)]
pub fn beam_step(
    _sources: StepSources,
    _beam: usize,
    _scores: &Tensor,
    _ids: Option<&Tensor>,
    _width: usize,
    _accumulated: bool,
    _pre_ids: &Tensor,
    _pre_scores: &Tensor,
    _end_id: i64,
) -> Result<DeviceStep> {
    Err(missing("beam_search_step"))
}

/// gather_tree on a device.
pub fn gather_tree(
    _ids: &Tensor,
    _parents: &Tensor,
    _steps: usize,
    _batch: usize,
    _beam: usize,
) -> Result<Option<Tensor>> {
    Err(missing("beam_search_gather_tree"))
}
/// Row blocks of several device tensors gathered into a new one.
pub fn gather_sources(
    _srcs: &[&Tensor],
    _row_bytes: usize,
    _blocks: &[(usize, Range<usize>)],
    _dtype: crate::dtype::DType,
    _dims: Dim,
) -> Result<Tensor> {
    Err(missing("array_to_lod_tensor"))
}

/// Concatenation of device tensors along an axis.
pub fn concat_outer(
    _srcs: &[&Tensor],
    _inner: &[usize],
    _outer: usize,
    _dtype: crate::dtype::DType,
    _dims: Dim,
) -> Result<Tensor> {
    Err(missing("tensor_array_to_tensor"))
}

/// A device tensor split into equal pieces along an axis.
pub fn split_outer(_x: &Tensor, _inner: usize, _n: usize, _outer: usize, _part_dims: Dim) -> Result<Vec<LoDTensor>> {
    Err(missing("unstack"))
}

/// `scatter_rows` (overwrite) on a CUDA device.
pub fn scatter_rows_overwrite(x: &Tensor, _index: &Tensor, _updates: &Tensor) -> Result<Option<Tensor>> {
    Err(copy_to_host(x).err().unwrap_or_else(|| missing("scatter_rows")))
}

/// `scatter_rows` (add) on a CUDA device.
pub fn scatter_rows_add(x: &Tensor, _index: &Tensor, _updates: &Tensor) -> Result<Option<Tensor>> {
    Err(copy_to_host(x).err().unwrap_or_else(|| missing("scatter_rows")))
}

/// The GPU benchmark's read calibration on a CUDA device.
pub fn read_bandwidth_probe(t: &Tensor) -> Result<()> {
    copy_to_host(t).map(drop)
}

/// A new device tensor with every element `element`.
pub fn fill(_ordinal: u32, _dtype: crate::dtype::DType, _dims: Dim, _element: &[u8]) -> Result<Tensor> {
    Err(missing("fill"))
}
