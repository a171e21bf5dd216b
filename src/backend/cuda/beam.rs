//! Launchers of `kernels/beam.cu` and `kernels/fused_chunks.cu`: top-k, the fused and Paddle
//! beam-search steps, gather_tree.

use super::device::{new_tensor, Device};
use super::driver::DevicePtr;
use super::kept_zero::{zeroed_counters, BadCount};
use super::launch::{launch, launch_1d, max_blocks, Args};
use super::seq_args::{DeviceStep, StepSources};
use super::seq_common::{device_of, dtype_suffix, upload_offsets};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::memory::{lists, Allocation};
use crate::place::Place;
use crate::tensor::Tensor;
use std::sync::Arc;

/// The largest block of the top-k kernels (`TOPK_THREADS` in beam.cu).
const TOPK_THREADS: u64 = 256;
/// Threads of a block of the selection kernels (`SELECT_THREADS` in beam.cu).
const SELECT_THREADS: u32 = 128;
/// Threads of the fused step's chunk kernel, and elements of a chunk (`CHUNK_THREADS` and
/// `CHUNK_ELEMS` in fused_chunks.cu).
const CHUNK_THREADS: u32 = 256;
const CHUNK_ELEMS: usize = 32 * CHUNK_THREADS as usize;

/// Threads per block for rows of `width`: a power of two from 32 to 256, about 32 elements each
/// (short rows do not pay for a large block's merge).
fn topk_threads(width: u64) -> u32 {
    width.div_ceil(32).next_power_of_two().clamp(32, TOPK_THREADS) as u32
}

fn u32_of(v: usize, what: &str) -> Result<u32> {
    u32::try_from(v).map_err(|_| err!(Unsupported, "{what}: {v} is too large for the CUDA kernel (at most 2^32 - 1)"))
}

/// `top_k` of every row (`rows` x `width`, `1 <= k <= width`) of device tensor `x`: values (x's
/// dtype) and int64 columns, both of `out_dims`. One block per row; k above 64 costs
/// `ceil(k / 64)` reads of the row (one per pass of 64), with no upper bound.
pub fn top_k(
    x: &Tensor,
    rows: usize,
    width: usize,
    k: usize,
    largest: bool,
    out_dims: Dim,
) -> Result<(Tensor, Tensor)> {
    let d = device_of(x, "top_k")?;
    let mut values = new_tensor(&d, x.dtype(), out_dims)?;
    let mut indices = new_tensor(&d, DType::I64, out_dims)?;
    if rows == 0 {
        return Ok((values, indices));
    }
    let name = format!("top_k_{}", dtype_suffix(x.dtype())?);
    let args = Args::new()
        .arg(x.as_ptr() as u64)
        .arg(rows as u64)
        .arg(width as u64)
        .arg(u32_of(k, "k")?)
        .arg(largest as i32)
        .arg(values.as_mut_ptr() as u64)
        .arg(indices.as_mut_ptr() as u64);
    let grid = (rows as u64).min(max_blocks()) as u32;
    launch(&d, "beam.cu", &name, [grid, 1, 1], [topk_threads(width as u64), 1, 1], args)?;
    Ok((values, indices))
}

/// Launches beam.cu's selection kernel `kernel`: a block per source (`sources` of them), its own
/// arguments (`candidates`), the selection's, then the count of finished blocks (`done`: a zeroed
/// counter, which the last block, placing the selection, sets back to zero).
fn launch_select(
    d: &Arc<Device>,
    kernel: &str,
    candidates: Args,
    selection: Args,
    sources: usize,
    done: &Allocation,
) -> Result<()> {
    let grid = (sources as u64).clamp(1, max_blocks()) as u32;
    launch(d, "beam.cu", kernel, [grid, 1, 1], [SELECT_THREADS, 1, 1], candidates.extend(selection).buf(done))
}

