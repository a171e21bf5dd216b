//! LoDTensor: a tensor and a LoD that is always valid against the tensor's row count.

use crate::dim::Dim;
use crate::error::{ensure, err, Result};
use crate::lod::{check_lod, lengths_to_offsets, Lod};
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;
use std::ops::Range;

/// A tensor of variable-length sequences. `Clone` shares the memory; [`LoDTensor::copy`]
/// duplicates it.
#[derive(Clone, Debug)]
pub struct LoDTensor {
    tensor: Tensor,
    lod: Lod,
}

/// Checks `lod` against a tensor of shape `dims`. Unlike Paddle, a 0-row tensor is height-checked
/// too, so no LoD can ever claim rows that do not exist.
pub fn check_lod_for_dims(dims: &Dim, lod: &Lod) -> Result<()> {
    if lod.is_empty() {
        return Ok(());
    }
    let rows = dims.rows().ok_or_else(|| err!(InvalidLod, "lod: a 0-d tensor cannot carry a LoD"))?;
    lod.check_rows(rows).map_err(|e| e.context("lod: "))
}

fn check_against(tensor: &Tensor, lod: &Lod) -> Result<()> {
    check_lod_for_dims(tensor.dims(), lod)
}

impl LoDTensor {
    /// Pairs a tensor with a LoD; the LoD's last level must end at the tensor's row count.
    pub fn new(tensor: Tensor, lod: Lod) -> Result<LoDTensor> {
        check_against(&tensor, &lod)?;
        Ok(LoDTensor { tensor, lod })
    }

    /// A tensor without LoD.
    pub fn dense(tensor: Tensor) -> LoDTensor {
        LoDTensor { tensor, lod: Lod::empty() }
    }

    /// Convenience for tests and examples: a host LoDTensor from elements, dims and offsets.
    pub fn from_slice<T: crate::dtype::Element>(
        data: &[T],
        dims: &[usize],
        offsets: Vec<Vec<usize>>,
    ) -> Result<LoDTensor> {
        LoDTensor::new(Tensor::from_slice(data, dims)?, Lod::from_offsets(offsets)?)
    }

    /// The shape of the underlying tensor.
    pub fn dims(&self) -> &Dim {
        self.tensor.dims()
    }

    pub fn tensor(&self) -> &Tensor {
        &self.tensor
    }

    /// The tensor, for writing its elements (its shape cannot change through `Tensor`'s API).
    pub fn tensor_mut(&mut self) -> &mut Tensor {
        &mut self.tensor
    }

    pub fn lod(&self) -> &Lod {
        &self.lod
    }

    pub fn into_parts(self) -> (Tensor, Lod) {
        (self.tensor, self.lod)
    }

    /// Replaces the LoD; on error the old one stays.
    pub fn set_lod(&mut self, lod: Lod) -> Result<()> {
        check_against(&self.tensor, &lod)?;
        self.lod = lod;
        Ok(())
    }

    /// Drops every LoD level.
    pub fn clear_lod(&mut self) {
        self.lod = Lod::empty();
    }

    /// A new LoDTensor with its own copy of the elements and the same LoD.
    pub fn copy(&self) -> Result<LoDTensor> {
        Ok(LoDTensor { tensor: self.tensor.copy()?, lod: self.lod.clone() })
    }

    /// Rows `[start, end)` of sequence `index` at `level`.
    pub fn sequence_rows(&self, level: usize, index: usize) -> Result<Range<usize>> {
        self.lod.sequence_rows(level, index)
    }

    /// Sequences `[begin, end)` of `level` as a LoDTensor sharing this one's memory. Its LoD holds
    /// levels `level..` re-based to 0 (see [`Lod::slice_in_level`]); the range must be non-empty.
    pub fn slice(&self, level: usize, begin: usize, end: usize) -> Result<LoDTensor> {
        let lod = self.lod.slice_in_level(level, begin, end)?;
        let rows = self.lod.sequence_rows(level, begin)?.start..self.lod.sequence_rows(level, end - 1)?.end;
        LoDTensor::new(self.tensor.slice_rows(rows)?, lod)
    }

