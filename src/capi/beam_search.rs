//! Beam-search exports: top-k, one beam-search step (Paddle's and the fused one), the state
//! gather, decode/backtrack, gather_tree, and the sequence decoder driving a C model callback.

use super::args::{self, get, null, Out};
use super::boundary;
use super::tensor::{into_handle, lodtensor_t, new_handle, tensors_of};
use super::tensor_array::tensor_array_t;
use super::types::lodtensor_status_t;
use crate::decoder::{Decoder, DecoderOptions, StepInfo};
use crate::error::{ensure, err, Result};
use crate::lod_tensor::LoDTensor;
use crate::ops::beam_search::{self as ops, BeamSearchStep};
use crate::ops::beam_search_decode as decode_ops;
use crate::ops::topk;
use std::ffi::c_void;

/// The version of `beam_search_decoder_options_t` this header describes.
pub const LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION: u32 = 1;

/// The top-k over the last axis of `x`: `*out_values` (x's dtype) and `*out_indices` (int64)
/// have x's shape with the last dim replaced by `k` and x's LoD. Values are sorted, descending
/// when `largest`, else ascending; NaN ranks above every number (first when `largest`, last
/// otherwise); equal values come in index order. One pass over each row, no sort. Any dtype but
/// bool. The caller destroys both new tensors.
/// Returns LODTENSOR_NULL_ARGUMENT (`x`, `out_values`, `out_indices`), LODTENSOR_INVALID_ARGUMENT
/// (0-d `x`, 1-D `x` with a LoD, `k` == 0, `k` greater than the last dim),
/// LODTENSOR_UNSUPPORTED (bool; memory on a CUDA device in a build without CUDA),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_topk(
    x: *const lodtensor_t,
    k: usize,
    largest: bool,
    out_values: *mut *mut lodtensor_t,
    out_indices: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let x = get(x, "x")?;
        let (ov, oi) = (Out::new(out_values, "out_values")?, Out::new(out_indices, "out_indices")?);
        let (values, indices) = topk::top_k(&x.inner, k, largest)?;
        new_handle(ov, values);
        new_handle(oi, indices);
        Ok(())
    })
}

fn write_step(
    step: BeamSearchStep,
    ids: Out<*mut lodtensor_t>,
    scores: Out<*mut lodtensor_t>,
    parents: Option<Out<*mut lodtensor_t>>,
) {
    new_handle(ids, step.selected_ids);
    new_handle(scores, step.selected_scores);
    if let Some(p) = parents {
        new_handle(p, LoDTensor::dense(step.parent_idx));
    }
}

/// Paddle's `beam_search` op: one step of beam search over the candidates of every prefix row.
///
/// `scores` (float32 or float64, `[P, K...]`, K = product of dims[1..]) carries a LoD of at least
/// 2 levels; level `level` (normally 0), in absolute form, gives each source sentence its prefix
/// rows. `pre_ids` (int64) and `pre_scores` (scores' dtype) hold one value per prefix row (only
/// their elements are read). `ids` (int64, scores' shape) gives the candidate tokens; if NULL the
/// column index is the token. A row whose pre_id is `end_id` has finished: it offers only
/// `(end_id, pre_score)`. Other rows offer their K candidates scored `scores` (`is_accumulated`)
/// or `pre_score + ln(scores)`. Each source keeps its `beam_size` best (higher score first; equal
/// scores: higher row first, Paddle's rule); a source whose kept items are all `end_id` from
/// finished rows is dropped (one step after its last branch ended).
/// Outputs, new tensors the caller destroys: `*out_selected_ids` (int64 `[N, 1]`) and
/// `*out_selected_scores` (scores' dtype `[N, 1]`) with the LoD `[source -> prefix rows
/// (absolute), prefix row -> selected items]`, and, if `out_parent_idx` is not NULL,
/// `*out_parent_idx` (int32 `[N]`, the prefix row each item extends).
/// Returns LODTENSOR_NULL_ARGUMENT (`pre_ids`, `pre_scores`, `scores`, `out_selected_ids`,
/// `out_selected_scores`), LODTENSOR_INVALID_ARGUMENT (`beam_size` == 0; 0-d `scores`; fewer
/// than 2 LoD levels; `level` out of range; `pre_ids` or `pre_scores` without one element per
/// prefix row; `ids` of another shape; `pre_scores` of another dtype than `scores`; more than
/// INT32_MAX rows), LODTENSOR_UNSUPPORTED (`pre_ids`/`ids` not int64, `scores` not
/// float32/float64, memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn beam_search_step(
    pre_ids: *const lodtensor_t,
    pre_scores: *const lodtensor_t,
    ids: *const lodtensor_t,
    scores: *const lodtensor_t,
    level: usize,
    beam_size: usize,
    end_id: i64,
    is_accumulated: bool,
    out_selected_ids: *mut *mut lodtensor_t,
    out_selected_scores: *mut *mut lodtensor_t,
    out_parent_idx: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (pre_ids, pre_scores, scores) =
            (get(pre_ids, "pre_ids")?, get(pre_scores, "pre_scores")?, get(scores, "scores")?);
        let ids = ids.as_ref().map(|t| &t.inner);
        let oi = Out::new(out_selected_ids, "out_selected_ids")?;
        let os = Out::new(out_selected_scores, "out_selected_scores")?;
        let op = (!out_parent_idx.is_null()).then(|| Out::new(out_parent_idx, "out_parent_idx")).transpose()?;
        let step = ops::beam_search_step(
            &pre_ids.inner,
            &pre_scores.inner,
            ids,
            &scores.inner,
            level,
            beam_size,
            end_id,
            is_accumulated,
        )?;
        write_step(step, oi, os, op);
        Ok(())
    })
}

