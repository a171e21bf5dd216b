//! Argument checks shared by the operators of this branch: the place a kernel exists for, and
//! integer index/offset tensors given as `[N]` or `[N, 1]`.

use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::lod_tensor::LoDTensor;
use crate::place::Place;
use crate::tensor::Tensor;

/// Only host kernels exist for these operators so far.
pub(crate) fn cpu_only(place: Place, op: &str) -> Result<()> {
    match place {
        Place::Cpu => Ok(()),
        other => Err(err!(Unsupported, "{op}: has no kernel for {other} yet; its inputs must be on the host")),
    }
}

/// The elements of an int32 or int64 tensor `name` of shape `[n]` or `[n, 1]`, widened to i64.
/// `n` = None accepts any length.
pub(crate) fn int_column(t: &Tensor, name: &str, n: Option<usize>) -> Result<Vec<i64>> {
    let d = t.dims().as_slice();
    let len = d.first().copied().unwrap_or(0);
    ensure!(
        (d.len() == 1 || (d.len() == 2 && d[1] == 1)) && n.map_or(true, |n| n == len),
        InvalidArgument,
        "{name}: dims {d:?}; expected [{0}] or [{0}, 1]",
        n.map_or("N".to_string(), |n| n.to_string())
    );
    match t.dtype() {
        DType::I32 => Ok(t.as_slice::<i32>()?.iter().map(|&v| v as i64).collect()),
        DType::I64 => Ok(t.as_slice::<i64>()?.to_vec()),
        other => Err(err!(Unsupported, "{name}: dtype {other} is not supported here; supported: int32, int64")),
    }
}

/// The offsets of the last LoD level of `x` (rows of each innermost sequence); `x` must have a LoD.
pub(crate) fn last_level<'a>(x: &'a LoDTensor, name: &str, op: &str) -> Result<&'a [usize]> {
    let lod = x.lod();
    ensure!(!lod.is_empty(), InvalidLod, "{name}: has no LoD; {op} works on sequences");
    lod.level(lod.num_levels() - 1)
}

/// `x` has exactly one LoD level; returns its offsets.
pub(crate) fn one_level<'a>(x: &'a LoDTensor, name: &str, op: &str) -> Result<&'a [usize]> {
    let k = x.lod().num_levels();
    ensure!(k == 1, InvalidLod, "{name}: has {k} LoD level(s); {op} needs exactly 1");
    x.lod().level(0)
}

/// `x` is a column of elements: `dims[0] == numel` (`[N]`, `[N, 1]`, ...).
pub(crate) fn ensure_column(x: &Tensor, name: &str, op: &str) -> Result<()> {
    ensure!(
        x.dims().ndim() >= 1 && x.dims().rows() == Some(x.numel()),
        InvalidArgument,
        "{name}: dims {:?}; {op} needs one element per row ([N] or [N, 1])",
        x.dims()
    );
    Ok(())
}
