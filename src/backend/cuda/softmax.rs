//! Launcher of `kernels/softmax.cu`: softmax or log-softmax over segments, one launch.

use super::device::new_tensor;
use super::launch::{blocks_for, launch, max_blocks, Args, BLOCK};
use super::seq_args::Segments;
use super::seq_common::{device_of, float_suffix, level_on};
use crate::error::Result;
use crate::tensor::Tensor;

/// Segments at most this long get a thread each; longer ones a block of `BLOCKED` threads.
const THREAD_MAX_LEN: usize = 32;
/// Threads per block of the block-per-segment kernel (`LODTENSOR_SOFTMAX_BLOCK` in softmax.cu).
const BLOCKED: u32 = 128;

/// A new device tensor like `x` (a float dtype) with the softmax (or, with `log`, log-softmax) of
/// each segment: the CPU's formula (max subtracted, exponentials in f32 for 16/32-bit floats and
/// f64 for float64, sum in f64, one rounding), summed in a different order for long segments.
pub fn softmax_segments(x: &Tensor, segments: Segments, log: bool) -> Result<Tensor> {
    let d = device_of(x, "softmax")?;
    let mut out = new_tensor(&d, x.dtype(), *x.dims())?;
    let (count, longest, width, table) = match segments {
        Segments::Bounds(level) => {
            (level.offsets().len().saturating_sub(1), level.longest(), 0, Some(level_on(&d, level)?))
        }
        Segments::Rows { rows, width } => (rows, width, width, None),
    };
    if count == 0 || longest == 0 {
        return Ok(out);
    }
    let bounds = table.as_ref().map_or(0, |t| t.as_ptr() as u64);
    let suffix = float_suffix(x.dtype())?;
    let args =
        Args::new().ptr(x).arg(out.as_mut_ptr() as u64).arg(bounds).arg(width as u64).arg(count as u64).arg(log as i32);
    if longest <= THREAD_MAX_LEN {
        let grid = [blocks_for(count as u64), 1, 1];
        launch(&d, "softmax.cu", &format!("softmax_threads_{suffix}"), grid, [BLOCK, 1, 1], args)?;
    } else {
        let grid = [(count as u64).min(max_blocks()) as u32, 1, 1];
        launch(&d, "softmax.cu", &format!("softmax_blocks_{suffix}"), grid, [BLOCKED, 1, 1], args)?;
    }
    Ok(out)
}
