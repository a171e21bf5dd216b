//! The sequence decoder (spec §4.0): the whole beam-search loop around a caller's model. Each step
//! the caller gets the live prefixes (last token, parent prefix, cumulative score, grouped by
//! source) and fills their next-token log-probabilities; the library selects the next beams with
//! the fused step, keeps the selected ids and scores in TensorArrays, and at the end backtracks
//! them into sentences (`beam_search_decode`), ranked with an optional length penalty.

use crate::backend::cuda::StepSources;
use crate::dim::Dim;
use crate::dtype::{dispatch_dtype, DType, Scalar};
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::ops::beam_search::{fused_step_on_slices, BeamSearchStep};
use crate::ops::beam_search_decode::beam_search_decode;
use crate::ops::transfer::to_place;
use crate::place::Place;
use crate::tensor::Tensor;
use crate::tensor_array::TensorArray;

/// How a [`Decoder`] searches.
#[derive(Clone, Debug, PartialEq)]
pub struct DecoderOptions {
    /// Prefixes kept per source sentence (>= 1).
    pub beam_size: usize,
    /// Tokens of the model's output (>= 1); each step the caller fills `vocab_size` log-probs per prefix.
    pub vocab_size: usize,
    /// The token every prefix starts from; it is not part of the returned sentences.
    pub start_id: i64,
    /// The token that ends a sentence (in `[0, vocab_size)`, not `start_id`); it is returned as the
    /// last token of the sentences that emitted it.
    pub end_id: i64,
    /// The most tokens a sentence gets (>= 1); sentences still open then are returned as they are.
    pub max_length: usize,
    /// `end_id` is banned (log-prob set to -inf) while a prefix has fewer than this many tokens.
    pub min_length: usize,
    /// Sentences are ranked by `score / ((5 + length) / 6)^length_penalty` (Wu et al. 2016; 0 =
    /// plain cumulative log-probability). Finite, >= 0.
    pub length_penalty: f64,
    /// Sentences returned per source (1 ..= beam_size).
    pub num_hypotheses: usize,
}

impl Default for DecoderOptions {
    fn default() -> Self {
        DecoderOptions {
            beam_size: 4,
            vocab_size: 0,
            start_id: 0,
            end_id: 1,
            max_length: 64,
            min_length: 0,
            length_penalty: 0.0,
            num_hypotheses: 1,
        }
    }
}

/// What the step function sees: the live prefixes of this step, grouped by source.
#[derive(Clone, Copy, Debug)]
pub struct StepInfo<'a> {
    /// 0 for the first token.
    pub step: usize,
    /// The prefixes of source `s` are `source_offsets[s] .. source_offsets[s + 1]` (a finished
    /// source has none).
    pub source_offsets: &'a [usize],
    /// The last token of each prefix (`start_id` at step 0).
    pub ids: &'a [i64],
    /// The prefix of the previous step each prefix extends: reorder the model state with it
    /// (`state[i] = previous_state[parent_idx[i]]`). At step 0 it is the source index.
    pub parent_idx: &'a [i64],
    /// The cumulative log-probability of each prefix.
    pub scores: &'a [f32],
    /// Log-probs per prefix row.
    pub vocab_size: usize,
    /// In [`Decoder::run_tensors`], when the previous step ran on a CUDA device: `parent_idx` as an
    /// int32 `[P]` tensor on that device, so that state there is reordered
    /// ([`crate::beam_search_gather_states`]) without uploading it. `None` otherwise (step 0, a
    /// step on the host, [`Decoder::run`]).
    pub parent_idx_tensor: Option<&'a LoDTensor>,
}

/// A step's selection on the device where it was made: the next step's prefixes there, and the
/// parents that the step callback sees as `parent_idx_tensor`.
struct DeviceSelection {
    ids: LoDTensor,
    scores: LoDTensor,
    parents: LoDTensor,
}

/// The decoded sentences.
#[derive(Clone, Debug)]
pub struct Hypotheses {
    /// int64, 1-D, LoD `[source -> sentences, sentence -> tokens]`, best sentence of each source first.
    pub ids: LoDTensor,
    /// float32, 1-D, one ranking score per sentence, LoD `[source -> sentences]`.
    pub scores: LoDTensor,
}

