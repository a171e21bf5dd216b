//! One beam-search step (spec §4.2): Paddle's `beam_search` exactly, the fused step that selects
//! straight from the log-probabilities of the live prefixes, and the gather that reorders decoder
//! state by the parent indices the step returns.

use super::common_place;
use crate::backend::cpu::beam_search::{regroup, select_fused, select_unfused, Candidate, OneNan, Selected};
use crate::backend::cuda::{DeviceStep, StepSources};
use crate::dtype::{dispatch_dtype, DType, Scalar};
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::place::Place;
use crate::tensor::Tensor;

/// The outputs of a beam-search step.
#[derive(Clone, Debug)]
pub struct BeamSearchStep {
    /// int64 `[N, 1]`, LoD `[source -> prefix rows (absolute), prefix row -> items]`.
    pub selected_ids: LoDTensor,
    /// `[N, 1]` in the scores' dtype (float32 for the fused step), the same LoD.
    pub selected_scores: LoDTensor,
    /// int32 `[N]`: the prefix row each item extends.
    pub parent_idx: Tensor,
}

/// `pre_score + ln(score)` in the scores' own precision, as Paddle computes it (a NaN sum as the
/// type's one NaN, [`OneNan`]).
trait StepScore: Scalar {
    fn plus_ln(pre: Self, score: Self) -> Self;
}
impl StepScore for f32 {
    fn plus_ln(pre: f32, score: f32) -> f32 {
        (pre + score.ln()).one_nan()
    }
}
impl StepScore for f64 {
    fn plus_ln(pre: f64, score: f64) -> f64 {
        (pre + score.ln()).one_nan()
    }
}

fn require_dtype(name: &str, t: &Tensor, want: DType) -> Result<()> {
    ensure!(t.dtype() == want, Unsupported, "{name}: dtype {} is not supported here; it must be {want}", t.dtype());
    Ok(())
}

fn require_numel(name: &str, t: &Tensor, want: usize, what: &str) -> Result<()> {
    ensure!(
        t.numel() == want,
        InvalidArgument,
        "{name}: has {} element(s), but {what} has {want} prefix row(s); it needs one per prefix row",
        t.numel()
    );
    Ok(())
}

/// Builds the output tensors from the flat selection and the source offsets `h`.
fn outputs<S: Scalar>(h: Vec<usize>, sel: Selected<S>) -> Result<BeamSearchStep> {
    let n = sel.ids.len();
    let lod = Lod::from_offsets(vec![h, sel.row_offsets])?;
    Ok(BeamSearchStep {
        selected_ids: LoDTensor::new(Tensor::from_slice(&sel.ids, &[n, 1])?, lod.clone())?,
        selected_scores: LoDTensor::new(Tensor::from_slice(&sel.scores, &[n, 1])?, lod)?,
        parent_idx: Tensor::from_slice(&sel.parents, &[n])?,
    })
}

/// The output tensors of a device step (on the device, their LoD on the host).
fn device_outputs(step: DeviceStep) -> Result<BeamSearchStep> {
    Ok(BeamSearchStep {
        selected_ids: LoDTensor::new(step.ids, step.lod.clone())?,
        selected_scores: LoDTensor::new(step.scores, step.lod)?,
        parent_idx: step.parents,
    })
}

fn check_rows_fit_i32(rows: usize, arg: &str) -> Result<()> {
    ensure!(
        rows <= i32::MAX as usize,
        InvalidArgument,
        "{arg}: {rows} prefix rows do not fit the int32 parent_idx output"
    );
    Ok(())
}

