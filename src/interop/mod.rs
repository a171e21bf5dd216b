//! Formats shared with other software: DLPack and Paddle's tensor file format.

pub mod dlpack;
pub mod paddle_format;
