//! Launching the kernels of `kernels/*.cu`: kernel arguments, the per-device module cache, and
//! uploads of host tables (LoD offsets and the like, once per call).

use super::device::Device;
use super::driver::DevicePtr;
use crate::error::Result;
use crate::memory::Allocation;
use crate::tensor::Tensor;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[cfg(not(target_endian = "little"))]
compile_error!("kernel arguments are passed as the low bytes of 8-byte slots: little-endian targets only");

/// A kernel argument: a pointer-sized or smaller plain value, passed in an 8-byte slot (the driver
/// reads as many bytes as the parameter has, from the slot's start).
pub(crate) trait KernelArg: Copy {
    fn slot(self) -> u64;
}

macro_rules! kernel_arg_int {
    ($($t:ty),*) => {$(
        impl KernelArg for $t {
            fn slot(self) -> u64 {
                self as u64
            }
        }
    )*};
}
kernel_arg_int!(u8, u16, u32, u64, i32, i64);

impl KernelArg for f32 {
    fn slot(self) -> u64 {
        self.to_bits() as u64
    }
}

impl KernelArg for f64 {
    fn slot(self) -> u64 {
        self.to_bits()
    }
}

/// The arguments of one launch, in the order of the kernel's parameters. Each kernel's launcher
/// is the one place that must agree with its CUDA signature.
#[derive(Default)]
pub(crate) struct Args {
    slots: Vec<u64>,
}

impl Args {
    pub(crate) fn new() -> Args {
        Args::default()
    }

    pub(crate) fn arg(mut self, value: impl KernelArg) -> Args {
        self.slots.push(value.slot());
        self
    }

    /// The device address of a tensor's first element.
    pub(crate) fn ptr(self, t: &Tensor) -> Args {
        self.arg(t.as_ptr() as u64)
    }

    /// The device address of an allocation.
    pub(crate) fn buf(self, a: &Allocation) -> Args {
        self.arg(a.as_ptr() as u64)
    }

    /// `more`'s arguments after these.
    pub(crate) fn extend(mut self, more: Args) -> Args {
        self.slots.extend(more.slots);
        self
    }

    /// The slots' values, in parameter order.
    #[cfg_attr(feature = "cuda", allow(dead_code))]
    pub(crate) fn values(&self) -> &[u64] {
        &self.slots
    }

    /// The slots' addresses, as the driver's launch takes them.
    pub(crate) fn pointers(&mut self) -> Vec<*mut c_void> {
        self.slots.iter_mut().map(|s| (s as *mut u64).cast()).collect()
    }
}

/// Threads per block of the grid-stride kernels.
pub(crate) const BLOCK: u32 = 256;

/// The most blocks a grid-stride launch gets: its blocks loop over the rest of the work. 2^16,
/// unless the driver caps it lower (the emulator's shuffled runs, so that the loops are tested).
pub(crate) fn max_blocks() -> u64 {
    super::driver::grid_cap().map_or(1 << 16, |cap| cap.min(1 << 16))
}

/// Enough blocks of `BLOCK` threads for `work` items of a grid-stride loop (at least 1, at most
/// `max_blocks()`: the loop covers the rest).
pub(crate) fn blocks_for(work: u64) -> u32 {
    work.div_ceil(BLOCK as u64).clamp(1, max_blocks()) as u32
}

/// Launches kernel `function` of file `file` on `d` (compiled and loaded at its first use there)
/// with `grid` x `block` threads.
pub(crate) fn launch(
    d: &Arc<Device>,
    file: &str,
    function: &str,
    grid: [u32; 3],
    block: [u32; 3],
    mut args: Args,
) -> Result<()> {
    d.launch(file, function, grid, block, &mut args)
}

/// A grid-stride launch over `work` items: `blocks_for(work)` blocks of `BLOCK` threads.
pub(crate) fn launch_1d(d: &Arc<Device>, file: &str, function: &str, work: u64, args: Args) -> Result<()> {
    launch(d, file, function, [blocks_for(work), 1, 1], [BLOCK, 1, 1], args)
}

/// Items per thread and round of `for_each_index` (common.cuh's STRIDE_UNROLL, the same number).
const STRIDE_UNROLL: u64 = 4;

/// Items a block takes in one round of `for_each_index`: a chunk.
pub(crate) const CHUNK: u64 = STRIDE_UNROLL * BLOCK as u64;

/// A launch of a kernel built on `for_each_index` over `items` items: a grid of `BLOCK`-thread
/// blocks that gives each thread `STRIDE_UNROLL` items a round (fewer blocks would leave the
/// GPU's threads idle; more would leave each with one item and one read in flight).
pub(crate) fn launch_unrolled(d: &Arc<Device>, file: &str, function: &str, items: u64, args: Args) -> Result<()> {
    launch_1d(d, file, function, items.div_ceil(STRIDE_UNROLL), args)
}

