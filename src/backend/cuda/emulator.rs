//! The `cuda-emulator` build's driver: the items of `driver.rs`, over the host. Two devices,
//! cuda:0 and cuda:1, whose "device memory" is host memory that the rest of the library still
//! treats as device memory (no host access to it except through the copies), and whose kernels
//! are the same `kernels/*.cu` sources compiled as C++ (emulator/host.h) and run synchronously on
//! the calling thread (a block's threads as fibers where the kernel has barriers). It exists to
//! test the CUDA backend, the kernels' indexing and the launchers' arguments, on machines without
//! a GPU; it says nothing about speed. The one piece of work it does not finish at once is a copy
//! to a device from page-locked host memory (`malloc_host`'s, or memory given to `register_host`):
//! a GPU's copy engine reads such memory after the call that queued the copy has returned, so the
//! emulator makes that copy only at the device's next operation (other than another such copy),
//! and a caller that changes the memory in between without waiting sends the device the changed
//! bytes, as it would on a GPU. And a launch whose argument looks like a host address that the
//! device could not read is refused (`check_addresses`), where a GPU's kernel would fault.
//! Each device has [`MEMORY`] bytes, so that running out of device memory can be tested too,
//! and a test can make any one of a thread's driver calls fail ([`failures`]), as a GPU's driver
//! may fail any call.
//! Under `LODTENSOR_EMULATOR_SHUFFLE=1` each launch runs its blocks, and the threads of a block
//! that run one after another, in an order of its own (see [`shuffled`]). Built with
//! `LODTENSOR_EMULATOR_TSAN=1` (read when the crate is built), the emulator runs every kernel
//! under ThreadSanitizer, which reports a race between two threads of a launch, of one block or
//! of two, whatever order they ran in (emulator/launch.cpp).

#[path = "emulator/failures.rs"]
pub mod failures;

use super::launch::Args;
use super::memory_owner::MemoryOwner;
use crate::error::{ensure, err, Result};
use crate::memory::pages::{alternate_guard, map_guarded, unmap, Guarded};
use std::alloc::{alloc, dealloc, Layout};
use std::collections::btree_map::{BTreeMap, Entry};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

extern "C" {
    fn lodtensor_emulator_launch(
        name: *const c_char,
        grid: *const u32,
        block: *const u32,
        params: *mut *mut c_void,
        param_count: u32,
        takes: *mut u32,
        seed: u64,
    ) -> c_int;
    fn lodtensor_emulator_module_of(name: *const c_char) -> *const c_char;
    fn lodtensor_emulator_stream_order();
    #[cfg(test)]
    fn lodtensor_emulator_race_check() -> c_int;
    #[cfg(test)]
    fn lodtensor_emulator_expect_races(expected: c_int) -> u64;
}

/// Runs `op`, an access of the host to device memory, in the devices' stream order as the race
/// check sees it (launch.cpp's `race::stream`; nothing without the check).
fn in_stream_order<R>(op: impl FnOnce() -> R) -> R {
    // SAFETY: no arguments; only ThreadSanitizer's bookkeeping.
    unsafe { lodtensor_emulator_stream_order() };
    let r = op();
    unsafe { lodtensor_emulator_stream_order() };
    r
}

/// Whether launches run in shuffled orders (`LODTENSOR_EMULATOR_SHUFFLE=1`, read once; a checking
/// mode for tests). A GPU runs a grid's blocks in no promised order, and the warps of a block as
/// they come; the emulator otherwise runs them in index order, so a kernel that needs one block to
/// finish before another, or a thread to see what a later thread wrote without a barrier, would
/// pass its tests here and fail on a GPU. Shuffled, each launch draws its own order.
fn shuffled() -> bool {
    static SHUFFLED: OnceLock<bool> = OnceLock::new();
    crate::memory::env_flag("LODTENSOR_EMULATOR_SHUFFLE", &SHUFFLED)
}

/// A cap on the blocks of every grid-stride launch below the launchers' own (launch.rs's
/// `max_blocks`): 3 when [`shuffled`]. A block on a GPU loops over more than one tile, row or run
/// of items only at sizes no test reaches (2^16 blocks' worth); with 3 blocks it does so on the
/// tests' inputs, and the loop's second round is tested too.
pub(crate) fn grid_cap() -> Option<u64> {
    shuffled().then_some(3)
}

/// The seed of the next launch's order: 0 (index order) unless [`shuffled`], else a new non-zero
/// value each launch.
fn next_seed() -> u64 {
    static LAUNCHES: AtomicU64 = AtomicU64::new(0);
    if shuffled() {
        LAUNCHES.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed) | 1
    } else {
        0
    }
}

