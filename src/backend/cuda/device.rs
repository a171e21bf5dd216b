//! Devices of the `cuda` feature: the driver probe, each device's primary context and stream, its
//! caching allocator, and the copies between host and device. Every call on a device's context
//! goes through its `Device`, which counts it (`counters.rs`).

use super::counters::{Counter, Counters, CudaCounters};
use super::driver::{self, Context, DevicePtr, Function, Module};
use super::kept_zero::KeptZero;
use super::launch::Args;
use super::memory_owner::MemoryOwner;
use super::staging::Staging;
use super::upload_ring::{Upload, UploadRing};
use super::KERNEL_SOURCES;
use crate::dim::Dim;
use crate::error::{ensure, err, Error, Result};
use crate::memory::block_cache::BlockCache;
use crate::memory::lists;
use crate::memory::size_class::size_class;
use crate::memory::Allocation;
use crate::place::Place;
use crate::tensor::Tensor;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// The number of devices, or why CUDA cannot be used; probed once.
fn probe() -> Result<usize> {
    static PROBE: OnceLock<Result<usize>> = OnceLock::new();
    PROBE.get_or_init(driver::device_count).clone()
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

/// One device: its context and stream, the freed blocks its caching allocator keeps and its
/// loaded kernel modules.
pub(crate) struct Device {
    pub(crate) ordinal: u32,
    pub(super) ctx: Context,
    /// What has been asked of the device (`device_counters`).
    counters: Counters,
    /// Freed blocks kept for reuse, with their size classes.
    free: Mutex<BlockCache<(DevicePtr, usize)>>,
    /// Blocks given back that are not freed yet, because the wait for the queued work that may
    /// still use them failed (see `free_blocks`).
    unfreed: Mutex<Vec<(DevicePtr, usize)>>,
    /// Bytes of the blocks handed out and not yet given back (size classes, not requests).
    in_use: AtomicUsize,
    /// The kernel modules (files, or variants of a file) loaded so far, one slot per entry of
    /// `KERNEL_SOURCES`: each is compiled and loaded under its own lock, so different modules may
    /// be loaded at once and each is loaded once.
    modules: Vec<Mutex<Option<LoadedModule>>>,
    /// Memory kept zeroed between calls for kernels that count (`kept_zero.rs`).
    pub(crate) kept: KeptZero,
    /// The page-locked buffer of small downloads (`staging.rs`).
    staging: Staging,
    /// The page-locked ring of uploads (`upload_ring.rs`).
    uploads: UploadRing,
}

/// A loaded kernel module and the kernels of it looked up so far: a lookup is a driver call (a
/// search of the module's names), made once per kernel, not once per launch.
struct LoadedModule {
    module: Module,
    kernels: HashMap<String, Function>,
}

impl Device {
    /// Device `ordinal` with a new context, its cache keeping up to `cache_limit` bytes.
    pub(super) fn open(ordinal: u32, cache_limit: usize) -> Result<Device> {
        Ok(Device {
            ordinal,
            ctx: Context::open(ordinal)?,
            counters: Counters::default(),
            free: Mutex::new(BlockCache::new(cache_limit)),
            unfreed: Mutex::default(),
            in_use: AtomicUsize::new(0),
            modules: KERNEL_SOURCES.iter().map(|_| Mutex::new(None)).collect(),
            kept: KeptZero::default(),
            staging: Staging::default(),
            uploads: UploadRing::default(),
        })
    }

    /// A block of at least `len` bytes (`len` > 0) from the cache, or a new one.
    fn alloc(self: &Arc<Self>, len: usize) -> Result<DeviceBlock> {
        let class = class_of(len)?;
        let kept = if exact_blocks() { None } else { self.free.lock().expect("allocator lock").take(class) };
        let ptr = match kept {
            Some((ptr, _)) => ptr,
            None => self.fresh(len, class)?,
        };
        self.count_handed_out(class, 1);
        Ok(self.block(ptr, class))
    }

    /// Blocks for `n` requests, request `i` of `len_of(i)` bytes (none for 0 bytes), each made
    /// into a `T` by `wrap(i, block)`, in order. The cached blocks are taken under one hold of
    /// the allocator's lock and counted together: an op with thousands of outputs (an unstack)
    /// pays the lock and the counts once, not once an output. The others come from the driver
    /// after it. On a failure the blocks taken so far go back to the cache.
    fn allocs<T>(
        self: &Arc<Self>,
        n: usize,
        len_of: impl Fn(usize) -> usize,
        mut wrap: impl FnMut(usize, Option<DeviceBlock>) -> Result<T>,
    ) -> Result<Vec<T>> {
        const WHAT: &str = "device allocations";
        let classes = (0..n).map(|i| match len_of(i) {
            0 => Ok(0),
            len => class_of(len),
        });
        let classes = lists::try_collect(n, classes, WHAT)?;
        let mut out = lists::with_capacity(n, WHAT)?;
        // Filled while the lock is held, into room made before: nothing there may fail or drop a
        // block (whose drop takes the lock).
        let mut blocks = lists::with_capacity(n, WHAT)?;
        let (mut bytes, mut taken) = (0, 0);
        if exact_blocks() {
            blocks.extend(classes.iter().map(|_| None));
        } else {
            let mut free = self.free.lock().expect("allocator lock");
            blocks.extend(classes.iter().map(|&class| {
                if class == 0 {
                    return None;
                }
                let ptr = free.take(class)?.0;
                (bytes, taken) = (bytes + class, taken + 1);
                Some(self.block(ptr, class))
            }));
        }
        // Counted before anything that can fail: a block dropped on a failure gives back its
        // count.
        self.count_handed_out(bytes, taken);
        for (i, (slot, &class)) in blocks.iter_mut().zip(&classes).enumerate() {
            let block = match slot.take() {
                None if class > 0 => {
                    let ptr = self.fresh(len_of(i), class)?;
                    self.count_handed_out(class, 1);
                    Some(self.block(ptr, class))
                }
                kept => kept,
            };
            out.push(wrap(i, block)?);
        }
        Ok(out)
    }

    /// A new block of `class` bytes from the driver, for a request of `len`. When the driver has
    /// no memory left, the cache is emptied (blocks of other sizes may be what is missing) and
    /// the request tried once more.
    fn fresh(&self, len: usize, class: usize) -> Result<DevicePtr> {
        let ptr = match self.ctx.malloc(class) {
            Ok(p) => p,
            Err(Error::OutOfMemory(_)) => {
                self.empty_cache()?;
                self.ctx.malloc(class).map_err(|e| match e {
                    Error::OutOfMemory(m) => err!(
                        OutOfMemory,
                        "cuda:{}: {len} bytes requested (a block of {class}), {} held by live tensors; {m}",
                        self.ordinal,
                        self.in_use.load(Ordering::Relaxed)
                    ),
                    other => other,
                })?
            }
            Err(e) => return Err(e),
        };
        self.counters.add(Counter::DriverAllocations, 1);
        Ok(ptr)
    }

    /// Counts `n` blocks of `bytes` bytes in all as handed out; before their `DeviceBlock`s can be
    /// dropped, so that a drop never takes back what was not counted.
    fn count_handed_out(&self, bytes: usize, n: usize) {
        self.in_use.fetch_add(bytes, Ordering::Relaxed);
        self.counters.add(Counter::Allocations, n as u64);
    }

    /// The handle of block `ptr` of `class` bytes, handed out (counted by `count_handed_out`).
    fn block(self: &Arc<Self>, ptr: DevicePtr, class: usize) -> DeviceBlock {
        // The emulator's test runs (`LODTENSOR_POISON_UNINIT=1`) fill every block handed out with
        // the host's poison byte, fresh or reused: a kernel that leaves part of its output
        // unwritten then gives the same wrong bytes on every run. A checking mode's fill, not the
        // library's work: not counted.
        #[cfg(feature = "cuda-emulator")]
        if crate::memory::poison_uninit() {
            self.ctx.poison(ptr, crate::memory::POISON, class);
        }
        DeviceBlock { ptr, class, device: self.clone() }
    }

    /// Frees every cached block (after the queued work that may still use them), and the memory
    /// kept zeroed for counting kernels where no call holds it.
    pub(crate) fn empty_cache(&self) -> Result<()> {
        drop(self.kept.release());
        let blocks = self.free.lock().expect("allocator lock").drain();
        self.free_blocks(blocks)
    }

    /// Gives `blocks` (with their size classes), taken out of the cache, back to the driver once
    /// the queued work that may still use them is done, with any left unfreed by an earlier call.
    /// If that wait fails, none is freed (freeing memory a running kernel may touch is not safe):
    /// they are kept as unfreed, counted with the cache's blocks, for a later call to free once a
    /// wait succeeds. A block the driver will not free is left to it; the first such failure is
    /// returned once the others are freed.
    fn free_blocks(&self, blocks: impl IntoIterator<Item = (DevicePtr, usize)>) -> Result<()> {
        let mut blocks: Vec<_> = blocks.into_iter().collect();
        // Taken, not drained: a list that grew long once is not kept at its length.
        blocks.extend(std::mem::take(&mut *self.unfreed.lock().expect("unfreed lock")));
        if blocks.is_empty() {
            return Ok(());
        }
        if let Err(e) = self.synchronize() {
            self.unfreed.lock().expect("unfreed lock").append(&mut blocks);
            return Err(e);
        }
        // Every block is freed, past a failure; the first is returned.
        let mut first = Ok(());
        for (ptr, _) in blocks {
            first = first.and(self.ctx.free(ptr));
        }
        first
    }

    /// Launches kernel `function` of file `file` (compiled and loaded at its first use here) with
    /// `grid` x `block` threads.
    pub(crate) fn launch(
        &self,
        file: &str,
        function: &str,
        grid: [u32; 3],
        block: [u32; 3],
        args: &mut Args,
    ) -> Result<()> {
        let f = self.kernel(file, function)?;
        self.ctx.launch(&f, grid, block, args)?;
        self.counters.add(Counter::Launches, 1);
        Ok(())
    }

    /// Queues a copy of `src` to device address `dst`; returns once `src` may change (be written
    /// over, freed or reused). Up to the upload ring's quarter, through the ring; larger copies
    /// straight from `src`, waited for where the driver knows its memory: page-locked or managed
    /// memory (a pinned buffer that a server reuses, a `kDLCUDAHost` tensor), which the device
    /// reads by itself after the call returns, unlike pageable memory, which the driver has read
    /// by then.
    pub(crate) fn htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        match self.uploads.upload(&self.ctx, dst, src)? {
            Upload::Queued { waited } => self.counters.add(Counter::Waits, waited as u64),
            Upload::NotTaken => {
                let wait = !src.is_empty() && !self.pageable(src)?;
                self.ctx.htod(dst, src)?;
                if wait {
                    self.synchronize()?;
                }
            }
        }
        self.counters.add(Counter::Uploads, 1);
        self.counters.add(Counter::UploadBytes, src.len() as u64);
        Ok(())
    }

    /// Whether the first and last bytes of `src` (not empty) are memory the driver does not know.
    fn pageable(&self, src: &[u8]) -> Result<bool> {
        let (first, last) = (src.as_ptr() as DevicePtr, (src.len() - 1) as DevicePtr);
        let unknown = |at| self.ctx.memory_owner(at).map(|owner| owner == MemoryOwner::Unknown);
        Ok(unknown(first)? && unknown(first + last)?)
    }

    /// Copies `dst.len()` bytes from device address `src` after the queued work, and waits for it.
    pub(crate) fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        self.staging.download(&self.ctx, dst, src)?;
        self.counters.add(Counter::Downloads, 1);
        self.counters.add(Counter::DownloadBytes, dst.len() as u64);
        self.counters.add(Counter::Waits, 1);
        Ok(())
    }

    /// Queues a copy of `n` bytes between device addresses.
    pub(crate) fn dtod(&self, dst: DevicePtr, src: DevicePtr, n: usize) -> Result<()> {
        self.ctx.dtod(dst, src, n)?;
        self.counters.add(Counter::DeviceCopies, 1);
        Ok(())
    }

    /// Queues the setting of `n` bytes at `dst` to `byte`.
    pub(crate) fn set_bytes(&self, dst: DevicePtr, byte: u8, n: usize) -> Result<()> {
        self.ctx.set_bytes(dst, byte, n)?;
        self.counters.add(Counter::Fills, 1);
        Ok(())
    }

    /// Waits until the queued work has finished.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.ctx.synchronize()?;
        self.counters.add(Counter::Waits, 1);
        Ok(())
    }

    /// Kernel module `file` (a file, or a variant `file.cu[NAME=VALUE]`), compiled and loaded at
    /// its first use here.
    pub(crate) fn module(&self, file: &str) -> Result<Module> {
        self.with_module(file, |loaded| Ok(loaded.module))
    }

    /// Kernel `function` of module `file`, looked up at its first launch here.
    fn kernel(&self, file: &str, function: &str) -> Result<Function> {
        self.with_module(file, |loaded| {
            if let Some(f) = loaded.kernels.get(function) {
                return Ok(f.clone());
            }
            let f = self.ctx.function(loaded.module, function)?;
            loaded.kernels.try_reserve(1).map_err(|_| err!(OutOfMemory, "kernel {function}: no memory to keep it"))?;
            loaded.kernels.insert(function.to_owned(), f.clone());
            Ok(f)
        })
    }

    /// `f` of module `file`, loaded first if it is not yet, under the module's lock.
    fn with_module<T>(&self, file: &str, f: impl FnOnce(&mut LoadedModule) -> Result<T>) -> Result<T> {
        let at = KERNEL_SOURCES.iter().position(|(n, _)| *n == file);
        let at = at.ok_or_else(|| err!(Internal, "no kernel module {file}"))?;
        let (name, source) = KERNEL_SOURCES[at];
        let mut slot = self.modules[at].lock().expect("module lock");
        let loaded = match &mut *slot {
            Some(loaded) => loaded,
            None => slot.insert(LoadedModule { module: self.ctx.load(name, source)?, kernels: HashMap::new() }),
        };
        f(loaded)
    }

    /// A new, uninitialised device allocation of `len` bytes.
    pub(crate) fn allocation(self: &Arc<Self>, len: usize) -> Result<Arc<Allocation>> {
        let block = if len == 0 { None } else { Some(self.alloc(len)?) };
        Ok(Allocation::device(block, len, Place::Cuda(self.ordinal)))
    }

    /// `n` new, uninitialised device allocations, allocation `i` of `len_of(i)` bytes, each made
    /// into a `T` by `wrap`, in order (see `allocs`).
    pub(crate) fn allocations<T>(
        self: &Arc<Self>,
        n: usize,
        len_of: impl Fn(usize) -> usize,
        mut wrap: impl FnMut(usize, Arc<Allocation>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let place = Place::Cuda(self.ordinal);
        self.allocs(n, &len_of, |i, block| wrap(i, Allocation::device(block, len_of(i), place)))
    }
}

