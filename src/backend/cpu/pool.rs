//! The library's thread pool, separate from any pool of the host program, and the one way kernels
//! use it: [`for_each_segment`]. Sized by `set_num_threads`, else by the `LODTENSOR_NUM_THREADS`
//! environment variable, else by the number of available cores.

use crate::error::{ensure, err, Result};
use crate::memory::lists;
use rayon::{ThreadPool, ThreadPoolBuilder};
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

/// Segment bounds in elements for sequences given by row offsets: `offsets[i] * unit`, for
/// outputs of `unit` elements a row.
pub fn scaled_bounds(offsets: &[usize], unit: usize) -> Result<Vec<usize>> {
    lists::collect(offsets.iter().map(|&o| o * unit), "segment bounds")
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