/// Paddle's `beam_search` op (CPU functor), bit for bit, with the checks Paddle forgets.
///
/// `scores` (`[P, K...]`, K = product of dims[1..]) carries a LoD of at least 2 levels; level
/// `level` in absolute form gives each source sentence its prefix rows. `pre_ids` (int64) and
/// `pre_scores` (the scores' dtype) hold one value per prefix row; `ids` (int64, `scores`' shape)
/// gives the candidate tokens, or the column index is the token when it is `None`. A row whose
/// `pre_id` is `end_id` is finished: it offers only `(end_id, pre_score)`. Every other row offers
/// its K candidates with score `scores[r, d]` (`is_accumulated`) or `pre_score + ln(scores[r, d])`.
/// Each source keeps its `beam_size` best (higher score first, equal scores: higher row first,
/// Paddle's insertion rule for equal keys); a source whose kept items are all `end_id` from
/// finished rows is dropped (one step after its last branch ended). Items are emitted row by row.
///
/// Errors: `InvalidArgument` for `beam_size == 0`, a 0-d `scores`, fewer than 2 LoD levels,
/// `level` out of range, `pre_ids`/`pre_scores` without exactly one element per prefix row,
/// `ids` of another shape than `scores`, `pre_scores` of another dtype than `scores`, more than
/// `i32::MAX` rows; `Unsupported` for `pre_ids`/`ids` not int64, scores not float32/float64 (or
/// a CUDA place in a build without CUDA).
///
/// On a CUDA device a block per source makes the per-source selection (by rank, or by replaying
/// the same offers in the same order where a source has a NaN score, a tie at its last place or
/// more than 256 offers, so ties and NaN land as on the CPU), and the last of them places the
/// items grouped by row; the row offsets (the output
/// LoD) are copied to the host, which waits for the device. The sources' rows (level `level` in
/// absolute form) are read from the copy that `scores`' LoD keeps on the device (made at its first
/// use there; a step's output LoD holds the one the next step needs). With `is_accumulated` the
/// result equals the CPU's bit for bit; otherwise `ln` is the device's `logf`/`log` (CUDA: within 1
/// ulp of the correctly rounded result), so scores may differ from the CPU's in the last bit and a
/// selection between candidates that close may differ.
#[allow(clippy::too_many_arguments)]
pub fn beam_search_step(
    pre_ids: &LoDTensor,
    pre_scores: &LoDTensor,
    ids: Option<&LoDTensor>,
    scores: &LoDTensor,
    level: usize,
    beam_size: usize,
    end_id: i64,
    is_accumulated: bool,
) -> Result<BeamSearchStep> {
    ensure!(beam_size >= 1, InvalidArgument, "beam_size: is 0; it must be at least 1");
    let mut places =
        vec![("pre_ids", pre_ids.tensor()), ("pre_scores", pre_scores.tensor()), ("scores", scores.tensor())];
    if let Some(ids) = ids {
        places.push(("ids", ids.tensor()));
    }
    let place = common_place(&places)?;
    let rows =
        scores.tensor().rows().map_err(|_| err!(InvalidArgument, "scores: is 0-d; it needs one row per prefix"))?;
    let levels = scores.lod().num_levels();
    ensure!(
        levels >= 2,
        InvalidArgument,
        "scores: has {levels} LoD level(s); beam_search needs 2 (source -> prefixes, prefix -> rows); \
         give scores pre_ids' LoD (lodtensor_lod_reset)"
    );
    ensure!(level < levels, InvalidArgument, "level: {level} is out of range; scores has {levels} LoD levels");
    check_rows_fit_i32(rows, "scores")?;
    require_dtype("pre_ids", pre_ids.tensor(), DType::I64)?;
    require_numel("pre_ids", pre_ids.tensor(), rows, "scores")?;
    require_numel("pre_scores", pre_scores.tensor(), rows, "scores")?;
    ensure!(
        pre_scores.tensor().dtype() == scores.tensor().dtype(),
        InvalidArgument,
        "pre_scores: dtype {} differs from scores' dtype {}; they must match",
        pre_scores.tensor().dtype(),
        scores.tensor().dtype()
    );
    if let Some(ids) = ids {
        require_dtype("ids", ids.tensor(), DType::I64)?;
        ensure!(
            ids.dims() == scores.dims(),
            InvalidArgument,
            "ids: has dims {:?}, scores has {:?}; they must have the same shape",
            ids.dims(),
            scores.dims()
        );
    }
    let width = scores.dims().row_width();
    let sources = StepSources::new(scores.lod(), level)?;
    if let Place::Cuda(_) = place {
        dispatch_dtype!(scores.tensor().dtype(), "scores", [F32, F64], |T| Ok(()))?;
        let step = crate::backend::cuda::beam_step(
            sources,
            beam_size,
            scores.tensor(),
            ids.map(|t| t.tensor()),
            width,
            is_accumulated,
            pre_ids.tensor(),
            pre_scores.tensor(),
            end_id,
        )?;
        return device_outputs(step);
    }
    let h = sources.rows;
    let pre = pre_ids.tensor().as_slice::<i64>()?;
    let cand_ids = ids.map(|t| t.tensor().as_slice::<i64>()).transpose()?;
    dispatch_dtype!(scores.tensor().dtype(), "scores", [F32, F64], |T| {
        let sc = scores.tensor().as_slice::<T>()?;
        let ps = pre_scores.tensor().as_slice::<T>()?;
        let work = std::mem::size_of_val(sc) + cand_ids.map_or(0, std::mem::size_of_val);
        let tops = select_unfused(&h, beam_size, work, pre, ps, end_id, |r, emit| {
            for d in 0..width {
                let i = r * width + d;
                let id = cand_ids.map_or(d as i64, |c| c[i]);
                let score = if is_accumulated { sc[i] } else { T::plus_ln(ps[r], sc[i]) };
                emit(Candidate { row: r, id, score });
            }
        })?;
        let sel = regroup(&h, beam_size, &tops, pre, end_id)?;
        outputs(h.clone(), sel)
    })
}

