//! Whose memory a caller's device buffer is: the check that `lodtensor_from_buffer` makes of a
//! buffer it is told lies on a CUDA device, so that a host pointer or another device's memory is
//! an error naming `data` rather than a kernel fault, which would leave the device's context
//! unusable for the rest of the process.

use super::device::device;
use crate::error::{err, Result};

/// What the driver knows of an address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum MemoryOwner {
    /// Device memory of the device with that ordinal (not managed).
    Device(u32),
    /// Memory every device's kernels may read: managed memory, or pinned host memory (on the
    /// emulator: page-locked host memory, the only kind of the two it has).
    Shared,
    /// Not memory the driver knows: host memory from malloc or the stack, say.
    Unknown,
}

/// Checks that kernels on CUDA device `ordinal` can use the caller's `len` bytes at `ptr`:
/// its first and last bytes must be device memory of that device, managed or pinned host memory,
/// or, on a GPU that reads pageable host memory, any memory. `InvalidArgument` naming `data`
/// otherwise.
pub fn check_device_buffer(ordinal: u32, ptr: *const u8, len: usize) -> Result<()> {
    let d = device(ordinal)?;
    let first = ptr as u64;
    let last = first
        .checked_add((len as u64).saturating_sub(1))
        .ok_or_else(|| err!(InvalidArgument, "data: {len} bytes at {first:#x} run past the end of memory"))?;
    for (which, at) in [("first", first), ("last", last)] {
        match d.ctx.memory_owner(at)? {
            MemoryOwner::Device(n) if n == ordinal => {}
            MemoryOwner::Shared => {}
            MemoryOwner::Device(n) => {
                return Err(err!(
                    InvalidArgument,
                    "data: its {which} byte ({at:#x}) is device memory of cuda:{n}, not of cuda:{ordinal}"
                ))
            }
            MemoryOwner::Unknown if d.ctx.reads_pageable_memory() => {}
            MemoryOwner::Unknown => {
                return Err(err!(
                    InvalidArgument,
                    "data: its {which} byte ({at:#x}) is not memory the CUDA driver knows (host memory from malloc \
                     or the stack?); a buffer on cuda:{ordinal} must be its device memory (cudaMalloc, cuMemAlloc), \
                     managed or pinned host memory"
                ))
            }
        }
    }
    Ok(())
}
