//! Devices of the `cuda` feature: the driver probe, each device's primary context and stream, its
//! caching allocator, and the copies between host and device.

use super::size_class::size_class;
use crate::dim::Dim;
use crate::error::{ensure, err, Error, Result};
use crate::memory::Allocation;
use crate::place::Place;
use crate::tensor::Tensor;
use cudarc::driver::{result, sys, DriverError};
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

/// A driver failure as a library error: out-of-memory keeps its status, anything else is
/// `Internal` naming the call.
pub(crate) fn driver_error(what: &str, e: DriverError) -> Error {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
        err!(OutOfMemory, "{what}: the device is out of memory ({name})")
    } else {
        err!(Internal, "{what}: the CUDA driver failed with {name}")
    }
}

/// The number of devices, or why CUDA cannot be used. Probed once: cudarc panics when a driver
/// function is called without libcuda, so its presence is checked first and every probing call
/// runs inside `catch_unwind`.
fn probe() -> Result<usize> {
    static PROBE: OnceLock<Result<usize>> = OnceLock::new();
    PROBE
        .get_or_init(|| {
            // SAFETY: only tries to dlopen the driver library.
            let present = catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
            ensure!(present, Unsupported, "cuda: no CUDA driver found (libcuda.so could not be loaded)");
            let count = catch_unwind(|| result::init().and_then(|()| result::device::get_count()));
            match count {
                Err(_) => Err(err!(Unsupported, "cuda: the CUDA driver could not be loaded (a symbol is missing)")),
                Ok(Err(e)) if e.0 == sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => {
                    Err(err!(Unsupported, "cuda: the CUDA driver reports no device"))
                }
                Ok(Err(e)) => Err(err!(Unsupported, "cuda: the CUDA driver failed to initialise: {e:?}")),
                Ok(Ok(0)) => Err(err!(Unsupported, "cuda: the CUDA driver reports no device")),
                Ok(Ok(n)) => Ok(n as usize),
            }
        })
        .clone()
}

/// The number of CUDA devices; `Unsupported` when there is no driver or no device.
pub fn device_count() -> Result<usize> {
    probe()
}

/// Checks that CUDA device `device` exists and can be used.
pub fn ensure_device(device: u32) -> Result<()> {
    let n = probe().map_err(|e| match e {
        Error::Unsupported(m) => err!(Unsupported, "place: cuda:{device} requested, but {m}"),
        other => other,
    })?;
    ensure!((device as usize) < n, InvalidArgument, "place: cuda:{device} requested, but there are {n} CUDA device(s)");
    Ok(())
}

/// One device: its primary context, the one stream all its work goes to, the free lists of its
/// caching allocator and its compiled kernel modules.
pub(crate) struct Device {
    pub(crate) ordinal: u32,
    ctx: sys::CUcontext,
    pub(crate) stream: sys::CUstream,
    pub(crate) arch: String,
    free: Mutex<HashMap<usize, Vec<sys::CUdeviceptr>>>,
    pub(crate) modules: Mutex<HashMap<&'static str, sys::CUmodule>>,
}

// SAFETY: the context and stream handles may be used from any thread (each call binds the context
// first); the maps are behind mutexes.
unsafe impl Send for Device {}
unsafe impl Sync for Device {}

impl Device {
    /// Makes this device's context current on the calling thread.
    pub(crate) fn bind(&self) -> Result<()> {
        // SAFETY: a primary context retained for the life of the process.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(|e| driver_error("cuda context", e))
    }

    /// A block of at least `len` bytes (`len` > 0) from the cache, or a new one.
    fn alloc(self: &Arc<Self>, len: usize) -> Result<DeviceBlock> {
        let class =
            size_class(len).ok_or_else(|| err!(OutOfMemory, "a device allocation of {len} bytes is too large"))?;
        if let Some(ptr) = self.free.lock().expect("allocator lock").get_mut(&class).and_then(Vec::pop) {
            return Ok(DeviceBlock { ptr, class, device: self.clone() });
        }
        self.bind()?;
        // SAFETY: a plain allocation in the bound context.
        let ptr = match unsafe { result::malloc_sync(class) } {
            Ok(p) => p,
            Err(e) if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY => {
                // Cached blocks of other sizes may be what is missing: give them back and retry.
                self.empty_cache()?;
                unsafe { result::malloc_sync(class) }.map_err(|e| driver_error("device allocation", e))?
            }
            Err(e) => return Err(driver_error("device allocation", e)),
        };
        Ok(DeviceBlock { ptr, class, device: self.clone() })
    }

    /// Frees every cached block (after the queued work that may still use them).
    pub(crate) fn empty_cache(&self) -> Result<()> {
        self.synchronize()?;
        let blocks: Vec<_> = self.free.lock().expect("allocator lock").drain().flat_map(|(_, v)| v).collect();
        for ptr in blocks {
            // SAFETY: blocks in the free lists are owned by no allocation.
            unsafe { result::free_sync(ptr) }.map_err(|e| driver_error("device free", e))?;
        }
        Ok(())
    }

    pub(crate) fn synchronize(&self) -> Result<()> {
        self.bind()?;
        // SAFETY: this device's stream.
        unsafe { result::stream::synchronize(self.stream) }.map_err(|e| driver_error("cuda synchronize", e))
    }

    /// A new, uninitialised device allocation of `len` bytes.
    pub(crate) fn allocation(self: &Arc<Self>, len: usize) -> Result<Arc<Allocation>> {
        let block = if len == 0 { None } else { Some(self.alloc(len)?) };
        Ok(Allocation::device(block, len, Place::Cuda(self.ordinal)))
    }
}

