//! The TensorArray family (spec §5): unpack a batch of sequences into time steps by a rank table
//! (`lod_tensor_to_array`) and pack it back (`array_to_lod_tensor`), shrink the RNN memory as
//! sequences end, reorder by rank, and concatenate/stack/unstack along an axis.
//!
//! Every data-moving op computes all its row blocks in one pass over the LoD, then makes one
//! gather call, so the copy runs in parallel over blocks with no allocation per row.

use super::common_place;
use super::support::gather_into_new;
use crate::backend::cpu::rows::gather_blocks;
use crate::backend::cpu::tensor_array::{concat_outer, split_outer};
use crate::dim::Dim;
use crate::error::{ensure, err, Result};
use crate::lod::{lengths_to_offsets, Lod};
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;
use crate::tensor_array::{RankTable, TensorArray};
use std::ops::Range;

/// The units of `t` that rank-table ops count: its top-level sequences if it has a LoD, else its
/// rows. `name` is the argument reported for a 0-d tensor.
pub(crate) fn units(t: &LoDTensor, name: &str) -> Result<usize> {
    if t.lod().is_empty() {
        t.tensor().rows().map_err(|_| err!(InvalidArgument, "{name}: a 0-d tensor has no rows"))
    } else {
        t.lod().num_sequences(0)
    }
}

/// Appends to `out` (one offset level per level of `levels`) the lengths of unit `unit` — a
/// sequence of `levels[0]`, or a row when `levels` is empty — and all its nested sequences, and
/// returns the unit's rows: Paddle's `AppendLoD(out, GetSubLoDAndAbsoluteOffset(unit, unit+1))`
/// without building the intermediate length lists. `unit` must exist. Each output level grows
/// by the unit's run of it, reserved first (`what` names the levels when it cannot be).
fn append_unit(levels: &[Vec<usize>], unit: usize, out: &mut [Vec<usize>], what: &str) -> Result<Range<usize>> {
    let (mut start, mut end) = (unit, unit + 1);
    for (offsets, out) in levels.iter().zip(out.iter_mut()) {
        lists::reserve(out, end - start, what)?;
        let mut last = *out.last().expect("every output level starts with 0");
        for w in offsets[start..=end].windows(2) {
            last += w[1] - w[0];
            out.push(last);
        }
        (start, end) = (offsets[start], offsets[end]);
    }
    Ok(start..end)
}

fn lod_of(levels: Vec<Vec<usize>>) -> Result<Lod> {
    if levels.is_empty() {
        Ok(Lod::empty())
    } else {
        Lod::from_offsets(levels)
    }
}

/// `table` describes the sequences of `x` at the table's level: as many items, the same lengths.
fn check_table_fits(x: &LoDTensor, table: &RankTable) -> Result<()> {
    let r = table.level();
    ensure!(
        r < x.lod().num_levels(),
        InvalidArgument,
        "x: has {} LoD level(s), but the rank table ranks level {r}; x needs at least {} level(s)",
        x.lod().num_levels(),
        r + 1
    );
    let offsets = &x.lod().levels()[r];
    ensure!(
        table.len() == offsets.len() - 1,
        InvalidArgument,
        "rank_table: has {} item(s), but level {r} of x has {} sequence(s); the table must rank x's sequences",
        table.len(),
        offsets.len() - 1
    );
    for (pos, item) in table.items().iter().enumerate() {
        let actual = offsets[item.index + 1] - offsets[item.index];
        ensure!(
            item.length == actual,
            InvalidArgument,
            "rank_table: item {pos} says sequence {} has length {}, but in x it has length {actual}; \
             the table must come from a tensor with the same sequence lengths",
            item.index,
            item.length
        );
    }
    Ok(())
}