/// Whether device blocks are made for each request and freed when dropped (see `alloc`).
fn exact_blocks() -> bool {
    cfg!(feature = "cuda-emulator") && crate::memory::guard_pages()
}

/// The size of the block that serves a request of `len` bytes: its size class; the request itself
/// where blocks are exact (guard pages: the guard page follows the request, not its size class).
fn class_of(len: usize) -> Result<usize> {
    let class = size_class(len).ok_or_else(|| err!(OutOfMemory, "a device allocation of {len} bytes is too large"))?;
    Ok(if exact_blocks() { len } else { class })
}

/// A block of device memory from a device's cache; dropping it puts it back on its free list.
/// Reuse needs no wait: every use of a device's memory is queued on its one stream.
pub struct DeviceBlock {
    ptr: DevicePtr,
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
        self.device.in_use.fetch_sub(self.class, Ordering::Relaxed);
        let evicted = if exact_blocks() {
            vec![(self.ptr, self.class)]
        } else {
            let Ok(mut free) = self.device.free.lock() else { return };
            free.keep(self.class, (self.ptr, self.class))
        };
        // A drop cannot report a failure: if waiting for the queued work fails, the evicted
        // blocks are kept for a later call to free (see `free_blocks`). Nothing evicted, nothing
        // to wait for: a drop that keeps its block takes the allocator's lock once, no other.
        if !evicted.is_empty() {
            let _ = self.device.free_blocks(evicted);
        }
    }
}