/// A block of device memory from a device's cache; dropping it puts it back on its free list.
/// Reuse needs no wait: every use of a device's memory is queued on its one stream.
pub struct DeviceBlock {
    ptr: sys::CUdeviceptr,
    class: usize,
    device: Arc<Device>,
}

impl DeviceBlock {
    pub fn ptr(&self) -> *mut u8 {
        self.ptr as *mut u8
    }
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        if let Ok(mut free) = self.device.free.lock() {
            free.entry(self.class).or_default().push(self.ptr);
        }
    }
}

/// Device `ordinal`, set up at first use and kept for the life of the process.
pub(crate) fn device(ordinal: u32) -> Result<Arc<Device>> {
    static DEVICES: OnceLock<Vec<Mutex<Option<Arc<Device>>>>> = OnceLock::new();
    ensure_device(ordinal)?;
    let devices = DEVICES.get_or_init(|| (0..probe().unwrap_or(0)).map(|_| Mutex::new(None)).collect());
    let mut slot = devices[ordinal as usize].lock().expect("device lock");
    if let Some(d) = slot.as_ref() {
        return Ok(d.clone());
    }
    let what = "cuda device setup";
    let d = catch_unwind(AssertUnwindSafe(|| -> Result<Device> {
        let dev = result::device::get(ordinal as i32).map_err(|e| driver_error(what, e))?;
        // SAFETY: the primary context is retained once and never released (it lives as long as the
        // process, like the cached blocks and modules that belong to it).
        let ctx = unsafe { result::primary_ctx::retain(dev) }.map_err(|e| driver_error(what, e))?;
        unsafe { result::ctx::set_current(ctx) }.map_err(|e| driver_error(what, e))?;
        let major = unsafe {
            result::device::get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
        }
        .map_err(|e| driver_error(what, e))?;
        let minor = unsafe {
            result::device::get_attribute(dev, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        }
        .map_err(|e| driver_error(what, e))?;
        // Non-blocking: the stream does not wait for work on the legacy default stream of others.
        let stream =
            result::stream::create(result::stream::StreamKind::NonBlocking).map_err(|e| driver_error(what, e))?;
        Ok(Device {
            ordinal,
            ctx,
            stream,
            arch: format!("compute_{major}{minor}"),
            free: Mutex::new(HashMap::new()),
            modules: Mutex::new(HashMap::new()),
        })
    }))
    .map_err(|_| err!(Internal, "cuda:{ordinal}: the CUDA driver panicked during device setup"))??;
    let d = Arc::new(d);
    *slot = Some(d.clone());
    Ok(d)
}

/// Waits until the work queued on `device` has finished.
pub fn synchronize(ordinal: u32) -> Result<()> {
    device(ordinal)?.synchronize()
}

/// A copy of `src` (host or device memory) on CUDA device `ordinal`.
pub fn copy_to_device(src: &Tensor, ordinal: u32) -> Result<Tensor> {
    let d = device(ordinal)?;
    let n = src.nbytes();
    let alloc = d.allocation(n)?;
    if n > 0 {
        match src.place() {
            Place::Cpu => {
                d.bind()?;
                // SAFETY: `n` bytes at both ends; a copy from pageable memory returns once the source
                // has been read, so `src` may change afterwards.
                let bytes = src.bytes()?;
                unsafe { result::memcpy_htod_async(alloc.as_ptr() as sys::CUdeviceptr, bytes, d.stream) }
                    .map_err(|e| driver_error("copy to device", e))?;
            }
            Place::Cuda(s) if s == ordinal => {
                d.bind()?;
                // SAFETY: device memory of `n` bytes at both ends, ordered on the device's stream.
                unsafe {
                    result::memcpy_dtod_async(
                        alloc.as_ptr() as sys::CUdeviceptr,
                        src.as_ptr() as sys::CUdeviceptr,
                        n,
                        d.stream,
                    )
                }
                .map_err(|e| driver_error("copy on device", e))?;
            }
            Place::Cuda(_) => {
                // Between devices through the host: simple, and rare in inference.
                return copy_to_device(&copy_to_host(src)?, ordinal);
            }
        }
    }
    Tensor::from_allocation(alloc, src.dtype(), *src.dims())
}

/// A host copy of `src`, a tensor on a CUDA device; waits for the device's queued work.
pub fn copy_to_host(src: &Tensor) -> Result<Tensor> {
    let Place::Cuda(ordinal) = src.place() else {
        return src.copy();
    };
    let d = device(ordinal)?;
    let mut out = Tensor::zeros(src.dtype(), *src.dims())?;
    let n = src.nbytes();
    if n > 0 {
        d.bind()?;
        let dst = out.bytes_mut()?;
        // SAFETY: `n` bytes at both ends; the stream is synchronised before `dst` is read.
        unsafe { result::memcpy_dtoh_async(dst, src.as_ptr() as sys::CUdeviceptr, d.stream) }
            .map_err(|e| driver_error("copy to host", e))?;
        d.synchronize()?;
    }
    Ok(out)
}

/// A new device tensor of `dims` and `dtype` on `d`, uninitialised (the caller's kernel writes it).
pub(crate) fn new_tensor(d: &Arc<Device>, dtype: crate::dtype::DType, dims: Dim) -> Result<Tensor> {
    let n = dims
        .numel()
        .checked_mul(dtype.size())
        .ok_or_else(|| err!(OutOfMemory, "dims: a {dtype} tensor of dims {dims:?} is too large"))?;
    Tensor::from_allocation(d.allocation(n)?, dtype, dims)
}