/// The fused beam-search step of a decoder: the result of `lodtensor_topk(log_probs, beam_size)`,
/// adding `pre_scores` per row (float32), then `beam_search_step` (level 0, accumulated, ids =
/// the top-k indices), computed in one pass over `log_probs` without any `P x V` intermediate.
///
/// `pre_ids` (int64, one per prefix row) carries the LoD: its level 0 in absolute form gives each
/// source its prefix rows (the previous step's selected ids have exactly that LoD; a first step
/// uses `[[0, 1, ..., B], [0, 1, ..., B]]`). `pre_scores` (float32, one per prefix row) are the
/// cumulative scores, `log_probs` (`[P, V]`, float32, float16 or bfloat16; its LoD is not read) the
/// next-token log-probabilities. Each unfinished row offers its min(beam_size, V) best tokens
/// (ties: smaller token id first); finished rows (`pre_id == end_id`) offer only `end_id`.
/// Outputs as in `beam_search_step` (scores float32); `out_parent_idx` may be NULL.
/// Returns LODTENSOR_NULL_ARGUMENT (`pre_ids`, `pre_scores`, `log_probs`, `out_selected_ids`,
/// `out_selected_scores`), LODTENSOR_INVALID_ARGUMENT (`beam_size` == 0; `pre_ids` without a
/// LoD; `log_probs` not 2-D; `pre_ids`, `pre_scores` or `log_probs` without one element/row per
/// prefix row; more than INT32_MAX rows), LODTENSOR_UNSUPPORTED (other dtypes, memory on a CUDA
/// device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn beam_search_fused_step(
    pre_ids: *const lodtensor_t,
    pre_scores: *const lodtensor_t,
    log_probs: *const lodtensor_t,
    beam_size: usize,
    end_id: i64,
    out_selected_ids: *mut *mut lodtensor_t,
    out_selected_scores: *mut *mut lodtensor_t,
    out_parent_idx: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (pre_ids, pre_scores) = (get(pre_ids, "pre_ids")?, get(pre_scores, "pre_scores")?);
        let log_probs = get(log_probs, "log_probs")?;
        let oi = Out::new(out_selected_ids, "out_selected_ids")?;
        let os = Out::new(out_selected_scores, "out_selected_scores")?;
        let op = (!out_parent_idx.is_null()).then(|| Out::new(out_parent_idx, "out_parent_idx")).transpose()?;
        let step = ops::beam_search_fused_step(&pre_ids.inner, &pre_scores.inner, &log_probs.inner, beam_size, end_id)?;
        write_step(step, oi, os, op);
        Ok(())
    })
}

