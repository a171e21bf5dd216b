//! Launchers of `kernels/rows.cu`: the row kernels behind the data-movement ops (the range gather,
//! and the kernels of expand, expand_as, concat, unpad, unpack and pack of rows, and gather_rows by
//! a device index).

use super::device::{device, new_tensor, new_tensors, Device};
use super::group::scan_exclusive;
use super::kept_zero::BadCount;
use super::launch::{index_width, launch_tiles, launch_unrolled, upload, Args, CHUNK};
use super::seq_common::{
    count_u32, device_of, index_suffix, level_on, offset_words, upload_joined, upload_offsets, word_for, WORDS,
};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::lod::{Lod, LodLevel};
use crate::memory::lists;
use crate::memory::Allocation;
use crate::place::Place;
use crate::tensor::Tensor;
use std::ops::Range;
use std::sync::Arc;

/// A new device tensor of `dims` (dtype of `src`) whose rows are `ranges` of `src` viewed as rows
/// of `row_bytes` bytes; `src` is on a CUDA device and the ranges fit in it (callers validate).
/// One launch for all ranges; the ranges are uploaded once (as a row index when each is one row).
pub fn gather_row_ranges(src: &Tensor, row_bytes: usize, ranges: &[Range<usize>], dims: Dim) -> Result<Tensor> {
    let Place::Cuda(ordinal) = src.place() else {
        return Err(err!(Internal, "gather_row_ranges: the CUDA kernel got a tensor on {}", src.place()));
    };
    let d = device(ordinal)?;
    let mut out = new_tensor(&d, src.dtype(), dims)?;
    if row_bytes > 0 && !ranges.is_empty() && ranges.iter().all(|r| r.len() == 1) {
        // A row a range (a reorder of one-row sequences, say): the ranges are a row index, 8
        // bytes a row uploaded and no range to search per row. The callers checked the ranges, so
        // the kernel counts into the device's sink, which no one reads (no wait, no fill).
        ensure!(
            ranges.len() * row_bytes == out.nbytes(),
            Internal,
            "gather_row_ranges: {} rows of {row_bytes} bytes do not fill {} bytes",
            ranges.len(),
            out.nbytes()
        );
        let starts = lists::collect(ranges.iter().map(|r| r.start as i64), "gather_row_ranges: rows")?;
        let table = upload(&d, &starts)?;
        let bad = BadCount::unread(&d)?;
        let index = (table.as_ptr() as u64, "i64", ranges.len());
        launch_gather_by_index(&d, &mut out, src, row_bytes, index, src.nbytes() / row_bytes, &bad)?;
        return Ok(out);
    }
    let base = src.as_ptr() as u64;
    let table = ranges.iter().map(|r| (base + (r.start * row_bytes) as u64, r.len()));
    gather_ranges_from(&d, &mut out, row_bytes, &[base], table, "gather_row_ranges")?;
    Ok(out)
}

/// sequence_expand_as on the device: a new tensor of `dims` whose rows `[offsets[k],
/// offsets[k+1])` are each row k of `src` (rows of `row_bytes` bytes; `level`'s offsets have one
/// more entry than `src` has rows, and their last is the rows of `dims`). One launch; its table is
/// the level's device copy, not a range per output row.
pub fn repeat_rows(src: &Tensor, row_bytes: usize, level: LodLevel, dims: Dim) -> Result<Tensor> {
    rows_by_level(src, row_bytes, level, dims, "repeat_rows", "y", Args::new())
}