/// A step's selection: output tensors with room for every source's `beam` items, `launch` (given
/// the selection's arguments, which follow each kernel's own: the sources' row offsets, `pre_ids`,
/// `end_id`, `beam`, the scratch and the outputs; beam_select.cuh's LODTENSOR_SELECT_PARAMS),
/// then the one copy to the host (the row offsets, which the output LoD needs there; with
/// `host_copies`, the outputs too) and the outputs cut to their length.
#[allow(clippy::too_many_arguments)]
fn select_step(
    d: &Arc<Device>,
    sources: StepSources,
    pre_ids: &Tensor,
    end_id: i64,
    beam: usize,
    score_dtype: DType,
    host_copies: bool,
    launch_selection: impl FnOnce(Args) -> Result<()>,
) -> Result<DeviceStep> {
    let StepSources { lod, level, rows: source_rows } = sources;
    let place = Place::Cuda(d.ordinal);
    let n_sources = source_rows.len() - 1;
    let rows = source_rows[n_sources];
    let cap = n_sources
        .checked_mul(beam)
        .ok_or_else(|| err!(OutOfMemory, "beam_size: {n_sources} sources x beam {beam} overflows"))?;
    let source_copy = lod.abs_copy_at(level, place, || upload_offsets(d, &source_rows))?;
    let top_rows = d.allocation(cap * 8)?;
    let top_ids = d.allocation(cap * 8)?;
    let top_scores = d.allocation(cap * score_dtype.size())?;
    let row_offsets = d.allocation((rows + 1) * 8)?;
    let next_sources = d.allocation((n_sources + 1) * 8)?;
    let mut ids = new_tensor(d, DType::I64, Dim::new(&[cap, 1])?)?;
    let mut scores = new_tensor(d, score_dtype, Dim::new(&[cap, 1])?)?;
    let mut parents = new_tensor(d, DType::I32, Dim::new(&[cap])?)?;
    // The kernel's `Selection` block: rows + 1 offsets, then cap ids, scores and parents.
    let (at_ids, at_scores) = ((rows + 1) * 8, (rows + 1 + cap) * 8);
    let at_parents = at_scores + cap * score_dtype.size();
    let host_block = if host_copies { Some(d.allocation(at_parents + cap * 4)?) } else { None };
    let selection = Args::new()
        .buf(&source_copy)
        .arg(u32_of(n_sources, "pre_ids: the number of sources")?)
        .ptr(pre_ids)
        .arg(end_id)
        .arg(u32_of(beam, "beam_size")?)
        .buf(&top_rows)
        .buf(&top_ids)
        .buf(&top_scores)
        .buf(&row_offsets)
        .arg(ids.as_mut_ptr() as u64)
        .arg(scores.as_mut_ptr() as u64)
        .arg(parents.as_mut_ptr() as u64)
        .arg(host_block.as_ref().map_or(0, |b| b.as_ptr() as u64))
        .buf(&next_sources);
    launch_selection(selection)?;
    // The one wait for the device: everything the host needs comes down in this copy.
    let down = host_block.as_ref().unwrap_or(&row_offsets);
    let mut words = lists::filled(down.len().div_ceil(8), 0i64, "beam step: the selection")?;
    // SAFETY (both views): i64 words seen as their bytes, `down.len()` of them.
    d.dtoh(
        unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), down.len()) },
        down.as_ptr() as DevicePtr,
    )?;
    let bytes = unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), down.len()) };
    let offsets = lists::collect(words[..=rows].iter().map(|&v| v as usize), "beam step: row offsets")?;
    let n = offsets[rows];
    ensure!(n <= cap, Internal, "beam step: {n} items selected, room for {cap}");
    let host = match host_copies {
        false => None,
        true => Some([
            Tensor::from_bytes(DType::I64, Dim::new(&[n, 1])?, &bytes[at_ids..at_ids + n * 8])?,
            Tensor::from_bytes(score_dtype, Dim::new(&[n, 1])?, &bytes[at_scores..at_scores + n * score_dtype.size()])?,
            Tensor::from_bytes(DType::I32, Dim::new(&[n])?, &bytes[at_parents..at_parents + n * 4])?,
        ]),
    };
    let out_lod = Lod::from_offsets(vec![source_rows, offsets])?;
    out_lod.lod_level(1)?.copy_at(place, |_| Ok(row_offsets))?;
    out_lod.abs_copy_at(0, place, || Ok(next_sources))?;
    Ok(DeviceStep {
        ids: ids.slice_rows(0..n)?,
        scores: scores.slice_rows(0..n)?,
        parents: parents.slice_rows(0..n)?,
        lod: out_lod,
        host,
    })
}

