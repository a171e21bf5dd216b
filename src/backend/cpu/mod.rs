//! CPU kernels. Parallel work runs on the library's own rayon pool ([`pool`]), split over output
//! rows or segments so that each output element is written by exactly one task: results never
//! depend on the thread count. Small inputs stay on the calling thread.

pub mod beam_search;
pub mod convert;
pub mod pad;
pub mod pool;
pub mod pooling;
pub mod rows;
pub mod scatter;
pub mod scatter_rows;
pub mod sequence;
pub mod softmax;
pub mod tensor_array;
pub mod topk;
