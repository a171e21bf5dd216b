//! The CUDA driver as the backend sees it, through cudarc: the probe, one context and stream per
//! device, memory, copies, NVRTC-compiled modules and launches. `emulator.rs` has the same items
//! for the `cuda-emulator` build; everything above this module is shared by both.

use super::kernel_cache;
use super::launch::Args;
use super::memory_owner::MemoryOwner;
use crate::error::{ensure, err, Error, Result};
use cudarc::driver::{result, sys, DriverError};
use cudarc::nvrtc::result as nvrtc;
use std::ffi::{c_void, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// An address in device memory.
pub(crate) type DevicePtr = u64;

/// A loaded kernel module (never unloaded: it lives as long as its device's context).
#[derive(Clone, Copy)]
pub(crate) struct Module(sys::CUmodule);
/// A kernel of a loaded module (Clone, not Copy, as the emulator's, whose handle is a name).
#[derive(Clone)]
pub(crate) struct Function(sys::CUfunction);

// SAFETY: module and function handles are plain driver handles, valid in any thread once the
// context is bound (every call below binds it first).
unsafe impl Send for Module {}
unsafe impl Send for Function {}

/// A marker in a device's stream (a `CUevent` without timing): reached once the work queued
/// before its last recording has finished. Never destroyed: its owners live as long as the
/// process.
pub(crate) struct Event(sys::CUevent);

// SAFETY: as for `Module`.
unsafe impl Send for Event {}

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

/// A cap on the blocks of every grid-stride launch below the launchers' own (launch.rs's
/// `max_blocks`): none on a GPU.
pub(crate) fn grid_cap() -> Option<u64> {
    None
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
        "cuda: the CUDA driver supports CUDA {}.{}; lodtensor's kernels (compiled by NVRTC 13) need {}.{} or newer",
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
/// code NVRTC 13 writes.
const MIN_DRIVER_VERSION: i32 = 13000;

/// One device's primary context and the one stream all its work goes to.
pub(crate) struct Context {
    ctx: sys::CUcontext,
    stream: sys::CUstream,
    /// The device's compute capability, (major, minor).
    capability: (i32, i32),
    /// Whether its kernels can read the host's pageable memory (HMM or ATS).
    reads_pageable: bool,
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
            let pageable = attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS)?;
            // Non-blocking: the stream does not wait for work on the legacy default stream of others.
            let stream =
                result::stream::create(result::stream::StreamKind::NonBlocking).map_err(|e| driver_error(what, e))?;
            Ok(Context { ctx, stream, capability: (major, minor), reads_pageable: pageable != 0 })
        }))
        .map_err(|_| err!(Internal, "cuda:{ordinal}: the CUDA driver panicked during device setup"))?
    }

    /// The stream all of this device's work goes to, as the driver's `CUstream` handle.
    pub(crate) fn stream(&self) -> *mut c_void {
        self.stream.cast()
    }

    /// What the driver knows of address `ptr` (unified addressing: any device's, or the host's).
    pub(crate) fn memory_owner(&self, ptr: DevicePtr) -> Result<MemoryOwner> {
        use sys::CUpointer_attribute::*;
        self.bind()?;
        let query = |attribute| {
            let mut value: u32 = 0;
            // SAFETY: each attribute asked for here is written as a 32-bit value (an int, an
            // unsigned int, or a bool, which writes the low byte of the zeroed value).
            let status = unsafe { sys::cuPointerGetAttribute((&raw mut value).cast(), attribute, ptr) };
            (status == sys::cudaError_enum::CUDA_SUCCESS).then_some(value).ok_or(status)
        };
        let failed = |status| err!(Internal, "data: the CUDA driver failed to describe {ptr:#x} ({status:?})");
        let memory_type = match query(CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
            Ok(t) => t,
            // Memory the driver was never told of: not allocated, mapped or registered with it.
            Err(sys::cudaError_enum::CUDA_ERROR_INVALID_VALUE) => return Ok(MemoryOwner::Unknown),
            Err(status) => return Err(failed(status)),
        };
        if query(CU_POINTER_ATTRIBUTE_IS_MANAGED).map_err(failed)? != 0
            || memory_type != sys::CUmemorytype::CU_MEMORYTYPE_DEVICE as u32
        {
            return Ok(MemoryOwner::Shared);
        }
        Ok(MemoryOwner::Device(query(CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL).map_err(failed)?))
    }

    /// Whether kernels can read the host's pageable memory.
    pub(crate) fn reads_pageable_memory(&self) -> bool {
        self.reads_pageable
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

    /// `len` bytes of page-locked host memory, which the device copies to at full speed and
    /// without the driver's own staging; never freed by the library (it is kept for the life of
    /// the process).
    pub(crate) fn malloc_host(&self, len: usize) -> Result<*mut u8> {
        self.bind()?;
        // SAFETY: a plain allocation; the caller treats its bytes as uninitialised.
        unsafe { result::malloc_host(len, 0) }.map(|p| p.cast()).map_err(|e| driver_error("page-locked allocation", e))
    }

    /// Page-locks the caller's `len` (> 0) bytes at `ptr` for every context, mapped for the
    /// devices' kernels (`cuMemHostRegister`, portable and device-mapped: under unified
    /// addressing the kernels read it at the host's address); memory that overlaps page-locked
    /// memory already is `InvalidArgument`.
    pub(crate) fn register_host(&self, ptr: *mut u8, len: usize) -> Result<()> {
        use sys::cudaError_enum::*;
        self.bind()?;
        let flags = sys::CU_MEMHOSTREGISTER_PORTABLE | sys::CU_MEMHOSTREGISTER_DEVICEMAP;
        // SAFETY: the caller gives `len` bytes of host memory at `ptr`, kept until unregistered.
        match unsafe { sys::cuMemHostRegister_v2(ptr.cast(), len, flags) } {
            CUDA_SUCCESS => Ok(()),
            CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED => {
                Err(err!(InvalidArgument, "page-lock host memory: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED"))
            }
            status => Err(driver_error("page-lock host memory", DriverError(status))),
        }
    }

    /// Ends a `register_host` of memory starting at `ptr`.
    pub(crate) fn unregister_host(&self, ptr: *mut u8) -> Result<()> {
        use sys::cudaError_enum::*;
        self.bind()?;
        // SAFETY: only ends a registration; memory never registered is refused by the driver.
        match unsafe { sys::cuMemHostUnregister(ptr.cast()) } {
            CUDA_SUCCESS => Ok(()),
            CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED => {
                Err(err!(InvalidArgument, "unlock host memory: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED"))
            }
            status => Err(driver_error("unlock host memory", DriverError(status))),
        }
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

    /// Makes the work queued from now on wait for `event` (a `CUevent` another library recorded).
    pub(crate) fn wait_event(&self, event: *mut c_void) -> Result<()> {
        self.bind()?;
        // SAFETY: the caller gives a live event of this context.
        unsafe { result::stream::wait_event(self.stream, event.cast(), sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
            .map_err(|e| driver_error("wait for an event", e))
    }

    /// A new event of this context.
    pub(crate) fn event(&self) -> Result<Event> {
        self.bind()?;
        result::event::create(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
            .map(Event)
            .map_err(|e| driver_error("event creation", e))
    }

    /// Records `event` after the work queued so far.
    pub(crate) fn record(&self, event: &mut Event) -> Result<()> {
        self.bind()?;
        // SAFETY: an event of this context and its stream.
        unsafe { result::event::record(event.0, self.stream) }.map_err(|e| driver_error("event record", e))
    }

    /// Whether the work queued before `event`'s last recording has finished.
    pub(crate) fn reached(&self, event: &Event) -> Result<bool> {
        self.bind()?;
        // SAFETY: an event of this context.
        match unsafe { result::event::query(event.0) } {
            Ok(()) => Ok(true),
            Err(DriverError(sys::cudaError_enum::CUDA_ERROR_NOT_READY)) => Ok(false),
            Err(e) => Err(driver_error("event query", e)),
        }
    }

    /// Waits until the work queued before `event`'s last recording has finished.
    pub(crate) fn wait_for(&self, event: &Event) -> Result<()> {
        self.bind()?;
        // SAFETY: an event of this context.
        unsafe { result::event::synchronize(event.0) }.map_err(|e| driver_error("event wait", e))
    }

    /// Waits until the queued work has finished.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.bind()?;
        // SAFETY: this context's stream.
        unsafe { result::stream::synchronize(self.stream) }.map_err(|e| driver_error("cuda synchronize", e))
    }

    /// Compiles kernel file `name` for this device with NVRTC (or takes it from the disk cache,
    /// `kernel_cache`) and loads it: as machine code for the device, which the driver loads as it
    /// is; as PTX, which the driver compiles, where NVRTC cannot make that code (a GPU newer than
    /// it: PTX for the newest architecture it knows) or the driver refuses it.
    pub(crate) fn load(&self, name: &'static str, source: &str) -> Result<Module> {
        let cache = kernel_cache::cache_dir();
        let target = nvrtc_target(self.capability)?;
        let cubin = if target == self.capability {
            compiled(name, source, target, KernelImage::Cubin, cache).and_then(|image| self.load_image(name, &image))
        } else {
            Err(err!(Unsupported, "nvrtc: no machine code for this device"))
        };
        match cubin {
            Ok(module) => Ok(module),
            Err(_) => self.load_image(name, &compiled(name, source, target, KernelImage::Ptx, cache)?),
        }
    }

    /// Loads a compiled kernel file (CUBIN, or PTX with its terminating NUL) into this context.
    fn load_image(&self, name: &str, image: &[u8]) -> Result<Module> {
        self.bind()?;
        // SAFETY: a whole image as NVRTC made it (PTX is NUL-terminated), loaded into the bound
        // context.
        unsafe { result::module::load_data(image.as_ptr().cast()) }
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

/// What NVRTC makes of a kernel file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelImage {
    /// Machine code for GPUs of one compute capability (`sm_90`): loads with no further compile.
    Cubin,
    /// PTX for a virtual architecture (`compute_90`): the driver compiles it when it loads.
    Ptx,
}

/// `query` run against NVRTC: `Unsupported` (NVRTC not loaded) when the library is missing, the
/// loader panics, or the query answers `None`.
fn nvrtc_query<T>(query: impl FnOnce() -> Option<T> + std::panic::UnwindSafe) -> Result<T> {
    let answer = catch_unwind(|| {
        // SAFETY: only tries to dlopen the compiler library.
        unsafe { cudarc::nvrtc::sys::is_culib_present() }.then(query).flatten()
    });
    answer
        .ok()
        .flatten()
        .ok_or_else(|| err!(Unsupported, "nvrtc: the CUDA runtime compiler (libnvrtc.so.13) could not be loaded"))
}

/// The newest compute capability at or below `capability` that NVRTC targets: the device's own
/// where NVRTC knows it; for a GPU newer than NVRTC, the newest NVRTC knows (whose PTX the driver
/// compiles for the GPU). `Unsupported` without NVRTC, or for a GPU older than all it targets.
pub(crate) fn nvrtc_target((major, minor): (i32, i32)) -> Result<(i32, i32)> {
    let archs = nvrtc_query(|| {
        let mut n = 0;
        // SAFETY: writes one int, then `n` ints into a buffer of `n`.
        unsafe { cudarc::nvrtc::sys::nvrtcGetNumSupportedArchs(&mut n) }.result().ok()?;
        let mut archs = vec![0; usize::try_from(n).ok()?];
        unsafe { cudarc::nvrtc::sys::nvrtcGetSupportedArchs(archs.as_mut_ptr()) }.result().ok()?;
        Some(archs)
    })?;
    let device = major * 10 + minor;
    let newest = archs.iter().copied().filter(|&a| a <= device).max().ok_or_else(|| {
        err!(
            Unsupported,
            "nvrtc: a GPU of compute capability {major}.{minor} is older than any NVRTC targets ({})",
            archs.iter().map(|a| format!("{}.{}", a / 10, a % 10)).collect::<Vec<_>>().join(", ")
        )
    })?;
    Ok((newest / 10, newest % 10))
}

/// Kernel file `name` (`source`) compiled by NVRTC for compute capability `capability` as
/// `image`, through the disk cache in `cache` (see `kernel_cache`; `None`: compiled every time).
/// NVRTC is loaded at first use; without it (or with a compile error) this is an error, never a
/// panic. PTX keeps its terminating NUL.
pub(crate) fn compiled(
    name: &str,
    source: &str,
    (major, minor): (i32, i32),
    image: KernelImage,
    cache: Option<&Path>,
) -> Result<Vec<u8>> {
    let (v_major, v_minor) = nvrtc_query(|| {
        let (mut v_major, mut v_minor) = (0, 0);
        // SAFETY: writes two ints.
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut v_major, &mut v_minor) }.result().ok()?;
        Some((v_major, v_minor))
    })?;
    let arch = match image {
        KernelImage::Cubin => format!("sm_{major}{minor}"),
        KernelImage::Ptx => format!("compute_{major}{minor}"),
    };
    let options = [format!("--gpu-architecture={arch}"), "--std=c++17".to_string()];
    // The key: everything the image depends on.
    let mut key = format!("nvrtc {v_major}.{v_minor}\n{}\n{name}\n", options.join(" ")).into_bytes();
    key.extend_from_slice(source.as_bytes());
    kernel_cache::cached(cache, &key, || nvrtc_query(|| Some(nvrtc_compile(name, source, &arch, &options, image)))?)
}

/// One NVRTC compile of `source` with `options` (the target `arch` among them), and its image.
fn nvrtc_compile(name: &str, source: &str, arch: &str, options: &[String], image: KernelImage) -> Result<Vec<u8>> {
    let failed = |what: &str, e: nvrtc::NvrtcError| err!(Internal, "nvrtc: {name}: {what} failed with {:?}", e.0);
    let src = CString::new(source).map_err(|_| err!(Internal, "nvrtc: {name} has a NUL byte"))?;
    let cname = CString::new(name).map_err(|_| err!(Internal, "nvrtc: the name {name:?} has a NUL byte"))?;
    let prog = nvrtc::create_program(&src, Some(&cname)).map_err(|e| failed("creating the program", e))?;
    // SAFETY: `prog` was created above and is destroyed once, after its last use; the image's
    // buffer is as long as NVRTC says.
    let out = unsafe {
        match nvrtc::compile_program(prog, options) {
            Err(e) if e.0 == cudarc::nvrtc::sys::nvrtcResult::NVRTC_ERROR_COMPILATION => {
                let log = nvrtc::get_program_log(prog).unwrap_or_default();
                let log: Vec<u8> = log.iter().map(|&c| c as u8).take_while(|&c| c != 0).collect();
                Err(err!(Internal, "nvrtc: {name} does not compile for {arch}:\n{}", String::from_utf8_lossy(&log)))
            }
            Err(e) => Err(failed(&format!("compiling for {arch}"), e)),
            Ok(()) => match image {
                KernelImage::Ptx => nvrtc::get_ptx(prog).map(|p| p.iter().map(|&c| c as u8).collect()),
                KernelImage::Cubin => cubin_of(prog),
            }
            .map_err(|e| failed("taking the image", e)),
        }
    };
    // SAFETY: as above.
    let _ = unsafe { nvrtc::destroy_program(prog) };
    out
}

/// The CUBIN of a compiled program.
///
/// # Safety
/// `prog` is a live program compiled for a real architecture (`sm_XY`).
unsafe fn cubin_of(prog: cudarc::nvrtc::sys::nvrtcProgram) -> std::result::Result<Vec<u8>, nvrtc::NvrtcError> {
    let mut size = 0usize;
    cudarc::nvrtc::sys::nvrtcGetCUBINSize(prog, &mut size).result()?;
    let mut cubin = vec![0u8; size];
    cudarc::nvrtc::sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast()).result()?;
    Ok(cubin)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kernel file compiled through a fresh cache directory: machine code (an ELF image) the
    /// first time, stored as one entry; the same bytes the second time, from the entry; PTX, a
    /// second entry. Needs NVRTC (skipped without it unless LODTENSOR_REQUIRE_NVRTC is set).
    #[test]
    fn compiled_kernels_are_kept_on_disk() {
        let (name, source) = *super::super::KERNEL_SOURCES.iter().find(|(n, _)| *n == "calibration.cu").unwrap();
        let dir = std::env::temp_dir().join(format!("lodtensor-nvrtc-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = match compiled(name, source, (9, 0), KernelImage::Cubin, Some(&dir)) {
            Err(Error::Unsupported(m)) if std::env::var_os("LODTENSOR_REQUIRE_NVRTC").is_none() => {
                eprintln!("skipped: {m}");
                return;
            }
            other => other.unwrap(),
        };
        assert_eq!(&first[..4], b"\x7fELF");
        let entries = || std::fs::read_dir(&dir).unwrap().count();
        assert_eq!(entries(), 1);
        assert_eq!(compiled(name, source, (9, 0), KernelImage::Cubin, Some(&dir)).unwrap(), first);
        assert_eq!(entries(), 1);
        let ptx = compiled(name, source, (9, 0), KernelImage::Ptx, Some(&dir)).unwrap();
        assert!(String::from_utf8_lossy(&ptx).contains(".target sm_90"));
        assert_eq!(ptx.last(), Some(&0), "PTX ends with its NUL");
        assert_eq!(entries(), 2);
        let broken = compiled("broken.cu", "this is not CUDA", (9, 0), KernelImage::Cubin, Some(&dir));
        match broken {
            Err(Error::Internal(m)) => assert!(m.contains("broken.cu does not compile for sm_90"), "{m}"),
            other => panic!("expected Internal, got {other:?}"),
        }
        assert_eq!(entries(), 2);
        // A target NVRTC rejects is an error of NVRTC's, not a compile error, and stores nothing.
        match compiled(name, source, (99, 9), KernelImage::Cubin, Some(&dir)) {
            Err(Error::Internal(m)) => assert!(m.contains("compiling for sm_999 failed"), "{m}"),
            other => panic!("expected Internal, got {other:?}"),
        }
        assert_eq!(entries(), 2);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// NVRTC's target for a device: its own capability where NVRTC knows it; for one newer than
    /// NVRTC, the newest NVRTC knows, for which PTX compiles; for one older than all, Unsupported.
    #[test]
    fn nvrtc_targets_the_device_or_the_newest_below_it() {
        let own = match nvrtc_target((9, 0)) {
            Err(Error::Unsupported(m)) if std::env::var_os("LODTENSOR_REQUIRE_NVRTC").is_none() => {
                eprintln!("skipped: {m}");
                return;
            }
            other => other.unwrap(),
        };
        assert_eq!(own, (9, 0));
        assert_eq!(nvrtc_target((9, 5)).unwrap(), (9, 0), "no 9.5: the newest below it");
        let newest = nvrtc_target((99, 9)).unwrap();
        assert!(((12, 0)..(99, 9)).contains(&newest), "{newest:?}");
        let (name, source) = *super::super::KERNEL_SOURCES.iter().find(|(n, _)| *n == "calibration.cu").unwrap();
        let ptx = compiled(name, source, newest, KernelImage::Ptx, None).unwrap();
        let target = format!(".target sm_{}{}", newest.0, newest.1);
        assert!(String::from_utf8_lossy(&ptx).contains(&target), "{target}");
        match nvrtc_target((3, 0)) {
            Err(Error::Unsupported(m)) => assert!(m.contains("compute capability 3.0 is older"), "{m}"),
            other => panic!("expected Unsupported, got {other:?}"),
        }
    }
}