/// The fused step on the device (see `ops::beam_search_fused_step`): the `min(beam, vocab)` best
/// log-probs of every unfinished prefix row (one read of the row), then Paddle's selection of
/// each source over those candidates (by rank where that gives the same list, replaying the
/// offers where not), placed in the output grouped by row. For k up to 16, one launch: a block
/// per chunk of a row, the last of a row's chunks merging the row's lists, the last of a source's
/// rows selecting the source, the last source placing the lists (fused_chunks.cu). Above that, a
/// block per row, then the selection kernel (a block per source). `banned` (the decoder's
/// min_length rule) makes that column read as -inf. Inputs are validated by the caller:
/// `log_probs` `[rows, vocab]` (f32/f16/bf16), `pre_ids` int64 and `pre_scores` float32 with one
/// element per row, all on one device. `host_copies` brings the selection to the host too
/// (`DeviceStep::host`), in the copy that brings the row offsets.
#[allow(clippy::too_many_arguments)]
pub fn fused_step(
    sources: StepSources,
    beam: usize,
    log_probs: &Tensor,
    vocab: usize,
    pre_ids: &Tensor,
    pre_scores: &Tensor,
    end_id: i64,
    banned: Option<usize>,
    host_copies: bool,
) -> Result<DeviceStep> {
    let d = device_of(log_probs, "beam_search_fused_step")?;
    let n_sources = sources.rows.len() - 1;
    let rows = sources.rows[n_sources];
    let k = beam.min(vocab);
    let cand_vals = d.allocation(rows * k * 4)?;
    let cand_cols = d.allocation(rows * k * 8)?;
    let suffix = match log_probs.dtype() {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        other => return Err(err!(Unsupported, "log_probs: dtype {other} is not supported by the CUDA fused step")),
    };
    let k32 = u32_of(k, "beam_size")?;
    let banned = banned.map_or(-1, |b| b as i64);
    let plan = chunk_plan(rows, vocab, k);
    // Counters kept zero between calls (each kernel leaves them so), made before any launch: for
    // the chunk kernel, a row's finished chunks, a source's merged rows, the rows of the sources
    // selected; for the selection kernel, its finished blocks (the first word).
    let counters = zeroed_counters(&d, (rows + n_sources + 1) * 4)?;
    select_step(&d, sources, pre_ids, end_id, beam, DType::F32, host_copies, |selection| {
        if let Some(ChunkPlan { list, chunks, parts }) = plan {
            let part_keys = d.allocation(parts * list * 8)?;
            let counter = |word: usize| counters.as_ptr() as u64 + 4 * word as u64;
            let args = Args::new()
                .ptr(log_probs)
                .arg(vocab as u64)
                .arg(chunks as u32)
                .arg(k32)
                .arg(banned)
                .buf(&part_keys)
                .arg(counter(0))
                .buf(&cand_vals)
                .buf(&cand_cols)
                .ptr(pre_scores)
                .extend(selection)
                .arg(counter(rows))
                .arg(counter(rows + n_sources));
            // The file's variant for lists of `list` (build.rs).
            let file = format!("fused_chunks.cu[CHUNK_LIST={list}]");
            let name = format!("fused_chunk_step_{suffix}_{list}");
            return launch(&d, &file, &name, [parts as u32, 1, 1], [CHUNK_THREADS, 1, 1], args);
        }
        if rows > 0 && k > 0 {
            let args = Args::new()
                .ptr(log_probs)
                .arg(rows as u64)
                .arg(vocab as u64)
                .arg(k32)
                .ptr(pre_ids)
                .arg(end_id)
                .arg(banned)
                .buf(&cand_vals)
                .buf(&cand_cols);
            let grid = (rows as u64).min(max_blocks()) as u32;
            let name = format!("fused_row_topk_{suffix}");
            launch(&d, "beam.cu", &name, [grid, 1, 1], [topk_threads(vocab as u64), 1, 1], args)?;
        }
        let candidates = Args::new().buf(&cand_vals).buf(&cand_cols).ptr(pre_scores).arg(k32);
        launch_select(&d, "fused_select", candidates, selection, n_sources, &counters)
    })
}

/// The fused step's launch of a block per chunk of a row (fused_chunks.cu): its list length (the
/// kernel's variant), chunks a row and blocks.
#[derive(Debug, PartialEq)]
struct ChunkPlan {
    list: usize,
    chunks: usize,
    parts: usize,
}

/// The chunk kernel's launch for `rows` rows of `vocab` log-probs and `k` of each, or `None` for
/// the per-row path: k above 16 (the longest list), no rows or k, a row too long for the kernel's
/// 32-bit columns, or more than 2^31 - 1 chunks (a block each, with no grid-stride loop).
fn chunk_plan(rows: usize, vocab: usize, k: usize) -> Option<ChunkPlan> {
    let list = [4usize, 8, 16].into_iter().find(|&list| k <= list)?;
    let chunks = vocab.div_ceil(CHUNK_ELEMS);
    let parts = rows.checked_mul(chunks).filter(|&p| p <= i32::MAX as usize)?;
    (rows > 0 && k > 0 && u32::try_from(vocab).is_ok()).then_some(ChunkPlan { list, chunks, parts })
}

