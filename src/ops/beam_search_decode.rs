//! Turning the steps of a beam search into sentences (spec §4.3, §4.4): `beam_search_decode`
//! backtracks the TensorArrays of selected ids and scores; `beam_search_gather_tree` does the same
//! for dense `[T, B, beam]` ids and parents.

use super::common_place;
use super::host_inputs::all_on_host;
use crate::backend::cpu::gather_tree::gather_tree_by_step;
use crate::dtype::{dispatch_dtype, DType, Scalar};
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::LoDTensor;
use crate::memory::lists;
use crate::place::Place;
use crate::tensor::Tensor;
use crate::tensor_array::TensorArray;

/// One hypothesis while it is built backwards.
struct Sentence<T> {
    ids: Vec<i64>,
    scores: Vec<T>,
}

/// Checks step `t` of the two arrays.
fn check_step(ids: &LoDTensor, scores: &LoDTensor, t: usize, sources: usize, dtype: DType) -> Result<()> {
    let levels = ids.lod().levels();
    ensure!(
        levels.len() == 2,
        InvalidArgument,
        "ids: element {t} has {} LoD level(s); beam_search_decode needs exactly 2 (source -> prefixes, prefix -> candidates)",
        levels.len()
    );
    ensure!(
        ids.tensor().dtype() == DType::I64,
        Unsupported,
        "ids: element {t} has dtype {}; it must be int64",
        ids.tensor().dtype()
    );
    let rows = ids.lod().rows().expect("2 levels");
    ensure!(
        ids.tensor().numel() == rows,
        InvalidArgument,
        "ids: element {t} has {} elements for {rows} rows; it must hold one id per row",
        ids.tensor().numel()
    );
    ensure!(
        levels[0].len() - 1 == sources,
        InvalidArgument,
        "ids: element {t} has {} source(s), element 0 has {sources}; every step must have the same sources",
        levels[0].len() - 1
    );
    ensure!(
        scores.tensor().dtype() == dtype,
        InvalidArgument,
        "scores: element {t} has dtype {}, element 0 has {dtype}; all must match",
        scores.tensor().dtype()
    );
    ensure!(
        scores.lod() == ids.lod() && scores.tensor().numel() == rows,
        InvalidArgument,
        "scores: element {t} does not have the LoD and element count of ids' element {t}; they must match"
    );
    Ok(())
}

