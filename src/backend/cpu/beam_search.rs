//! Beam-search selection kernels: Paddle's bounded "top beam" list per source sentence, the
//! regrouping of the selected items by prefix row with the pruning of finished sources, and the
//! fused step that selects straight from the log-probabilities without materializing
//! `pre_score + log_prob` for every vocabulary entry.

use super::pool::for_each_segment_with_work;
use super::topk::{select_row, select_row_reaching};
use crate::dtype::Scalar;
use crate::error::{err, Result};
use crate::memory::lists;

/// One candidate: the prefix row it extends, its token and its accumulated score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candidate<S> {
    pub row: usize,
    pub id: i64,
    pub score: S,
}

/// Marks an unused slot of a source's top list.
const EMPTY_ROW: usize = usize::MAX;

/// Paddle's `Item::operator<`: lower score, or equal score and lower row.
#[inline(always)]
fn less<S: PartialOrd>(a: &Candidate<S>, b: &Candidate<S>) -> bool {
    a.score < b.score || (a.score == b.score && a.row < b.row)
}

/// Paddle's `Insert` into a top list of capacity `top.len()` holding `len` items; returns the new
/// length. Reproduced step for step (the tie behaviour is part of the result): a full list drops
/// its last item for any candidate not strictly below it.
#[inline]
pub fn offer<S: PartialOrd + Copy>(top: &mut [Candidate<S>], len: usize, c: Candidate<S>) -> usize {
    let beam = top.len();
    let n = if len < beam {
        len + 1
    } else if less(&c, &top[beam - 1]) {
        return len;
    } else {
        beam
    };
    let mut k = n - 1;
    while k > 0 {
        if less(&top[k - 1], &c) {
            top[k] = top[k - 1];
            k -= 1;
        } else {
            break;
        }
    }
    top[k] = c;
    n
}

/// Runs `fill(source, list) -> used` for every source on the pool; the lists are the `beam`-long
/// segments of the result, unused slots marked empty.
fn per_source<S: Scalar>(
    sources: usize,
    beam: usize,
    work_bytes: usize,
    fill: impl Fn(usize, &mut [Candidate<S>]) -> usize + Sync + Send,
) -> Result<Vec<Candidate<S>>> {
    let empty = Candidate { row: EMPTY_ROW, id: 0, score: S::ZERO };
    let total = sources
        .checked_mul(beam)
        .ok_or_else(|| err!(OutOfMemory, "beam_size: {sources} sources x beam {beam} overflows"))?;
    let mut tops = lists::filled(total, empty, "beam_size: candidate slots")?;
    let bounds = lists::collect((0..sources + 1).map(|s| s * beam), "beam search: source bounds")?;
    for_each_segment_with_work(&mut tops, &bounds, work_bytes, |s, list| {
        let used = fill(s, list);
        list[used..].iter_mut().for_each(|c| *c = empty);
    })?;
    Ok(tops)
}

/// The rows' candidates as Paddle's CPU beam_search offers them: a finished row (`pre_ids[r] ==
/// end_id`) offers only `(end_id, pre_scores[r])`; any other row offers its `k` candidates from
/// `row_candidates(r, emit)`; `work_bytes` (the candidates' bytes) decides whether to go parallel.
#[allow(clippy::too_many_arguments)]
pub fn select_unfused<S: Scalar>(
    source_rows: &[usize],
    beam: usize,
    work_bytes: usize,
    pre_ids: &[i64],
    pre_scores: &[S],
    end_id: i64,
    row_candidates: impl Fn(usize, &mut dyn FnMut(Candidate<S>)) + Sync + Send,
) -> Result<Vec<Candidate<S>>> {
    per_source(source_rows.len() - 1, beam, work_bytes, |s, list| {
        let mut len = 0;
        for r in source_rows[s]..source_rows[s + 1] {
            if pre_ids[r] == end_id {
                len = offer(list, len, Candidate { row: r, id: end_id, score: pre_scores[r] });
            } else {
                row_candidates(r, &mut |c| len = offer(list, len, c));
            }
        }
        len
    })
}

/// The fused step's selection: for each live row, its `min(beam, V)` best log-probabilities (one
/// pass over the row, ties by smaller token id), each offered as `pre_scores[r] + log_prob`, in
/// that order, exactly as top-k followed by beam_search would offer them.
#[allow(clippy::too_many_arguments)]
pub fn select_fused<T: Scalar>(
    source_rows: &[usize],
    beam: usize,
    log_probs: &[T],
    vocab: usize,
    pre_ids: &[i64],
    pre_scores: &[f32],
    end_id: i64,
    to_f32: impl Fn(T) -> f32 + Sync + Send,
) -> Result<Vec<Candidate<f32>>> {
    let k = beam.min(vocab);
    per_source(source_rows.len() - 1, beam, std::mem::size_of_val(log_probs), |s, list| {
        let mut vals = vec![T::ZERO; k];
        let mut idx = vec![0usize; k];
        let mut len = 0;
        for r in source_rows[s]..source_rows[s + 1] {
            if pre_ids[r] == end_id {
                len = offer(list, len, Candidate { row: r, id: end_id, score: pre_scores[r] });
                continue;
            }
            let row = &log_probs[r * vocab..(r + 1) * vocab];
            // Once the source's list is full, `offer` rejects any candidate scoring below its last
            // item (rows come in order, so the row tie-break never keeps the last item against an
            // equal score), so only the row's leading entries that can score that much matter:
            // usually none, found with one read of the row.
            let bar = (len == list.len()).then(|| offer_bar::<T>(list[len - 1].score, pre_scores[r])).flatten();
            let n = match bar.and_then(|t| select_row_reaching::<T, true>(row, t, &mut vals, &mut idx)) {
                Some(n) => n,
                None => {
                    select_row::<T, true>(row, &mut vals, &mut idx);
                    k
                }
            };
            for (&v, &j) in vals[..n].iter().zip(&idx[..n]) {
                let score = (pre_scores[r] + to_f32(v)).one_nan();
                len = offer(list, len, Candidate { row: r, id: j as i64, score });
            }
        }
        len
    })
}

