//! The CUDA driver as the backend sees it, through cudarc: the probe, one context and stream per
//! device, memory, copies, NVRTC-compiled modules and launches. `emulator.rs` has the same items
//! for the `cuda-emulator` build; everything above this module is shared by both.

use super::launch::Args;
use crate::error::{ensure, err, Error, Result};
use cudarc::driver::{result, sys, DriverError};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// An address in device memory.
pub(crate) type DevicePtr = u64;

/// A loaded kernel module (never unloaded: it lives as long as its device's context).
#[derive(Clone, Copy)]
pub(crate) struct Module(sys::CUmodule);
/// A kernel of a loaded module.
pub(crate) struct Function(sys::CUfunction);

// SAFETY: module and function handles are plain driver handles, valid in any thread once the
// context is bound (every call below binds it first).
unsafe impl Send for Module {}

/// A driver failure as a library error: out-of-memory keeps its status, anything else is
/// `Internal` naming the call.
fn driver_error(what: &str, e: DriverError) -> Error {
    let name = e.error_name().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|_| format!("{:?}", e.0));
    if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
        err!(OutOfMemory, "{what}: the device is out of memory ({name})")
    } else {
        err!(Internal, "{what}: the CUDA driver failed with {name}")
    }
}

/// The number of devices, or why CUDA cannot be used. cudarc panics when a driver function is
/// called without libcuda, so its presence is checked first and every probing call runs inside
/// `catch_unwind`.
pub(crate) fn device_count() -> Result<usize> {
    // SAFETY: only tries to dlopen the driver library.
    let present = catch_unwind(|| unsafe { sys::is_culib_present() }).unwrap_or(false);
    ensure!(present, Unsupported, "cuda: no CUDA driver found (libcuda.so could not be loaded)");
    let version = catch_unwind(|| {
        let mut v = 0;
        // SAFETY: writes one int.
        (unsafe { sys::cuDriverGetVersion(&mut v) } == sys::cudaError_enum::CUDA_SUCCESS).then_some(v)
    });
    let Ok(Some(version)) = version else {
        return Err(err!(Unsupported, "cuda: the CUDA driver could not be loaded (cuDriverGetVersion failed)"));
    };
    ensure!(
        version >= MIN_DRIVER_VERSION,
        Unsupported,
        "cuda: the CUDA driver supports CUDA {}.{}; lodtensor's kernels (PTX from NVRTC 13) need {}.{} or newer",
        version / 1000,
        version % 1000 / 10,
        MIN_DRIVER_VERSION / 1000,
        MIN_DRIVER_VERSION % 1000 / 10
    );
    match catch_unwind(|| result::init().and_then(|()| result::device::get_count())) {
        Err(_) => Err(err!(Unsupported, "cuda: the CUDA driver could not be loaded (a symbol is missing)")),
        Ok(Err(e)) if e.0 == sys::cudaError_enum::CUDA_ERROR_NO_DEVICE => {
            Err(err!(Unsupported, "cuda: the CUDA driver reports no device"))
        }
        Ok(Err(e)) => Err(err!(Unsupported, "cuda: the CUDA driver failed to initialise: {e:?}")),
        Ok(Ok(n)) if n <= 0 => Err(err!(Unsupported, "cuda: the CUDA driver reports no device")),
        Ok(Ok(n)) => Ok(n as usize),
    }
}

/// The oldest driver (as cuDriverGetVersion reports it: 1000 * major + 10 * minor) that loads the
/// PTX NVRTC 13 writes.
const MIN_DRIVER_VERSION: i32 = 13000;

/// One device's primary context and the one stream all its work goes to.
pub(crate) struct Context {
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    arch: String,
}

// SAFETY: the context and stream handles may be used from any thread (each call binds the context
// first).
unsafe impl Send for Context {}
unsafe impl Sync for Context {}

impl Context {
    /// Retains device `ordinal`'s primary context (never released: it lives as long as the process,
    /// like the cached blocks and modules that belong to it) and creates its stream.
    pub(crate) fn open(ordinal: u32) -> Result<Context> {
        let what = "cuda device setup";
        catch_unwind(AssertUnwindSafe(|| -> Result<Context> {
            let dev = result::device::get(ordinal as i32).map_err(|e| driver_error(what, e))?;
            // SAFETY: see above; the attribute queries and the stream use the bound context.
            let ctx = unsafe { result::primary_ctx::retain(dev) }.map_err(|e| driver_error(what, e))?;
            unsafe { result::ctx::set_current(ctx) }.map_err(|e| driver_error(what, e))?;
            let attribute = |a| unsafe { result::device::get_attribute(dev, a) }.map_err(|e| driver_error(what, e));
            let major = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
            let minor = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
            // Non-blocking: the stream does not wait for work on the legacy default stream of others.
            let stream =
                result::stream::create(result::stream::StreamKind::NonBlocking).map_err(|e| driver_error(what, e))?;
            Ok(Context { ctx, stream, arch: format!("compute_{major}{minor}") })
        }))
        .map_err(|_| err!(Internal, "cuda:{ordinal}: the CUDA driver panicked during device setup"))?
    }

    /// Makes this context current on the calling thread.
    fn bind(&self) -> Result<()> {
        // SAFETY: a primary context retained for the life of the process.
        unsafe { result::ctx::set_current(self.ctx) }.map_err(|e| driver_error("cuda context", e))
    }

