//! The CUDA backend. With the `cuda` feature: the driver probe, one context and stream per
//! device, a caching allocator, host<->device copies and the NVRTC-compiled kernels. Without it:
//! a stand-in with the same names whose every entry answers `Unsupported` ("built without CUDA"),
//! so the rest of the library needs no `#[cfg]`.
//!
//! Every device's work goes to that device's one stream, in call order; so a block handed back to
//! the cache can be reused by the next call on the same device without waiting for the GPU.

pub mod size_class;

#[cfg(feature = "cuda")]
mod device;
#[cfg(feature = "cuda")]
mod kernels;
#[cfg(feature = "cuda")]
pub use device::*;
#[cfg(feature = "cuda")]
pub use kernels::{compile_ptx, gather_row_ranges};

#[cfg(not(feature = "cuda"))]
mod stub;
#[cfg(not(feature = "cuda"))]
pub use stub::*;

/// The CUDA C sources of the kernels, `(file name, source)`: compiled by NVRTC at first use on a
/// device, and by the CI check without a GPU.
pub const KERNEL_SOURCES: &[(&str, &str)] = &[("rows.cu", include_str!("kernels/rows.cu"))];