/// sequence_expand of an `x` with a LoD on the device: a new tensor of `dims` whose copy `c` is
/// `x`'s sequence `i` (of `x_level`, in rows) for the `i` whose sequence of `repeats` (y's level)
/// holds entry `c` (rows of `row_bytes` bytes), and the output's offsets on the device (none when
/// the output has no bytes). The device works from the two levels' copies, kept with their LoDs:
/// each sequence's rows times its copies, and their scan (the row where each sequence's first copy
/// starts), which is the row kernel's table; then each copy's offset, for the output's LoD.
/// Nothing of a size that grows with the copies is uploaded (the host makes its own offsets for
/// the output's LoD).
pub fn expand_rows(
    x: &Tensor,
    row_bytes: usize,
    x_level: LodLevel,
    repeats: LodLevel,
    dims: Dim,
) -> Result<(Tensor, Option<Arc<Allocation>>)> {
    let d = device_of(x, "sequence_expand")?;
    let mut out = new_tensor(&d, x.dtype(), dims)?;
    if out.nbytes() == 0 {
        return Ok((out, None));
    }
    let r = repeats.offsets();
    let sequences = count_u32(r.len() - 1, "y")?;
    let copies = count_u32(r[r.len() - 1], "y: copies")?;
    // Both copies stay with their LoDs, so the launches may outlive these handles.
    let (x_offsets, repeats) = (level_on(&d, x_level)?, level_on(&d, repeats)?);
    let starts = d.allocation((sequences as usize + 1) * 8)?;
    let args = Args::new().buf(&starts).buf(&x_offsets).buf(&repeats).arg(sequences as u64);
    launch_unrolled(&d, "rows.cu", "expand_run_rows", sequences as u64 + 1, args)?;
    scan_exclusive(&d, &starts, sequences as u64 + 1)?;
    launch_row_tiles(&d, x, &mut out, row_bytes, "expand_rows", Args::new().buf(&x_offsets), &starts, sequences)?;
    let out_offsets = d.allocation((copies as usize + 1) * 8)?;
    let args = Args::new().buf(&out_offsets).buf(&x_offsets).buf(&repeats).arg(sequences).buf(&starts).arg(copies);
    launch_tiles(&d, "rows.cu", "expand_offsets", copies as u64, 1, args)?;
    Ok((out, Some(out_offsets)))
}

/// The launch of a tile kernel of rows.cu whose table is `level`'s device copy: a new tensor of
/// `dims` (rows of `row_bytes` bytes, as many as `level`'s last offset), from `kernel` (its word
/// size appended) with parameters `(dst, src, row_words, <extra>, offsets, count,
/// total_rows, tile_rows)`. `arg` names the operator's argument that gives the offsets, for the
/// error of a count the kernel cannot take.
fn rows_by_level(
    src: &Tensor,
    row_bytes: usize,
    level: LodLevel,
    dims: Dim,
    kernel: &str,
    arg: &str,
    extra: Args,
) -> Result<Tensor> {
    let d = device_of(src, kernel)?;
    let mut out = new_tensor(&d, src.dtype(), dims)?;
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let count = count_u32(level.offsets().len() - 1, arg)?;
    let table = level_on(&d, level)?;
    launch_row_tiles(&d, src, &mut out, row_bytes, kernel, extra, &table, count)?;
    Ok(out)
}

/// The launch behind [`rows_by_level`]: `kernel` (its word size appended) fills `out` (rows of
/// `row_bytes` bytes, as many as `table`'s last offset) with parameters `(dst, src, row_words,
/// <extra>, table, count, total_rows, tile_rows)`, `table` holding `count + 1` offsets.
#[allow(clippy::too_many_arguments)]
fn launch_row_tiles(
    d: &Arc<Device>,
    src: &Tensor,
    out: &mut Tensor,
    row_bytes: usize,
    kernel: &str,
    extra: Args,
    table: &Allocation,
    count: u32,
) -> Result<()> {
    let rows = out.rows()? as u64;
    let dst = out.as_mut_ptr() as u64;
    let word = word_for(row_bytes, [src.as_ptr() as u64, dst]);
    let row_words = (row_bytes / word) as u64;
    let args = Args::new().arg(dst).ptr(src).arg(row_words).extend(extra).buf(table).arg(count).arg(rows);
    launch_tiles(d, "rows.cu", &format!("{kernel}_{word}"), rows, row_words, args)
}