/// A score with any NaN written as its type's one quiet NaN (the default NaN of Rust, sign clear,
/// payload zero). Which NaN an addition yields differs between processors (x86 keeps an operand's
/// NaN or makes a negative one, a CUDA device makes `0x7fffffff`), and the host's and the
/// device's scores must agree bit for bit; the device kernels do the same (beam.cu).
pub(crate) trait OneNan: Copy {
    fn one_nan(self) -> Self;
}
impl OneNan for f32 {
    fn one_nan(self) -> f32 {
        if self.is_nan() {
            f32::NAN
        } else {
            self
        }
    }
}
impl OneNan for f64 {
    fn one_nan(self) -> f64 {
        if self.is_nan() {
            f64::NAN
        } else {
            self
        }
    }
}

/// A log-prob bar for a row with cumulative score `pre` under a full source list whose last item
/// scores `last`: every log-prob `v` below it gives `pre + v < last` in f32, so `offer` rejects
/// it. `last - pre` (exact in f64) less a margin that covers the rounding of the f32 sum (a few
/// units in the last place of `last`) and of the bar's conversion to `T` (half a unit of a 16-bit
/// float; `to_f32` of the fused step converts exactly); none when either score is not finite.
fn offer_bar<T: Scalar>(last: f32, pre: f32) -> Option<T> {
    if !last.is_finite() || !pre.is_finite() {
        return None;
    }
    let gap = last as f64 - pre as f64;
    let relative = if std::mem::size_of::<T>() == 2 { 1.0 / 128.0 } else { 1.0 / 4_194_304.0 }; // 2^-7, 2^-22
    let margin = (gap.abs() + (last as f64).abs()) * relative + 1e-6;
    Some(T::cast_f64(gap - margin))
}

/// The step's outputs in flat form.
pub struct Selected<S> {
    pub ids: Vec<i64>,
    pub scores: Vec<S>,
    pub parents: Vec<i32>,
    /// Per prefix row, the offsets of its items (`rows + 1` entries).
    pub row_offsets: Vec<usize>,
}

/// Regroups the sources' top lists by prefix row (each row's items in list order, i.e. best
/// first), empties every source whose items are all `end_id` from finished rows (pruning one step
/// after the last branch ended), and emits the items row by row.
pub fn regroup<S: Scalar>(
    source_rows: &[usize],
    beam: usize,
    tops: &[Candidate<S>],
    pre_ids: &[i64],
    end_id: i64,
) -> Result<Selected<S>> {
    let rows = *source_rows.last().expect("at least one offset");
    let mut counts = lists::filled(rows, 0usize, "beam search: selected items per row")?;
    let live = |s: usize| {
        let items = tops[s * beam..(s + 1) * beam].iter().filter(|c| c.row != EMPTY_ROW);
        let mut items2 = items.clone();
        !items2.all(|c| c.id == end_id && pre_ids[c.row] == end_id) && items.count() > 0
    };
    let keep = lists::collect((0..source_rows.len() - 1).map(live), "beam search: sources kept")?;
    for (s, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
        for c in tops[s * beam..(s + 1) * beam].iter().filter(|c| c.row != EMPTY_ROW) {
            counts[c.row] += 1;
        }
    }
    let mut row_offsets = lists::with_capacity(rows + 1, "beam search: row offsets")?;
    row_offsets.push(0);
    for n in &counts {
        row_offsets.push(row_offsets.last().expect("non-empty") + n);
    }
    let total = row_offsets[rows];
    let mut ids = lists::filled(total, 0i64, "beam search: selected ids")?;
    let mut scores = lists::filled(total, S::ZERO, "beam search: selected scores")?;
    let mut parents = lists::filled(total, 0i32, "beam search: parents")?;
    let mut next = lists::copy_of(&row_offsets[..rows], "beam search: row offsets")?;
    for (s, _) in keep.iter().enumerate().filter(|(_, &k)| k) {
        // List order is score order; placing each item at its row's next slot keeps that order
        // within the row.
        for c in tops[s * beam..(s + 1) * beam].iter().filter(|c| c.row != EMPTY_ROW) {
            let at = next[c.row];
            next[c.row] += 1;
            ids[at] = c.id;
            scores[at] = c.score;
            parents[at] = c.row as i32;
        }
    }
    Ok(Selected { ids, scores, parents, row_offsets })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offer_reproduces_paddle_ties() {
        let c = |row, id, score| Candidate { row, id, score };
        let mut top = [c(0, 0, 0f32); 2];
        let mut n = offer(&mut top, 0, c(0, 1, 0.5));
        n = offer(&mut top, n, c(0, 2, 0.5)); // same key: behind, insertion order
        assert_eq!((n, top[0].id, top[1].id), (2, 1, 2));
        n = offer(&mut top, n, c(0, 3, 0.5)); // same key as the last: replaces it
        assert_eq!((n, top[0].id, top[1].id), (2, 1, 3));
        n = offer(&mut top, n, c(1, 4, 0.5)); // higher row ranks first
        assert_eq!((n, top[0].id, top[1].id), (2, 4, 1));
        n = offer(&mut top, n, c(0, 5, 0.4)); // strictly below the last: rejected
        assert_eq!((n, top[0].id, top[1].id), (2, 4, 1));
    }
}