    /// Splits the batch into at most `num_pieces` pieces of whole top-level sequences (rows, without a
    /// LoD): `step = ceil(batch / n)` sequences per piece, the last piece taking the rest. Pieces
    /// share this tensor's memory. An empty batch gives `num_pieces` shares of this tensor.
    pub fn split(&self, num_pieces: usize) -> Result<Vec<LoDTensor>> {
        let n = num_pieces;
        ensure!(n > 0, InvalidArgument, "num_pieces: must be at least 1");
        let batch = match self.lod.num_sequences(0) {
            Ok(b) => b,
            Err(_) => self.tensor.rows().map_err(|_| err!(InvalidArgument, "t: a 0-d tensor has no rows to split"))?,
        };
        if batch == 0 {
            return lists::filled(n, self.clone(), "num_pieces: shares of an empty batch");
        }
        let step = batch.div_ceil(n);
        let count = batch.div_ceil(step);
        let pieces = (0..count).map(|i| {
            let (begin, end) = (i * step, ((i + 1) * step).min(batch));
            if self.lod.is_empty() {
                return Ok(LoDTensor::dense(self.tensor.slice_rows(begin..end)?));
            }
            let (lengths, rows) = self.lod.sub_lod_and_abs_offset(begin, end, 0)?;
            LoDTensor::new(self.tensor.slice_rows(rows)?, Lod::from_offsets(lengths_to_offsets(&lengths)?)?)
        });
        lists::try_collect(count, pieces, "split: pieces")
    }

    /// Concatenates along rows, appending each LoD level shifted by the level's running end.
    /// Every part needs the same number of LoD levels; parts with rows need the first such part's
    /// dtype, row width (elements per row, as Paddle checks: `[2, 6]` and `[3, 2, 3]` merge) and
    /// place (0-row parts are not checked). The result has that part's row shape and owns new
    /// memory on its place (on a CUDA device, one gather there). When no part has rows the first
    /// part gives the dtype, row shape and place (Paddle's result is then float32).
    pub fn merge(parts: &[&LoDTensor]) -> Result<LoDTensor> {
        let first = parts.first().ok_or_else(|| err!(InvalidArgument, "tensors: nothing to merge"))?;
        for (i, p) in parts.iter().enumerate() {
            p.tensor.rows().map_err(|_| err!(InvalidArgument, "tensors[{i}]: a 0-d tensor has no rows to merge"))?;
            ensure!(
                p.lod.num_levels() == first.lod.num_levels(),
                InvalidLod,
                "tensors[{i}]: has {} LoD level(s), tensors[0] has {}; all must have the same number",
                p.lod.num_levels(),
                first.lod.num_levels()
            );
        }
        let (proto_index, proto) =
            parts.iter().enumerate().find(|(_, p)| p.tensor.rows().unwrap_or(0) > 0).unwrap_or((0, first));
        let (dtype, place) = (proto.tensor.dtype(), proto.tensor.place());
        let width = proto.tensor.dims().row_width();
        let mut rows = 0usize;
        for (i, p) in parts.iter().enumerate() {
            let t = &p.tensor;
            let r = t.rows()?;
            if r > 0 {
                ensure!(
                    t.dtype() == dtype && t.dims().row_width() == width && t.place() == place,
                    InvalidArgument,
                    "tensors[{i}]: {} {:?} on {} does not match tensors[{proto_index}]: {dtype} {:?} on {place}; \
                     parts with rows must share dtype, row width (elements per row) and place",
                    t.dtype(),
                    t.dims(),
                    t.place(),
                    proto.tensor.dims()
                );
            }
            rows = rows.checked_add(r).ok_or_else(|| err!(OutOfMemory, "tensors: the total row count overflows"))?;
        }
        let dims = proto.tensor.dims().with_rows(rows)?;
        // One gather of every part's rows, in order (a 0-row part, wherever it is, adds nothing).
        let rows_of = |t: &Tensor| t.rows().unwrap_or(0);
        let mut with_rows: Vec<&Tensor> = lists::with_capacity(parts.len(), "tensors: parts with rows")?;
        with_rows.extend(parts.iter().map(|p| &p.tensor).filter(|t| rows_of(t) > 0));
        let blocks = lists::collect(with_rows.iter().enumerate().map(|(i, t)| (i, 0..rows_of(t))), "tensors: blocks")?;
        let tensor = if let Place::Cuda(_) = place {
            // With no rows at all the prototype alone names the device.
            let srcs = if with_rows.is_empty() { vec![&proto.tensor] } else { with_rows };
            crate::backend::cuda::gather_sources(&srcs, proto.tensor.row_bytes(), &blocks, dtype, dims)?
        } else {
            let srcs = lists::try_collect(with_rows.len(), with_rows.iter().map(|t| t.bytes()), "tensors: parts")?;
            let mut tensor = Tensor::uninit(dtype, dims)?;
            crate::backend::cpu::rows::gather_blocks(&srcs, proto.tensor.row_bytes(), &blocks, tensor.bytes_mut()?)?;
            tensor
        };
        // Each level as long as the parts' together.
        let lengths =
            (0..first.lod.num_levels()).map(|k| parts.iter().map(|p| p.lod.levels()[k].len() - 1).sum::<usize>() + 1);
        let mut levels = lists::offset_levels(lengths, "merge: output LoD")?;
        for p in parts {
            for (out, level) in levels.iter_mut().zip(p.lod.levels()) {
                let base = *out.last().expect("starts with 0");
                out.extend(level[1..].iter().map(|&o| base + o));
            }
        }
        let lod = if levels.is_empty() { Lod::empty() } else { Lod::from_offsets(levels)? };
        LoDTensor::new(tensor, lod)
    }