/// sequence_concat on the device: a new tensor of `dims` whose sequence `i` is sequence `i` of
/// `srcs[0]`, then of `srcs[1]`, ... (rows of `row_bytes` bytes, all on one device; `levels[j]`
/// holds the row offsets of `srcs[j]`'s sequences, its LoD `lods[j]`'s level 0 in rows), and the
/// output's row offsets on the device (none when the output has no bytes). Two launches: the
/// device sums the levels' copies (kept with the inputs' LoDs) into the output's offsets, then
/// moves the rows; nothing of a size that grows with the sequences is uploaded, and the host may
/// make the same offsets meanwhile.
pub fn concat_rows(
    srcs: &[&Tensor],
    lods: &[&Lod],
    levels: &[&[usize]],
    row_bytes: usize,
    dims: Dim,
) -> Result<(Tensor, Option<Arc<Allocation>>)> {
    let d = device_of(srcs[0], "sequence_concat")?;
    let mut t = new_tensor(&d, srcs[0].dtype(), dims)?;
    if t.nbytes() == 0 {
        return Ok((t, None));
    }
    let rows = t.rows()? as u64;
    let sequences = count_u32(levels[0].len() - 1, "xs")?;
    let num_sources = count_u32(srcs.len(), "xs: inputs")?;
    let dst = t.as_mut_ptr() as u64;
    let bases = srcs.iter().map(|s| s.as_ptr() as u64);
    let word = word_for(row_bytes, bases.clone().chain([dst]));
    let row_words = (row_bytes / word) as u64;
    let place = Place::Cuda(d.ordinal);
    let copies = lods.iter().zip(levels).map(|(lod, level)| lod.abs_copy_at(0, place, || upload_offsets(&d, level)));
    let copies = lists::try_collect(levels.len(), copies, "xs: levels")?;
    let mut sources = lists::with_capacity(srcs.len() + copies.len(), "xs: sources")?;
    sources.extend(bases.chain(copies.iter().map(|c| c.as_ptr() as u64)));
    let sources = upload(&d, &sources)?;
    let out_offsets = d.allocation((sequences as usize + 1) * 8)?;
    let offsets = sequences as u64 + 1;
    let args = Args::new().buf(&out_offsets).buf(&sources).arg(num_sources).arg(offsets);
    launch_unrolled(&d, "rows.cu", "concat_offsets", offsets, args)?;
    let args =
        Args::new().arg(dst).buf(&sources).arg(num_sources).arg(row_words).buf(&out_offsets).arg(sequences).arg(rows);
    launch_tiles(&d, "rows.cu", &format!("concat_rows_{word}"), rows, row_words, args)?;
    Ok((t, Some(out_offsets)))
}

/// sequence_unpad on the device: a new tensor of `dims` whose sequence `i` (rows `[o[i], o[i+1])`
/// of `out`'s offsets `o`) is the first rows of slot `i` of `x`, slot `i` being rows `[i * padded,
/// (i + 1) * padded)` (rows of `row_bytes` bytes; every sequence fits its slot). One launch; its
/// table is `out`'s device copy, which the output's LoD keeps.
pub fn unpad_rows(x: &Tensor, row_bytes: usize, padded: usize, out: LodLevel, dims: Dim) -> Result<Tensor> {
    rows_by_level(x, row_bytes, out, dims, "unpad_rows", "length", Args::new().arg(padded as u64))
}

/// lod_tensor_to_array of rows on the device: a new tensor of `dims` (dtype of `src`) holding the
/// time steps one after another, step t being rows `[step_rows[t], step_rows[t+1])`, whose row i
/// is row `firsts[i] + t` of `src` (rows of `row_bytes` bytes). One launch; the table uploaded (in
/// one copy) is `step_rows` and `firsts`, not a range per row.
pub fn unpack_rows(src: &Tensor, row_bytes: usize, firsts: &[usize], step_rows: &[usize], dims: Dim) -> Result<Tensor> {
    let d = device_of(src, "lod_tensor_to_array")?;
    let mut out = new_tensor(&d, src.dtype(), dims)?;
    let rows = *step_rows.last().expect("step offsets");
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let steps = count_u32(step_rows.len() - 1, "rank_table: time steps")?;
    let dst = out.as_mut_ptr() as u64;
    let word = word_for(row_bytes, [src.as_ptr() as u64, dst]);
    let row_words = (row_bytes / word) as u64;
    let (_table, at) = upload_joined(&d, &[offset_words(step_rows), offset_words(firsts)])?;
    let args = Args::new().arg(dst).ptr(src).arg(row_words).arg(at[0]).arg(steps).arg(at[1]).arg(rows as u64);
    launch_tiles(&d, "rows.cu", &format!("unpack_rows_{word}"), rows as u64, row_words, args)?;
    Ok(out)
}