/// Paddle's `beam_search_decode`: backtracks the per-step selected ids and scores (as written by
/// `beam_search_step`, 2 LoD levels each) into `beam_size` sentences per source.
///
/// Returns `(sentence_ids, sentence_scores)`: 1-D int64 and 1-D in `scores`' dtype, both with the
/// LoD `[[0, beam_size, 2 beam_size, ...], [token offsets of each sentence]]`. A sentence lists its
/// tokens from step 0 on, without the repeated `end_id`s of finished branches (nor any `end_id`
/// before its last token); its scores are the cumulative score at each token. The sentences of a
/// source are sorted by their final score, descending, stable (Our rule); slots never filled stay
/// empty sentences and come last (Our rule).
///
/// Errors: `InvalidArgument` for `beam_size == 0`, empty arrays or arrays of different lengths, a
/// step without exactly 2 LoD levels, a step with another number of sources than step 0, scores
/// whose LoD, element count or dtype differ from the ids', a bool `scores` (as Paddle), more
/// candidates for a source than `beam_size` slots, a backtracked index outside its source's
/// candidates, steps on different places; `Unsupported` for ids not int64, scores not
/// float32/float64/float16/bfloat16/int32/int64 (or a CUDA place in a build without CUDA);
/// `OutOfMemory` for a `beam_size` whose `sources * beam_size` sentences do not fit in memory.
///
/// On a CUDA device the backtracking (host bookkeeping over small tensors) runs on the host: all
/// steps' ids, then all steps' scores, are gathered on the device into one buffer each (one launch
/// each) and both copied to the host in one copy (one wait for the device); the results go back to
/// the device.
pub fn beam_search_decode(
    ids: &TensorArray,
    scores: &TensorArray,
    beam_size: usize,
    end_id: i64,
) -> Result<(LoDTensor, LoDTensor)> {
    ensure!(beam_size >= 1, InvalidArgument, "beam_size: is 0; it must be at least 1");
    ensure!(!ids.is_empty(), InvalidArgument, "ids: is empty; beam_search_decode needs at least one step");
    ensure!(
        ids.len() == scores.len(),
        InvalidArgument,
        "scores: has {} element(s), ids has {}; they must have one per step",
        scores.len(),
        ids.len()
    );
    let (ids, scores) = (ids.as_slice(), scores.as_slice());
    let mut place = Place::Cpu;
    for (t, (i, s)) in ids.iter().zip(scores).enumerate() {
        let p = common_place(&[("ids", i.tensor()), ("scores", s.tensor())])
            .map_err(|e| err!(InvalidArgument, "step {t}: {e}"))?;
        if t == 0 {
            place = p;
            place.ensure_usable()?;
        }
        ensure!(
            p == place,
            InvalidArgument,
            "ids: element {t} is on {p}, but element 0 is on {place}; every step must be on the same place"
        );
    }
    let dtype = scores[0].tensor().dtype();
    ensure!(dtype != DType::Bool, InvalidArgument, "scores: beam_search_decode does not support bool scores");
    let sources = ids[0].lod().levels().first().map_or(0, |l| l.len() - 1);
    dispatch_dtype!(dtype, "scores", [F32, F64, F16, BF16, I32, I64], |T| Ok(()))?;
    // Every step is checked before any is decoded (or copied from a device), so that a broken
    // step is reported the same way wherever the steps are and whatever the later steps hold.
    for t in (0..ids.len()).rev() {
        check_step(&ids[t], &scores[t], t, sources, dtype)?;
    }
    if let Place::Cuda(ordinal) = place {
        // All steps' ids, then all their scores, gathered on the device; both come to the host in
        // one copy (one wait).
        let [all_ids, all_scores] = all_on_host([&joined(ids)?, &joined(scores)?])?;
        let (host_ids, host_scores) = (split(ids, &all_ids)?, split(scores, &all_scores)?);
        let (i, s) = beam_search_decode(&host_ids, &host_scores, beam_size, end_id)?;
        let to_device = |x: LoDTensor| -> Result<LoDTensor> {
            let (t, lod) = x.into_parts();
            LoDTensor::new(crate::backend::cuda::copy_to_device(&t, ordinal)?, lod)
        };
        return Ok((to_device(i)?, to_device(s)?));
    }
    dispatch_dtype!(dtype, "scores", [F32, F64, F16, BF16, I32, I64], |T| decode::<T>(
        ids, scores, sources, beam_size, end_id
    ))
}

/// The elements of device tensors of one dtype, one after another, in one device tensor (one
/// gather).
fn joined(steps: &[LoDTensor]) -> Result<Tensor> {
    let dtype = steps[0].tensor().dtype();
    let blocks = lists::collect(steps.iter().enumerate().map(|(t, s)| (t, 0..s.tensor().numel())), "steps: blocks")?;
    let total: usize = blocks.iter().map(|(_, r)| r.len()).sum();
    let srcs = lists::collect(steps.iter().map(|s| s.tensor()), "steps: sources")?;
    crate::backend::cuda::gather_sources(&srcs, dtype.size(), &blocks, dtype, crate::dim::Dim::new(&[total])?)
}

/// `steps` again, as host tensors (each with its LoD) cut from `all`, their `joined` elements.
fn split(steps: &[LoDTensor], all: &Tensor) -> Result<TensorArray> {
    let bytes = all.bytes()?;
    let mut at = 0;
    let mut out = lists::with_capacity(steps.len(), "steps: host copies")?;
    for s in steps {
        let n = s.tensor().nbytes();
        out.push(LoDTensor::new(Tensor::from_bytes(all.dtype(), *s.dims(), &bytes[at..at + n])?, s.lod().clone())?);
        at += n;
    }
    Ok(TensorArray::from_vec(out))
}

