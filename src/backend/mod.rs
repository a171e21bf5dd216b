//! Compute backends. The CPU needs no setup; CUDA is a stand-in until the `cuda` feature exists.

pub mod cuda;
