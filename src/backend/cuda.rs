//! Stand-in for the CUDA backend in builds without CUDA: every entry reports that it is missing,
//! so callers need no conditional compilation.

use crate::error::{err, Result};

/// Checks that CUDA device `device` can be used.
pub fn ensure_device(device: u32) -> Result<()> {
    Err(err!(Unsupported, "place: cuda:{device} requested, but lodtensor was built without CUDA"))
}