/// Paddle's beam_search step on the device (see `ops::beam_search_step`): the fused step's
/// selection over every row's `width` candidates. Validated by the caller; `scores`
/// and `pre_scores` float32 or float64, `ids` (optional) int64 of `scores`' shape.
#[allow(clippy::too_many_arguments)]
pub fn beam_step(
    sources: StepSources,
    beam: usize,
    scores: &Tensor,
    ids: Option<&Tensor>,
    width: usize,
    accumulated: bool,
    pre_ids: &Tensor,
    pre_scores: &Tensor,
    end_id: i64,
) -> Result<DeviceStep> {
    let d = device_of(scores, "beam_search_step")?;
    let name = match scores.dtype() {
        DType::F32 => "step_select_f32",
        DType::F64 => "step_select_f64",
        other => return Err(err!(Unsupported, "scores: dtype {other} is not supported by the CUDA beam step")),
    };
    let n_sources = sources.rows.len() - 1;
    let done = zeroed_counters(&d, 4)?;
    select_step(&d, sources, pre_ids, end_id, beam, scores.dtype(), false, |selection| {
        let candidates = Args::new()
            .ptr(scores)
            .arg(ids.map_or(0, |t| t.as_ptr() as u64))
            .ptr(pre_scores)
            .arg(width as u64)
            .arg(accumulated as i32);
        launch_select(&d, name, candidates, selection, n_sources, &done)
    })
}

/// gather_tree of `[steps, batch, beam]` int32/int64 device tensors (`steps >= 1`): the result,
/// or `None` when a followed parent is outside `[0, beam)` (the caller reports which, from the
/// host copies). One thread per chain.
pub fn gather_tree(ids: &Tensor, parents: &Tensor, steps: usize, batch: usize, beam: usize) -> Result<Option<Tensor>> {
    let d = device_of(ids, "beam_search_gather_tree")?;
    let mut out = new_tensor(&d, ids.dtype(), *ids.dims())?;
    let chains = (batch * beam) as u64;
    if steps == 0 || chains == 0 {
        return Ok(Some(out));
    }
    let name = match ids.dtype() {
        DType::I32 => "gather_tree_i32",
        DType::I64 => "gather_tree_i64",
        other => return Err(err!(Unsupported, "ids: dtype {other} is not supported by the CUDA gather_tree")),
    };
    let bad = BadCount::new(&d)?;
    let args = Args::new()
        .ptr(ids)
        .ptr(parents)
        .arg(steps as u64)
        .arg(batch as u64)
        .arg(beam as u64)
        .arg(out.as_mut_ptr() as u64)
        .arg(bad.address());
    launch_1d(&d, "beam.cu", name, chains, args)?;
    bad.unless_counted(out)
}

#[cfg(test)]
mod tests {
    use super::{chunk_plan, ChunkPlan, CHUNK_ELEMS};

    #[test]
    fn the_chunk_kernel_takes_what_its_blocks_and_columns_can_hold() {
        let plan = |list, chunks, parts| Some(ChunkPlan { list, chunks, parts });
        assert_eq!(chunk_plan(320, 32000, 5), plan(8, 4, 1280));
        assert_eq!(chunk_plan(3, CHUNK_ELEMS, 4), plan(4, 1, 3));
        assert_eq!(chunk_plan(3, CHUNK_ELEMS + 1, 16), plan(16, 2, 6));
        // The per-row path: lists longer than 16, nothing to do, rows of 2^32 log-probs or more.
        assert_eq!(chunk_plan(320, 32000, 17), None);
        assert_eq!(chunk_plan(0, 32000, 5), None);
        assert_eq!(chunk_plan(320, 32000, 0), None);
        assert_eq!(chunk_plan(1, 1 << 32, 5), None);
        assert_eq!(chunk_plan(1, (1 << 32) - 1, 5), plan(8, (1 << 32) / CHUNK_ELEMS, (1 << 32) / CHUNK_ELEMS));
        // 2^31 - 1 blocks at most: the grid's limit, with no grid-stride loop.
        let max = i32::MAX as usize;
        assert_eq!(chunk_plan(max, 1, 5), plan(8, 1, max));
        assert_eq!(chunk_plan(max + 1, 1, 5), None);
        assert_eq!(chunk_plan(max / 2 + 1, CHUNK_ELEMS + 1, 5), None);
        assert_eq!(chunk_plan(usize::MAX, CHUNK_ELEMS + 1, 5), None);
    }
}