/// Unpacks `x` into time steps (Paddle's `lod_tensor_to_array`). With `r` = the table's level,
/// element `t` holds, for every sequence of level `r` longer than `t` in rank order, its `t`-th
/// entry of level `r + 1` (its `t`-th row when `r` is the last level) with the nested LoD levels
/// `r + 1 ..`. The table must rank `x`'s own sequence lengths (checked). An empty table gives an
/// empty array (Our rule). The elements are row slices of one new allocation, written once.
pub fn lod_tensor_to_array(x: &LoDTensor, table: &RankTable) -> Result<TensorArray> {
    check_table_fits(x, table)?;
    // One row gather: runs wherever x is.
    x.tensor().place().ensure_usable()?;
    let r = table.level();
    let top = &x.lod().levels()[r];
    let below = &x.lod().levels()[r + 1..];
    let steps = table.max_sequence_len();
    // Rows on a device: its kernel finds each row from `firsts` and `step_rows`, no ranges needed.
    let device_rows = below.is_empty() && matches!(x.tensor().place(), Place::Cuda(_));
    // One range per unit of every step: as many as the table's lengths add up to (at most x's
    // rows or entries of level r + 1).
    let units = if device_rows { 0 } else { table.items().iter().map(|item| item.length).sum() };
    let mut ranges = lists::with_capacity(units, "unpack: row ranges")?;
    // Element t is rows step_rows[t]..step_rows[t + 1] of the gathered tensor.
    let mut step_rows = lists::with_capacity(steps + 1, "unpack: step rows")?;
    step_rows.push(0usize);
    let mut step_lods = lists::with_capacity(steps, "unpack: step LoDs")?;
    let mut total = 0;
    // The first unit of each sequence, in rank order.
    let firsts = lists::collect(table.items().iter().map(|item| top[item.index]), "unpack: first units")?;
    for t in 0..steps {
        let alive = &firsts[..table.alive_at(t)];
        if below.is_empty() {
            // Units are rows: the common case, and the hot loop of a gather of short rows.
            if !device_rows {
                ranges.extend(alive.iter().map(|&first| first + t..first + t + 1));
            }
            total += alive.len();
            step_lods.push(Vec::new());
        } else {
            let mut levels = vec![vec![0usize]; below.len()];
            for &first in alive {
                let rows = append_unit(below, first + t, &mut levels, "unpack: step LoD")?;
                total += rows.len(); // rows of x, so no overflow
                ranges.push(rows);
            }
            step_lods.push(levels);
        }
        step_rows.push(total);
    }
    let (row_bytes, dims) = (x.tensor().row_bytes(), x.dims().with_rows(total)?);
    let all = if device_rows {
        crate::backend::cuda::unpack_rows(x.tensor(), row_bytes, &firsts, &step_rows, dims)?
    } else {
        gather_into_new(x.tensor(), row_bytes, &ranges, dims)?
    };
    let mut items = lists::with_capacity(steps, "unpack: elements")?;
    for (t, levels) in step_lods.into_iter().enumerate() {
        items.push(LoDTensor::new(all.slice_rows(step_rows[t]..step_rows[t + 1])?, lod_of(levels)?)?);
    }
    Ok(TensorArray::from_vec(items))
}

