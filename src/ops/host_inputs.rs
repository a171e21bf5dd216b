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

/// `on_host` of several inputs: shared where they are all in host memory, else host copies, with
/// one wait for the device where they are on one (they come to the host in one copy).
pub(crate) fn all_on_host<const N: usize>(ts: [&Tensor; N]) -> Result<[Tensor; N]> {
    if ts.iter().all(|t| t.place() == Place::Cpu) {
        return Ok(ts.map(|t| t.clone()));
    }
    let copies = crate::backend::cuda::copy_all_to_host(&ts)?;
    copies
        .try_into()
        .map_err(|_| crate::error::err!(Internal, "on the host: {N} inputs copied, another count came back"))
}