/// array_to_lod_tensor of rows on the device: a new tensor of `dims` and `dtype` whose rows
/// `[seq_rows[s], seq_rows[s+1])` are sequence s, its row t being row `position[s]` of `steps[t]`
/// (rows of `row_bytes` bytes; all on one device). One launch; the table uploaded (in one copy) is
/// the steps' addresses, `seq_rows` and `position`, not a range per row.
pub fn pack_rows(
    steps: &[&Tensor],
    row_bytes: usize,
    seq_rows: &[usize],
    position: &[usize],
    dtype: DType,
    dims: Dim,
) -> Result<Tensor> {
    let first = steps.first().ok_or_else(|| err!(Internal, "pack_rows: no time steps"))?;
    let d = device_of(first, "array_to_lod_tensor")?;
    let mut out = new_tensor(&d, dtype, dims)?;
    let rows = *seq_rows.last().expect("sequence offsets");
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let seqs = count_u32(seq_rows.len() - 1, "rank_table: sequences")?;
    let dst = out.as_mut_ptr() as u64;
    let bases = lists::collect(steps.iter().map(|t| t.as_ptr() as u64), "array: step addresses")?;
    let word = word_for(row_bytes, bases.iter().copied().chain([dst]));
    let row_words = (row_bytes / word) as u64;
    let (_table, at) = upload_joined(&d, &[&bases, offset_words(seq_rows), offset_words(position)])?;
    let args = Args::new().arg(dst).arg(at[0]).arg(row_words).arg(at[1]).arg(seqs).arg(at[2]).arg(rows as u64);
    launch_tiles(&d, "rows.cu", &format!("pack_rows_{word}"), rows as u64, row_words, args)?;
    Ok(out)
}

/// gather_rows with its index on the device, for sources that share it: for each `(src, dims)`, a
/// new tensor of `dims` (dtype of `src`) whose row k is row `index[k]` of `src`; `index` (int32 or
/// int64, one element per output row) is on the sources' device. `None` when an index is outside
/// the rows of some source (the caller reports which, from a host copy). One source is one launch
/// with no table; several are one launch for each word size among them (one, mostly) over one
/// table of the sources, uploaded once. Every launch counts into one count of bad values, which
/// comes back to the host, so the call waits for the device once whatever the number of sources.
pub fn gather_rows_by_index(srcs: &[(&Tensor, Dim)], index: &Tensor) -> Result<Option<Vec<Tensor>>> {
    let Some((first, _)) = srcs.first() else {
        return Ok(Some(vec![]));
    };
    let d = device_of(first, "gather_rows")?;
    let mut outs = new_tensors(&d, srcs.len(), |i| (srcs[i].0.dtype(), srcs[i].1), |t| t)?;
    if index.numel() == 0 {
        return Ok(Some(outs));
    }
    let bad = BadCount::new(&d)?;
    let index = (index.as_ptr() as u64, index_suffix(index, "gather_rows")?, index.numel());
    match (srcs, &mut outs[..]) {
        ([(src, _)], [out]) => launch_gather_by_index(&d, out, src, src.row_bytes(), index, src.rows()?, &bad)?,
        _ => launch_gather_each_by_index(&d, &mut outs, srcs, index, &bad)?,
    }
    bad.unless_counted(outs)
}

/// The launch of rows.cu's gather by index: row k of `out` (rows of `row_bytes` bytes) is row
/// `index[k]` of `src`; `index` is a device address, the suffix of its dtype ("i32" or "i64") and
/// its count of values (the rows of `out`); an index outside `src`'s `src_rows` rows is counted in
/// `bad`.
fn launch_gather_by_index(
    d: &Arc<Device>,
    out: &mut Tensor,
    src: &Tensor,
    row_bytes: usize,
    (index, suffix, rows): (u64, &str, usize),
    src_rows: usize,
    bad: &BadCount,
) -> Result<()> {
    let dst = out.as_mut_ptr() as u64;
    let word = word_for(row_bytes, [src.as_ptr() as u64, dst]);
    let row_words = (row_bytes / word) as u64;
    let args = Args::new()
        .arg(dst)
        .ptr(src)
        .arg(row_words)
        .arg(index)
        .arg(rows as u64)
        .arg(src_rows as u64)
        .arg(bad.address());
    let items = rows as u64 * row_words.max(1);
    let kernel = format!("gather_by_index_{suffix}_{word}{}", index_width(items));
    launch_unrolled(d, "rows.cu", &kernel, items, args)
}