/// An address in (emulated) device memory.
pub(crate) type DevicePtr = u64;
/// A kernel file; every file is compiled into the library.
#[derive(Clone, Copy)]
pub(crate) struct Module(&'static str);
/// A kernel, by name.
#[derive(Clone)]
pub(crate) struct Function(CString);

const DEVICES: usize = 2;
/// Device allocations are aligned like cudaMalloc's (guarded ones as `map_guarded` says).
const ALIGN: usize = 256;
/// The memory of each emulated device: small, so that a test can fill it.
const MEMORY: usize = 1 << 30;

pub(crate) fn device_count() -> Result<usize> {
    Ok(DEVICES)
}

/// One emulated device (its allocations are in [`LIVE`]).
pub(crate) struct Context {
    ordinal: usize,
}

/// What the emulated devices' stream handles point at: one byte a device, so that each device has
/// a handle of its own that stays the same for the life of the process, as a driver's would.
static STREAMS: [u8; DEVICES] = [0; DEVICES];

/// The live allocations of the emulated devices: for `free`, the memory figures, and what a
/// driver knows of an address under unified addressing (`memory_owner`).
static LIVE: Mutex<Live> = Mutex::new(Live { blocks: BTreeMap::new(), bytes: [0; DEVICES] });

struct Live {
    /// Every device's blocks, by start: the block and its device.
    blocks: BTreeMap<DevicePtr, (Block, usize)>,
    /// The sum of each device's blocks' sizes.
    bytes: [usize; DEVICES],
}

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().expect("emulator lock")
}

impl Live {
    /// The device whose live block holds address `at`.
    fn device_holding(&self, at: DevicePtr) -> Option<usize> {
        let (&start, (block, device)) = self.blocks.range(..=at).next_back()?;
        (at - start < block.size() as DevicePtr).then_some(*device)
    }

    /// The device whose live block ends at address `at` (blocks may lie end to start).
    fn device_ending_at(&self, at: DevicePtr) -> Option<usize> {
        let (&start, (block, device)) = self.blocks.range(..at).next_back()?;
        (start + block.size() as DevicePtr == at).then_some(*device)
    }
}

/// The host memory the emulated driver holds page-locked: start -> length.
static PAGE_LOCKED: Mutex<BTreeMap<usize, usize>> = Mutex::new(BTreeMap::new());

fn page_locked() -> std::sync::MutexGuard<'static, BTreeMap<usize, usize>> {
    PAGE_LOCKED.lock().expect("emulator lock")
}

/// Whether host address `at` lies in page-locked memory.
fn is_page_locked(at: usize) -> bool {
    page_locked().range(..=at).next_back().is_some_and(|(&start, &len)| at - start < len)
}

/// A copy to a device from page-locked host memory, queued until the device's next operation
/// other than another such copy.
struct QueuedCopy {
    device: usize,
    dst: DevicePtr,
    src: usize,
    len: usize,
}

/// The copies queued, and how many each device has had queued and made so far (for events).
struct Queue {
    copies: Vec<QueuedCopy>,
    queued: [u64; DEVICES],
    made: [u64; DEVICES],
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue { copies: Vec::new(), queued: [0; DEVICES], made: [0; DEVICES] });

fn queue() -> std::sync::MutexGuard<'static, Queue> {
    QUEUE.lock().expect("emulator lock")
}

/// Makes device `device`'s queued copies, before its next operation (and before memory is freed
/// or unlocked, which the driver orders after the work queued before it). Under the queue's lock,
/// so that an event found reached has its copies made, whichever thread made them.
fn run_queued(device: usize) {
    let mut q = queue();
    if q.made[device] == q.queued[device] {
        return;
    }
    let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(&mut q.copies).into_iter().partition(|c| c.device == device);
    q.copies = others;
    for c in &mine {
        // SAFETY: what `htod` was given; the caller keeps the host memory until the copy is made,
        // as it must on a GPU (a wait, or the memory kept).
        in_stream_order(|| unsafe { std::ptr::copy_nonoverlapping(c.src as *const u8, c.dst as *mut u8, c.len) });
    }
    q.made[device] += mine.len() as u64;
}

/// A marker in an emulated device's work: reached once the copies queued before its last
/// recording are made (everything else is done before the call that queued it returns).
pub(crate) struct Event {
    device: usize,
    after: u64,
}

/// Where a live allocation's memory came from.
enum Block {
    Heap(Layout),
    /// Under `LODTENSOR_GUARD_PAGES=1`: a mapping of its own, against a guard page.
    Guarded(Guarded, usize),
}

impl Block {
    fn size(&self) -> usize {
        match self {
            Block::Heap(layout) => layout.size(),
            Block::Guarded(_, len) => *len,
        }
    }
}

