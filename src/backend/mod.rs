//! Compute backends: the CPU (rayon on the library's own pool) and CUDA (a stand-in until the
//! `cuda` feature exists). Kernels see slices and offsets, never handles.

pub mod cpu;
pub mod cuda;
