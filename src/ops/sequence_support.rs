//! Helpers shared by the sequence operators (expand, scatter, pad, pool): the CPU-only check, the
//! one-level output LoD, and "new tensor = these row ranges of x".

use crate::backend::cpu::rows::gather_row_ranges;
use crate::dim::Dim;
use crate::error::{err, Result};
use crate::place::Place;
use crate::tensor::Tensor;
use std::ops::Range;

// These ops have CPU kernels only: a tensor on another place is an `Unsupported` error naming the
// op, never a silent copy.

/// `Ok` for host memory; for a CUDA place the backend's own error (a build without CUDA), else
/// `Unsupported` naming `op`.
pub(crate) fn require_cpu(place: Place, op: &str) -> Result<()> {
    match place {
        Place::Cpu => Ok(()),
        Place::Cuda(n) => {
            crate::backend::cuda::ensure_device(n)?;
            Err(err!(Unsupported, "{op}: the inputs are on {place}; this op has a CPU kernel only"))
        }
    }
}

/// The output LoD of an op whose result is one level of `lengths`. Zero sequences give no LoD:
/// `[0]` is not a valid top level, so such a result is a plain (0-row) tensor.
pub(crate) fn one_level_from_lengths(lengths: impl IntoIterator<Item = usize>) -> Result<crate::lod::Lod> {
    let mut offsets = vec![0usize];
    for n in lengths {
        let last = *offsets.last().expect("starts with 0");
        offsets.push(last.checked_add(n).ok_or_else(|| err!(OutOfMemory, "output LoD: the row count overflows"))?);
    }
    if offsets.len() < 2 {
        return Ok(crate::lod::Lod::empty());
    }
    crate::lod::Lod::from_offsets(vec![offsets])
}

/// A new host tensor of `dims` (same dtype as `src`) whose rows are `ranges[0]`, `ranges[1]`, ...
/// of `src` viewed as rows of `row_bytes` bytes. The ranges must fit in `src` (callers validate).
pub(crate) fn gather_into_new(src: &Tensor, row_bytes: usize, ranges: &[Range<usize>], dims: Dim) -> Result<Tensor> {
    let mut out = Tensor::zeros(src.dtype(), dims)?;
    gather_row_ranges(src.bytes()?, row_bytes, ranges, out.bytes_mut()?)?;
    Ok(out)
}
