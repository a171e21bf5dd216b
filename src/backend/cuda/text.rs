//! Launcher of `kernels/text.cu`: the UTF-8 check of strings' bytes where they lie, a launch a
//! text and one count for them all.

use super::kept_zero::BadCount;
use super::launch::{launch_unrolled, Args};
use super::seq_common::{device_of, level_on};
use crate::error::{ensure, Result};
use crate::lod::LodLevel;
use crate::tensor::Tensor;

/// Whether every sequence of each text's level over its bytes (a uint8 tensor whose elements the
/// level's offsets index; every text on one device) is UTF-8. The texts' checks add to one count,
/// so the call reads back 4 bytes and waits for the device once, whatever the number of texts:
/// when it returns, the work queued on the device before it has finished too.
pub fn are_utf8_strings(texts: &[(&Tensor, LodLevel)]) -> Result<bool> {
    let Some(&(first, _)) = texts.first() else { return Ok(true) };
    let d = device_of(first, "are_utf8_strings")?;
    ensure!(
        texts.iter().all(|(bytes, _)| bytes.place() == first.place()),
        Internal,
        "are_utf8_strings: texts on more than one place"
    );
    let bad = BadCount::new(&d)?;
    for (bytes, level) in texts {
        let n = bytes.nbytes() as u64;
        let num_offsets = level.offsets().len() as u64;
        let offsets = level_on(&d, *level)?;
        let args = Args::new().ptr(bytes).arg(n).buf(&offsets).arg(num_offsets).arg(bad.address());
        launch_unrolled(&d, "text.cu", "utf8_check", n + num_offsets, args)?;
    }
    Ok(bad.unless_counted(())?.is_some())
}