/// The fused beam-search step of a decoder: the same result as `top_k(log_probs, beam_size)`,
/// `scores = topk_values + pre_scores` (per row, float32), then [`beam_search_step`] with
/// `ids = topk_indices`, level 0, accumulated scores, but in one pass over `log_probs` and
/// without materializing any `P x V` or `P x beam_size` tensor.
///
/// `pre_ids` (int64, one per prefix row) carries the LoD: its level 0, in absolute form, gives
/// each source its prefix rows (the previous step's `selected_ids` has exactly that LoD; a first
/// step uses `[[0, 1, ..., B], [0, 1, ..., B]]` or just `[[0, 1, ..., B]]`). `pre_scores` (float32)
/// are the prefixes' cumulative scores, `log_probs` (`[P, V]`, float32, float16 or bfloat16; its
/// LoD is not read) the next-token log-probabilities. Each unfinished row offers its `min(beam_size,
/// V)` best tokens (ties by smaller token id); finished rows (`pre_id == end_id`) offer only
/// `end_id` with their score; selection, pruning and output are those of [`beam_search_step`].
///
/// On a CUDA device: the blocks of one launch select each unfinished prefix row's candidates in
/// one read of the row (nothing of size `P x V` is written), in chunks of 8192 log-probs for beams
/// up to 16, then each source as soon as its rows are done (by rank, or by replaying the offers
/// where a source has a NaN score, a tie at its last place or more than 256 offers); the last
/// source's block places the items grouped by row;
/// the result equals the CPU's bit for bit (the candidate scores are the same float32 sums). The
/// row offsets (the output LoD) are copied to the host, which waits for the device. The sources' rows
/// are read from the copy that `pre_ids`' LoD keeps on the device: uploaded at the LoD's first
/// step there, and, for a step on the last step's selection, written by that step (its output LoD
/// keeps its level 0 in rows and its row offsets on the device), so a chain of steps uploads
/// nothing.
///
/// Errors: `InvalidArgument` for `beam_size == 0`, `pre_ids` without a LoD, `log_probs` not 2-D,
/// `pre_ids`/`pre_scores`/`log_probs` not one per prefix row, more than `i32::MAX` rows;
/// `Unsupported` for other dtypes (or a CUDA place in a build without CUDA).
pub fn beam_search_fused_step(
    pre_ids: &LoDTensor,
    pre_scores: &LoDTensor,
    log_probs: &LoDTensor,
    beam_size: usize,
    end_id: i64,
) -> Result<BeamSearchStep> {
    ensure!(beam_size >= 1, InvalidArgument, "beam_size: is 0; it must be at least 1");
    let place = common_place(&[
        ("pre_ids", pre_ids.tensor()),
        ("pre_scores", pre_scores.tensor()),
        ("log_probs", log_probs.tensor()),
    ])?;
    ensure!(
        !pre_ids.lod().is_empty(),
        InvalidArgument,
        "pre_ids: has no LoD; its level 0 must say which prefix rows belong to which source"
    );
    let rows = pre_ids.lod().rows().expect("non-empty LoD");
    check_rows_fit_i32(rows, "pre_ids")?;
    require_dtype("pre_ids", pre_ids.tensor(), DType::I64)?;
    require_numel("pre_ids", pre_ids.tensor(), rows, "pre_ids' LoD")?;
    require_dtype("pre_scores", pre_scores.tensor(), DType::F32)?;
    require_numel("pre_scores", pre_scores.tensor(), rows, "pre_ids' LoD")?;
    let dims = log_probs.dims().as_slice();
    ensure!(dims.len() == 2, InvalidArgument, "log_probs: has dims {dims:?}; it must be 2-D [prefix rows, vocabulary]");
    ensure!(
        dims[0] == rows,
        InvalidArgument,
        "log_probs: has {} row(s), but pre_ids' LoD has {rows} prefix row(s); it needs one per prefix row",
        dims[0]
    );
    let vocab = dims[1];
    let sources = StepSources::new(pre_ids.lod(), 0)?;
    if let Place::Cuda(_) = place {
        dispatch_dtype!(log_probs.tensor().dtype(), "log_probs", [F32, F16, BF16], |T| Ok(()))?;
        let step = crate::backend::cuda::fused_step(
            sources,
            beam_size,
            log_probs.tensor(),
            vocab,
            pre_ids.tensor(),
            pre_scores.tensor(),
            end_id,
            None,
            false,
        )?;
        return device_outputs(step);
    }
    let (h, pre) = (sources.rows, pre_ids.tensor().as_slice::<i64>()?);
    let ps = pre_scores.tensor().as_slice::<f32>()?;
    dispatch_dtype!(log_probs.tensor().dtype(), "log_probs", [F32, F16, BF16], |T| {
        fused_step_on_slices(h, beam_size, log_probs.tensor().as_slice::<T>()?, vocab, pre, ps, end_id)
    })
}