/// A step callback: fills `log_probs` (`ids.len() x vocab_size`, row-major; its contents on entry
/// are unspecified) for the prefixes of `info`.
pub type StepFn<'a> = dyn FnMut(&StepInfo, &mut [f32]) -> Result<()> + 'a;

/// A step callback of [`Decoder::run_tensors`]: returns the log-probs of the prefixes of `info`
/// as a `[prefixes, vocab_size]` tensor (float32, float16 or bfloat16) on the host or on a CUDA
/// device; on a device the step's selection runs there, queued on the device's stream after the
/// work on it so far (see [`crate::cuda_stream`]: a model that runs on that stream needs no wait).
pub type TensorStepFn<'a> = dyn FnMut(&StepInfo) -> Result<LoDTensor> + 'a;

/// A beam-search decoder with fixed options.
#[derive(Clone, Debug)]
pub struct Decoder {
    options: DecoderOptions,
}

impl Decoder {
    /// Checks the options: `beam_size`, `vocab_size`, `max_length` >= 1; `end_id` in
    /// `[0, vocab_size)` and not `start_id`; `min_length <= max_length`; `length_penalty` finite and
    /// >= 0; `1 <= num_hypotheses <= beam_size`. Errors: `InvalidArgument` naming the option.
    pub fn new(options: DecoderOptions) -> Result<Decoder> {
        let o = &options;
        ensure!(o.beam_size >= 1, InvalidArgument, "options.beam_size: is 0; it must be at least 1");
        ensure!(o.vocab_size >= 1, InvalidArgument, "options.vocab_size: is 0; it must be at least 1");
        ensure!(o.max_length >= 1, InvalidArgument, "options.max_length: is 0; it must be at least 1");
        ensure!(
            o.end_id >= 0 && (o.end_id as u64) < o.vocab_size as u64,
            InvalidArgument,
            "options.end_id: {} is out of range [0, {}) of the vocabulary",
            o.end_id,
            o.vocab_size
        );
        ensure!(
            o.start_id != o.end_id,
            InvalidArgument,
            "options.start_id: equals end_id ({}); they must differ",
            o.end_id
        );
        ensure!(
            o.min_length <= o.max_length,
            InvalidArgument,
            "options.min_length: {} is greater than max_length {}",
            o.min_length,
            o.max_length
        );
        ensure!(
            o.length_penalty.is_finite() && o.length_penalty >= 0.0,
            InvalidArgument,
            "options.length_penalty: {} must be finite and >= 0",
            o.length_penalty
        );
        ensure!(
            o.num_hypotheses >= 1 && o.num_hypotheses <= o.beam_size,
            InvalidArgument,
            "options.num_hypotheses: {} is out of range [1, beam_size = {}]",
            o.num_hypotheses,
            o.beam_size
        );
        Ok(Decoder { options })
    }

    pub fn options(&self) -> &DecoderOptions {
        &self.options
    }

    /// Decodes `num_sources` (>= 1) source sentences. Each step calls `step` and then `edit` (if
    /// any; it may change the log-probs: ban or force tokens) with the live prefixes; between the
    /// two, `end_id` gets -inf while the prefixes are shorter than `min_length`. Then the next beams
    /// are selected (rows of prefixes that already ended are not read). The loop ends after
    /// `max_length` steps or when every prefix has ended. The returned sentences (without the
    /// start token) are ranked per source by the length-penalized score, best first, at most
    /// `num_hypotheses` per source; sentences whose score is -inf (only banned tokens were left)
    /// are dropped.
    ///
    /// Errors: `InvalidArgument` for `num_sources == 0`; a callback's error is returned as is and
    /// stops decoding; `OutOfMemory` when `prefixes x vocab_size` overflows.
    pub fn run(&self, num_sources: usize, step: &mut StepFn, mut edit: Option<&mut StepFn>) -> Result<Hypotheses> {
        let o = &self.options;
        let mut beams = Beams::start(o, num_sources)?;
        let mut log_probs: Vec<f32> = Vec::new();
        for t in 0..o.max_length {
            let Some(sources) = beams.live_sources(t, o.end_id)? else {
                break; // every branch ended: the next step would prune every source
            };
            let info = beams.info(t, &sources, o.vocab_size)?;
            let (ids, rows) = (info.ids, info.ids.len());
            let n = rows
                .checked_mul(o.vocab_size)
                .ok_or_else(|| err!(OutOfMemory, "log_probs: {rows} prefixes x {} tokens overflows", o.vocab_size))?;
            // Reused between steps; the caller writes every entry, so no clearing.
            log_probs.try_reserve_exact(n.saturating_sub(log_probs.len())).map_err(|_| {
                err!(OutOfMemory, "log_probs: {rows} prefixes x {} tokens cannot be allocated", o.vocab_size)
            })?;
            log_probs.resize(n, 0.0);
            step(&info, &mut log_probs)?;
            if t < o.min_length {
                for row in log_probs.chunks_exact_mut(o.vocab_size) {
                    row[o.end_id as usize] = f32::NEG_INFINITY;
                }
            }
            if let Some(edit) = edit.as_mut() {
                edit(&info, &mut log_probs)?;
            }
            let out = fused_step_on_slices(
                sources.clone(),
                o.beam_size,
                &log_probs,
                o.vocab_size,
                ids,
                info.scores,
                o.end_id,
            )?;
            if !beams.advance(out)? {
                break;
            }
        }
        self.rank(num_sources, &beams)
    }