    /// Paddle's `lod_reset`: the same elements (shared, not copied) under a new LoD.
    ///
    /// If `y` has a LoD, the result takes it whole (its last level must end at this tensor's row
    /// count). Otherwise the target level is `y`'s int32/int64 elements when `y` is given, else
    /// `target_lod`: at least 2 offsets, starting at 0, non-decreasing, ending at the row count.
    /// With `append` the target is pushed below this tensor's LoD and the whole result must pass
    /// the LoD rules; without it the target is the only level. `y` must be on this tensor's place
    /// (its values, on a device, are copied to the host to be checked).
    pub fn lod_reset(&self, y: Option<&LoDTensor>, target_lod: &[i64], append: bool) -> Result<LoDTensor> {
        let rows =
            self.tensor.rows().map_err(|_| err!(InvalidArgument, "x: a 0-d tensor has no rows to carry a LoD"))?;
        if let Some(y) = y {
            crate::ops::common_place(&[("x", &self.tensor), ("y", &y.tensor)])?;
        }
        if let Some(y) = y.filter(|y| !y.lod.is_empty()) {
            let end = y.lod.rows().expect("non-empty LoD");
            ensure!(
                end == rows,
                InvalidLod,
                "y: its LoD ends at row {end}, but x has {rows} rows; the last level must end at x's row count"
            );
            return LoDTensor::new(self.tensor.clone(), y.lod.clone());
        }
        let (name, target): (&str, Vec<i64>) = match y {
            // Offsets on a device come to the host to be checked.
            Some(y) => {
                y.tensor.check_index_dtype("y")?;
                ("y", crate::ops::host_inputs::on_host(&y.tensor)?.index_values("y")?)
            }
            None => ("target_lod", lists::copy_of(target_lod, "target_lod")?),
        };
        // The target is a one-level LoD of x: the same rules, reported under the argument's name.
        let level = target.iter().enumerate().map(|(i, &o)| {
            usize::try_from(o).map_err(|_| {
                err!(InvalidLod, "{name}: offset[{i}] = {o} is negative; offsets start at 0 and must be non-decreasing")
            })
        });
        let level = lists::try_collect(target.len(), level, name)?;
        check_lod(std::slice::from_ref(&level), Some(rows)).map_err(|e| err!(InvalidLod, "{name}: {e}"))?;
        let mut levels = if append { lists::copy_of_levels(self.lod.levels(), "x: LoD")? } else { Vec::new() };
        levels.push(level);
        let lod = Lod::from_offsets(levels).map_err(|e| e.context(&format!("{name}: appended to x's LoD: ")))?;
        LoDTensor::new(self.tensor.clone(), lod)
    }
}