/// The most items a grid-stride kernel takes with 32-bit index arithmetic (its 64-bit twin, named
/// `_wide`, takes more; common.cuh's LODTENSOR_NARROW_AND_WIDE). A test lowers it to run the wide
/// kernels on small inputs; both give the same results, so other tests running meanwhile are
/// unaffected.
static NARROW_MAX: AtomicU64 = AtomicU64::new(u32::MAX as u64);

/// The suffix of a LODTENSOR_NARROW_AND_WIDE kernel's name for `items` items: "" or "_wide".
pub(crate) fn index_width(items: u64) -> &'static str {
    if items <= NARROW_MAX.load(Ordering::Relaxed) {
        ""
    } else {
        "_wide"
    }
}

/// Output elements per tile of the tile kernels (`for_each_tile`, common.cuh): 32 per thread of a
/// block, so the two searches each thread makes per tile are amortised over many elements.
const TILE_ELEMS: u64 = 32 * BLOCK as u64;
/// Rows per tile at most: the kernels keep a value per row of the tile in shared memory
/// (common.cuh's TILE_MAX_ROWS, the same number).
const TILE_MAX_ROWS: u64 = 2048;

/// Launches tile kernel `function` of `file` over `rows` output rows of `row_elems` elements;
/// `args` ends with the tile size in rows, which this appends.
pub(crate) fn launch_tiles(
    d: &Arc<Device>,
    file: &str,
    function: &str,
    rows: u64,
    row_elems: u64,
    args: Args,
) -> Result<()> {
    let tile_rows = (TILE_ELEMS / row_elems.max(1)).clamp(1, TILE_MAX_ROWS);
    let grid = rows.div_ceil(tile_rows).clamp(1, max_blocks()) as u32;
    launch(d, file, function, [grid, 1, 1], [BLOCK, 1, 1], args.arg(tile_rows))
}

/// Uploads `values` to a new device buffer (ordered on the device's stream); the buffer may be
/// dropped right after the launches that read it are queued.
pub(crate) fn upload<T: KernelArg>(d: &Arc<Device>, values: &[T]) -> Result<Arc<Allocation>> {
    let len = std::mem::size_of_val(values);
    let alloc = d.allocation(len)?;
    if len > 0 {
        // SAFETY: primitive values (no padding) viewed as their bytes.
        let bytes = unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), len) };
        d.htod(alloc.as_ptr() as DevicePtr, bytes)?;
    }
    Ok(alloc)
}

#[cfg(test)]
mod tests {
    use super::super::KERNEL_SOURCES;
    use super::*;

    /// The kernels size their per-row shared arrays by common.cuh's TILE_MAX_ROWS; a tile of more
    /// rows would write past them.
    #[test]
    fn tile_rows_cap_matches_the_kernels() {
        let rows_cu = KERNEL_SOURCES.iter().find(|(n, _)| *n == "rows.cu").unwrap().1;
        assert!(rows_cu.contains(&format!("#define TILE_MAX_ROWS {TILE_MAX_ROWS}\n")));
    }

    /// The grid of `launch_unrolled` assumes the kernels' items per thread and round, and the
    /// kernels bounded to STRIDE_THREADS threads a block are launched with BLOCK.
    #[test]
    fn stride_unroll_matches_the_kernels() {
        let convert_cu = KERNEL_SOURCES.iter().find(|(n, _)| *n == "convert.cu").unwrap().1;
        assert!(convert_cu.contains(&format!("#define STRIDE_UNROLL {STRIDE_UNROLL}\n")));
        assert!(convert_cu.contains(&format!("#define STRIDE_THREADS {BLOCK}\n")));
    }