/// Reorders decoder state after a step: row i of `*out` is row `parent_idx[i]` of `state` (the
/// same as `sequence_expand(state, selected_ids, 1)` for a state without LoD). `parent_idx` is
/// int32 or int64, any shape (elements read in order). `*out` has state's dtype and row shape, no
/// LoD, its own memory; the caller destroys it. Any dtype.
/// Returns LODTENSOR_NULL_ARGUMENT (`state`, `parent_idx`, `out`), LODTENSOR_INVALID_ARGUMENT
/// (0-d `state`), LODTENSOR_OUT_OF_RANGE (a parent outside [0, rows of state)),
/// LODTENSOR_UNSUPPORTED (`parent_idx` not int32/int64, memory on a CUDA device in a build without CUDA),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn beam_search_gather_state(
    state: *const lodtensor_t,
    parent_idx: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (state, parent_idx) = (get(state, "state")?, get(parent_idx, "parent_idx")?);
        let out = Out::new(out, "out")?;
        new_handle(out, ops::beam_search_gather_state(&state.inner, &parent_idx.inner)?);
        Ok(())
    })
}

/// `beam_search_gather_state` of each of `count` tensors of a model's state by one `parent_idx`:
/// `out[i]` receives `states[i]` reordered (a new tensor; the caller destroys each). The states may
/// differ in dtype, row shape and rows; every parent must be a row of each. On a CUDA device one
/// launch for all the states (one for each size of word they move in: 16, 8, 4, 2 or 1 bytes, by
/// their rows' bytes and addresses), one small upload and one wait for the device for the whole
/// call (`beam_search_gather_state` per state launches and waits once each). `count` 0 writes
/// nothing. On failure nothing is written to `out`.
/// Returns LODTENSOR_NULL_ARGUMENT (`states` or `out` with `count` > 0, any `states[i]`,
/// `parent_idx`), LODTENSOR_INVALID_ARGUMENT (`states` or `out` misaligned, a 0-d `states[i]`,
/// inputs on different places), LODTENSOR_OUT_OF_RANGE (a parent outside [0, rows of states[i])),
/// LODTENSOR_UNSUPPORTED (`parent_idx` not int32/int64, memory on a CUDA device in a build
/// without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn beam_search_gather_states(
    states: *const *const lodtensor_t,
    count: usize,
    parent_idx: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let handles = args::slice(states, count, "states")?;
        let parent_idx = get(parent_idx, "parent_idx")?;
        let out = args::out_array(out, count, "out")?;
        let states = tensors_of(handles, "states")?;
        let gathered = ops::beam_search_gather_states(&states, &parent_idx.inner)?;
        for (slot, inner) in out.iter_mut().zip(gathered) {
            *slot = into_handle(inner);
        }
        Ok(())
    })
}

/// Paddle's `beam_search_decode`: backtracks the per-step selected ids and scores (TensorArrays
/// of the outputs of `beam_search_step`, 2 LoD levels each, step 0 = the initial prefixes) into
/// `beam_size` sentences per source. `*out_sentence_ids` (int64, 1-D) and `*out_sentence_scores`
/// (scores' dtype, 1-D, the cumulative score at each token) have the LoD `[[0, beam_size,
/// 2 beam_size, ...], [token offsets]]`. Sentences hold the tokens from step 0 on without the
/// repeated `end_id`s of finished branches; each source's sentences are sorted by final score,
/// descending, stable; slots never filled are empty sentences, last. The caller destroys both.
/// Returns LODTENSOR_NULL_ARGUMENT (`ids`, `scores`, `out_sentence_ids`, `out_sentence_scores`),
/// LODTENSOR_INVALID_ARGUMENT (`beam_size` == 0; empty arrays or of different lengths; a step
/// without exactly 2 LoD levels or with another number of sources than step 0; scores whose LoD,
/// element count or dtype differ from the ids'; bool scores; more candidates for a source than
/// `beam_size`; steps whose LoDs do not chain), LODTENSOR_UNSUPPORTED (ids not int64; scores not
/// float32/float64/float16/bfloat16/int32/int64; memory on a CUDA device in a build without CUDA),
/// LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn beam_search_decode(
    ids: *const tensor_array_t,
    scores: *const tensor_array_t,
    beam_size: usize,
    end_id: i64,
    out_sentence_ids: *mut *mut lodtensor_t,
    out_sentence_scores: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (ids, scores) = (get(ids, "ids")?, get(scores, "scores")?);
        let oi = Out::new(out_sentence_ids, "out_sentence_ids")?;
        let os = Out::new(out_sentence_scores, "out_sentence_scores")?;
        let (si, ss) = decode_ops::beam_search_decode(&ids.inner, &scores.inner, beam_size, end_id)?;
        new_handle(oi, si);
        new_handle(os, ss);
        Ok(())
    })
}

