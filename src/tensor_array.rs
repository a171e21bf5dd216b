//! TensorArray (a growable list of LoDTensors) and the LoD rank table: the two containers of the
//! dynamic-RNN machinery (unpack a batch into time steps, pack it back; see `ops::tensor_array`).

use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::tensor::Tensor;

/// A growable list of LoDTensors (Paddle's `LoDTensorArray`). Elements are independent tensors;
/// `Clone` shares their memory.
#[derive(Clone, Debug, Default)]
pub struct TensorArray {
    items: Vec<LoDTensor>,
}

impl TensorArray {
    pub fn new() -> TensorArray {
        TensorArray::default()
    }

    pub fn from_vec(items: Vec<LoDTensor>) -> TensorArray {
        TensorArray { items }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn as_slice(&self) -> &[LoDTensor] {
        &self.items
    }

    pub fn into_vec(self) -> Vec<LoDTensor> {
        self.items
    }

    /// Element `index`; reading past the end is `OutOfRange` (Our rule: Paddle silently does
    /// nothing).
    pub fn get(&self, index: usize) -> Result<&LoDTensor> {
        self.items.get(index).ok_or_else(|| {
            err!(OutOfRange, "index: {index} is out of range; the array has {} element(s)", self.items.len())
        })
    }

    /// Element `index` as a tensor sharing its memory.
    pub fn read(&self, index: usize) -> Result<LoDTensor> {
        Ok(self.get(index)?.clone())
    }

    /// Element `index` as a tensor with its own copy of the elements, on the element's place (a
    /// device element is copied on its device).
    pub fn read_copy(&self, index: usize) -> Result<LoDTensor> {
        self.get(index)?.copy()
    }

    /// Stores `t` at `index`. Writing past the end grows the array; the slots in between become
    /// 0-row tensors of `t`'s dtype, row shape (dims `[0]` when `t` is 0-d) and place, without LoD.
    pub fn write(&mut self, index: usize, t: LoDTensor) -> Result<()> {
        if index < self.items.len() {
            self.items[index] = t;
            return Ok(());
        }
        let new_len = index
            .checked_add(1)
            .ok_or_else(|| err!(OutOfMemory, "index: {index} is too large to grow the array to"))?;
        self.items
            .try_reserve_exact(new_len - self.items.len())
            .map_err(|_| err!(OutOfMemory, "index: growing the array to {new_len} elements failed"))?;
        if index > self.items.len() {
            let dims = t.dims().with_rows(0).or_else(|_| crate::dim::Dim::new(&[0]))?;
            let mut gap = Tensor::zeros(t.tensor().dtype(), dims)?;
            if let crate::place::Place::Cuda(n) = t.tensor().place() {
                // 0 bytes: no transfer, just a tensor on t's device.
                gap = crate::backend::cuda::copy_to_device(&gap, n)?;
            }
            let gap = LoDTensor::dense(gap);
            self.items.resize(index, gap);
        }
        self.items.push(t);
        Ok(())
    }

    /// Appends `t`.
    pub fn push(&mut self, t: LoDTensor) {
        self.items.push(t);
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.items.clear();
    }
}

/// One sequence of a rank table: its index in the batch and its length (in entries of the level
/// below the ranked level, rows when the ranked level is the last).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RankItem {
    pub index: usize,
    pub length: usize,
}

/// The sequences of one LoD level sorted by length, longest first, equal lengths in index order
/// (Paddle's `LoDRankTable`). Only built from a LoD, so its indices are always a permutation of
/// `0..len()` and its lengths never increase.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankTable {
    items: Vec<RankItem>,
    level: usize,
    coarse_lod: Vec<Vec<usize>>,
}

impl RankTable {
    /// Ranks the sequences of `level` of `lod` (Paddle's `lod_rank_table`). `level` must be one
    /// of the LoD's levels (`InvalidArgument` otherwise, so a LoD is required).
    pub fn new(lod: &Lod, level: usize) -> Result<RankTable> {
        ensure!(
            level < lod.num_levels(),
            InvalidArgument,
            "level: {level} is out of range; x has {} LoD level(s), and a rank table ranks the sequences of one of them",
            lod.num_levels()
        );
        let offsets = &lod.levels()[level];
        let items = offsets.windows(2).enumerate().map(|(index, w)| RankItem { index, length: w[1] - w[0] });
        let mut items = lists::collect(items, "rank table: items")?;
        // Longest first, equal lengths in index order: the order of a stable sort, without the
        // buffer a stable sort takes from the allocator unchecked.
        items.sort_unstable_by_key(|i| (std::cmp::Reverse(i.length), i.index));
        Ok(RankTable { items, level, coarse_lod: lists::copy_of_levels(&lod.levels()[..level], "rank table: levels")? })
    }

    /// The rank table of `x`'s LoD at `level`.
    pub fn from_lod_tensor(x: &LoDTensor, level: usize) -> Result<RankTable> {
        RankTable::new(x.lod(), level)
    }

    pub fn items(&self) -> &[RankItem] {
        &self.items
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The ranked level.
    pub fn level(&self) -> usize {
        self.level
    }

    /// The LoD levels above the ranked level, verbatim.
    pub fn coarse_lod(&self) -> &[Vec<usize>] {
        &self.coarse_lod
    }

    /// The longest length (Paddle's `max_sequence_len`); 0 for an empty table (Our rule).
    pub fn max_sequence_len(&self) -> usize {
        self.items.first().map_or(0, |i| i.length)
    }

    /// How many sequences are longer than `step`: the ones still alive at time step `step`
    /// (a prefix of the table).
    pub fn alive_at(&self, step: usize) -> usize {
        self.items.partition_point(|i| i.length > step)
    }
}