impl Context {
    pub(crate) fn open(ordinal: u32) -> Result<Context> {
        ensure!((ordinal as usize) < DEVICES, InvalidArgument, "cuda:{ordinal}: the emulator has {DEVICES} devices");
        Ok(Context { ordinal: ordinal as usize })
    }

    /// The device's stream handle: nothing but copies from page-locked memory is ever queued on
    /// it (launches and other copies finish before they return), but callers see a handle as
    /// they would with a driver.
    pub(crate) fn stream(&self) -> *mut c_void {
        std::ptr::from_ref(&STREAMS[self.ordinal]).cast_mut().cast()
    }

    pub(crate) fn malloc(&self, len: usize) -> Result<DevicePtr> {
        let mut live = live();
        // The driver's refusal, worded like `driver.rs`'s.
        let out_of_memory =
            || err!(OutOfMemory, "device allocation: the device is out of memory (emulated, {MEMORY} bytes)");
        if len.max(1) > MEMORY - live.bytes[self.ordinal] {
            return Err(out_of_memory());
        }
        let (p, block) = in_stream_order(|| {
            Ok(if crate::memory::guard_pages() {
                let g = map_guarded(len, alternate_guard()).ok_or_else(out_of_memory)?;
                (g.ptr.as_ptr(), Block::Guarded(g, len.max(1)))
            } else {
                let layout = Layout::from_size_align(len.max(1), ALIGN).map_err(|_| out_of_memory())?;
                // SAFETY: a non-zero size.
                (unsafe { alloc(layout) }, Block::Heap(layout))
            })
        })?;
        ensure!(!p.is_null(), OutOfMemory, "device allocation: the emulator could not allocate {len} bytes");
        live.bytes[self.ordinal] += block.size();
        live.blocks.insert(p as DevicePtr, (block, self.ordinal));
        Ok(p as DevicePtr)
    }

    pub(crate) fn free(&self, ptr: DevicePtr) -> Result<()> {
        run_queued(self.ordinal);
        let mut live = live();
        let not_live = || err!(Internal, "device free: {ptr:#x} is not a live allocation of cuda:{}", self.ordinal);
        let Entry::Occupied(entry) = live.blocks.entry(ptr) else { return Err(not_live()) };
        if entry.get().1 != self.ordinal {
            return Err(not_live());
        }
        let (block, _) = entry.remove();
        live.bytes[self.ordinal] -= block.size();
        // SAFETY: allocated by `malloc` as `block` says, and removed from the live set once.
        in_stream_order(|| unsafe {
            match block {
                Block::Heap(layout) => dealloc(ptr as *mut u8, layout),
                Block::Guarded(g, _) => unmap(g.base, g.span),
            }
        });
        Ok(())
    }

    /// Host memory standing for the driver's page-locked memory: a plain allocation, never
    /// freed (as the driver's is kept).
    pub(crate) fn malloc_host(&self, len: usize) -> Result<*mut u8> {
        failures::call("page-locked allocation")?;
        let layout = Layout::from_size_align(len.max(1), ALIGN)
            .map_err(|_| err!(OutOfMemory, "page-locked allocation of {len} bytes"))?;
        // SAFETY: a non-zero size.
        let p = unsafe { alloc(layout) };
        ensure!(!p.is_null(), OutOfMemory, "page-locked allocation: the emulator could not allocate {len} bytes");
        page_locked().insert(p as usize, layout.size());
        Ok(p)
    }

    /// Page-locks the caller's `len` (> 0) bytes at `ptr`, as `cuMemHostRegister` does; memory
    /// that overlaps page-locked memory already is refused, as the driver refuses it.
    pub(crate) fn register_host(&self, ptr: *mut u8, len: usize) -> Result<()> {
        failures::call("page-lock host memory")?;
        let (start, end) = (ptr as usize, (ptr as usize).saturating_add(len));
        let mut locked = page_locked();
        let overlaps = locked.range(..end).next_back().is_some_and(|(&s, &l)| s + l > start);
        ensure!(
            !overlaps,
            InvalidArgument,
            "page-lock host memory: CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED (emulated)"
        );
        locked.insert(start, len);
        Ok(())
    }

    /// Ends a `register_host` of memory starting at `ptr`, after the copies queued from it.
    pub(crate) fn unregister_host(&self, ptr: *mut u8) -> Result<()> {
        failures::call("unlock host memory")?;
        for device in 0..DEVICES {
            run_queued(device);
        }
        let removed = page_locked().remove(&(ptr as usize));
        ensure!(
            removed.is_some(),
            InvalidArgument,
            "unlock host memory: CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED (emulated)"
        );
        Ok(())
    }