/// Paddle's `gather_tree`: `ids` and `parents` are `[T, B, beam]` of one dtype (int32 or int64).
/// `*out` (same shape and dtype, no LoD; the caller destroys it) holds, for each final beam k of
/// batch entry b, its token path: `out[T-1,b,k] = ids[T-1,b,k]`, then following
/// `p = parents[t+1,b,.]` back, `out[t,b,k] = ids[t,b,p]`. T = 0 gives an empty result.
/// Returns LODTENSOR_NULL_ARGUMENT (`ids`, `parents`, `out`), LODTENSOR_INVALID_ARGUMENT (not 3-D,
/// different shapes or dtypes), LODTENSOR_OUT_OF_RANGE (a followed parent outside [0, beam)),
/// LODTENSOR_UNSUPPORTED (another dtype, memory on a CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn beam_search_gather_tree(
    ids: *const lodtensor_t,
    parents: *const lodtensor_t,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (ids, parents) = (get(ids, "ids")?, get(parents, "parents")?);
        let out = Out::new(out, "out")?;
        new_handle(out, decode_ops::beam_search_gather_tree(&ids.inner, &parents.inner)?);
        Ok(())
    })
}

/// Options of a beam-search decoder. Fill it with `beam_search_decoder_options_init`, then set
/// the fields you need (at least `vocab_size`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct beam_search_decoder_options_t {
    /// LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION.
    pub version: u32,
    /// Prefixes kept per source sentence (>= 1; default 4).
    pub beam_size: usize,
    /// Tokens of the model's output (>= 1; default 0, so it must be set).
    pub vocab_size: usize,
    /// The token every prefix starts from; not part of the results (default 0).
    pub start_id: i64,
    /// The token that ends a sentence, in [0, vocab_size), not start_id (default 1).
    pub end_id: i64,
    /// The most tokens per sentence (>= 1; default 64).
    pub max_length: usize,
    /// end_id gets log-prob -inf while a prefix has fewer tokens than this (default 0).
    pub min_length: usize,
    /// Sentences are ranked by score / ((5 + length) / 6)^length_penalty (finite, >= 0;
    /// default 0 = the plain cumulative log-probability).
    pub length_penalty: f64,
    /// Sentences returned per source, 1 .. beam_size (default 1).
    pub num_hypotheses: usize,
}

/// What a decoder callback sees at one step: the live prefixes, grouped by source. Every pointer
/// is borrowed and valid only during the call.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct beam_search_step_info_t {
    /// 0 for the first token.
    pub step: usize,
    /// The number of sources given to `beam_search_decoder_run` or `beam_search_decoder_run_tensors`.
    pub num_sources: usize,
    /// num_sources + 1 offsets: source s owns prefixes source_offsets[s] .. source_offsets[s+1]
    /// (none once it has finished).
    pub source_offsets: *const usize,
    /// The number of live prefixes P (rows of the log-probs).
    pub num_prefixes: usize,
    /// P tokens: the last token of each prefix (start_id at step 0).
    pub ids: *const i64,
    /// P indices: the prefix of the previous step each prefix extends; reorder the model state
    /// with it (`state[i] = previous_state[parent_idx[i]]`). At step 0 it is the source index.
    pub parent_idx: *const i64,
    /// P cumulative log-probabilities.
    pub scores: *const f32,
    /// Columns of the log-probs.
    pub vocab_size: usize,
    /// In `beam_search_decoder_run_tensors`, when the previous step ran on a CUDA device:
    /// `parent_idx` as an int32 `[P]` tensor on that device, borrowed for the call (do not destroy
    /// it; `lodtensor_share` keeps it), so that state there is reordered
    /// (`beam_search_gather_states`) without uploading the parents. NULL otherwise (step 0, a step
    /// on the host, `beam_search_decoder_run`).
    pub parent_idx_tensor: *const lodtensor_t,
}