/// A device's place in the process: the device once it has been used, and the bound on its
/// cache (which may be set before).
struct Slot {
    device: Option<Arc<Device>>,
    cache_limit: usize,
}

/// The slot of device `ordinal` (which must exist).
fn slot(ordinal: u32) -> &'static Mutex<Slot> {
    static DEVICES: OnceLock<Vec<Mutex<Slot>>> = OnceLock::new();
    let devices = DEVICES.get_or_init(|| {
        (0..probe().unwrap_or(0)).map(|_| Mutex::new(Slot { device: None, cache_limit: usize::MAX })).collect()
    });
    &devices[ordinal as usize]
}

/// Device `ordinal` if it has been used, without setting it up (a context takes device memory).
fn opened(ordinal: u32) -> Result<Option<Arc<Device>>> {
    ensure_device(ordinal)?;
    Ok(slot(ordinal).lock().expect("device lock").device.clone())
}

/// Device `ordinal`, set up at first use and kept for the life of the process.
pub(crate) fn device(ordinal: u32) -> Result<Arc<Device>> {
    ensure_device(ordinal)?;
    let mut slot = slot(ordinal).lock().expect("device lock");
    if let Some(d) = slot.device.as_ref() {
        return Ok(d.clone());
    }
    let d = Arc::new(Device::open(ordinal, slot.cache_limit)?);
    slot.device = Some(d.clone());
    Ok(d)
}

