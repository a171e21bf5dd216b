//! Moving tensors between places, waiting for a device, its stream, and what has been asked of
//! it. The only operations that copy between places: every other op runs where its inputs are.

use crate::backend::cuda::{self, CudaCounters};
use crate::error::Result;
use crate::lod_tensor::LoDTensor;
use crate::place::Place;

/// The number of CUDA devices. `Unsupported` in a build without CUDA, when no CUDA driver can be
/// loaded, or when the driver reports no device.
pub fn cuda_device_count() -> Result<usize> {
    cuda::device_count()
}

/// Compiles and loads every kernel file for CUDA device `device` now, rather than each at the
/// first call that needs it (compiling them all takes seconds): a program that calls this at
/// start-up, for example before serving requests, keeps that time out of its first calls. The
/// files compile at once on threads of their own; compiled files are kept on disk for later
/// processes (see `LODTENSOR_KERNEL_CACHE` in the README) and load from there in a fraction of
/// the time. Calling it again does nothing more. `InvalidArgument` for a device beyond the count,
/// `Unsupported` without CUDA, a driver, a device or NVRTC (or for a GPU older than every
/// architecture NVRTC targets), `Internal` for a kernel file that does not compile or load.
pub fn cuda_load_kernels(device: u32) -> Result<()> {
    cuda::load_kernels(device)
}

/// A copy of `x` (elements and LoD) on `place`. Always a new allocation, also when `x` is already
/// on `place` (use `clone` to share): the result never aliases the input. A copy to the host waits
/// for the device; a copy to a device is queued on the device's stream. `x` may be changed or
/// dropped as soon as this returns: a copy of up to 1 MiB is made from the device's upload ring;
/// a larger one from page-locked or managed host memory, which the device reads after the call,
/// is waited for.
pub fn to_place(x: &LoDTensor, place: Place) -> Result<LoDTensor> {
    x.tensor().place().ensure_usable()?;
    let tensor = match place {
        Place::Cpu => match x.tensor().place() {
            Place::Cpu => x.tensor().copy()?,
            Place::Cuda(_) => cuda::copy_to_host(x.tensor())?,
        },
        Place::Cuda(n) => cuda::copy_to_device(x.tensor(), n)?,
    };
    LoDTensor::new(tensor, x.lod().clone())
}

/// Waits until the work queued on `place` has finished (nothing to wait for on the CPU, whose
/// ops return when done).
pub fn synchronize(place: Place) -> Result<()> {
    match place {
        Place::Cpu => Ok(()),
        Place::Cuda(n) => cuda::synchronize(n),
    }
}

/// The stream that all the library's work on CUDA device `device` goes to, in call order: the
/// driver's `CUstream` handle (cudarc's `sys::CUstream`, the runtime's `cudaStream_t`), of the
/// device's primary context (the one the CUDA runtime uses), non-blocking (it does not wait for
/// the legacy default stream). Sets the device up if it has not been used yet. The handle stays
/// valid, and the same, for the life of the process; it belongs to the library (never destroy
/// it).
///
/// Work of the caller's queued on this stream is ordered with the library's calls without a
/// wait: it runs after the work of calls made before it was queued and before that of calls made
/// after, so a model whose kernels write a device tensor here can hand it to an op (or to the
/// decoder as log-probs) at once, and a kernel queued here may read an op's result at once. Work
/// on another stream needs an event each way: recorded on that stream and waited for by this one
/// (`cuStreamWaitEvent`) before an op reads what it wrote; recorded on this one and waited for by
/// that one before it reads an op's result. A destroyed tensor's memory goes back to the
/// library's cache, and the next op on the device may write it, ordered on this stream only: work
/// on another stream that still reads or writes that memory must have finished, or be waited for
/// by this stream, before the last handle is dropped.
///
/// `InvalidArgument` for a device beyond the count, `Unsupported` without CUDA, a driver or a
/// device, `Internal` or `OutOfMemory` for a driver failure while setting the device up.
pub fn cuda_stream(device: u32) -> Result<*mut std::ffi::c_void> {
    cuda::stream(device)
}

/// What the library has asked of CUDA device `device` since the process started: kernel launches,
/// fills, copies each way and their bytes, waits and allocations (see [`CudaCounters`]). Take a
/// reading before and after a call and subtract ([`CudaCounters::since`]) to see what the call
/// did on the device. All zero for a device not used yet (asking does not set it up).
/// `InvalidArgument` for a device beyond the count, `Unsupported` without CUDA, a driver or a
/// device.
pub fn cuda_counters(device: u32) -> Result<CudaCounters> {
    cuda::device_counters(device)
}
