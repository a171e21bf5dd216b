//! Formats shared with other software: DLPack, the Arrow C data interface and Paddle's tensor
//! file format.

pub mod arrow;
pub mod dlpack;
mod host_reads;
pub mod paddle_format;
mod utf8;