/// The launches of rows.cu's gather of several tensors by one index: row k of `outs[s]` is row
/// `index[k]` of `srcs[s]` (`index` as for `launch_gather_by_index`). Tensors that move in words of
/// one size share a launch; one table (rows.cu's INDEXED_ENTRY values a tensor, grouped by word)
/// is uploaded for all of them.
fn launch_gather_each_by_index(
    d: &Arc<Device>,
    outs: &mut [Tensor],
    srcs: &[(&Tensor, Dim)],
    (index, suffix, rows): (u64, &str, usize),
    bad: &BadCount,
) -> Result<()> {
    const ENTRY: usize = 5;
    /// The tensors of one launch: their word, their first entry in the table and their count, their
    /// chunks, and the most items one of them has (which picks the kernel's index width).
    struct Launch {
        word: usize,
        first: usize,
        count: u32,
        chunks: u64,
        largest: u64,
    }
    // Each tensor's word, output address and source rows.
    let words = srcs.iter().zip(outs.iter_mut()).map(|((src, _), out)| {
        let dst = out.as_mut_ptr() as u64;
        Ok((word_for(src.row_bytes(), [src.as_ptr() as u64, dst]), dst, src.rows()?))
    });
    let words = lists::try_collect(srcs.len(), words, "gather_rows: words")?;
    let mut table = lists::with_capacity(ENTRY * srcs.len(), "gather_rows: table")?;
    let mut launches = lists::with_capacity(WORDS.len(), "gather_rows: launches")?;
    for word in WORDS {
        let first = table.len() / ENTRY;
        let (mut chunks, mut largest) = (0, 0);
        for ((src, _), &(w, dst, src_rows)) in srcs.iter().zip(&words) {
            if w == word {
                let row_words = (src.row_bytes() / word) as u64;
                let items = rows as u64 * row_words.max(1);
                table.extend([dst, src.as_ptr() as u64, row_words, src_rows as u64, chunks]);
                chunks += items.div_ceil(CHUNK);
                largest = largest.max(items);
            }
        }
        let count = table.len() / ENTRY - first;
        if count > 0 {
            launches.push(Launch { word, first, count: count_u32(count, "gather_rows: tensors")?, chunks, largest });
        }
    }
    let table = upload(d, &table)?;
    for Launch { word, first, count, chunks, largest } in launches {
        let entries = table.as_ptr() as u64 + (8 * ENTRY * first) as u64;
        let args = Args::new().arg(entries).arg(count).arg(chunks).arg(index).arg(rows as u64).arg(bad.address());
        let kernel = format!("gather_each_by_index_{suffix}_{word}{}", index_width(largest));
        // A block a chunk: the grid of a for_each_index kernel over that many whole chunks.
        launch_unrolled(d, "rows.cu", &kernel, chunks * CHUNK, args)?;
    }
    Ok(())
}

/// Fills `out` (rows of `row_bytes` bytes, as many as the ranges hold) with ranges of rows from
/// anywhere on its device: `ranges` yields `(address, rows)` in output order, `rows` rows starting
/// at device address `address`. `bases` are the source tensors' addresses (the word size must
/// divide them: every address is a base plus whole rows). One pass over the ranges builds the
/// table, one upload, one launch.
pub(crate) fn gather_ranges_from(
    d: &Arc<Device>,
    out: &mut Tensor,
    row_bytes: usize,
    bases: &[u64],
    ranges: impl ExactSizeIterator<Item = (u64, usize)>,
    what: &str,
) -> Result<()> {
    // One table: the source address of each range, then the ranges' output row offsets (one
    // more than the ranges).
    let n = ranges.len();
    let num_ranges = count_u32(n, what)?;
    let mut table = lists::filled(2 * n + 1, 0u64, what)?;
    let (addrs, offsets) = table.split_at_mut(n);
    let mut rows = 0u64;
    for ((slot, end), (addr, len)) in addrs.iter_mut().zip(&mut offsets[1..]).zip(ranges) {
        *slot = addr;
        rows += len as u64;
        *end = rows;
    }
    ensure!(
        rows * row_bytes as u64 == out.nbytes() as u64,
        Internal,
        "{what}: {rows} rows of {row_bytes} bytes do not fill {} bytes",
        out.nbytes()
    );
    if out.nbytes() == 0 {
        return Ok(());
    }
    let dst = out.as_mut_ptr() as u64;
    let word = word_for(row_bytes, bases.iter().copied().chain([dst]));
    let table = upload(d, &table)?;
    let table_ptr = table.as_ptr() as u64;
    let row_words = (row_bytes / word) as u64;
    let args = Args::new()
        .arg(dst)
        .arg(row_words)
        .arg(table_ptr)
        .arg(table_ptr + 8 * num_ranges as u64)
        .arg(num_ranges)
        .arg(rows);
    launch_tiles(d, "rows.cu", &format!("gather_ranges_{word}"), rows, row_words, args)
}
