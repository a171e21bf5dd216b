//! Where a tensor's memory lives, with DLPack device codes at the C boundary.

use crate::error::{err, Result};

/// A memory location: host memory or the memory of CUDA device `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    Cpu,
    Cuda(u32),
}

/// DLPack device types (`DLDeviceType`).
pub mod dlpack_device {
    pub const CPU: i32 = 1;
    pub const CUDA: i32 = 2;
}

impl Place {
    /// The DLPack `(device_type, device_id)` pair.
    pub fn dlpack(self) -> (i32, i32) {
        match self {
            Place::Cpu => (dlpack_device::CPU, 0),
            Place::Cuda(n) => (dlpack_device::CUDA, n as i32),
        }
    }

    pub fn from_dlpack(device_type: i32, device_id: i32) -> Result<Place> {
        match device_type {
            dlpack_device::CPU if device_id == 0 => Ok(Place::Cpu),
            dlpack_device::CPU => Err(err!(InvalidArgument, "place: the CPU place has device_id 0, got {device_id}")),
            dlpack_device::CUDA if device_id >= 0 => Ok(Place::Cuda(device_id as u32)),
            dlpack_device::CUDA => Err(err!(InvalidArgument, "place: device_id must be >= 0, got {device_id}")),
            other => Err(err!(InvalidArgument, "place: device_type {other} is not supported (1 = CPU, 2 = CUDA)")),
        }
    }
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Cpu => f.write_str("cpu"),
            Place::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

impl Place {
    /// Checks that memory on this place can be used by this build.
    pub fn ensure_usable(self) -> Result<()> {
        match self {
            Place::Cpu => Ok(()),
            Place::Cuda(n) => crate::backend::cuda::ensure_device(n),
        }
    }
}