    /// [`Decoder::run`] for a model that hands over its log-probs as a tensor, wherever they are
    /// (no edit callback). When the tensor is on a CUDA device, the fused step runs there (the
    /// `min_length` ban of `end_id` is applied while the rows are read, not by writing them), the
    /// prefixes of the next step stay on the device for the step after, and the selected ids,
    /// scores and parents (a few per source) are copied to the host for [`StepInfo`] and the final
    /// backtracking, with the row offsets, in one copy; each step therefore waits for the device
    /// once, and uploads nothing (the sources' rows are on the device from the step before). The
    /// result equals `run`'s for the same log-probs, on either place.
    ///
    /// Errors: those of `run`; `InvalidArgument` for a returned tensor that is not `[prefixes,
    /// vocab_size]`; `Unsupported` for a dtype other than float32/float16/bfloat16.
    pub fn run_tensors(&self, num_sources: usize, step: &mut TensorStepFn) -> Result<Hypotheses> {
        let o = &self.options;
        let mut beams = Beams::start(o, num_sources)?;
        // The previous step's selection where it was made on a device: the next step's inputs there.
        let mut on_device: Option<DeviceSelection> = None;
        for t in 0..o.max_length {
            let Some(sources) = beams.live_sources(t, o.end_id)? else {
                break; // every branch ended: the next step would prune every source
            };
            let mut info = beams.info(t, &sources, o.vocab_size)?;
            info.parent_idx_tensor = on_device.as_ref().map(|s| &s.parents);
            let (rows, v) = (info.ids.len(), o.vocab_size);
            let lp = step(&info)?;
            ensure!(
                lp.dims().as_slice() == [rows, v],
                InvalidArgument,
                "log_probs: has dims {:?}; the step function must return [{rows}, {v}] (prefixes x vocabulary)",
                lp.dims()
            );
            let banned = (t < o.min_length).then_some(o.end_id as usize);
            let out = match lp.tensor().place() {
                Place::Cpu => {
                    let out = self.host_step(&lp, &info, &sources, banned)?;
                    // A later device step must start from this step's selection.
                    on_device = None;
                    out
                }
                Place::Cuda(_) => self.device_step(&lp, &beams, &sources, banned, &mut on_device)?,
            };
            if !beams.advance(out)? {
                break;
            }
        }
        self.rank(num_sources, &beams)
    }

    /// A step of [`Decoder::run_tensors`] on host log-probs `lp`; `banned` (end_id while prefixes
    /// are shorter than min_length) is set to -inf in a copy, the caller's tensor is not written.
    fn host_step(
        &self,
        lp: &LoDTensor,
        info: &StepInfo,
        sources: &[usize],
        banned: Option<usize>,
    ) -> Result<BeamSearchStep> {
        let o = &self.options;
        let v = o.vocab_size;
        dispatch_dtype!(lp.tensor().dtype(), "log_probs", [F32, F16, BF16], |T| {
            let src = lp.tensor().as_slice::<T>()?;
            let step = |log_probs: &[T]| {
                fused_step_on_slices(sources.to_vec(), o.beam_size, log_probs, v, info.ids, info.scores, o.end_id)
            };
            match banned {
                Some(b) => {
                    let mut copy = src.to_vec();
                    copy.chunks_exact_mut(v).for_each(|row| row[b] = T::cast_f64(f64::NEG_INFINITY));
                    step(&copy)
                }
                None => step(src),
            }
        })
    }