/// Compiles (or takes from the disk cache) and loads every kernel file for CUDA device `ordinal`
/// now, the files at once on threads of their own, rather than each at its first use. Files
/// already loaded are not loaded again. The first failure is returned (the files that loaded
/// stay loaded).
pub fn load_kernels(ordinal: u32) -> Result<()> {
    let d = device(ordinal)?;
    let load = |file| d.module(file).map(|_| ());
    std::thread::scope(|s| {
        let threads: Vec<_> = KERNEL_SOURCES
            .iter()
            .map(|&(file, _)| (file, std::thread::Builder::new().spawn_scoped(s, move || load(file))))
            .collect();
        // A file whose thread could not be started is loaded here.
        let results: Vec<Result<()>> = threads
            .into_iter()
            .map(|(file, thread)| match thread {
                Ok(t) => t.join().unwrap_or_else(|_| Err(err!(Internal, "cuda:{ordinal}: a kernel load panicked"))),
                Err(_) => load(file),
            })
            .collect();
        results.into_iter().collect()
    })
}

/// Waits until the work queued on `device` has finished.
pub fn synchronize(ordinal: u32) -> Result<()> {
    device(ordinal)?.synchronize()
}

/// Makes the work queued on `device` from now on wait for `event`, a `CUevent` of its context
/// that another library recorded.
///
/// # Safety
/// `event` is a live event of the device's primary context.
pub unsafe fn wait_event(ordinal: u32, event: *mut std::ffi::c_void) -> Result<()> {
    device(ordinal)?.ctx.wait_event(event)
}

