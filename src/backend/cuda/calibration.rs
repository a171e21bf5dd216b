//! The calibration kernel of the GPU speed tests and benchmark (`kernels/calibration.cu`): the
//! device's read bandwidth on the bytes of a tensor, against which the read-bound ops (pooling,
//! the fused beam step) are measured. Not used by any operator.

use super::launch::{launch, Args, BLOCK};
use super::seq_common::device_of;
use crate::error::{ensure, Result};
use crate::tensor::Tensor;

/// Blocks of the probe: 8 of 256 threads per SM of an H100 (132 SMs), full occupancy; the
/// grid-stride loop covers the rest.
const PROBE_BLOCKS: u64 = 132 * 8;

/// Queues a read of every 8-byte word of `t` (a device tensor whose address is a multiple of 8;
/// a tail of fewer than 8 bytes is not read) on its device's stream; the caller synchronizes to
/// time it.
pub fn read_bandwidth_probe(t: &Tensor) -> Result<()> {
    let d = device_of(t, "read_bandwidth_probe")?;
    ensure!(
        (t.as_ptr() as u64).is_multiple_of(8),
        InvalidArgument,
        "t: the probe reads 8-byte words; t is not 8-byte aligned"
    );
    let words = (t.nbytes() / 8) as u64;
    let grid = words.div_ceil(BLOCK as u64).clamp(1, PROBE_BLOCKS) as u32;
    let sums = d.allocation(8 * grid as usize)?;
    let args = Args::new().ptr(t).arg(words).buf(&sums);
    launch(&d, "calibration.cu", "read_sum_u64", [grid, 1, 1], [BLOCK, 1, 1], args)
}