    /// A step of [`Decoder::run_tensors`] on log-probs `lp` on a CUDA device: the fused step runs
    /// there, on the previous step's selection still on that device (`on_device`, replaced by
    /// this step's), else on the host prefixes copied over; the selection comes back to the host.
    fn device_step(
        &self,
        lp: &LoDTensor,
        beams: &Beams,
        sources: &[usize],
        banned: Option<usize>,
        on_device: &mut Option<DeviceSelection>,
    ) -> Result<BeamSearchStep> {
        let o = &self.options;
        dispatch_dtype!(lp.tensor().dtype(), "log_probs", [F32, F16, BF16], |T| Ok(()))?;
        let place = lp.tensor().place();
        let (di, ds) = match on_device.take() {
            Some(s) if s.ids.tensor().place() == place => (s.ids, s.scores),
            _ => (to_place(&beams.ids, place)?, to_place(&beams.scores, place)?),
        };
        // The previous selection's LoD carries its level 0 in rows on the device (`sources`).
        debug_assert_eq!(di.lod().abs_level(0).ok().as_deref(), Some(sources));
        let sources = StepSources { lod: di.lod(), level: 0, rows: sources.to_vec() };
        let step = crate::backend::cuda::fused_step(
            sources,
            o.beam_size,
            lp.tensor(),
            o.vocab_size,
            di.tensor(),
            ds.tensor(),
            o.end_id,
            banned,
            true,
        )?;
        let [ids, scores, parents] =
            step.host.ok_or_else(|| err!(Internal, "the fused step brought no host copies"))?;
        // The host copies, which the decoder keeps for the backtracking, get a LoD without the
        // device copies, which would otherwise stay allocated as long as they.
        let lod = step.lod.detached()?;
        let out = BeamSearchStep {
            selected_ids: LoDTensor::new(ids, lod.clone())?,
            selected_scores: LoDTensor::new(scores, lod)?,
            parent_idx: parents,
        };
        *on_device = Some(DeviceSelection {
            ids: LoDTensor::new(step.ids, step.lod.clone())?,
            scores: LoDTensor::new(step.scores, step.lod)?,
            parents: LoDTensor::dense(step.parents),
        });
        Ok(out)
    }

    /// Backtracks the steps into sentences, drops the start token, applies the length penalty,
    /// keeps the best `num_hypotheses`.
    fn rank(&self, sources: usize, beams: &Beams) -> Result<Hypotheses> {
        let o = &self.options;
        let (ids, scores) = beam_search_decode(&beams.id_steps, &beams.score_steps, o.beam_size, o.end_id)?;
        let (all_ids, all_scores) = (ids.tensor().as_slice::<i64>()?, scores.tensor().as_slice::<f32>()?);
        let offsets = &ids.lod().levels()[1];
        // Each list is reserved at its most, so none grows while it is filled.
        let sentences = sources.saturating_mul(o.num_hypotheses);
        let mut out_ids = lists::with_capacity(all_ids.len(), "hypotheses: ids")?;
        let mut out_scores = lists::with_capacity(sentences, "hypotheses: scores")?;
        let mut lengths = lists::with_capacity(sentences, "hypotheses: lengths")?;
        let mut per_source = lists::with_capacity(sources, "hypotheses: sentences per source")?;
        let mut ranked: Vec<(f32, usize, usize)> = lists::with_capacity(o.beam_size, "hypotheses: ranked")?;
        for s in 0..sources {
            ranked.clear();
            for k in 0..o.beam_size {
                let (a, b) = (offsets[s * o.beam_size + k], offsets[s * o.beam_size + k + 1]);
                // Sentences start with the start token; one without any generated token is empty.
                if b <= a + 1 {
                    continue;
                }
                let raw = all_scores[b - 1];
                if raw == f32::NEG_INFINITY {
                    continue;
                }
                let len = (b - a - 1) as f64;
                let score = if o.length_penalty == 0.0 {
                    raw
                } else {
                    (raw as f64 / ((5.0 + len) / 6.0).powf(o.length_penalty)) as f32
                };
                ranked.push((score, a + 1, b));
            }
            ranked.sort_by(|x, y| y.0.total_cmp(&x.0));
            ranked.truncate(o.num_hypotheses);
            per_source.push(ranked.len());
            for &(score, a, b) in &ranked {
                out_scores.push(score);
                lengths.push(b - a);
                out_ids.extend_from_slice(&all_ids[a..b]);
            }
        }
        let n = out_ids.len();
        let h = out_scores.len();
        Ok(Hypotheses {
            ids: LoDTensor::new(
                Tensor::from_slice(&out_ids, &[n])?,
                Lod::from_lengths(&[per_source.clone(), lengths])?,
            )?,
            scores: LoDTensor::new(Tensor::from_slice(&out_scores, &[h])?, Lod::from_lengths(&[per_source])?)?,
        })
    }
}