fn decode<T: Scalar>(
    ids: &[LoDTensor],
    scores: &[LoDTensor],
    sources: usize,
    beam: usize,
    end_id: i64,
) -> Result<(LoDTensor, LoDTensor)> {
    let mut sentences: Vec<Vec<Sentence<T>>> =
        lists::collect((0..sources).map(|_| Vec::new()), "beam_search_decode: sentences")?;
    let mut prefixes: Vec<Vec<usize>> = lists::filled(sources, Vec::new(), "beam_search_decode: prefixes")?;
    for t in (0..ids.len()).rev() {
        let lod = ids[t].lod().levels();
        let (p0, p1) = (&lod[0], &lod[1]);
        let step_ids = ids[t].tensor().as_slice::<i64>()?;
        let step_scores = scores[t].tensor().as_slice::<T>()?;
        for s in 0..sources {
            let (slots, prefix) = (&mut sentences[s], &mut prefixes[s]);
            if prefix.is_empty() {
                for p in p0[s]..p0[s + 1] {
                    for c in p1[p]..p1[p + 1] {
                        ensure!(
                            slots.len() < beam,
                            InvalidArgument,
                            "ids: at step {t} source {s} has more than beam_size = {beam} candidates"
                        );
                        prefix.push(p);
                        slots.push(Sentence { ids: vec![step_ids[c]], scores: vec![step_scores[c]] });
                    }
                }
                continue;
            }
            let (lo, hi) = (p1[p0[s]], p1[p0[s + 1]]);
            for (slot, idx) in slots.iter_mut().zip(prefix.iter_mut()) {
                let c = *idx;
                ensure!(
                    (lo..hi).contains(&c),
                    InvalidArgument,
                    "ids: at step {t} source {s} owns candidates [{lo}, {hi}), but step {} extends candidate {c}; \
                     the steps' LoDs do not chain",
                    t + 1
                );
                if step_ids[c] != end_id || slot.ids.is_empty() {
                    slot.ids.push(step_ids[c]);
                    slot.scores.push(step_scores[c]);
                }
                // The prefix owning candidate c: the first whose candidates end after c.
                *idx = p0[s] + p1[p0[s] + 1..=p0[s + 1]].partition_point(|&end| end <= c);
            }
        }
    }
    let tokens = sentences.iter().flatten().map(|s| s.ids.len()).sum();
    let mut out_ids = lists::with_capacity(tokens, "beam_search_decode: sentence ids")?;
    let mut out_scores = lists::with_capacity(tokens, "beam_search_decode: sentence scores")?;
    // Every source gets `beam` sentences, the empty ones included; a beam_size far beyond the
    // candidates is refused here, before the lists are grown, not by an abort in the allocator.
    let too_many =
        || err!(OutOfMemory, "beam_size: {beam} sentences for each of {sources} sources do not fit in memory");
    let mut lengths = Vec::new();
    lengths.try_reserve_exact(sources.checked_mul(beam).ok_or_else(too_many)?).map_err(|_| too_many())?;
    for mut slots in sentences {
        slots.try_reserve_exact(beam - slots.len()).map_err(|_| too_many())?;
        slots.resize_with(beam, || Sentence { ids: Vec::new(), scores: Vec::new() });
        for s in slots.iter_mut() {
            s.ids.reverse();
            s.scores.reverse();
        }
        // Stable, descending by final score; empty sentences last.
        slots.sort_by(|a, b| match (a.scores.last(), b.scores.last()) {
            (Some(x), Some(y)) => descending(x.to_f64(), y.to_f64()),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        for s in slots {
            lengths.push(s.ids.len());
            out_ids.extend_from_slice(&s.ids);
            out_scores.extend_from_slice(&s.scores);
        }
    }
    let lod = Lod::from_lengths(&[lists::filled(sources, beam, "beam_search_decode: output LoD")?, lengths])?;
    let n = out_ids.len();
    Ok((
        LoDTensor::new(Tensor::from_slice(&out_ids, &[n])?, lod.clone())?,
        LoDTensor::new(Tensor::from_slice(&out_scores, &[n])?, lod)?,
    ))
}

/// Paddle's `gather_tree`: for `ids` and `parents` of shape `[T, B, beam]` (int32 or int64, the
/// same dtype), `out[T-1, b, k] = ids[T-1, b, k]` and, following `p = parents[T-1, b, k]` back,
/// `out[t, b, k] = ids[t, b, p]`, `p = parents[t, b, p]` for `t = T-2 .. 0`. LoDs are not read;
/// the result has no LoD. `T = 0` gives an empty result (Our rule).
///
/// Errors: `InvalidArgument` for inputs not 3-D or of different shapes or dtypes;
/// `OutOfRange` for a followed parent outside `[0, beam)` (Our rule: negative parents too);
/// `Unsupported` for other dtypes (or a CUDA place in a build without CUDA).
///
/// On a CUDA device one thread follows each chain; a bad parent raises a flag that the host reads
/// (this waits for the device), and then the error is found on host copies, so it names the same
/// element as on the CPU.
pub fn beam_search_gather_tree(ids: &LoDTensor, parents: &LoDTensor) -> Result<LoDTensor> {
    let place = common_place(&[("ids", ids.tensor()), ("parents", parents.tensor())])?;
    let dims = ids.dims().as_slice();
    ensure!(dims.len() == 3, InvalidArgument, "ids: has dims {dims:?}; gather_tree needs 3-D [T, B, beam]");
    ensure!(
        parents.dims() == ids.dims(),
        InvalidArgument,
        "parents: has dims {:?}, ids has {dims:?}; they must have the same shape",
        parents.dims()
    );
    ensure!(
        parents.tensor().dtype() == ids.tensor().dtype(),
        InvalidArgument,
        "parents: has dtype {}, ids has {}; they must have the same dtype",
        parents.tensor().dtype(),
        ids.tensor().dtype()
    );
    let (steps, batch, beam) = (dims[0], dims[1], dims[2]);
    if let Place::Cuda(_) = place {
        dispatch_dtype!(ids.tensor().dtype(), "ids", [I32, I64], |T| Ok(()))?;
        if let Some(out) = crate::backend::cuda::gather_tree(ids.tensor(), parents.tensor(), steps, batch, beam)? {
            return Ok(LoDTensor::dense(out));
        }
        let host = |t: &LoDTensor| crate::backend::cuda::copy_to_host(t.tensor()).map(LoDTensor::dense);
        beam_search_gather_tree(&host(ids)?, &host(parents)?)?;
        return Err(err!(Internal, "gather_tree: the device saw a bad parent, the host copies have none"));
    }
    let mut out = Tensor::uninit(ids.tensor().dtype(), *ids.dims())?;
    // `i64::from` widens int32 and is the identity for int64.
    #[allow(clippy::useless_conversion)]
    dispatch_dtype!(ids.tensor().dtype(), "ids", [I32, I64], |T| {
        let (src, par) = (ids.tensor().as_slice::<T>()?, parents.tensor().as_slice::<T>()?);
        let dst = out.as_mut_slice::<T>()?;
        // A bad parent sends the fast path to the chain-by-chain loop below, which names the
        // first bad parent in chain order.
        let done = steps > 0 && gather_tree_by_step(src, par, batch, beam, steps, dst)?;
        let at = |t: usize, b: usize, k: usize| (t * batch + b) * beam + k;
        for b in 0..if done { 0 } else { batch } {
            for k in 0..beam {
                if steps == 0 {
                    continue;
                }
                dst[at(steps - 1, b, k)] = src[at(steps - 1, b, k)];
                let mut p = i64::from(par[at(steps - 1, b, k)]);
                let mut from = (steps - 1, k);
                for t in (0..steps - 1).rev() {
                    ensure!(
                        p >= 0 && (p as u64) < beam as u64,
                        OutOfRange,
                        "parents: parents[{}][{b}][{}] = {p} is out of range [0, {beam}); parents must be less than beam size",
                        from.0,
                        from.1
                    );
                    let q = p as usize;
                    dst[at(t, b, k)] = src[at(t, b, q)];
                    p = i64::from(par[at(t, b, q)]);
                    from = (t, q);
                }
            }
        }
        Ok(())
    })?;
    Ok(LoDTensor::dense(out))
}

/// The order of scores ranked highest first, for a stable sort: equal scores keep their order,
/// -0 and +0 included (Paddle compares with `>`); NaN, which `>` cannot place, ranks by its sign
/// bit as `f64::total_cmp` does (a positive NaN first).
fn descending(x: f64, y: f64) -> std::cmp::Ordering {
    // Adding +0 turns -0 into +0 and changes nothing else.
    (y + 0.0).total_cmp(&(x + 0.0))
}