    /// The 64-bit (`_wide`) kernels, which only 2^32 items or more reach, give what the 32-bit ones
    /// do: sequence_pad, gather_rows by a device index, scatter_rows (both modes) and
    /// beam_search_gather_states on small inputs, run once with each (every word size: rows of
    /// 1-48 bytes).
    #[test]
    fn wide_kernels_equal_narrow_ones() {
        use crate::ops::gather_rows;
        use crate::ops::transfer::to_place;
        use crate::{
            beam_search_gather_states, scatter_rows, sequence_pad, DType, Dim, LoDTensor, Lod, Place, ScatterMode,
        };
        if super::super::device::devices_for_test().is_none() {
            return;
        }
        let dev = |t: &LoDTensor| to_place(t, Place::Cuda(0)).unwrap();
        let bytes_of = |t: &LoDTensor| to_place(t, Place::Cpu).unwrap().tensor().bytes().unwrap().to_vec();
        let lengths = vec![3usize, 0, 5, 1, 0, 2];
        let rows: usize = lengths.iter().sum();
        let lod = Lod::from_lengths(std::slice::from_ref(&lengths)).unwrap();
        for row_bytes in [1usize, 2, 4, 8, 16, 48] {
            let data: Vec<u8> = (0..rows * row_bytes).map(|i| (i * 13 + 1) as u8).collect();
            let x = Tensor::from_bytes(DType::U8, Dim::new(&[rows, row_bytes]).unwrap(), &data).unwrap();
            let seqs = dev(&LoDTensor::new(x.clone(), lod.clone()).unwrap());
            let pad = dev(&LoDTensor::dense(Tensor::from_bytes(DType::U8, Dim::new(&[1]).unwrap(), &[0xEE]).unwrap()));
            let index: Vec<i64> = (0..rows as i64).rev().chain([2, 2, 0]).collect();
            let index = dev(&LoDTensor::dense(Tensor::from_slice(&index, &[index.len()]).unwrap()));
            let x = dev(&LoDTensor::dense(x));
            let updates_bytes: Vec<u8> = (0..3 * row_bytes).map(|i| (200 + i) as u8).collect();
            let updates = dev(&LoDTensor::dense(
                Tensor::from_bytes(DType::U8, Dim::new(&[3, row_bytes]).unwrap(), &updates_bytes).unwrap(),
            ));
            let at = dev(&LoDTensor::dense(Tensor::from_slice(&[4i64, 1, 4], &[3]).unwrap()));
            let first_3 = dev(&LoDTensor::dense(Tensor::from_slice(&[2i32, 0, 1], &[3]).unwrap()));
            let run = || {
                let (padded, lengths) = sequence_pad(&seqs, &pad, 6).unwrap();
                let gathered = gather_rows(&x, &index).unwrap();
                let scattered = scatter_rows(&x, &at, &updates, ScatterMode::Overwrite).unwrap();
                let added = scatter_rows(&x, &at, &updates, ScatterMode::Add).unwrap();
                // Several states by one index: x's rows and updates' by the index's first 3.
                let states = beam_search_gather_states(&[&x, &updates, &x], &first_3).unwrap();
                let ops = [padded, lengths, gathered, scattered, added];
                ops.iter().chain(&states).map(bytes_of).collect::<Vec<_>>()
            };
            let narrow = run();
            NARROW_MAX.store(0, Ordering::Relaxed);
            let wide = run();
            NARROW_MAX.store(u32::MAX as u64, Ordering::Relaxed);
            assert_eq!(narrow, wide, "rows of {row_bytes} bytes");
            // And they are right: slot 2 of the padded output is sequence 2; gathered row 0 is x's
            // last row; scattered row 4 is the last update naming it.
            assert_eq!(
                narrow[0][2 * 6 * row_bytes..2 * 6 * row_bytes + 5 * row_bytes],
                data[3 * row_bytes..8 * row_bytes]
            );
            assert_eq!(narrow[2][..row_bytes], data[(rows - 1) * row_bytes..]);
            assert_eq!(
                narrow[3][4 * row_bytes..5 * row_bytes],
                (2 * row_bytes..3 * row_bytes).map(|i| (200 + i) as u8).collect::<Vec<_>>()[..]
            );
            // Added row 4 is x's plus updates 0 and 2 (bytes wrap).
            let add_row_4: Vec<u8> = (0..row_bytes)
                .map(|c| {
                    data[4 * row_bytes + c].wrapping_add((200 + c) as u8).wrapping_add((200 + 2 * row_bytes + c) as u8)
                })
                .collect();
            assert_eq!(narrow[4][4 * row_bytes..5 * row_bytes], add_row_4[..]);
            // The states' rows are rows 2, 0, 1 of theirs.
            for (state, source) in [(&narrow[5], &data), (&narrow[6], &updates_bytes), (&narrow[7], &data)] {
                let want: Vec<u8> =
                    [2, 0, 1].iter().flat_map(|&r| &source[r * row_bytes..(r + 1) * row_bytes]).copied().collect();
                assert_eq!(state, &want, "rows of {row_bytes} bytes");
            }
        }
    }

    /// `for_each_index` covers every item on any grid: a cast launched on 1 and on 3 blocks (five
    /// and two rounds of 1024 items, the last partial) writes every element as the host converts
    /// it. `launch_unrolled`'s grids give one round up to 2^26 items, which no other test reaches.
    #[test]
    fn unrolled_kernels_cover_every_item_on_any_grid() {
        use crate::ops::transfer::to_place;
        use crate::{LoDTensor, Place};
        if super::super::device::devices_for_test().is_none() {
            return;
        }
        let d = super::super::device::device(0).unwrap();
        let n = 5000;
        let xs: Vec<f32> = (0..n).map(|i| i as f32 * 0.75 - 1000.0).collect();
        let on_device = |t: Tensor| to_place(&LoDTensor::dense(t), Place::Cuda(0)).unwrap();
        let x = on_device(Tensor::from_slice(&xs, &[n]).unwrap());
        let want: Vec<u8> = xs.iter().flat_map(|&v| (v as f64).to_le_bytes()).collect();
        for grid in [1, 3] {
            let out = on_device(Tensor::from_slice(&vec![f64::NAN; n], &[n]).unwrap());
            let args = Args::new().ptr(x.tensor()).ptr(out.tensor()).arg(n as u64);
            launch(&d, "convert.cu", "cast_float32_float64", [grid, 1, 1], [BLOCK, 1, 1], args).unwrap();
            let got = to_place(&out, Place::Cpu).unwrap();
            assert!(got.tensor().bytes().unwrap() == want, "grid {grid}: elements differ");
        }
    }
}