    /// Whose memory address `ptr` is: the emulated device with a live allocation holding it,
    /// `Shared` for page-locked host memory, or `Unknown` (other host memory; emulated devices do
    /// not read pageable memory).
    pub(crate) fn memory_owner(&self, ptr: DevicePtr) -> Result<MemoryOwner> {
        Ok(match live().device_holding(ptr) {
            Some(device) => MemoryOwner::Device(device as u32),
            None if is_page_locked(ptr as usize) => MemoryOwner::Shared,
            None => MemoryOwner::Unknown,
        })
    }

    /// Whether kernels can read the host's pageable memory: never on the emulator.
    pub(crate) fn reads_pageable_memory(&self) -> bool {
        false
    }

    /// `(free, total)` as the driver reports them: [`MEMORY`] less the live allocations.
    pub(crate) fn free_memory(&self) -> Result<(usize, usize)> {
        Ok((MEMORY - live().bytes[self.ordinal], MEMORY))
    }

    /// Copies `src` to `dst` now, or, from page-locked memory, at the device's next operation
    /// other than such a copy: a GPU's host may queue any number of copies before the copy engine
    /// reads the first, and the latest moment is the one that finds a caller that reuses the
    /// memory too early.
    pub(crate) fn htod(&self, dst: DevicePtr, src: &[u8]) -> Result<()> {
        failures::call("copy to device")?;
        if !src.is_empty() && is_page_locked(src.as_ptr() as usize) {
            let mut q = queue();
            q.copies.push(QueuedCopy { device: self.ordinal, dst, src: src.as_ptr() as usize, len: src.len() });
            q.queued[self.ordinal] += 1;
            return Ok(());
        }
        run_queued(self.ordinal);
        // SAFETY: the caller gives `src.len()` bytes of device (here: host) memory at `dst`.
        in_stream_order(|| unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), dst as *mut u8, src.len()) });
        Ok(())
    }

    pub(crate) fn set_bytes(&self, dst: DevicePtr, byte: u8, n: usize) -> Result<()> {
        failures::call("memset")?;
        self.poison(dst, byte, n);
        Ok(())
    }

    /// `set_bytes` for the poison fill of the test runs (`LODTENSOR_POISON_UNINIT=1`), which no
    /// run on a GPU makes: not a driver call a test makes fail ([`failures`]).
    pub(crate) fn poison(&self, dst: DevicePtr, byte: u8, n: usize) {
        run_queued(self.ordinal);
        // SAFETY: the caller gives `n` bytes of device memory at `dst`.
        in_stream_order(|| unsafe { std::ptr::write_bytes(dst as *mut u8, byte, n) });
    }

    pub(crate) fn dtod(&self, dst: DevicePtr, src: DevicePtr, n: usize) -> Result<()> {
        failures::call("copy on device")?;
        run_queued(self.ordinal);
        // SAFETY: the caller gives `n` bytes at both ends, distinct allocations.
        in_stream_order(|| unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, n) });
        Ok(())
    }

    pub(crate) fn dtoh(&self, dst: &mut [u8], src: DevicePtr) -> Result<()> {
        failures::call("copy to host")?;
        run_queued(self.ordinal);
        // SAFETY: the caller gives `dst.len()` bytes of device memory at `src`.
        in_stream_order(|| unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst.as_mut_ptr(), dst.len()) });
        Ok(())
    }

    /// Launches run to completion before they return, so there is nothing to order after an
    /// event; a NULL event (never a live one) is refused as the driver would.
    pub(crate) fn wait_event(&self, event: *mut c_void) -> Result<()> {
        failures::call("wait for an event")?;
        if event.is_null() {
            return Err(err!(Internal, "wait for an event: CUDA_ERROR_INVALID_HANDLE (emulated)"));
        }
        Ok(())
    }

    pub(crate) fn event(&self) -> Result<Event> {
        failures::call("event creation")?;
        Ok(Event { device: self.ordinal, after: 0 })
    }

    pub(crate) fn record(&self, event: &mut Event) -> Result<()> {
        failures::call("event record")?;
        event.after = queue().queued[event.device];
        Ok(())
    }

    pub(crate) fn reached(&self, event: &Event) -> Result<bool> {
        failures::call("event query")?;
        Ok(queue().made[event.device] >= event.after)
    }

    pub(crate) fn wait_for(&self, event: &Event) -> Result<()> {
        failures::call("event wait")?;
        run_queued(event.device);
        Ok(())
    }

    /// Launches run to completion before they return: only copies from page-locked memory wait.
    pub(crate) fn synchronize(&self) -> Result<()> {
        failures::call("cuda synchronize")?;
        run_queued(self.ordinal);
        Ok(())
    }

    pub(crate) fn load(&self, name: &'static str, _source: &str) -> Result<Module> {
        failures::call(&format!("loading {name}"))?;
        Ok(Module(name))
    }

    /// Kernel `name` of `module`: an error, as the driver's, where that module does not define it
    /// (a launcher naming the wrong kernel file fails here too).
    pub(crate) fn function(&self, module: Module, name: &str) -> Result<Function> {
        failures::call(&format!("kernel {name}"))?;
        let cname = CString::new(name).expect("no NUL");
        // SAFETY: a NUL-terminated name; the answer is null or a static NUL-terminated string.
        let defined_in = unsafe { lodtensor_emulator_module_of(cname.as_ptr()) };
        // SAFETY: as above.
        let defined_in = (!defined_in.is_null()).then(|| unsafe { std::ffi::CStr::from_ptr(defined_in) });
        match defined_in {
            Some(m) if m.to_bytes() == module.0.as_bytes() => Ok(Function(cname)),
            Some(m) => Err(err!(Internal, "kernel {name}: in {}, not in {}", m.to_string_lossy(), module.0)),
            None => Err(err!(Internal, "kernel {name}: not registered with LODTENSOR_EXPORT")),
        }
    }

    pub(crate) fn launch(&self, f: &Function, grid: [u32; 3], block: [u32; 3], args: &mut Args) -> Result<()> {
        failures::call("kernel launch")?;
        self.launch_in_order(f, grid, block, args, next_seed())
    }

    /// Refuses a launch with an argument that looks like a host address but is not memory this
    /// device's kernels may read: its own memory (or the end of a block of it, which may also be
    /// the start of another's block) or page-locked host memory. Emulated kernels read any host
    /// memory, so a launcher that hands a kernel a host table instead of its upload, or another
    /// device's tensor, would pass here and fault on a GPU. Values from 4 GiB up to the top of a
    /// 48-bit user address space are taken for addresses; the counts, sizes and values the
    /// kernels take stay below or above that.
    fn check_addresses(&self, f: &Function, args: &Args) -> Result<()> {
        const ADDRESSES: std::ops::Range<u64> = 1 << 32..1 << 48;
        let live = live();
        for (i, &at) in args.values().iter().enumerate().filter(|(_, v)| ADDRESSES.contains(v)) {
            let (holding, ending) = (live.device_holding(at), live.device_ending_at(at));
            if holding == Some(self.ordinal) || ending == Some(self.ordinal) {
                continue;
            }
            if holding.is_none() && is_page_locked(at as usize) {
                continue;
            }
            match holding.or(ending) {
                Some(device) => {
                    return Err(err!(
                        Internal,
                        "kernel {}: argument {i} ({at:#x}) is memory of cuda:{device}, launched on cuda:{}",
                        f.0.to_string_lossy(),
                        self.ordinal
                    ))
                }
                None => {
                    return Err(err!(
                        Internal,
                        "kernel {}: argument {i} ({at:#x}) looks like a host address, not memory of cuda:{}",
                        f.0.to_string_lossy(),
                        self.ordinal
                    ))
                }
            }
        }
        Ok(())
    }

    /// `launch`, its blocks and threads in the order drawn from `seed` (0: index order).
    fn launch_in_order(&self, f: &Function, grid: [u32; 3], block: [u32; 3], args: &mut Args, seed: u64) -> Result<()> {
        self.check_addresses(f, args)?;
        run_queued(self.ordinal);
        let mut params = args.pointers();
        let mut takes = 0u32;
        // SAFETY: `args` holds as many values as the kernel has parameters (checked there first),
        // of its parameters' types (the launcher's contract); every address in them is live
        // emulated device memory for the (synchronous) run.
        let rc = unsafe {
            lodtensor_emulator_launch(
                f.0.as_ptr(),
                grid.as_ptr(),
                block.as_ptr(),
                params.as_mut_ptr(),
                params.len() as u32,
                &mut takes,
                seed,
            )
        };
        match rc {
            0 => Ok(()),
            4 => Err(err!(
                Internal,
                "kernel {}: launched with {} arguments, but it takes {takes}",
                f.0.to_string_lossy(),
                params.len()
            )),
            1 => Err(err!(Internal, "kernel {}: not registered with LODTENSOR_EXPORT", f.0.to_string_lossy())),
            3 => Err(err!(
                Internal,
                "kernel {}: threads of a block returned while others wait at __syncthreads()",
                f.0.to_string_lossy()
            )),
            _ => Err(err!(Internal, "kernel {}: bad launch shape {grid:?} x {block:?}", f.0.to_string_lossy())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    fn upload(ctx: &Context, bytes: &[u8]) -> DevicePtr {
        let p = ctx.malloc(bytes.len()).unwrap();
        ctx.htod(p, bytes).unwrap();
        p
    }

    fn run(ctx: &Context, name: &str, grid: [u32; 3], block: [u32; 3], args: Args) -> Result<()> {
        ctx.launch(&ctx.function(ctx.load("selftest.cu", "").unwrap(), name)?, grid, block, &mut { args })
    }

    /// A block reduction through __shared__ memory and __syncthreads, with an atomicAdd per block:
    /// right only if each block's threads really wait for each other.
    #[test]
    fn block_barriers_shared_memory_and_atomics() {
        let ctx = Context::open(0).unwrap();
        let x: Vec<i32> = (0..100_000).map(|i| (i % 1000) - 300).collect();
        let xs: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (px, pout) = (upload(&ctx, &xs), upload(&ctx, &[0; 4]));
        let args = Args::new().arg(px).arg(pout).arg(x.len() as u32);
        run(&ctx, "emulator_block_sum", [7, 1, 1], [256, 1, 1], args).unwrap();
        let mut out = [0u8; 4];
        ctx.dtoh(&mut out, pout).unwrap();
        assert_eq!(i32::from_le_bytes(out), x.iter().sum::<i32>());
        ctx.free(px).unwrap();
        ctx.free(pout).unwrap();
    }

    /// A kernel handed a host table, or a tensor of another device, fails to launch, naming the
    /// argument; the device's own memory (a block's start, inside and its end) and page-locked
    /// host memory are taken.
    #[test]
    fn launches_take_only_memory_the_device_reads() {
        let (ctx, other) = (Context::open(0).unwrap(), Context::open(1).unwrap());
        let x: Vec<i32> = (0..4096).collect();
        let xs: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        let (px, pout, elsewhere) = (upload(&ctx, &xs), upload(&ctx, &[0; 8]), upload(&other, &xs));
        let sum = |from: u64, out: u64, n: u32| {
            ctx.htod(pout, &[0; 4]).unwrap();
            run(&ctx, "emulator_block_sum", [1, 1, 1], [256, 1, 1], Args::new().arg(from).arg(out).arg(n))
        };
        let refused = |r: Result<()>, words: &[&str]| match r {
            Err(Error::Internal(m)) => {
                assert!(m.contains("emulator_block_sum") && words.iter().all(|w| m.contains(w)), "{m}")
            }
            other => panic!("expected Internal with {words:?}, got {other:?}"),
        };
        // Addresses inside the buffers: a buffer's start may also be the end of a block of
        // cuda:0, which a kernel may be given as a bound.
        let (host, other_device) = (xs.as_ptr() as u64 + 8, elsewhere + 8);
        refused(sum(host, pout, 4094), &["argument 0 (", "looks like a host address, not memory of cuda:0"]);
        refused(sum(other_device, pout, 4094), &["argument 0 (", "is memory of cuda:1, launched on cuda:0"]);
        let mut host_out = [0u8; 4];
        refused(sum(px, host_out.as_mut_ptr() as u64, 4096), &["argument 1 (", "looks like a host address"]);
        // Inside a block, and its end (an empty range there).
        sum(px + 400, pout, 1000).unwrap();
        sum(px + xs.len() as u64, pout, 0).unwrap();
        // Page-locked host memory.
        let locked = ctx.malloc_host(xs.len()).unwrap();
        // SAFETY: `xs.len()` bytes of new host memory.
        unsafe { std::ptr::copy_nonoverlapping(xs.as_ptr(), locked, xs.len()) };
        sum(locked as u64, pout, 4096).unwrap();
        ctx.dtoh(&mut host_out, pout).unwrap();
        assert_eq!(i32::from_le_bytes(host_out), x.iter().sum::<i32>());
        for (c, p) in [(&ctx, px), (&ctx, pout), (&other, elsewhere)] {
            c.free(p).unwrap();
        }
    }

    #[test]
    fn indices_of_3d_launches() {
        let ctx = Context::open(1).unwrap();
        let (grid, block) = ([3, 2, 2], [4, 3, 2]);
        let n = 12 * 24;
        let p = upload(&ctx, &vec![0xff; 4 * n]);
        run(&ctx, "emulator_indices", grid, block, Args::new().arg(p)).unwrap();
        let mut out = vec![0u8; 4 * n];
        ctx.dtoh(&mut out, p).unwrap();
        let got: Vec<u32> = out.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, (0..n as u32).collect::<Vec<_>>());
        ctx.free(p).unwrap();
    }

    /// The tickets that `kernel` hands out over `grid` blocks of `block` threads, run in the order
    /// drawn from `seed`, by the index of what took them.
    fn tickets(kernel: &str, grid: u32, block: u32, takers: usize, seed: u64) -> Vec<u32> {
        let ctx = Context::open(0).unwrap();
        let (counter, out) = (upload(&ctx, &[0; 4]), upload(&ctx, &vec![0xff; 4 * takers]));
        let f = ctx.function(ctx.load("selftest.cu", "").unwrap(), kernel).unwrap();
        let mut args = Args::new().arg(counter).arg(out);
        ctx.launch_in_order(&f, [grid, 1, 1], [block, 1, 1], &mut args, seed).unwrap();
        let mut bytes = vec![0u8; 4 * takers];
        ctx.dtoh(&mut bytes, out).unwrap();
        ctx.free(counter).unwrap();
        ctx.free(out).unwrap();
        bytes.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }

    /// Seed 0 runs blocks and threads in index order; another seed runs every one once, in an order
    /// that is not the index order, neither across blocks nor within one, and that differs by seed.
    #[test]
    fn seeds_shuffle_the_order_of_blocks_and_threads() {
        let (grid, block) = (8u32, 32u32);
        let n = (grid * block) as usize;
        let in_order: Vec<u32> = (0..n as u32).collect();
        assert_eq!(tickets("emulator_tickets", grid, block, n, 0), in_order);
        let mut orders = Vec::new();
        for seed in [1u64, 0xdead_beef] {
            let got = tickets("emulator_tickets", grid, block, n, seed);
            let mut sorted = got.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, in_order, "seed {seed}: every thread runs once");
            let firsts: Vec<u32> = got.chunks(block as usize).map(|b| *b.iter().min().unwrap()).collect();
            assert!(firsts.windows(2).any(|w| w[0] > w[1]), "seed {seed}: blocks in index order");
            assert!(got[..block as usize].windows(2).any(|w| w[0] > w[1]), "seed {seed}: threads in index order");
            orders.push(got);
        }
        assert_ne!(orders[0], orders[1]);
        // A kernel with barriers (LODTENSOR_EXPORT_SYNC, its blocks' threads as fibers): blocks shuffled too.
        let blocks = 16;
        assert_eq!(tickets("emulator_block_tickets", blocks, 4, blocks as usize, 0), (0..blocks).collect::<Vec<_>>());
        let got = tickets("emulator_block_tickets", blocks, 4, blocks as usize, 7);
        let mut sorted = got.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..blocks).collect::<Vec<_>>());
        assert!(got.windows(2).any(|w| w[0] > w[1]), "blocks of a kernel with barriers in index order");
    }

    /// A block's threads run in turn between its barriers: in index order for seed 0, else in an
    /// order drawn anew for each phase; no thread passes a barrier before every thread reaches it.
    #[test]
    fn threads_of_a_block_run_in_turn_between_barriers() {
        let block = 64u32;
        let n = block as usize;
        let phases = |seed| {
            let got = tickets("emulator_phase_tickets", 1, block, 2 * n, seed);
            (got[..n].to_vec(), got[n..].iter().map(|t| t - block).collect::<Vec<u32>>())
        };
        let in_order: Vec<u32> = (0..block).collect();
        assert_eq!(phases(0), (in_order.clone(), in_order.clone()));
        for seed in [3u64, 0x5eed] {
            let (first, second) = phases(seed);
            for phase in [&first, &second] {
                let mut sorted = phase.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, in_order, "seed {seed}: each thread once in each phase, after the barrier");
                assert_ne!(phase, &in_order, "seed {seed}: threads in index order");
            }
            assert_ne!(first, second, "seed {seed}: both phases in one order");
        }
    }

    /// A thread that returns while others of its block wait at a barrier is an error of the launch.
    #[test]
    fn threads_that_disagree_about_a_barrier_fail_the_launch() {
        let ctx = Context::open(0).unwrap();
        for returning in [0u32, 32] {
            run(&ctx, "emulator_early_return", [2, 1, 1], [32, 1, 1], Args::new().arg(returning)).unwrap();
        }
        for returning in [1u32, 31] {
            let e = run(&ctx, "emulator_early_return", [2, 1, 1], [32, 1, 1], Args::new().arg(returning)).unwrap_err();
            assert!(
                e.to_string().contains("emulator_early_return: threads of a block returned while others wait"),
                "{e}"
            );
        }
    }

    /// Built with the race check (`LODTENSOR_EMULATOR_TSAN=1`), two threads of a block that
    /// touch one word in one phase, or two threads of two blocks of a launch, one of them writing
    /// and not both atomically, are a race whatever order they run in; barriers, atomics and
    /// each block's shared memory are not.
    #[test]
    fn races_between_threads_of_a_launch_are_found() {
        if unsafe { lodtensor_emulator_race_check() } == 0 {
            eprintln!("skipped: the emulator was built without the race check (LODTENSOR_EMULATOR_TSAN=1)");
            return;
        }
        let ctx = Context::open(0).unwrap();
        let out = upload(&ctx, &[0; 4 << 11]);
        // Blocks of 1024 threads, the most a block has, on grids of one (two would take 2048
        // fibers, and every vector clock of the check as wide for the rest of the run); smaller
        // ones on grids of two, whose blocks share the statics that are shared memory here.
        // (ThreadSanitizer reports a race once per pair of places in the code and once per
        // address, so each racy kernel runs once, and on words of its own.)
        for (kernel, grid, block, racy) in [
            ("emulator_racy_count", 1, 1024, true),
            ("emulator_racy_store", 1, 1024, true),
            ("emulator_racy_blocks", 2, 1, true),
            ("emulator_atomic_count", 2, 2, false),
            ("emulator_atomic_count", 1, 1024, false),
            ("emulator_block_sum", 2, 2, false),
            ("emulator_block_sum", 2, 256, false),
            ("emulator_indices", 2, 2, false),
            ("emulator_indices", 1, 1024, false),
        ] {
            let args = match kernel {
                "emulator_block_sum" => Args::new().arg(out).arg(out + 8).arg(2u32),
                "emulator_racy_blocks" => Args::new().arg(out + 64),
                _ => Args::new().arg(out),
            };
            unsafe { lodtensor_emulator_expect_races(1) };
            run(&ctx, kernel, [grid, 1, 1], [block, 1, 1], args).unwrap();
            let races = unsafe { lodtensor_emulator_expect_races(0) };
            assert_eq!(races > 0, racy, "{kernel} on {grid} blocks of {block}: {races} races");
        }
        let mut counts = [0u8; 8];
        run(&ctx, "emulator_atomic_count", [2, 1, 1], [32, 1, 1], Args::new().arg(out)).unwrap();
        ctx.dtoh(&mut counts, out).unwrap();
        assert_eq!(counts, [32, 0, 0, 0, 32, 0, 0, 0]);
        ctx.free(out).unwrap();
    }

    /// A kernel is found only in the module that defines it, as on a GPU: a launcher naming the
    /// wrong kernel file (or variant) fails on the emulator too.
    #[test]
    fn kernels_are_found_in_their_own_module_only() {
        let ctx = Context::open(0).unwrap();
        let load = |m| ctx.load(m, "").unwrap();
        assert!(ctx.function(load("selftest.cu"), "emulator_indices").is_ok());
        assert!(ctx.function(load("rows.cu"), "emulator_indices").is_err());
        assert!(ctx.function(load("fused_chunks.cu[CHUNK_LIST=8]"), "fused_chunk_step_f32_8").is_ok());
        assert!(ctx.function(load("fused_chunks.cu[CHUNK_LIST=4]"), "fused_chunk_step_f32_8").is_err());
        assert!(ctx.function(load("beam.cu"), "fused_chunk_step_f32_8").is_err());
    }

    #[test]
    fn unknown_kernels_bad_shapes_and_argument_counts_are_errors() {
        let ctx = Context::open(0).unwrap();
        assert!(run(&ctx, "no_such_kernel", [1, 1, 1], [1, 1, 1], Args::new()).is_err());
        assert!(run(&ctx, "emulator_indices", [1, 1, 1], [2048, 1, 1], Args::new().arg(0u64)).is_err());
        assert!(Context::open(2).is_err());
        // emulator_indices takes one parameter; nothing runs with another count.
        let p = upload(&ctx, &[0xff; 4]);
        for args in [Args::new(), Args::new().arg(p).arg(7u32)] {
            let n = args.values().len();
            match run(&ctx, "emulator_indices", [1, 1, 1], [1, 1, 1], args) {
                Err(Error::Internal(m)) => {
                    assert!(m.contains(&format!("launched with {n} arguments, but it takes 1")), "{m}")
                }
                other => panic!("expected Internal, got {other:?}"),
            }
        }
        let mut out = [0u8; 4];
        ctx.dtoh(&mut out, p).unwrap();
        assert_eq!(out, [0xff; 4], "a refused launch ran");
        run(&ctx, "emulator_indices", [1, 1, 1], [1, 1, 1], Args::new().arg(p)).unwrap();
        ctx.dtoh(&mut out, p).unwrap();
        assert_eq!(out, [0; 4]);
        ctx.free(p).unwrap();
    }
}