/// Page-locks the caller's `len` bytes of host memory at `ptr` for every device, mapped for their
/// kernels (`cuMemHostRegister`, portable and device-mapped) until [`unregister_host_memory`]:
/// copies between it and a device then run on the device's copy engines, after the call that
/// queues them returns (the library waits for such a copy where the caller may change the memory
/// next, as after `to_place`), and a tensor on a device may lie over it. `InvalidArgument` for a NULL `ptr`, a `len` of 0, or memory that overlaps
/// page-locked memory already; what [`ensure_device`] says of cuda:0 when CUDA cannot be used.
///
/// # Safety
/// `ptr` must be valid for `len` bytes until [`unregister_host_memory`] (or the process's end).
pub unsafe fn register_host_memory(ptr: *mut u8, len: usize) -> Result<()> {
    ensure!(!ptr.is_null(), InvalidArgument, "ptr: must not be NULL");
    ensure!(len > 0, InvalidArgument, "len: must not be 0");
    device(0)?.ctx.register_host(ptr, len)
}

/// Ends [`register_host_memory`] of the memory starting at `ptr`. No copy the library queues
/// from host memory is left to run after the call that queued it returns, so there is nothing
/// of the library's to wait for. `InvalidArgument` where `ptr` is not the start of memory
/// registered so.
///
/// # Safety
/// No work of the caller's own on a device may still be reading the memory.
pub unsafe fn unregister_host_memory(ptr: *mut u8) -> Result<()> {
    device(0)?.ctx.unregister_host(ptr)
}

/// The stream all work on CUDA device `ordinal` goes to (its driver handle, a `CUstream`); sets
/// the device up if it has not been used yet.
pub fn stream(ordinal: u32) -> Result<*mut std::ffi::c_void> {
    Ok(device(ordinal)?.ctx.stream())
}

/// What the library has asked of CUDA device `ordinal` so far (see [`CudaCounters`]); all zero
/// for a device not used yet (asking does not set it up).
pub fn device_counters(ordinal: u32) -> Result<CudaCounters> {
    Ok(opened(ordinal)?.map(|d| d.counters.read()).unwrap_or_default())
}

/// The device memory of CUDA device `ordinal` that the library holds: `(in_use, kept)`, the bytes
/// of its live allocations (the blocks `kept_zero.rs` keeps included) and of the freed blocks its
/// cache keeps for reuse (with any it could not give back yet: a wait for the device failed).
/// Both count whole blocks of their size class (`memory::size_class`). A device not used yet
/// holds none.
pub fn device_memory_info(ordinal: u32) -> Result<(usize, usize)> {
    let Some(d) = opened(ordinal)? else {
        return Ok((0, 0));
    };
    let kept = d.free.lock().expect("allocator lock").bytes();
    let unfreed: usize = d.unfreed.lock().expect("unfreed lock").iter().map(|&(_, class)| class).sum();
    Ok((d.in_use.load(Ordering::Relaxed), kept + unfreed))
}

/// `(free, total)` for CUDA device `ordinal` as the driver reports them: the bytes it could still
/// hand out (to any program; blocks kept by the library's cache are not free) and the device's
/// memory. Sets the device up if it has not been used yet.
pub fn device_free_memory(ordinal: u32) -> Result<(usize, usize)> {
    device(ordinal)?.ctx.free_memory()
}

/// Gives every block kept by the cache of CUDA device `ordinal` back to the driver, once the
/// device's queued work is done, with the blocks kept zeroed for counting kernels where no call
/// holds them (`kept_zero.rs`). Tensors are not affected.
pub fn empty_device_cache(ordinal: u32) -> Result<()> {
    match opened(ordinal)? {
        Some(d) => d.empty_cache(),
        None => Ok(()),
    }
}

