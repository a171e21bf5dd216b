//! Helpers shared by the operators: the shapes of index and offset inputs, the LoD levels an op
//! reads, the one-level LoD of an output, and "new tensor = these row ranges of x".

use crate::backend::cpu::rows::{gather_each, gather_row_ranges, RowGather};
use crate::dim::Dim;
use crate::error::{ensure, Result};
use crate::lod::{Lod, LodLevel};
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;
use std::ops::Range;

/// The LoD of one level of `offsets`, running sums of lengths from 0 (a valid level, not checked
/// again), or none for no sequences: `[0]` is not a valid top level, so such a result is a plain
/// (0-row) tensor.
pub(crate) fn lod_of_built_level(offsets: Vec<usize>) -> Lod {
    if offsets.len() < 2 {
        Lod::empty()
    } else {
        Lod::from_built_offsets(vec![offsets])
    }
}

/// The rows `rows` yields, in order, as runs of consecutive rows (one range a run, so one copy
/// a run instead of one a row). Two passes over `rows`: the runs are counted, then listed in a
/// list reserved for them (`what` names it).
pub(crate) fn row_runs(rows: impl Iterator<Item = usize> + Clone, what: &str) -> Result<Vec<Range<usize>>> {
    let mut next = None;
    let count = rows.clone().filter(|&r| next.replace(r + 1) != Some(r)).count();
    let mut runs: Vec<Range<usize>> = lists::with_capacity(count, what)?;
    for r in rows {
        match runs.last_mut() {
            Some(run) if run.end == r => run.end += 1,
            _ => runs.push(r..r + 1),
        }
    }
    Ok(runs)
}

/// A new tensor of `dims` on `src`'s place (same dtype as `src`) whose rows are `ranges[0]`, `ranges[1]`, ...
/// of `src` viewed as rows of `row_bytes` bytes. The ranges must fit in `src` (callers validate).
/// On a CUDA place this is the device's row-range gather (one launch).
pub(crate) fn gather_into_new(src: &Tensor, row_bytes: usize, ranges: &[Range<usize>], dims: Dim) -> Result<Tensor> {
    if let Place::Cuda(_) = src.place() {
        return crate::backend::cuda::gather_row_ranges(src, row_bytes, ranges, dims);
    }
    let mut out = Tensor::uninit(src.dtype(), dims)?;
    gather_row_ranges(src.bytes()?, row_bytes, ranges, out.bytes_mut()?)?;
    Ok(out)
}

/// `gather_into_new` of several sources on one place, `(src, row_bytes, ranges, dims)` each: the
/// new tensors in order. On the host one job for all ([`gather_each`]: its tasks in one pass over
/// the pool, streaming stores by the outputs' size together); on a CUDA place, or for one source,
/// `gather_into_new` of each.
pub(crate) fn gather_each_into_new(gathers: &[(&Tensor, usize, &[Range<usize>], Dim)]) -> Result<Vec<Tensor>> {
    if gathers.len() == 1 || gathers.iter().any(|(src, ..)| src.place() != Place::Cpu) {
        let outs = gathers.iter().map(|&(src, row_bytes, ranges, dims)| gather_into_new(src, row_bytes, ranges, dims));
        return lists::try_collect(gathers.len(), outs, "row gathers: results");
    }
    let outs = gathers.iter().map(|(src, _, _, dims)| Tensor::uninit(src.dtype(), *dims));
    let mut outs = lists::try_collect(gathers.len(), outs, "row gathers: results")?;
    let jobs =
        gathers.iter().map(|&(src, row_bytes, ranges, _)| Ok(RowGather { src: src.bytes()?, row_bytes, ranges }));
    let jobs = lists::try_collect(gathers.len(), jobs, "row gathers: sources")?;
    let mut bytes = lists::try_collect(gathers.len(), outs.iter_mut().map(|t| t.bytes_mut()), "row gathers: outputs")?;
    gather_each(&jobs, &mut bytes)?;
    Ok(outs)
}

/// Whether `t` has the shape of an index column: `[n]` or `[n, 1]`.
pub(crate) fn is_column(t: &Tensor) -> bool {
    let d = t.dims().as_slice();
    d.len() == 1 || (d.len() == 2 && d[1] == 1)
}

/// The elements of an int32 or int64 tensor `name` of shape `[n]` or `[n, 1]`, widened to i64.
/// `n` = None accepts any length.
pub(crate) fn int_column(t: &Tensor, name: &str, n: Option<usize>) -> Result<Vec<i64>> {
    check_int_column(t, name, n)?;
    t.index_values(name)
}

/// `int_column`'s checks without reading the values (which may be on a device): the shape, then
/// the dtype, with the same errors. Returns the number of values.
pub(crate) fn check_int_column(t: &Tensor, name: &str, n: Option<usize>) -> Result<usize> {
    let d = t.dims().as_slice();
    let len = d.first().copied().unwrap_or(0);
    ensure!(
        is_column(t) && n.is_none_or(|n| n == len),
        InvalidArgument,
        "{name}: dims {d:?}; expected [{0}] or [{0}, 1]",
        n.map_or("N".to_string(), |n| n.to_string())
    );
    t.check_index_dtype(name)?;
    Ok(len)
}

/// The last LoD level of `x` (its offsets: rows of each innermost sequence); `x` must have a LoD.
pub(crate) fn last_level<'a>(x: &'a LoDTensor, name: &str, op: &str) -> Result<LodLevel<'a>> {
    let lod = x.lod();
    ensure!(!lod.is_empty(), InvalidLod, "{name}: has no LoD; {op} works on sequences");
    lod.lod_level(lod.num_levels() - 1)
}

/// `x` has exactly one LoD level; returns it.
pub(crate) fn one_level<'a>(x: &'a LoDTensor, name: &str, op: &str) -> Result<LodLevel<'a>> {
    let k = x.lod().num_levels();
    ensure!(k == 1, InvalidLod, "{name}: has {k} LoD level(s); {op} needs exactly 1");
    x.lod().lod_level(0)
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