    /// `len` (> 0) bytes of new device memory; out of memory is `OutOfMemory`.
    pub(crate) fn malloc(&self, len: usize) -> Result<DevicePtr> {
        self.bind()?;
        // SAFETY: a plain allocation in the bound context.
        unsafe { result::malloc_sync(len) }.map_err(|e| driver_error("device allocation", e))
    }

    /// `(free, total)`: the bytes of device memory the driver could still hand out (to this or any
    /// other program) and the device's size.
    pub(crate) fn free_memory(&self) -> Result<(usize, usize)> {
        self.bind()?;
        result::mem_get_info().map_err(|e| driver_error("device memory query", e))
    }

    /// Frees memory from `malloc`, which no queued work uses any more.
    pub(crate) fn free(&self, ptr: DevicePtr) -> Result<()> {
        self.bind()?;
        // SAFETY: memory from `malloc` that nothing else owns (the caller's contract).
        unsafe { result::free_sync(ptr) }.map_err(|e| driver_error("device free", e))
    }

    /// Queues a copy of `src` to `dst`; returns once `src` has been read (pageable memory).
    pub(crate) fn htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller gives `src.len()` bytes of device memory at `dst`.
        unsafe { result::memcpy_htod_async(dst, src, self.stream) }.map_err(|e| driver_error("copy to device", e))
    }

    /// Queues the setting of `n` bytes at `dst` to `byte` (no host memory, so no wait).
    pub(crate) fn set_bytes(&self, dst: DevicePtr, byte: u8, n: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller gives `n` bytes of device memory at `dst`.
        unsafe { result::memset_d8_async(dst, byte, n, self.stream) }.map_err(|e| driver_error("memset", e))
    }

    /// Queues a copy of `n` bytes between device addresses.
    pub(crate) fn dtod(&self, dst: DevicePtr, src: DevicePtr, n: usize) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller gives `n` bytes of device memory at both ends.
        unsafe { result::memcpy_dtod_async(dst, src, n, self.stream) }.map_err(|e| driver_error("copy on device", e))
    }

    /// Copies `dst.len()` bytes from `src` after the queued work, and waits for it.
    pub(crate) fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller gives `dst.len()` bytes of device memory at `src`; the stream is
        // synchronised before `dst` is used.
        unsafe { result::memcpy_dtoh_async(dst, src, self.stream) }.map_err(|e| driver_error("copy to host", e))?;
        self.synchronize()
    }

    /// Waits until the queued work has finished.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.bind()?;
        // SAFETY: this context's stream.
        unsafe { result::stream::synchronize(self.stream) }.map_err(|e| driver_error("cuda synchronize", e))
    }

    /// Compiles kernel file `name` for this device with NVRTC and loads it.
    pub(crate) fn load(&self, name: &'static str, source: &str) -> Result<Module> {
        let ptx = CString::new(ptx_of(name, source, &self.arch)?).expect("PTX has no NUL");
        self.bind()?;
        // SAFETY: a NUL-terminated PTX image, loaded into the bound context.
        unsafe { result::module::load_data(ptx.as_ptr().cast()) }
            .map(Module)
            .map_err(|e| driver_error(&format!("loading {name}"), e))
    }

    pub(crate) fn function(&self, module: Module, name: &str) -> Result<Function> {
        let cname = CString::new(name).expect("no NUL");
        // SAFETY: a module loaded by `load` and never unloaded.
        unsafe { result::module::get_function(module.0, cname) }
            .map(Function)
            .map_err(|e| driver_error(&format!("kernel {name}"), e))
    }

    /// Queues `f` on the stream with `grid` x `block` threads and `args`.
    pub(crate) fn launch(&self, f: &Function, grid: [u32; 3], block: [u32; 3], args: &mut Args) -> Result<()> {
        self.bind()?;
        let mut params: Vec<*mut c_void> = args.pointers();
        // SAFETY: `args` matches the kernel's parameters (the launcher's contract, see launch.rs);
        // every address in them is device memory that stays allocated until the stream has run the
        // kernel (freed blocks return to the cache, and any reuse is queued after this launch).
        unsafe {
            result::launch_kernel(
                f.0,
                (grid[0], grid[1], grid[2]),
                (block[0], block[1], block[2]),
                0,
                self.stream,
                &mut params,
            )
        }
        .map_err(|e| driver_error("kernel launch", e))
    }
}

/// The PTX of kernel file `name` for `arch` (`compute_90`, ...). NVRTC is loaded at first use;
/// without it (or with a compile error) this is an error, never a panic.
pub(crate) fn ptx_of(name: &str, source: &str, arch: &str) -> Result<String> {
    let present = catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }).unwrap_or(false);
    ensure!(present, Unsupported, "nvrtc: the CUDA runtime compiler (libnvrtc.so.13) could not be loaded");
    let opts = CompileOptions {
        options: vec![format!("--gpu-architecture={arch}"), "--std=c++17".into()],
        name: Some(name.to_string()),
        ..Default::default()
    };
    match catch_unwind(|| compile_ptx_with_opts(source, opts)) {
        Err(_) => Err(err!(Unsupported, "nvrtc: the CUDA runtime compiler could not be loaded")),
        Ok(Err(CompileError::CompileError { log, .. })) => {
            Err(err!(Internal, "nvrtc: {name} does not compile for {arch}:\n{}", log.to_string_lossy()))
        }
        Ok(Err(e)) => Err(err!(Internal, "nvrtc: {name}: {e}")),
        Ok(Ok(ptx)) => Ok(ptx.to_src()),
    }
}