/// Sets the most bytes of freed blocks that the cache of CUDA device `ordinal` keeps (initially
/// `usize::MAX`: no bound). Blocks over the new bound go back to the driver now, once the device's
/// queued work is done. Does not set the device up: a bound set before its first use applies
/// from then on.
pub fn set_device_cache_limit(ordinal: u32, bytes: usize) -> Result<()> {
    ensure_device(ordinal)?;
    // Both bounds change under the slot's lock, so concurrent calls cannot leave them different.
    let (d, evicted) = {
        let mut slot = slot(ordinal).lock().expect("device lock");
        slot.cache_limit = bytes;
        let Some(d) = slot.device.clone() else { return Ok(()) };
        let evicted = d.free.lock().expect("allocator lock").set_limit(bytes);
        (d, evicted)
    };
    d.free_blocks(evicted)
}

/// The bound on the freed blocks that the cache of CUDA device `ordinal` keeps, in bytes.
pub fn device_cache_limit(ordinal: u32) -> Result<usize> {
    ensure_device(ordinal)?;
    Ok(slot(ordinal).lock().expect("device lock").cache_limit)
}

/// A copy of `src` (host or device memory) on CUDA device `ordinal`.
pub fn copy_to_device(src: &Tensor, ordinal: u32) -> Result<Tensor> {
    let d = device(ordinal)?;
    let n = src.nbytes();
    let alloc = d.allocation(n)?;
    if n > 0 {
        match src.place() {
            Place::Cpu => d.htod(alloc.as_ptr() as DevicePtr, src.bytes()?)?,
            Place::Cuda(s) if s == ordinal => d.dtod(alloc.as_ptr() as DevicePtr, src.as_ptr() as DevicePtr, n)?,
            // Between devices through the host: simple, and rare in inference.
            Place::Cuda(_) => return copy_to_device(&copy_to_host(src)?, ordinal),
        }
    }
    Tensor::from_allocation(alloc, src.dtype(), *src.dims())
}

/// A host copy of `src`, a tensor on a CUDA device; waits for the device's queued work.
pub fn copy_to_host(src: &Tensor) -> Result<Tensor> {
    let Place::Cuda(ordinal) = src.place() else {
        return src.copy();
    };
    let mut out = Tensor::uninit(src.dtype(), *src.dims())?;
    download(src, ordinal, out.bytes_mut()?)?;
    Ok(out)
}

/// Copies the elements of `src`, a tensor on CUDA device `ordinal`, into `dst` (exactly
/// `src.nbytes()` long); waits for the device's queued work.
fn download(src: &Tensor, ordinal: u32, dst: &mut [u8]) -> Result<()> {
    debug_assert_eq!(dst.len(), src.nbytes());
    if dst.is_empty() {
        return Ok(());
    }
    device(ordinal)?.dtoh(dst, src.as_ptr() as DevicePtr)
}

/// Copies the elements of `src` (any place) into `dst`, exactly `src.nbytes()` long; a device
/// tensor's after the device's queued work.
pub fn copy_bytes_to_host(src: &Tensor, dst: &mut [u8]) -> Result<()> {
    match src.place() {
        Place::Cpu => dst.copy_from_slice(src.bytes()?),
        Place::Cuda(ordinal) => download(src, ordinal, dst)?,
    }
    Ok(())
}

/// Host copies of `srcs`, in order, after one wait for the device where they are all on one: each
/// is copied into one device block (queued, no wait), which comes to the host in one copy. Host
/// tensors are copied as they are; tensors on different devices come one by one.
pub fn copy_all_to_host(srcs: &[&Tensor]) -> Result<Vec<Tensor>> {
    const WHAT: &str = "copies to the host";
    let one_by_one = || lists::try_collect(srcs.len(), srcs.iter().map(|t| copy_to_host(t)), WHAT);
    let Some(Place::Cuda(ordinal)) = srcs.first().map(|t| t.place()) else {
        return one_by_one();
    };
    if srcs.len() < 2 || srcs.iter().any(|t| t.place() != Place::Cuda(ordinal)) {
        return one_by_one();
    }
    // Each piece at a multiple of 16 bytes, so the copies stay aligned.
    let mut starts = lists::with_capacity(srcs.len(), WHAT)?;
    let mut total = 0usize;
    for t in srcs {
        starts.push(total);
        total = total
            .checked_add(t.nbytes().next_multiple_of(16))
            .ok_or_else(|| err!(OutOfMemory, "copies to the host: {} tensors are too large together", srcs.len()))?;
    }
    let d = device(ordinal)?;
    let joined = d.allocation(total)?;
    for (t, &at) in srcs.iter().zip(&starts) {
        if t.nbytes() > 0 {
            d.dtod(joined.as_ptr() as DevicePtr + at as DevicePtr, t.as_ptr() as DevicePtr, t.nbytes())?;
        }
    }
    let mut host = lists::filled(total, 0u8, WHAT)?;
    if total > 0 {
        d.dtoh(&mut host, joined.as_ptr() as DevicePtr)?;
    }
    let copies =
        srcs.iter().zip(&starts).map(|(t, &at)| Tensor::from_bytes(t.dtype(), *t.dims(), &host[at..at + t.nbytes()]));
    lists::try_collect(srcs.len(), copies, WHAT)
}

