//! Small index inputs of the ops (ids, offsets, lengths, indices) may live on a CUDA device; their
//! values decide the output's shape and must be validated, so the ops read them on the host.

use crate::error::Result;
use crate::place::Place;
use crate::tensor::Tensor;

/// `t` itself (shared, no copy) when it is in host memory, else a host copy of it (which waits for
/// the device's queued work).
pub(crate) fn on_host(t: &Tensor) -> Result<Tensor> {
    match t.place() {
        Place::Cpu => Ok(t.clone()),
        Place::Cuda(_) => crate::backend::cuda::copy_to_host(t),
    }
}
