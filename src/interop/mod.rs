//! Formats shared with other software: Paddle's tensor file format.

pub mod paddle_format;
