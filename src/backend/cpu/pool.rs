//! The library's thread pool, separate from any pool of the host program, and the one way kernels
//! use it: [`for_each_segment`]. Sized by `set_num_threads`, else by the `LODTENSOR_NUM_THREADS`
//! environment variable, else by the number of available cores.

use super::rows::TASK_BYTES;
use crate::error::{ensure, err, Result};
use crate::memory::lists;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::ops::Range;
use std::sync::{Arc, RwLock};

/// Below this many bytes of output, a kernel runs on the calling thread: waking the pool costs more.
pub const PARALLEL_MIN_BYTES: usize = 256 * 1024;

static POOL: RwLock<Option<Arc<ThreadPool>>> = RwLock::new(None);

fn build(threads: usize) -> Result<Arc<ThreadPool>> {
    ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("lodtensor-{i}"))
        .build()
        .map(Arc::new)
        .map_err(|e| err!(Internal, "thread pool: cannot start {threads} thread(s): {e}"))
}

/// The most threads the pool may have.
const MAX_THREADS: usize = 1024;

/// `LODTENSOR_NUM_THREADS` when it is a count the pool may have (1 to `MAX_THREADS`), else the
/// number of available cores.
fn default_threads() -> usize {
    std::env::var("LODTENSOR_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| (1..=MAX_THREADS).contains(n))
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_THREADS))
}

/// The pool, started on first use.
pub fn pool() -> Result<Arc<ThreadPool>> {
    if let Some(p) = POOL.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return Ok(p.clone());
    }
    let mut slot = POOL.write().unwrap_or_else(|e| e.into_inner());
    if slot.is_none() {
        *slot = Some(build(default_threads())?);
    }
    Ok(slot.as_ref().expect("just set").clone())
}

/// Replaces the pool with one of `threads` threads (0 = the default size). Work already running
/// finishes on the old pool.
pub fn set_num_threads(threads: usize) -> Result<()> {
    ensure!(threads <= MAX_THREADS, InvalidArgument, "num_threads: {threads} is more than {MAX_THREADS}");
    let threads = if threads == 0 { default_threads() } else { threads };
    let new = build(threads)?;
    *POOL.write().unwrap_or_else(|e| e.into_inner()) = Some(new);
    Ok(())
}

/// The number of threads of the pool.
pub fn num_threads() -> Result<usize> {
    Ok(pool()?.current_num_threads())
}

/// Splits `out` into segments at `bounds` (non-decreasing element offsets, from 0 to `out.len()`)
/// and runs `task(i, segment_i)` for each, on the pool when the output is large, else in order on
/// this thread. Each segment is written by exactly one task, so results do not depend on the
/// thread count.
pub fn for_each_segment<T: Send>(
    out: &mut [T],
    bounds: &[usize],
    task: impl Fn(usize, &mut [T]) + Sync + Send,
) -> Result<()> {
    for_each_segment_with_work(out, bounds, std::mem::size_of_val(out), task)
}

/// Runs `task(rows, segment)` over chunks of `rows_per_task` whole rows of `row_len` elements of
/// `out` (the last chunk perhaps shorter), `segment` being those rows: one task a chunk, with no
/// list of bounds a row.
pub fn for_each_row_chunk<T: Send>(
    out: &mut [T],
    row_len: usize,
    rows_per_task: usize,
    task: impl Fn(Range<usize>, &mut [T]) + Sync + Send,
) -> Result<()> {
    if row_len == 0 {
        return Ok(()); // no element to write
    }
    let rows = out.len() / row_len;
    let per = rows_per_task.max(1);
    let bounds =
        lists::collect((0..rows.div_ceil(per) + 1).map(|t| (t * per).min(rows) * row_len), "row chunks: bounds")?;
    for_each_segment(out, &bounds, |t, seg| task(t * per..(t * per + seg.len() / row_len), seg))
}

/// Runs `task(sequences, segment)` over chunks of whole sequences of a LoD level (`offsets`, row
/// offsets), each about `share` rows and sequences of work ([`work_chunks`]). Sequence `i`'s
/// output starts at element `at(i)` of `out` (`at` rises from 0 to `out.len()` at the last
/// offset), so a chunk's segment is `at(first)..at(end)`. One task a chunk, not a sequence: for
/// sequences of a few rows, a task each and a list of their bounds cost more than the rows
/// (benches/REPORT.md). Results do not depend on the thread count, as [`for_each_segment`]'s.
pub fn for_each_sequence_chunk<T: Send>(
    out: &mut [T],
    offsets: &[usize],
    share: usize,
    at: impl Fn(usize) -> usize,
    task: impl Fn(Range<usize>, &mut [T]) + Sync + Send,
) -> Result<()> {
    let chunks = work_chunks(offsets, share)?;
    let bounds = lists::collect(chunks.iter().map(|&c| at(c)), "sequence chunks: bounds")?;
    for_each_segment(out, &bounds, |t, seg| task(chunks[t]..chunks[t + 1], seg))
}