/// A new device tensor of `dims` and `dtype` on `d`, uninitialised (the caller's kernel writes it).
pub(crate) fn new_tensor(d: &Arc<Device>, dtype: crate::dtype::DType, dims: Dim) -> Result<Tensor> {
    Tensor::from_allocation(d.allocation(tensor_bytes(dtype, &dims)?)?, dtype, dims)
}

/// The bytes of a `dtype` tensor of `dims`.
fn tensor_bytes(dtype: crate::dtype::DType, dims: &Dim) -> Result<usize> {
    dims.numel()
        .checked_mul(dtype.size())
        .ok_or_else(|| err!(OutOfMemory, "dims: a {dtype} tensor of dims {dims:?} is too large"))
}

/// `n` new device tensors on `d`, uninitialised, tensor `i` of the dtype and dims `spec(i)`, each
/// made into a `T` by `wrap`, in order; the allocator's lock taken once for all of them (see
/// `Device::allocs`).
pub(crate) fn new_tensors<T>(
    d: &Arc<Device>,
    n: usize,
    spec: impl Fn(usize) -> (crate::dtype::DType, Dim),
    mut wrap: impl FnMut(Tensor) -> T,
) -> Result<Vec<T>> {
    let lens = (0..n).map(|i| {
        let (dtype, dims) = spec(i);
        tensor_bytes(dtype, &dims)
    });
    let lens = lists::try_collect(n, lens, "device outputs")?;
    d.allocations(
        n,
        |i| lens[i],
        |i, a| {
            let (dtype, dims) = spec(i);
            Tensor::from_allocation(a, dtype, dims).map(&mut wrap)
        },
    )
}

/// A new device tensor of `dims` and `dtype` on `d`, zero-filled on the device's stream (a
/// kernel's counters, which it adds to).
pub(crate) fn zeroed_tensor(d: &Arc<Device>, dtype: crate::dtype::DType, dims: Dim) -> Result<Tensor> {
    let t = new_tensor(d, dtype, dims)?;
    if t.nbytes() > 0 {
        d.set_bytes(t.as_ptr() as DevicePtr, 0, t.nbytes())?;
    }
    Ok(t)
}

/// For the copy tests: `len` bytes of a pattern that differs for each `seed`.
#[cfg(test)]
pub(crate) fn byte_pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64).map(|i| (i.wrapping_mul(0x9e37_79b9) ^ seed.wrapping_mul(0x85eb_ca6b) >> 3) as u8).collect()
}

/// For the unit tests that need a device: the number of devices, or `None` after saying the test
/// was skipped (a failure instead when `LODTENSOR_REQUIRE_GPU=1`).
#[cfg(test)]
pub(crate) fn devices_for_test() -> Option<usize> {
    match device_count() {
        Ok(n) => Some(n),
        Err(e) => {
            assert!(std::env::var("LODTENSOR_REQUIRE_GPU").map_or(true, |v| v != "1"), "no CUDA device: {e}");
            eprintln!("skipped: no usable CUDA device ({e})");
            None
        }
    }
}