/// Packs time steps back into one tensor (Paddle's `array_to_lod_tensor`), the inverse of
/// [`lod_tensor_to_array`] with the same table: sequences in their original order, each the
/// concatenation of its unit in elements `0 .. length`; the LoD is the table's coarse levels, the
/// ranked level, and the elements' own levels below.
///
/// Rules: the array is non-empty; every element has element 0's dtype, place, row shape
/// (`dims[1..]`) and number of LoD levels; no item is longer than the array; element `t` (for `t`
/// below the longest length) holds exactly one unit (top-level sequence, or row without LoD) per
/// sequence alive at step `t` (Our rule: Paddle reads past or ignores mismatches). Elements from
/// the longest length on are not read. 1-D elements give a 1-D result (Our rule). On a CUDA device
/// the row blocks of all elements move in one launch over an uploaded table of their addresses.
pub fn array_to_lod_tensor(array: &TensorArray, table: &RankTable) -> Result<LoDTensor> {
    let elements = array.as_slice();
    let first = elements.first().ok_or_else(|| {
        err!(InvalidArgument, "array: is empty; there is nothing to pack (an empty array has no dtype or shape)")
    })?;
    first.tensor().rows().map_err(|_| err!(InvalidArgument, "array[0]: a 0-d tensor has no rows"))?;
    let row_shape = &first.dims().as_slice()[1..];
    let deeper = first.lod().num_levels();
    let mut tensors = lists::with_capacity(elements.len(), "pack: elements")?;
    for (i, e) in elements.iter().enumerate() {
        let t = e.tensor();
        ensure!(
            t.dims().ndim() >= 1
                && t.dtype() == first.tensor().dtype()
                && &t.dims().as_slice()[1..] == row_shape
                && t.place() == first.tensor().place(),
            InvalidArgument,
            "array[{i}]: {} {:?} on {} does not match array[0]: {} {:?} on {}; every element needs the same \
             dtype, row shape (dims[1..]) and place",
            t.dtype(),
            t.dims(),
            t.place(),
            first.tensor().dtype(),
            first.dims(),
            first.tensor().place()
        );
        ensure!(
            e.lod().num_levels() == deeper,
            InvalidLod,
            "array[{i}]: has {} LoD level(s), array[0] has {deeper}; every element needs the same number",
            e.lod().num_levels()
        );
        tensors.push(("array", t));
    }
    let place = common_place(&tensors)?;
    place.ensure_usable()?;
    let steps = table.max_sequence_len();
    ensure!(
        steps <= elements.len(),
        InvalidArgument,
        "rank_table: item 0 (sequence {}) has length {steps}, but the array has only {} element(s)",
        table.items()[0].index,
        elements.len()
    );
    for (t, e) in elements.iter().enumerate().take(steps) {
        let (have, alive) = (units(e, "array")?, table.alive_at(t));
        ensure!(
            have == alive,
            InvalidArgument,
            "array[{t}]: holds {have} {}, but {alive} sequence(s) of the rank table are alive at step {t}; \
             element t needs one unit per sequence longer than t",
            if e.lod().is_empty() { "row(s)" } else { "top-level sequence(s)" }
        );
    }
    // Position of each sequence in the table, by original index.
    let mut position = lists::filled(table.len(), 0usize, "pack: positions")?;
    for (pos, item) in table.items().iter().enumerate() {
        position[item.index] = pos;
    }
    let mut rank_level = lists::with_capacity(table.len() + 1, "pack: LoD level")?;
    rank_level.push(0usize);
    let mut levels = vec![vec![0usize]; deeper];
    // One block per (sequence, step): as many as the table's lengths add up to.
    // Rows on a device: its kernel finds each row from `rank_level` and `position`, no blocks needed.
    let device_rows = deeper == 0 && matches!(place, Place::Cuda(_));
    let blocks = if device_rows { 0 } else { table.items().iter().map(|item| item.length).sum() };
    let mut blocks = lists::with_capacity(blocks, "pack: blocks")?;
    // The rows of all blocks, counted as they are made.
    let mut total = 0usize;
    for &pos in &position {
        let length = table.items()[pos].length;
        rank_level.push(rank_level[rank_level.len() - 1] + length);
        if deeper == 0 {
            // Row `pos` of each step: the common case of plain rows, without the LoD walk.
            if !device_rows {
                blocks.extend((0..length).map(|x| (x, pos..pos + 1)));
            }
            total += length;
        } else {
            for (x, e) in elements.iter().enumerate().take(length) {
                let rows = append_unit(e.lod().levels(), pos, &mut levels, "pack: output LoD")?;
                total += rows.len();
                blocks.push((x, rows));
            }
        }
    }
    let (dtype, dims, row_bytes) = (first.tensor().dtype(), first.dims().with_rows(total)?, first.tensor().row_bytes());
    let out = if let Place::Cuda(_) = place {
        // One launch over a table of the elements' device addresses.
        let srcs = lists::collect(elements.iter().map(|e| e.tensor()), "pack: sources")?;
        if device_rows {
            crate::backend::cuda::pack_rows(&srcs, row_bytes, &rank_level, &position, dtype, dims)?
        } else {
            crate::backend::cuda::gather_sources(&srcs, row_bytes, &blocks, dtype, dims)?
        }
    } else {
        let srcs = lists::try_collect(elements.len(), elements.iter().map(|e| e.tensor().bytes()), "pack: sources")?;
        let mut out = Tensor::uninit(dtype, dims)?;
        gather_blocks(&srcs, row_bytes, &blocks, out.bytes_mut()?)?;
        out
    };
    let mut lod = table.coarse_lod().to_vec();
    lod.push(rank_level);
    lod.extend(levels);
    LoDTensor::new(out, Lod::from_offsets(lod)?)
}

/// The RNN memory for time step `step` (Paddle's `shrink_rnn_memory`): the first `n` units of
/// `x`, `n` = the number of table sequences longer than `step` (x is in rank order). With a LoD the
/// units are top-level sequences (all nested levels kept, re-based), and `x` must have at least
/// `n` of them (Our rule: InvalidArgument, where Paddle falls back to rows); without one they are
/// rows. `n == 0` gives a 0-row tensor without LoD (Our rule). Shares `x`'s memory (no copy; any
/// place).
pub fn shrink_rnn_memory(x: &LoDTensor, table: &RankTable, step: usize) -> Result<LoDTensor> {
    let n = table.alive_at(step);
    let have = units(x, "x")?;
    ensure!(
        have >= n,
        InvalidArgument,
        "x: has {have} {}, but {n} sequence(s) of the rank table are alive at step {step}; \
         the memory needs one unit per live sequence",
        if x.lod().is_empty() { "row(s)" } else { "top-level sequence(s)" }
    );
    if x.lod().is_empty() || n == 0 {
        return Ok(LoDTensor::dense(x.tensor().slice_rows(0..if x.lod().is_empty() { n } else { 0 })?));
    }
    let (lengths, rows) = x.lod().sub_lod_and_abs_offset(0, n, 0)?;
    LoDTensor::new(x.tensor().slice_rows(rows)?, Lod::from_offsets(lengths_to_offsets(&lengths)?)?)
}