/// [`for_each_sequence_chunk`] for an output of `row_len` elements a row of the level: sequence
/// `i`'s rows start at element `offsets[i] * row_len`, and a chunk holds about `TASK_BYTES` of
/// them.
pub fn for_each_sequence_rows_chunk<T: Send>(
    out: &mut [T],
    offsets: &[usize],
    row_len: usize,
    task: impl Fn(Range<usize>, &mut [T]) + Sync + Send,
) -> Result<()> {
    let share = TASK_BYTES.div_ceil((row_len * std::mem::size_of::<T>()).max(1));
    for_each_sequence_chunk(out, offsets, share, |i| offsets[i] * row_len, task)
}

/// Bounds on the sequences of the level `offsets` for chunks of about `share` work each, a
/// sequence's work being 1 and its length: a chunk ends where `i + offsets[i]` (rising with i)
/// next passes a multiple of `share`, so that neither many empty sequences nor a few long ones make
/// one chunk far longer than the others. A sequence is never split, so a long one is a chunk.
pub fn work_chunks(offsets: &[usize], share: usize) -> Result<Vec<usize>> {
    let n = offsets.len() - 1;
    let share = share.max(1);
    let most = n.min(n.saturating_add(offsets[n]) / share + 1);
    let mut bounds = lists::with_capacity(most + 1, "sequence chunks")?;
    bounds.push(0);
    while let Some(&b) = bounds.last().filter(|&&b| b < n) {
        let next = (b.saturating_add(offsets[b]) / share + 1).saturating_mul(share);
        bounds.push(first_reaching(offsets, next).max(b + 1));
    }
    Ok(bounds)
}

/// The first `i` with `i + offsets[i] >= work`, or the last index if none: `i + offsets[i]` rises
/// with `i`.
fn first_reaching(offsets: &[usize], work: usize) -> usize {
    let (mut lo, mut hi) = (0, offsets.len() - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if mid.saturating_add(offsets[mid]) < work {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// [`for_each_segment`] for kernels that read far more than they write (top-k, beam search,
/// reductions): `work_bytes`, the bytes the tasks read and write together, decides between the
/// pool and the calling thread instead of the output's size alone.
pub fn for_each_segment_with_work<T: Send>(
    out: &mut [T],
    bounds: &[usize],
    work_bytes: usize,
    task: impl Fn(usize, &mut [T]) + Sync + Send,
) -> Result<()> {
    ensure!(
        bounds.first() == Some(&0) && bounds.last() == Some(&out.len()) && bounds.windows(2).all(|w| w[0] <= w[1]),
        Internal,
        "segment bounds do not cover the output of {} elements",
        out.len()
    );
    let segments = bounds.len() - 1;
    if work_bytes < PARALLEL_MIN_BYTES || segments <= 1 {
        run_range(out, bounds, 0, usize::MAX, &task);
        return Ok(());
    }
    let pool = pool()?;
    if pool.current_num_threads() == 1 {
        // One worker: handing the work to it and sleeping until it is done only adds a wake-up
        // of each thread (tens of microseconds on a loaded machine, a sixth of a 0.2 ms beam step).
        run_range(out, bounds, 0, usize::MAX, &task);
        return Ok(());
    }
    // Enough leaves for load balance across uneven segments, few enough to keep overhead low.
    let grain = segments.div_ceil(pool.current_num_threads() * 8).max(1);
    pool.install(|| run_range(out, bounds, 0, grain, &task));
    Ok(())
}

/// Runs the segments `first..` described by `bounds` (relative to `bounds[0]`), halving the range
/// with `rayon::join` until at most `grain` segments remain.
fn run_range<T: Send, F: Fn(usize, &mut [T]) + Sync>(
    out: &mut [T],
    bounds: &[usize],
    first: usize,
    grain: usize,
    task: &F,
) {
    let segments = bounds.len() - 1;
    if segments <= grain {
        let base = bounds[0];
        for i in 0..segments {
            task(first + i, &mut out[bounds[i] - base..bounds[i + 1] - base]);
        }
        return;
    }
    let mid = segments / 2;
    let (left, right) = out.split_at_mut(bounds[mid] - bounds[0]);
    rayon::join(
        || run_range(left, &bounds[..=mid], first, grain, task),
        || run_range(right, &bounds[mid..], first + mid, grain, task),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_written_once_whatever_the_size() {
        // Past PARALLEL_MIN_BYTES, so the pool splits the work; only just past it under Miri.
        for len in [10usize, if cfg!(miri) { 270_000 } else { 1_000_000 }] {
            let bounds: Vec<usize> = (0..=len / 10).map(|i| i * 10).collect();
            let mut out = vec![0u8; len];
            for_each_segment(&mut out, &bounds, |i, seg| seg.iter_mut().for_each(|b| *b = (i % 251) as u8 + 1))
                .unwrap();
            assert!(out.iter().enumerate().all(|(j, &b)| b == ((j / 10) % 251) as u8 + 1));
        }
        let mut out = vec![0u8; 4];
        assert!(for_each_segment(&mut out, &[0, 5], |_, _| ()).is_err());
        assert!(for_each_segment(&mut out, &[0, 3, 2, 4], |_, _| ()).is_err());
    }
}
