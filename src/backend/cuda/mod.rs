//! The CUDA backend. With the `cuda` feature: the driver probe, one context and stream per
//! device, a caching allocator, host<->device copies and the NVRTC-compiled kernels. With
//! `cuda-emulator` (for testing without a GPU): the same backend over `emulator.rs`, which keeps
//! "device" memory on the host and runs the same kernel sources, compiled as C++, on host threads.
//! Without either: a stand-in with the same names whose every entry answers `Unsupported` ("built
//! without CUDA"), so the rest of the library needs no `#[cfg]`.
//!
//! Every device's work goes to that device's one stream, in call order; so a block handed back to
//! the cache can be reused by the next call on the same device without waiting for the GPU.

#[cfg(all(feature = "cuda", feature = "cuda-emulator"))]
compile_error!("the features `cuda` and `cuda-emulator` exclude each other: choose one");

#[cfg(feature = "cuda")]
mod driver;
#[cfg(all(feature = "cuda-emulator", not(feature = "cuda")))]
#[path = "emulator.rs"]
mod driver;

/// Driver calls made to fail on demand in the emulator's build, for tests (`emulator/failures.rs`).
#[cfg(all(feature = "cuda-emulator", not(feature = "cuda")))]
pub use driver::failures as emulated_driver_failures;

mod counters;
pub use counters::{CudaCounters, CUDA_COUNTERS};
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod device;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod kept_zero;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod launch;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod memory_owner;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use memory_owner::check_device_buffer;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod rows;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod staging;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod upload_ring;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use device::*;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use rows::{
    concat_rows, expand_rows, gather_row_ranges, gather_rows_by_index, pack_rows, repeat_rows, unpack_rows, unpad_rows,
};
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod sequence_misc;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use sequence_misc::{
    sequence_conv, sequence_enumerate, sequence_mask, sequence_reverse_rows, sequence_scatter_add,
};

#[cfg(not(any(feature = "cuda", feature = "cuda-emulator")))]
mod stub;
#[cfg(not(any(feature = "cuda", feature = "cuda-emulator")))]
pub use stub::*;

/// The CUDA C sources of the kernel modules, `(module name, source)`, each with
/// `kernels/common.cuh` in front: compiled by NVRTC at first use on a device, and by the CI check
/// without a GPU. The list is every `kernels/*.cu`, and for a file that declares variants
/// (`// lodtensor-variants: NAME=VALUE ...`) each variant, named `file.cu[NAME=VALUE]` (made by
/// build.rs).
pub const KERNEL_SOURCES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/kernel_sources.rs"));

/// Compiles every kernel file for compute capability `capability` ((9, 0) ...) as `image`, not
/// through the disk cache: `(file, image bytes)`. Needs NVRTC only, no GPU: the CI check that
/// every kernel compiles.
#[cfg(feature = "cuda")]
pub fn compile_kernels(
    capability: (i32, i32),
    image: driver::KernelImage,
) -> crate::error::Result<Vec<(&'static str, usize)>> {
    KERNEL_SOURCES
        .iter()
        .map(|&(name, src)| Ok((name, driver::compiled(name, src, capability, image, None)?.len())))
        .collect()
}
#[cfg(feature = "cuda")]
pub use driver::KernelImage;

// Used by the `cuda` build only; its tests run in every build.
#[cfg(any(feature = "cuda", test))]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
mod kernel_cache;
pub mod seq_args;
pub use seq_args::*;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod pad;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod seq_common;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use pad::pad_sequences;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use seq_common::lod_levels_on;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod pooling;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use pooling::{pool_extreme, pool_select, pool_sum};
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod softmax;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use softmax::softmax_segments;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod convert;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use convert::{cast, pack_bits, rebase_offsets, unpack_bits};
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod beam;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod tensor_array;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use beam::{beam_step, fused_step, gather_tree, top_k};
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use tensor_array::{concat_outer, gather_sources, split_outer};
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod group;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod scatter_rows;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use scatter_rows::{scatter_rows_add, scatter_rows_overwrite};
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod calibration;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use calibration::read_bandwidth_probe;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod fill;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use fill::fill;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
mod text;
#[cfg(any(feature = "cuda", feature = "cuda-emulator"))]
pub use text::are_utf8_strings;