/// A decoder callback. The step function fills `log_probs` (`num_prefixes x vocab_size` floats,
/// row-major, borrowed for the call; its contents on entry are unspecified) with the
/// next-token log-probabilities of each prefix (rows of prefixes whose last token is end_id are
/// not read). The optional edit function is called after it (and after the min_length ban) with
/// the same buffer and may change any entry (ban a token with -INFINITY, force one). Return 0 on
/// success; any other value stops decoding (the decoder returns LODTENSOR_CALLBACK_FAILED and the
/// status in its message). Callbacks run on the thread that called `beam_search_decoder_run` and
/// may call the library.
pub type beam_search_step_fn = Option<
    unsafe extern "C" fn(info: *const beam_search_step_info_t, log_probs: *mut f32, user_data: *mut c_void) -> i32,
>;

/// A beam-search decoder: fixed options, no other state. Immutable after creation, so any
/// number of threads may run one decoder at once.
pub struct beam_search_decoder_t {
    inner: Decoder,
}

/// Writes the default options (see `beam_search_decoder_options_t`) with the current version
/// into `*options`. Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn beam_search_decoder_options_init(
    options: *mut beam_search_decoder_options_t,
) -> lodtensor_status_t {
    boundary(|| {
        let d = DecoderOptions::default();
        Out::new(options, "options")?.write(beam_search_decoder_options_t {
            version: LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION,
            beam_size: d.beam_size,
            vocab_size: d.vocab_size,
            start_id: d.start_id,
            end_id: d.end_id,
            max_length: d.max_length,
            min_length: d.min_length,
            length_penalty: d.length_penalty,
            num_hypotheses: d.num_hypotheses,
        });
        Ok(())
    })
}

/// Creates a decoder with a copy of `*options`; the caller destroys it with
/// `beam_search_decoder_destroy`.
/// Returns LODTENSOR_NULL_ARGUMENT (`options`, `out`), LODTENSOR_INVALID_ARGUMENT (`version` is
/// not LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION; beam_size, vocab_size or max_length 0;
/// end_id outside [0, vocab_size) or equal to start_id; min_length > max_length; length_penalty
/// negative or not finite; num_hypotheses outside [1, beam_size]).
#[no_mangle]
pub unsafe extern "C" fn beam_search_decoder_create(
    options: *const beam_search_decoder_options_t,
    out: *mut *mut beam_search_decoder_t,
) -> lodtensor_status_t {
    boundary(|| {
        let o = get(options, "options")?;
        let out = Out::new(out, "out")?;
        ensure!(
            o.version == LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION,
            InvalidArgument,
            "options.version: is {}, this library reads version {LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION} \
             (fill the options with beam_search_decoder_options_init)",
            o.version
        );
        let inner = Decoder::new(DecoderOptions {
            beam_size: o.beam_size,
            vocab_size: o.vocab_size,
            start_id: o.start_id,
            end_id: o.end_id,
            max_length: o.max_length,
            min_length: o.min_length,
            length_penalty: o.length_penalty,
            num_hypotheses: o.num_hypotheses,
        })?;
        out.write(Box::into_raw(Box::new(beam_search_decoder_t { inner })));
        Ok(())
    })
}

/// Destroys a decoder. NULL is accepted and ignored.
#[no_mangle]
pub unsafe extern "C" fn beam_search_decoder_destroy(decoder: *mut beam_search_decoder_t) {
    if !decoder.is_null() {
        let _ = boundary(|| {
            drop(Box::from_raw(decoder));
            Ok(())
        });
    }
}

/// The C view of a step's prefixes, borrowing `info` and `parents` (the handle of
/// `info.parent_idx_tensor`, if any).
fn c_info(info: &StepInfo, parents: Option<&lodtensor_t>) -> beam_search_step_info_t {
    beam_search_step_info_t {
        step: info.step,
        num_sources: info.source_offsets.len() - 1,
        source_offsets: info.source_offsets.as_ptr(),
        num_prefixes: info.ids.len(),
        ids: info.ids.as_ptr(),
        parent_idx: info.parent_idx.as_ptr(),
        scores: info.scores.as_ptr(),
        vocab_size: info.vocab_size,
        parent_idx_tensor: parents.map_or(std::ptr::null(), |p| p as *const lodtensor_t),
    }
}

