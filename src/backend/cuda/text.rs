//! Launcher of `kernels/text.cu`: the UTF-8 check of strings' bytes where they lie, one launch.

use super::kept_zero::BadCount;
use super::launch::{launch_unrolled, Args};
use super::seq_common::{device_of, level_on};
use crate::error::Result;
use crate::lod::LodLevel;
use crate::tensor::Tensor;

/// Whether each sequence of `level` over the bytes of `bytes` (a uint8 device tensor whose
/// elements the level's offsets index) is UTF-8. Waits for the device; reads back one count, not
/// the bytes.
pub fn is_utf8_strings(bytes: &Tensor, level: LodLevel) -> Result<bool> {
    let d = device_of(bytes, "is_utf8_strings")?;
    let n = bytes.nbytes() as u64;
    let num_offsets = level.offsets().len() as u64;
    let offsets = level_on(&d, level)?;
    let bad = BadCount::new(&d)?;
    let args = Args::new().ptr(bytes).arg(n).buf(&offsets).arg(num_offsets).arg(bad.address());
    launch_unrolled(&d, "text.cu", "utf8_check", n + num_offsets, args)?;
    Ok(bad.unless_counted(())?.is_some())
}