/// The fused step on validated slices (`h`: absolute source -> prefix-row offsets), for callers
/// that hold the log-probabilities in their own buffer (the decoder).
pub(crate) fn fused_step_on_slices<T: Scalar>(
    h: Vec<usize>,
    beam_size: usize,
    log_probs: &[T],
    vocab: usize,
    pre_ids: &[i64],
    pre_scores: &[f32],
    end_id: i64,
) -> Result<BeamSearchStep> {
    let tops = select_fused(&h, beam_size, log_probs, vocab, pre_ids, pre_scores, end_id, |v: T| v.to_f64() as f32)?;
    let sel = regroup(&h, beam_size, &tops, pre_ids, end_id)?;
    outputs(h, sel)
}

/// Reorders decoder state after a step: row `i` of the result is row `parent_idx[i]` of `state`
/// (the same as `sequence_expand(state, selected_ids, 1)` for a state without LoD). `parent_idx`
/// is int32 or int64, `[N]` or `[N, 1]`; the result has `state`'s dtype and row shape and no LoD,
/// and owns new memory. Any dtype. On a CUDA device (`gather_rows`) one launch moves the rows,
/// reading and checking `parent_idx` where it lies; the call waits for the device once, to read
/// the count of bad values back, and copies `parent_idx` to the host only to name one.
///
/// Errors: `InvalidArgument` for a 0-d `state`; `OutOfRange` for a parent outside `[0, rows)`;
/// `Unsupported` for `parent_idx` not int32/int64 (or a CUDA place in a build without CUDA).
pub fn beam_search_gather_state(state: &LoDTensor, parent_idx: &LoDTensor) -> Result<LoDTensor> {
    super::tensor_ops::gather_rows_named(state, "state", parent_idx, "parent_idx")
}

/// [`beam_search_gather_state`] of every tensor of a model's state by one `parent_idx`: result
/// `i` is `states[i]` reordered. The same rules for each state (they may differ in dtype, row shape
/// and rows; every parent must be a row of each); on a CUDA device one launch for all the states
/// that move in words of one size (one launch in all, mostly), and the call waits for the device
/// once, not once a state. No states, no results.
///
/// Errors: those of `beam_search_gather_state`, naming `states[i]`; inputs on different places
/// (`InvalidArgument`, naming both). On an error no result is returned.
pub fn beam_search_gather_states(states: &[&LoDTensor], parent_idx: &LoDTensor) -> Result<Vec<LoDTensor>> {
    super::tensor_ops::gather_rows_of_all(states, &|i| format!("states[{i}]"), parent_idx, "parent_idx")
}