/// Calls a C callback for one step; a non-zero status becomes `CallbackFailed`.
unsafe fn call(
    f: unsafe extern "C" fn(*const beam_search_step_info_t, *mut f32, *mut c_void) -> i32,
    name: &str,
    info: &StepInfo,
    log_probs: &mut [f32],
    user_data: *mut c_void,
) -> Result<()> {
    let c = c_info(info, None);
    let status = f(&c, log_probs.as_mut_ptr(), user_data);
    ensure!(status == 0, CallbackFailed, "{name}: returned status {status} at step {}", info.step);
    Ok(())
}

/// Decodes `num_sources` source sentences with beam search around the caller's model.
///
/// Each step the decoder calls `step_fn` (and then `edit_fn`, if not NULL) with the live
/// prefixes (see `beam_search_step_info_t`); the model fills their next-token log-probabilities.
/// The decoder selects the next beams (the fused step: each source keeps its `beam_size` best
/// prefixes; finished prefixes keep their score and compete), stops after `max_length` steps or
/// once every prefix has ended, and backtracks the sentences. Results, new tensors the caller
/// destroys: `*out_ids` (int64, 1-D, LoD `[source -> sentences, sentence -> tokens]`: up to
/// `num_hypotheses` sentences per source, best first, without the start token, ending with
/// end_id unless cut at max_length) and `*out_scores` (float32, one ranking score per sentence,
/// LoD `[source -> sentences]`). Sentences scoring -inf (only banned tokens were left) are
/// dropped. On failure nothing is returned and nothing leaks.
/// Returns LODTENSOR_NULL_ARGUMENT (`decoder`, `step_fn`, `out_ids`, `out_scores`),
/// LODTENSOR_INVALID_ARGUMENT (`num_sources` == 0), LODTENSOR_CALLBACK_FAILED (a callback
/// returned non-zero; the message names it, its status and the step), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn beam_search_decoder_run(
    decoder: *const beam_search_decoder_t,
    num_sources: usize,
    step_fn: beam_search_step_fn,
    edit_fn: beam_search_step_fn,
    user_data: *mut c_void,
    out_ids: *mut *mut lodtensor_t,
    out_scores: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let decoder = get(decoder, "decoder")?;
        let step_fn = step_fn.ok_or_else(|| null("step_fn"))?;
        let (oi, os) = (Out::new(out_ids, "out_ids")?, Out::new(out_scores, "out_scores")?);
        let mut step = |info: &StepInfo, lp: &mut [f32]| call(step_fn, "step_fn", info, lp, user_data);
        let mut edit = edit_fn.map(|f| move |info: &StepInfo, lp: &mut [f32]| call(f, "edit_fn", info, lp, user_data));
        let edit = edit.as_mut().map(|e| e as &mut crate::decoder::StepFn);
        let hyps = decoder.inner.run(num_sources, &mut step, edit)?;
        new_handle(oi, hyps.ids);
        new_handle(os, hyps.scores);
        Ok(())
    })
}

/// A decoder callback of `beam_search_decoder_run_tensors`: the model's next-token
/// log-probabilities of the live prefixes of `info` as a tensor, wherever the model computed them.
///
/// On success it returns 0 and stores in `*out_log_probs` (NULL on entry) a handle it creates,
/// `[num_prefixes, vocab_size]`, float32, float16 or bfloat16, on the host or on a CUDA device
/// (its LoD is not read; rows of prefixes whose last token is end_id are not read). The decoder
/// takes the handle over and destroys it after the step: hand over a handle the callback does not
/// use afterwards (`lodtensor_share` one it keeps). The work that writes log-probs on a device
/// must be queued on the library's stream for that device (`lodtensor_cuda_stream`; no wait is
/// needed then) or have finished (or be waited for by that stream) when the callback returns. A
/// non-zero return stops decoding; a handle stored anyway is destroyed too. Callbacks run on the
/// thread that called `beam_search_decoder_run_tensors` and may call the library.
pub type beam_search_tensor_step_fn = Option<
    unsafe extern "C" fn(
        info: *const beam_search_step_info_t,
        out_log_probs: *mut *mut lodtensor_t,
        user_data: *mut c_void,
    ) -> i32,
>;