/// The decoding state between steps: the live prefixes' last ids and scores (2-level LoD: sources,
/// then prefixes), their parents in the previous step, and every step's selection for the final
/// backtracking.
struct Beams {
    ids: LoDTensor,
    scores: LoDTensor,
    parents: Vec<i64>,
    id_steps: TensorArray,
    score_steps: TensorArray,
}

impl Beams {
    /// One prefix per source: the start token, score 0.
    fn start(o: &DecoderOptions, num_sources: usize) -> Result<Beams> {
        ensure!(num_sources >= 1, InvalidArgument, "num_sources: is 0; decode at least one source");
        // Every list sized by the caller's count is reserved first: too many is OutOfMemory, not
        // an abort.
        let identity = || lists::collect(0..num_sources.saturating_add(1), "num_sources: source offsets");
        let lod = Lod::from_offsets(vec![identity()?, identity()?])?;
        let dims = Dim::new(&[num_sources, 1])?;
        let mut ids = Tensor::zeros(DType::I64, dims)?;
        ids.as_mut_slice::<i64>()?.fill(o.start_id);
        let ids = LoDTensor::new(ids, lod.clone())?;
        let scores = LoDTensor::new(Tensor::zeros(DType::F32, dims)?, lod)?;
        let (mut id_steps, mut score_steps) = (TensorArray::new(), TensorArray::new());
        id_steps.push(ids.clone());
        score_steps.push(scores.clone());
        let parents = lists::collect((0..num_sources).map(|s| s as i64), "num_sources: parents")?;
        Ok(Beams { ids, scores, parents, id_steps, score_steps })
    }

    /// The source offsets of step `t`'s prefixes; none once every branch has ended (after step 0),
    /// when a further step would prune every source.
    fn live_sources(&self, t: usize, end_id: i64) -> Result<Option<Vec<usize>>> {
        let ended = t > 0 && self.ids.tensor().as_slice::<i64>()?.iter().all(|&id| id == end_id);
        (!ended).then(|| self.ids.lod().abs_level(0)).transpose()
    }

    /// What the step callbacks see at step `t`.
    fn info<'a>(&'a self, t: usize, sources: &'a [usize], vocab_size: usize) -> Result<StepInfo<'a>> {
        Ok(StepInfo {
            step: t,
            source_offsets: sources,
            ids: self.ids.tensor().as_slice::<i64>()?,
            parent_idx: &self.parents,
            scores: self.scores.tensor().as_slice::<f32>()?,
            vocab_size,
            parent_idx_tensor: None,
        })
    }

    /// Takes a step's selection (on the host); false when it selected nothing (decoding ends).
    fn advance(&mut self, out: BeamSearchStep) -> Result<bool> {
        if out.selected_ids.dims().as_slice()[0] == 0 {
            return Ok(false);
        }
        self.parents = lists::collect(out.parent_idx.as_slice::<i32>()?.iter().map(|&p| p as i64), "parents")?;
        self.id_steps.push(out.selected_ids.clone());
        self.score_steps.push(out.selected_scores.clone());
        self.ids = out.selected_ids;
        self.scores = out.selected_scores;
        Ok(true)
    }
}