/// Held by each unit test that works on cuda:1 (or on the last device), for all of its work
/// there. The emulator makes a device's queued copies at any thread's next operation on that
/// device, so a test that needs its copies left queued (the upload ring's failure test) must have
/// the device to itself.
#[cfg(test)]
pub(crate) fn second_device_alone() -> std::sync::MutexGuard<'static, ()> {
    static ALONE: Mutex<()> = Mutex::new(());
    ALONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `load_kernels` leaves every kernel file loaded on the device; an unknown file is an error.
    #[test]
    fn load_kernels_loads_every_file() {
        if devices_for_test().is_none() {
            return;
        }
        load_kernels(0).unwrap();
        let d = device(0).unwrap();
        for (slot, (file, _)) in d.modules.iter().zip(KERNEL_SOURCES) {
            assert!(slot.lock().unwrap().is_some(), "{file} not loaded");
        }
        assert!(d.module("no_such_file.cu").is_err());
    }

    /// Blocks taken together come from the cache first (under one lock), then from the driver;
    /// each is counted once, in use while held and cached when dropped. When making one into its
    /// output fails, every block taken goes back to the cache and none is counted in use.
    #[test]
    fn blocks_taken_together_are_counted_and_go_back_on_a_failure() {
        if devices_for_test().is_none() {
            return;
        }
        // A device of its own (this test's counts are not another's).
        let d = Arc::new(Device::open(0, usize::MAX).unwrap());
        let class = class_of(5000).unwrap();
        let held: Vec<DeviceBlock> = (0..3).map(|_| d.alloc(5000).unwrap()).collect();
        let cached: Vec<DevicePtr> = held.iter().map(|b| b.ptr).collect();
        drop(held);
        // Under guard pages blocks are exact and never kept: all come from the driver.
        let kept = if exact_blocks() { 0 } else { 3 };
        assert_eq!(d.free.lock().unwrap().bytes(), kept * class);
        let before = d.counters.read();
        let blocks: Vec<DeviceBlock> = d.allocs(5, |_| 5000, |_, b| Ok(b.unwrap())).unwrap();
        let asked = d.counters.read().since(&before);
        assert_eq!((asked.allocations, asked.driver_allocations), (5, 5 - kept as u64));
        assert_eq!(d.in_use.load(Ordering::Relaxed), 5 * class);
        let mut ptrs: Vec<DevicePtr> = blocks.iter().map(|b| b.ptr).collect();
        assert!(ptrs[..kept].iter().all(|p| cached.contains(p)), "the cached blocks come first");
        ptrs.sort_unstable();
        ptrs.dedup();
        assert_eq!(ptrs.len(), 5, "distinct blocks");
        drop(blocks);
        let kept = if exact_blocks() { 0 } else { 5 };
        assert_eq!((d.in_use.load(Ordering::Relaxed), d.free.lock().unwrap().bytes()), (0, kept * class));

        // The fourth output fails: the three made, the failing one and those not yet made are
        // given back.
        let mut made = 0;
        let before = d.counters.read();
        let failed = d.allocs(
            7,
            |_| 5000,
            |_, b| {
                made += 1;
                if made == 4 {
                    return Err(err!(Internal, "planted"));
                }
                Ok(b)
            },
        );
        assert!(failed.is_err());
        let asked = d.counters.read().since(&before);
        assert_eq!(asked.driver_allocations, if exact_blocks() { 4 } else { 0 });
        assert_eq!((d.in_use.load(Ordering::Relaxed), d.free.lock().unwrap().bytes()), (0, kept * class));
        let lens = [0, 5000, 0, 70_000];
        let before = d.counters.read();
        let made = d.allocations(4, |i| lens[i], |_, a| Ok(a)).unwrap();
        assert_eq!(d.counters.read().since(&before).allocations, 2, "no block for an empty request");
        assert_eq!(made.iter().map(|a| a.len()).collect::<Vec<_>>(), lens);
        assert_eq!(d.in_use.load(Ordering::Relaxed), class + class_of(70_000).unwrap());
    }

    /// Blocks given back while a wait for the device fails are kept, counted as kept, and freed
    /// by the next call that gives blocks back; none is lost or freed before the wait.
    #[cfg(feature = "cuda-emulator")]
    #[test]
    fn blocks_not_freed_after_a_failed_wait_are_freed_later() {
        use super::super::driver::failures;
        if devices_for_test().is_none() {
            return;
        }
        // A device of its own (this test's counts are not another's), keeping no freed block.
        let d = Arc::new(Device::open(0, 0).unwrap());
        let (a, b) = (d.alloc(5000).unwrap(), d.alloc(70_000).unwrap());
        let (class_a, class_b) = (a.class, b.class);
        let unfreed = || d.unfreed.lock().unwrap().clone();
        failures::arm(Some(0));
        drop(a);
        let counted = failures::disarm();
        assert_eq!(counted.failed.as_deref(), Some("cuda synchronize"), "{counted:?}");
        assert_eq!((d.in_use.load(Ordering::Relaxed), unfreed().len()), (class_b, 1));
        assert_eq!(unfreed()[0].1, class_a);
        failures::arm(None);
        drop(b);
        let counted = failures::disarm();
        assert_eq!(counted.calls, 1, "one wait for both blocks");
        assert_eq!((d.in_use.load(Ordering::Relaxed), unfreed(), d.free.lock().unwrap().bytes()), (0, vec![], 0));
        // A free the driver refuses (an address it never gave) does not keep the next block from
        // being freed; its error is returned. The block freed, a second free of it is refused.
        let block = d.ctx.malloc(4096).unwrap();
        let e = d.free_blocks([(8192, 4096), (block, 4096)]).unwrap_err().to_string();
        assert!(e.contains("device free: 0x2000"), "{e}");
        assert!(d.ctx.free(block).is_err(), "the block after the refused free was not freed");
    }
}