/// Calls a tensor callback for one step and takes over the handle it returns, whatever its status.
unsafe fn call_tensor(
    f: unsafe extern "C" fn(*const beam_search_step_info_t, *mut *mut lodtensor_t, *mut c_void) -> i32,
    info: &StepInfo,
    user_data: *mut c_void,
) -> Result<LoDTensor> {
    // A handle sharing the parents' tensor, alive for the call.
    let parents = info.parent_idx_tensor.map(|t| lodtensor_t { inner: t.clone() });
    let c = c_info(info, parents.as_ref());
    let mut log_probs: *mut lodtensor_t = std::ptr::null_mut();
    let status = f(&c, &mut log_probs, user_data);
    // The parents' handle is the step's, on this stack: never the callback's to hand over.
    ensure!(
        log_probs.is_null() || !std::ptr::eq(log_probs.cast_const(), c.parent_idx_tensor),
        InvalidArgument,
        "step_fn: stored the borrowed info->parent_idx_tensor in out_log_probs at step {}; store a new handle \
         (lodtensor_share one to keep)",
        info.step
    );
    // Ours from here on, also when the callback failed: dropped with the step.
    let taken = (!log_probs.is_null()).then(|| Box::from_raw(log_probs).inner);
    ensure!(status == 0, CallbackFailed, "step_fn: returned status {status} at step {}", info.step);
    taken.ok_or_else(|| {
        err!(
            InvalidArgument,
            "step_fn: returned 0 but left out_log_probs NULL at step {}; store a new handle in it",
            info.step
        )
    })
}

/// `beam_search_decoder_run` for a model that hands over its log-probs as a tensor on the host
/// or on a CUDA device (no edit callback): the logits of a model served on a GPU never go through
/// the host.
///
/// Each step the decoder calls `step_fn` with the live prefixes (see `beam_search_step_info_t`)
/// and takes over the tensor it returns (see `beam_search_tensor_step_fn` for ownership). The
/// step's selection runs where that tensor lives: on a CUDA device the fused step runs there
/// (end_id is banned while prefixes are shorter than min_length as the rows are read, the
/// tensor is never written) and only the selected ids, scores and parents, a few per source,
/// come back to the host for the next `beam_search_step_info_t`; each such step waits for the
/// device once. Search, stopping and results are those of `beam_search_decoder_run`: for the
/// same log-probs (float16/bfloat16 values widened exactly) the sentences and scores are
/// identical, on either place. `*out_ids` and `*out_scores` are host tensors the caller destroys.
/// On failure nothing is returned and nothing leaks: every handle the callback stored has been
/// destroyed.
/// Returns LODTENSOR_NULL_ARGUMENT (`decoder`, `step_fn`, `out_ids`, `out_scores`),
/// LODTENSOR_INVALID_ARGUMENT (`num_sources` == 0; `step_fn` returned 0 but left
/// `*out_log_probs` NULL, or stored the borrowed `info->parent_idx_tensor` there; a returned
/// tensor whose dims are not `[num_prefixes, vocab_size]`),
/// LODTENSOR_CALLBACK_FAILED (`step_fn` returned non-zero; the message gives its status and the
/// step), LODTENSOR_UNSUPPORTED (a returned tensor neither float32, float16 nor bfloat16; on a
/// CUDA device in a build without CUDA), LODTENSOR_OUT_OF_MEMORY, LODTENSOR_INTERNAL (a CUDA
/// driver failure, named in the message).
#[no_mangle]
pub unsafe extern "C" fn beam_search_decoder_run_tensors(
    decoder: *const beam_search_decoder_t,
    num_sources: usize,
    step_fn: beam_search_tensor_step_fn,
    user_data: *mut c_void,
    out_ids: *mut *mut lodtensor_t,
    out_scores: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let decoder = get(decoder, "decoder")?;
        let step_fn = step_fn.ok_or_else(|| null("step_fn"))?;
        let (oi, os) = (Out::new(out_ids, "out_ids")?, Out::new(out_scores, "out_scores")?);
        let mut step = |info: &StepInfo| call_tensor(step_fn, info, user_data);
        let hyps = decoder.inner.run_tensors(num_sources, &mut step)?;
        new_handle(oi, hyps.ids);
        new_handle(os, hyps.scores);
        Ok(())
    })
}