/// Puts the units of `x` (top-level sequences with all their levels, or rows without a LoD) in
/// the table's order (Paddle's `reorder_lod_tensor_by_rank`): unit `items[k].index` becomes unit
/// `k`. Only the indices matter. They must be a permutation of `x`'s units (Our rule: Paddle does
/// not check counts or duplicates). The result has new memory and `x`'s number of LoD levels.
pub fn reorder_lod_tensor_by_rank(x: &LoDTensor, table: &RankTable) -> Result<LoDTensor> {
    let have = units(x, "x")?;
    ensure!(
        table.len() == have,
        InvalidArgument,
        "rank_table: has {} item(s), but x has {have} {}; the table's indices must be a permutation of x's units",
        table.len(),
        if x.lod().is_empty() { "row(s)" } else { "top-level sequence(s)" }
    );
    let mut seen = lists::filled(have, false, "rank_table: units seen")?;
    for (pos, item) in table.items().iter().enumerate() {
        ensure!(
            item.index < have,
            OutOfRange,
            "rank_table: item {pos} has index {}, out of range for x's {have} unit(s)",
            item.index
        );
        ensure!(
            !std::mem::replace(&mut seen[item.index], true),
            InvalidArgument,
            "rank_table: index {} appears twice (at item {pos}); the indices must be a permutation",
            item.index
        );
    }
    x.tensor().place().ensure_usable()?;
    // Without a LoD each unit is a row: one-row ranges, which a device gathers by a row index
    // (uploaded, the ranges checked above, so no count is read back and nothing waits).
    let levels_in = x.lod().levels();
    // The same units in another order: each output level is as long as the input's.
    let mut levels = lists::offset_levels(levels_in.iter().map(Vec::len), "rank_table_reorder: output LoD")?;
    let what = "rank_table_reorder: output LoD";
    let ranges = table.items().iter().map(|item| append_unit(levels_in, item.index, &mut levels, what));
    let ranges = lists::try_collect(table.len(), ranges, "rank_table_reorder: row ranges")?;
    let out = gather_into_new(x.tensor(), x.tensor().row_bytes(), &ranges, *x.dims())?;
    LoDTensor::new(out, lod_of(levels)?)
}

/// `axis` in `[-n, n)` as an index, or an error naming the range.
fn normalize_axis(axis: i64, n: usize, what: &str) -> Result<usize> {
    let n_i = n as i64;
    ensure!((-n_i..n_i).contains(&axis), InvalidArgument, "axis: {axis} is out of range [{}, {n_i}) for {what}", -n_i);
    Ok(if axis < 0 { (axis + n_i) as usize } else { axis as usize })
}

/// Concatenates (`use_stack` false) or stacks (`use_stack` true) the elements along `axis`
/// (Paddle's `tensor_array_to_tensor`), and returns the result (no LoD) with each element's size
/// along `axis` (`OutIndex`). A negative axis counts from the end (Our rule: Paddle does not
/// normalise it for `OutIndex`): concat takes `axis` in `[-ndim, ndim)`, stack in
/// `[-(ndim+1), ndim]`. Concat needs equal dims except along `axis`; stack needs equal dims; both
/// need one dtype and place. When stacking at `axis == ndim` the sizes are 1. On a CUDA device all
/// elements move in one launch over an uploaded table of their addresses.
pub fn tensor_array_to_tensor(array: &TensorArray, axis: i64, use_stack: bool) -> Result<(LoDTensor, Vec<usize>)> {
    let elements = array.as_slice();
    let first = elements
        .first()
        .ok_or_else(|| err!(InvalidArgument, "array: is empty; there is nothing to concatenate or stack"))?;
    let dims0 = first.dims().as_slice();
    let ndim = dims0.len();
    let axis = if use_stack {
        normalize_axis(axis, ndim + 1, &format!("stacking {ndim}-d tensors"))?
    } else {
        ensure!(ndim >= 1, InvalidArgument, "array[0]: is 0-d; 0-d tensors cannot be concatenated (stack them)");
        normalize_axis(axis, ndim, &format!("concatenating {ndim}-d tensors"))?
    };
    let mut inputs = lists::with_capacity(elements.len(), "array: elements")?;
    let mut sizes = lists::with_capacity(elements.len(), "array: sizes")?;
    for (i, e) in elements.iter().enumerate() {
        let d = e.dims().as_slice();
        let matches = d.len() == ndim && (0..ndim).all(|k| (!use_stack && k == axis) || d[k] == dims0[k]);
        ensure!(
            matches && e.tensor().dtype() == first.tensor().dtype(),
            InvalidArgument,
            "array[{i}]: {} {d:?} does not match array[0]: {} {dims0:?}; {}",
            e.tensor().dtype(),
            first.tensor().dtype(),
            if use_stack {
                "stacking needs equal dims and dtype"
            } else {
                "concat needs equal dims except along axis, and equal dtype"
            }
        );
        sizes.push(if axis < ndim { d[axis] } else { 1 });
        inputs.push(("array", e.tensor()));
    }
    let place = common_place(&inputs)?;
    place.ensure_usable()?;
    let mut out_dims = dims0.to_vec();
    if use_stack {
        out_dims.insert(axis, elements.len());
    } else {
        out_dims[axis] = sizes
            .iter()
            .try_fold(0usize, |a, &s| a.checked_add(s))
            .ok_or_else(|| err!(OutOfMemory, "array: the concatenated size along axis {axis} overflows"))?;
    }
    let esize = first.tensor().dtype().size();
    let outer: usize = dims0[..axis].iter().product();
    let inner = elements.iter().map(|e| e.dims().as_slice()[axis..].iter().product::<usize>() * esize);
    let inner = lists::collect(inner, "array: element sizes")?;
    let (dtype, dims) = (first.tensor().dtype(), Dim::new(&out_dims)?);
    if let Place::Cuda(_) = place {
        // One launch over a table of the elements' device addresses.
        let srcs = lists::collect(elements.iter().map(|e| e.tensor()), "pack: sources")?;
        let out = crate::backend::cuda::concat_outer(&srcs, &inner, outer, dtype, dims)?;
        return Ok((LoDTensor::dense(out), sizes));
    }
    let srcs = lists::try_collect(elements.len(), elements.iter().map(|e| e.tensor().bytes()), "array: elements")?;
    let mut out = Tensor::uninit(dtype, dims)?;
    concat_outer(&srcs, &inner, outer, out.bytes_mut()?)?;
    Ok((LoDTensor::dense(out), sizes))
}

/// Splits `x` along `axis` (in `[-ndim, ndim)`) into `dims[axis]` tensors of `x`'s dims without
/// that axis (the inverse of stacking); `x`'s LoD is dropped. Each element has its own memory (on
/// a CUDA device: all filled by one launch over a table of their addresses).
pub fn unstack(x: &LoDTensor, axis: i64) -> Result<TensorArray> {
    let dims = x.dims().as_slice();
    ensure!(!dims.is_empty(), InvalidArgument, "x: is 0-d; there is no axis to unstack along");
    let axis = normalize_axis(axis, dims.len(), &format!("unstacking a {}-d tensor", dims.len()))?;
    let place = common_place(&[("x", x.tensor())])?;
    place.ensure_usable()?;
    let n = dims[axis];
    let outer: usize = dims[..axis].iter().product();
    let inner_bytes = dims[axis + 1..].iter().product::<usize>() * x.tensor().dtype().size();
    let mut part_dims = dims.to_vec();
    part_dims.remove(axis);
    let part_dims = Dim::new(&part_dims)?;
    if let Place::Cuda(_) = place {
        // All parts in one launch over a table of their device addresses.
        let parts = crate::backend::cuda::split_outer(x.tensor(), inner_bytes, n, outer, part_dims)?;
        return Ok(TensorArray::from_vec(parts));
    }
    // Part i is row i of each of the `outer` blocks of n rows of `inner_bytes`.
    let parts = (0..n).map(|_| Tensor::uninit(x.tensor().dtype(), part_dims).map(LoDTensor::dense));
    let mut parts = lists::try_collect(n, parts, "unstack: elements")?;
    let mut outs = lists::try_collect(n, parts.iter_mut().map(|t| t.tensor_mut().bytes_mut()), "unstack: elements")?;
    split_outer(x.tensor().bytes()?, inner_bytes, outer, &mut outs)?;
    Ok(TensorArray::from_vec(parts))
}
