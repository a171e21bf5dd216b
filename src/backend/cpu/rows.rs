//! Row-block data movement, the kernel behind every op that only rearranges rows (expand, pack,
//! unpack, reorder, concat, slice, gather): the output is a concatenation of row ranges of the
//! input. Rows are copied as bytes, so one kernel serves every dtype.

use super::pool::{for_each_segment, for_each_segment_with_work};
use super::prefetch_lines;
use crate::dtype::Element;
use crate::error::{ensure, err, Result};
use crate::memory::lists;
use std::ops::Range;

/// Writes into `out` the rows `ranges[0]`, then `ranges[1]`, ... of `src`, whose rows are
/// `row_bytes` long. `out` must be exactly as long as all ranges together.
pub fn gather_row_ranges(src: &[u8], row_bytes: usize, ranges: &[Range<usize>], out: &mut [u8]) -> Result<()> {
    gather_checked(ranges.len(), row_bytes, out, |i| Ok((src, ranges[i].clone())))
}

/// Writes into `out` the row blocks `blocks[0]`, `blocks[1]`, ..., block `(s, rows)` being rows
/// `rows` of `srcs[s]`; every source has rows of `row_bytes` bytes. `out` must be exactly as long
/// as all blocks together.
pub fn gather_blocks(srcs: &[&[u8]], row_bytes: usize, blocks: &[(usize, Range<usize>)], out: &mut [u8]) -> Result<()> {
    gather_checked(blocks.len(), row_bytes, out, |i| {
        let (s, r) = &blocks[i];
        let src = srcs.get(*s).ok_or_else(|| err!(Internal, "block {i} reads source {s} of {}", srcs.len()))?;
        Ok((*src, r.clone()))
    })
}

/// One output of [`gather_each`]: rows `ranges[0]`, then `ranges[1]`, ... of `src`, whose rows are
/// `row_bytes` long.
pub struct RowGather<'a> {
    pub src: &'a [u8],
    pub row_bytes: usize,
    pub ranges: &'a [Range<usize>],
}

/// Several row gathers as one job, `outs[j]` receiving `gathers[j]` (exactly as long as its ranges
/// together): a model's state of many tensors reordered by one index. Every gather is checked
/// before any byte is copied; then the tasks of all of them run in one pass over the pool, and the
/// outputs are written with streaming stores when they are large together (see `streams`): each
/// may be small, but together they leave the cache as one output of their size would.
pub fn gather_each(gathers: &[RowGather], outs: &mut [&mut [u8]]) -> Result<()> {
    ensure!(gathers.len() == outs.len(), Internal, "{} row gathers into {} outputs", gathers.len(), outs.len());
    let plans = gathers
        .iter()
        .zip(outs.iter())
        .map(|(g, out)| Plan::new(g.ranges.len(), g.row_bytes, out.len(), |i| Ok((g.src, g.ranges[i].clone()))));
    let plans = lists::try_collect(gathers.len(), plans, "row gathers: plans")?;
    let (bytes, runs) = outs.iter().zip(&plans).fold((0, 0), |(b, r), (out, p)| (b + out.len(), r + p.runs));
    let stream = streams(bytes, runs);
    // Every task of every gather: its plan, its place in the plan and its part of the output.
    let count = plans.iter().map(|p| p.bounds.len() - 1).sum();
    let mut tasks = lists::with_capacity(count, "row gathers: tasks")?;
    for (out, plan) in outs.iter_mut().zip(&plans) {
        let mut rest = &mut out[..];
        for (t, w) in plan.bounds.windows(2).enumerate() {
            let (seg, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
            tasks.push((plan, t, seg));
            rest = tail;
        }
    }
    let bounds = lists::collect(0..count + 1, "row gathers: task bounds")?;
    for_each_segment_with_work(&mut tasks, &bounds, bytes, |_, task| {
        let (plan, t, seg) = &mut task[0];
        plan.copy_task(*t, seg, stream);
    })
}

/// The one checked row gather: block `i` is `block(i) = (source, rows)`.
fn gather_checked<'a>(
    n: usize,
    row_bytes: usize,
    out: &mut [u8],
    block: impl Fn(usize) -> Result<(&'a [u8], Range<usize>)>,
) -> Result<()> {
    let plan = Plan::new(n, row_bytes, out.len(), block)?;
    let stream = streams(out.len(), plan.runs);
    for_each_segment(out, &plan.bounds, |t, seg| plan.copy_task(t, seg, stream))
}

/// What a checked row gather copies: its pieces in output order, grouped into tasks (task `t`
/// copies pieces `first[t]..first[t + 1]` into output bytes `bounds[t]..bounds[t + 1]`).
struct Plan<'a> {
    pieces: Vec<&'a [u8]>,
    first: Vec<usize>,
    bounds: Vec<usize>,
    /// The runs the pieces are read in (see `streams`).
    runs: usize,
}

impl<'a> Plan<'a> {
    /// The plan of a gather of `n` blocks into an output of `out_len` bytes. Every block is checked
    /// to lie in its source and the blocks to fill the output exactly, once, before any byte is
    /// copied. One pass over the blocks checks them, keeps each one's bytes, counts the runs they
    /// are read in and groups them into tasks: a gather of short rows spends as much time on this
    /// bookkeeping as on the copy.
    fn new(
        n: usize,
        row_bytes: usize,
        out_len: usize,
        block: impl Fn(usize) -> Result<(&'a [u8], Range<usize>)>,
    ) -> Result<Plan<'a>> {
        let mut pieces: Vec<&'a [u8]> = lists::with_capacity(n, "row gather: blocks")?;
        let (mut first, mut bounds) = (vec![0usize], vec![0usize]);
        let (mut filled, mut runs) = (0usize, 0usize);
        for i in 0..n {
            let (src, r) = block(i)?;
            // One test covers a range that is reversed, overflows or ends past its source (the
            // start cannot overflow when the end does not); rows of zero bytes are empty at any
            // index.
            let piece = (r.start <= r.end)
                .then(|| r.end.checked_mul(row_bytes))
                .flatten()
                .and_then(|end| src.get(r.start * row_bytes..end))
                .ok_or_else(|| {
                    let rows = src.len().checked_div(row_bytes).unwrap_or(usize::MAX);
                    err!(Internal, "row block {i} = rows {r:?} is outside its source's {rows} rows")
                })?;
            // Checked before adding, so `filled` cannot overflow however often a source repeats.
            ensure!(
                piece.len() <= out_len - filled,
                Internal,
                "row blocks 0..={i} cover more than the output's {out_len} bytes"
            );
            filled += piece.len();
            if pieces.last().is_none_or(|&prev| !continues_run(prev, piece)) {
                runs += 1;
            }
            pieces.push(piece);
            if filled - bounds[bounds.len() - 1] >= TASK_BYTES {
                first.push(i + 1);
                bounds.push(filled);
            }
        }
        ensure!(filled == out_len, Internal, "row blocks cover {filled} bytes, the output has {out_len}");
        if first.len() == 1 || first[first.len() - 1] != n {
            first.push(n); // the last, short task; or one empty task when there are no pieces
            bounds.push(filled);
        }
        Ok(Plan { pieces, first, bounds, runs })
    }

    /// Task `t` into `seg`, its part of the output.
    fn copy_task(&self, t: usize, seg: &mut [u8], stream: bool) {
        let pieces = &self.pieces[self.first[t]..self.first[t + 1]];
        copy_pieces(pieces.len(), |k| pieces[k], seg, stream);
        if stream {
            store_fence();
        }
    }
}

/// Copies pieces `piece(0)`, ..., `piece(n - 1)` one after another into `out` (exactly as long),
/// prefetching those ahead (see [`Ahead`]).
#[inline]
pub(crate) fn copy_pieces<'a>(n: usize, piece: impl Fn(usize) -> &'a [u8] + Copy, out: &mut [u8], stream: bool) {
    let mut rest = out;
    let mut ahead = Ahead::new(n, piece);
    for k in 0..n {
        let p = piece(k);
        let (dst, tail) = rest.split_at_mut(p.len());
        for (d, s) in dst.chunks_mut(PREFETCH_STEP_BYTES).zip(p.chunks(PREFETCH_STEP_BYTES)) {
            ahead.advance(s.len());
            copy(d, s, stream);
        }
        rest = tail;
    }
}

/// A cursor over the bytes of a gather's pieces (`piece(0..n)`), one after another, that
/// prefetches every line it passes into the core's L2 cache. Kept [`PREFETCH_AHEAD_BYTES`] ahead
/// of the copy, it has each piece's lines on their way before the copy reaches them. The hardware
/// prefetcher starts over at each piece that does not follow the one before in memory: on Zen 4,
/// sequence_unpad's 4096 pieces of 16 KiB were read at half the rate of one contiguous read
/// without this.
struct Ahead<F> {
    n: usize,
    piece: F,
    /// The next line to prefetch: byte `at` of piece `next`.
    next: usize,
    at: usize,
}

impl<'a, F: Fn(usize) -> &'a [u8]> Ahead<F> {
    fn new(n: usize, piece: F) -> Ahead<F> {
        let mut ahead = Ahead { n, piece, next: 0, at: 0 };
        ahead.advance(PREFETCH_AHEAD_BYTES);
        ahead
    }

    /// Prefetches the next `bytes` bytes of the pieces (fewer at their end).
    #[inline]
    fn advance(&mut self, mut bytes: usize) {
        while self.next < self.n {
            let p = (self.piece)(self.next);
            let n = (p.len() - self.at).min(bytes);
            prefetch_lines(p[self.at..].as_ptr(), n);
            self.at += n;
            bytes -= n;
            if self.at < p.len() {
                return;
            }
            (self.next, self.at) = (self.next + 1, 0);
        }
    }
}

/// Writes into `out` row `h` of `src` (rows of `row_bytes` bytes) `offsets[h + 1] - offsets[h]`
/// times, for each `h` in order: sequence_expand_as's repeat. `offsets` is a valid LoD level (it
/// starts at 0 and does not decrease, which the LoD checked when it was made, so it is not read
/// through again here: at one-row sequences that pass cost a third of the op); `src` holds
/// `offsets.len() - 1` rows and `out` `offsets.last()` rows. Unlike a list of one-row ranges, this
/// needs no bookkeeping per output row; tasks split the output at row boundaries, inside a repeat
/// too.
pub fn repeat_rows(src: &[u8], row_bytes: usize, offsets: &[usize], out: &mut [u8]) -> Result<()> {
    let rows = offsets.len().saturating_sub(1);
    ensure!(offsets.first() == Some(&0), Internal, "repeat offsets do not start at 0");
    ensure!(
        src.len() == rows * row_bytes,
        Internal,
        "repeat source of {} bytes for {rows} rows of {row_bytes}",
        src.len()
    );
    let total = offsets[rows];
    ensure!(
        total.checked_mul(row_bytes) == Some(out.len()),
        Internal,
        "repeats cover {total} rows of {row_bytes} bytes, the output has {}",
        out.len()
    );
    if row_bytes == 0 {
        return Ok(()); // the output is empty
    }
    let (task_rows, bounds) = row_tasks(total, row_bytes)?;
    // A repeated row, then the next row: the reads form one run.
    let stream = streams(out.len(), 1);
    for_each_segment(out, &bounds, |t, seg| {
        by_row_size!(Some(row_bytes), repeat_task(src, row_bytes, offsets, t * task_rows, seg, stream));
        if stream {
            store_fence();
        }
    })
}

/// One task of [`repeat_rows`]: `seg`, output rows from `first` on. `N` is `row_bytes` when not 0
/// (rows of at most 64 bytes, never streamed, are then one or two moves each).
#[inline(always)]
fn repeat_task<const N: usize>(
    src: &[u8],
    row_bytes: usize,
    offsets: &[usize],
    first: usize,
    seg: &mut [u8],
    stream: bool,
) {
    let row = if N == 0 { row_bytes } else { N };
    // The source row that output row `r` repeats is the last `h` with `offsets[h] <= r`.
    let mut h = offsets.partition_point(|&o| o <= first) - 1;
    for (r, dst) in (first..).zip(seg.chunks_exact_mut(row)) {
        while offsets[h + 1] <= r {
            h += 1;
        }
        let from = &src[h * row..(h + 1) * row];
        if N == 0 {
            copy(dst, from, stream);
        } else {
            dst.copy_from_slice(from);
        }
    }
}

/// Writes into `out` each sequence `i` of `src` (rows `[x[i], x[i+1])`, rows of `row_bytes` bytes)
/// `repeats[i+1] - repeats[i]` times, in order: sequence_expand's copies, whose row offsets are
/// `out_offsets` (one per copy, and one more; `x`, `repeats` and `out_offsets` are valid LoD
/// levels that agree). No range is listed per copy: tasks split the output at row boundaries,
/// inside a copy too, and each finds its first copy and that copy's sequence by a search.
pub fn expand_sequences(
    src: &[u8],
    row_bytes: usize,
    x: &[usize],
    repeats: &[usize],
    out_offsets: &[usize],
    out: &mut [u8],
) -> Result<()> {
    let copies = repeats[repeats.len() - 1];
    let total = out_offsets[out_offsets.len() - 1];
    ensure!(
        x.len() == repeats.len() && out_offsets.len() == copies + 1,
        Internal,
        "expand: {} x offsets, {} repeat offsets and {} output offsets for {copies} copies",
        x.len(),
        repeats.len(),
        out_offsets.len()
    );
    ensure!(
        x[x.len() - 1].checked_mul(row_bytes).is_some_and(|n| n <= src.len())
            && total.checked_mul(row_bytes) == Some(out.len()),
        Internal,
        "expand: {} source rows in {} bytes, {total} output rows in {} bytes, rows of {row_bytes}",
        x[x.len() - 1],
        src.len(),
        out.len()
    );
    if out.is_empty() {
        return Ok(());
    }
    let (task_rows, bounds) = row_tasks(total, row_bytes)?;
    // Copies of one sequence, and single copies of consecutive sequences, read in one run, and
    // the reads only move forward through the source: counted as one run, as repeat_rows' are.
    let stream = streams(out.len(), 1);
    for_each_segment(out, &bounds, |t, seg| {
        // The copy holding the task's first row (the last with an offset at or below it, so not
        // an empty one), and that copy's sequence (the last whose copies start at or below it).
        let mut row = t * task_rows;
        let mut c = out_offsets.partition_point(|&o| o <= row) - 1;
        let mut i = repeats.partition_point(|&r| r <= c) - 1;
        let mut rest = seg;
        while !rest.is_empty() {
            // Rows remain, so copy c exists, and so does a sequence holding it.
            while repeats[i + 1] <= c {
                i += 1;
            }
            let take = (out_offsets[c + 1] - row).min(rest.len() / row_bytes);
            let from = x[i] + (row - out_offsets[c]);
            let (dst, tail) = std::mem::take(&mut rest).split_at_mut(take * row_bytes);
            copy(dst, &src[from * row_bytes..(from + take) * row_bytes], stream);
            (rest, row, c) = (tail, row + take, c + 1);
        }
        if stream {
            store_fence();
        }
    })
}

/// Tasks of whole rows over an output of `rows` rows of `row_bytes` bytes (not 0): the rows a task
/// takes (the last takes the rest), and the tasks' bounds in bytes.
fn row_tasks(rows: usize, row_bytes: usize) -> Result<(usize, Vec<usize>)> {
    let task_rows = TASK_BYTES.div_ceil(row_bytes);
    let bytes = rows * row_bytes;
    let bounds = (0..rows.div_ceil(task_rows) + 1).map(|t| (t * task_rows * row_bytes).min(bytes));
    Ok((task_rows, lists::collect(bounds, "row tasks: bounds")?))
}

/// How far ahead of the copy a gather's pieces are prefetched (see [`Ahead`]).
pub(crate) const PREFETCH_AHEAD_BYTES: usize = 8 * 1024;

/// A long piece is copied this many bytes at a time, each step moving the prefetch on as far.
const PREFETCH_STEP_BYTES: usize = 1024;

/// Pieces are grouped into tasks of at least this many output bytes: one task per row of a few
/// hundred bytes costs more in scheduling than the copy, and a streaming task ends with a fence.
pub(crate) const TASK_BYTES: usize = 64 * 1024;

/// Outputs at least this large are written with non-temporal (streaming) stores, which skip
/// reading each destination line before writing it (a third of the memory traffic of a copy).
/// Smaller outputs are written normally and stay in cache for the next op. Chosen by measurement
/// (benches/REPORT.md): streaming took the 55 MB unpack from 0.67-0.72 to 0.77-0.95 of a copy
/// and was neutral for the 7-9 MB cases. glibc's memcpy streams only above 240 MB here.
pub const STREAM_MIN_BYTES: usize = 4 << 20;

/// ... and only when the reads come in runs of at least this many bytes on average: short pieces
/// from scattered places (packing 320-byte rows) ran a third slower with streaming stores, which
/// compete with the scattered reads for the core's miss buffers. A run is a series of pieces
/// that each start where the one before started or ended in the same memory, such as a row
/// repeated by sequence_expand_as (512-byte rows: 0.67 of the benchmark's ceiling with plain
/// stores, 0.82 streaming) or consecutive rows.
pub const STREAM_MIN_PIECE: usize = 1024;

/// Whether an output of `len` bytes, read in `runs` runs from their sources, is written with
/// streaming stores (see `STREAM_MIN_BYTES` and `STREAM_MIN_PIECE`).
pub(crate) fn streams(len: usize, runs: usize) -> bool {
    len >= STREAM_MIN_BYTES && len / runs.max(1) >= STREAM_MIN_PIECE
}

/// Whether `next` continues the run of `prev`: it starts where `prev` started (a repeated row) or
/// ended (the next rows).
#[inline]
fn continues_run(prev: &[u8], next: &[u8]) -> bool {
    let at = next.as_ptr();
    at == prev.as_ptr() || at == prev.as_ptr().wrapping_add(prev.len())
}

/// `dst.copy_from_slice(src)`, with streaming stores when `stream` (x86-64; elsewhere a copy).
#[inline]
pub(crate) fn copy(dst: &mut [u8], src: &[u8], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && dst.len() >= 256 {
        assert_eq!(dst.len(), src.len(), "copy: lengths differ");
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        dst[..head].copy_from_slice(&src[..head]);
        let body = (dst.len() - head) / 64 * 64;
        // SAFETY: `head + body <= len` for both slices (same length, checked), and the
        // destination is 16-byte aligned at `head`.
        unsafe { stream_lines(dst.as_mut_ptr().add(head), src.as_ptr().add(head), body / 64) };
        dst[head + body..].copy_from_slice(&src[head + body..]);
        return;
    }
    let _ = stream;
    copy_plain(dst, src);
}

/// `dst.copy_from_slice(src)`, with pieces of up to 16 bytes moved inline by two overlapping
/// loads and stores: a call to `memcpy` for a piece of a few bytes (a row of one-row sequences of
/// 4 bytes) cost more than the piece (benches/REPORT.md).
#[inline(always)]
fn copy_plain(dst: &mut [u8], src: &[u8]) {
    let n = dst.len();
    assert_eq!(n, src.len(), "copy: lengths differ");
    match n {
        0 => {}
        1 => dst[0] = src[0],
        2..=3 => {
            dst[..2].copy_from_slice(&src[..2]);
            dst[n - 2..].copy_from_slice(&src[n - 2..]);
        }
        4..=7 => {
            dst[..4].copy_from_slice(&src[..4]);
            dst[n - 4..].copy_from_slice(&src[n - 4..]);
        }
        8..=16 => {
            dst[..8].copy_from_slice(&src[..8]);
            dst[n - 8..].copy_from_slice(&src[n - 8..]);
        }
        _ => dst.copy_from_slice(src),
    }
}

/// `dst.copy_from_slice(line)` for 64 bytes, with streaming stores when `stream` and `dst` is
/// 16-byte aligned (x86-64; elsewhere, or unaligned, a copy). For rows of a line, or gathered into
/// one, that go to different places: `copy` streams pieces of 256 bytes and more only.
#[inline]
pub(crate) fn copy_line(dst: &mut [u8], line: &[u8; 64], stream: bool) {
    #[cfg(target_arch = "x86_64")]
    if stream && dst.len() == 64 && dst.as_ptr().align_offset(16) == 0 {
        // SAFETY: 64 bytes on both sides, the destination 16-byte aligned (checked).
        unsafe { stream_lines(dst.as_mut_ptr(), line.as_ptr(), 1) };
        return;
    }
    let _ = stream;
    dst.copy_from_slice(line);
}

/// Copies `lines` x 64 bytes from `src` to `dst` with streaming stores (loads unaligned).
///
/// # Safety
/// Both ranges must be valid for `lines * 64` bytes and not overlap; `dst` must be 16-byte aligned.
#[cfg(target_arch = "x86_64")]
#[inline]
unsafe fn stream_lines(dst: *mut u8, src: *const u8, lines: usize) {
    // Miri has no streaming stores; a plain copy of the same ranges keeps them checked there.
    #[cfg(miri)]
    {
        assert!(dst.align_offset(16) == 0, "stream_lines: dst is not 16-byte aligned");
        std::ptr::copy_nonoverlapping(src, dst, lines * 64);
    }
    #[cfg(not(miri))]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let (mut d, mut s) = (dst.cast::<__m128i>(), src.cast::<__m128i>());
        for _ in 0..lines {
            let (a, b, c, e) =
                (_mm_loadu_si128(s), _mm_loadu_si128(s.add(1)), _mm_loadu_si128(s.add(2)), _mm_loadu_si128(s.add(3)));
            _mm_stream_si128(d, a);
            _mm_stream_si128(d.add(1), b);
            _mm_stream_si128(d.add(2), c);
            _mm_stream_si128(d.add(3), e);
            d = d.add(4);
            s = s.add(4);
        }
    }
}

/// `copy` of elements of a dtype.
#[inline(always)]
pub(crate) fn copy_elements<T: Element>(dst: &mut [T], src: &[T], stream: bool) {
    assert_eq!(dst.len(), src.len(), "copy: lengths differ");
    let n = std::mem::size_of_val(src);
    // SAFETY: both slices span `n` bytes of initialised plain data (`Element`: no padding, and
    // every bit pattern the library writes is a value); `dst` is uniquely borrowed.
    let (d, s) = unsafe {
        (
            std::slice::from_raw_parts_mut(dst.as_mut_ptr().cast::<u8>(), n),
            std::slice::from_raw_parts(src.as_ptr().cast::<u8>(), n),
        )
    };
    copy(d, s, stream);
}

/// Orders this thread's streaming stores before whatever follows (the end of the task, which
/// another thread may observe): they are weakly ordered otherwise.
#[inline]
pub(crate) fn store_fence() {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    // SAFETY: sfence has no preconditions (SSE is part of x86-64).
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_large_outputs_like_a_copy() {
        // Odd row sizes and offsets: unaligned heads and tails around the streamed body.
        let src: Vec<u8> = (0..STREAM_MIN_BYTES + 4099).map(|i| (i % 251) as u8).collect();
        let row = 1029; // > STREAM_MIN_PIECE, so the body is streamed
        let rows = src.len() / row;
        let ranges: Vec<Range<usize>> = (0..rows).rev().map(|r| r..r + 1).collect();
        let mut out = vec![0u8; rows * row];
        gather_row_ranges(&src, row, &ranges, &mut out).unwrap();
        for (k, r) in ranges.iter().enumerate() {
            assert_eq!(out[k * row..(k + 1) * row], src[r.start * row..r.end * row], "row {k}");
        }
        let mut small = vec![0u8; 3];
        copy(&mut small[1..], &src[5..7], true);
        assert_eq!(small, [0, 5, 6]);
    }

    /// gather_each gives each output what a plain loop over its ranges gives: sources of other row
    /// sizes (0 included) and ranges, small outputs that are large together (streamed, in many
    /// tasks), one empty output; a range outside its source, or a count of outputs other than of
    /// gathers, is an error and nothing is written.
    #[test]
    fn gather_each_equals_a_loop_over_each() {
        let row_sizes = [4usize, 1029, 0, 64, 2048, 3];
        let srcs: Vec<Vec<u8>> = row_sizes
            .iter()
            .enumerate()
            .map(|(k, &b)| (0..b * 700).map(|i| ((i * 7 + k) % 251) as u8).collect())
            .collect();
        // Rows in runs, steps back and repeats, as a reorder by parents reads them.
        let ranges: Vec<Range<usize>> =
            (0..3000).map(|i| (i * 13 + i / 7) % 697..(i * 13 + i / 7) % 697 + 1 + i % 3).collect();
        let rows: usize = ranges.iter().map(|r| r.len()).sum();
        let gathers: Vec<RowGather> =
            srcs.iter().zip(row_sizes).map(|(src, row_bytes)| RowGather { src, row_bytes, ranges: &ranges }).collect();
        assert!(row_sizes.iter().sum::<usize>() * rows >= STREAM_MIN_BYTES, "together large enough to stream");
        let mut outs: Vec<Vec<u8>> = row_sizes.iter().map(|&b| vec![0u8; b * rows]).collect();
        let mut refs: Vec<&mut [u8]> = outs.iter_mut().map(|o| &mut o[..]).collect();
        gather_each(&gathers, &mut refs).unwrap();
        for ((src, out), b) in srcs.iter().zip(&outs).zip(row_sizes) {
            let want: Vec<u8> = ranges.iter().flat_map(|r| &src[r.start * b..r.end * b]).copied().collect();
            assert!(*out == want, "rows of {b} bytes");
        }
        // Errors: a range past a source's rows; fewer outputs than gathers.
        let past = [0..2, 699..701];
        let bad = [
            RowGather { src: &srcs[0], row_bytes: 4, ranges: &ranges[..1] },
            RowGather { src: &srcs[0], row_bytes: 4, ranges: &past },
        ];
        let (mut a, mut b) = (vec![9u8; 4 * ranges[0].len()], vec![9u8; 16]);
        assert!(gather_each(&bad, &mut [&mut a[..], &mut b[..]]).is_err());
        assert!(a.iter().chain(&b).all(|&x| x == 9), "nothing written");
        assert!(gather_each(&bad, &mut [&mut a[..]]).is_err());
        gather_each(&[], &mut []).unwrap();
    }

    /// Pieces shorter and longer than a copy step and than the prefetch distance, empty ones among
    /// them, are copied whole with either way of storing; the prefetch cursor starts the distance
    /// ahead, moves on by what it is told, across pieces, and stops at their end.
    #[test]
    fn copies_pieces_while_the_prefetch_runs_ahead() {
        let src: Vec<u8> = (0..60_000).map(|i| (i * 31 % 253) as u8).collect();
        let lengths = [0usize, 1, 1023, 1024, 1025, 20_000, 0, 64, 9000, 3];
        let mut at = 7;
        let pieces: Vec<&[u8]> = lengths
            .iter()
            .map(|&n| {
                at = (at + 4099) % (src.len() - 20_000);
                &src[at..at + n]
            })
            .collect();
        let want: Vec<u8> = pieces.concat();
        for stream in [false, true] {
            let mut out = vec![0u8; want.len()];
            copy_pieces(pieces.len(), |k| pieces[k], &mut out, stream);
            assert!(out == want, "stream {stream}");
        }
        let mut ahead = Ahead::new(pieces.len(), |k| pieces[k]);
        // 8 KiB in: pieces 0-4 hold 3073 bytes, so byte 8192 - 3073 of piece 5.
        assert_eq!((ahead.next, ahead.at), (5, PREFETCH_AHEAD_BYTES - 3073));
        ahead.advance(20_000 - ahead.at);
        assert_eq!((ahead.next, ahead.at), (7, 0), "at a piece's end it moves past it and the empty one after");
        ahead.advance(1);
        assert_eq!((ahead.next, ahead.at), (7, 1));
        ahead.advance(usize::MAX);
        assert_eq!((ahead.next, ahead.at), (pieces.len(), 0), "stops at the end");
        ahead.advance(5);
        assert_eq!(ahead.next, pieces.len());
    }

    /// A line is copied whole, streamed or not, to aligned and unaligned places.
    #[test]
    fn copies_a_line_anywhere() {
        let line: [u8; 64] = std::array::from_fn(|i| (i * 3 + 1) as u8);
        #[repr(align(64))]
        struct Lines([u8; 64 * 3]);
        let out = &mut Lines([0; 64 * 3]).0;
        for at in [0usize, 1, 16, 63, 64] {
            for stream in [false, true] {
                out.fill(0);
                copy_line(&mut out[at..at + 64], &line, stream);
                store_fence();
                assert!(out[at..at + 64] == line[..], "at {at}, stream {stream}");
                assert!(out[..at].iter().chain(&out[at + 64..]).all(|&b| b == 0), "only the line, at {at}");
            }
        }
    }

    #[test]
    fn runs_continue_with_a_repeated_or_the_next_piece() {
        let src: Vec<u8> = (0..40).collect();
        let row = |r: usize| &src[r * 4..r * 4 + 4];
        // A repeat of the row, or the row after it, continues a run.
        assert!(continues_run(row(2), row(2)) && continues_run(row(2), row(3)));
        // A step back, a jump, or a piece starting inside the one before starts another.
        assert!(!continues_run(row(2), row(1)) && !continues_run(row(2), row(5)));
        assert!(!continues_run(&src[0..8], &src[4..8]));
    }

    /// A row repeated as sequence_expand_as repeats it: short pieces in long runs, streamed; the
    /// output must equal the plain loop's.
    #[test]
    fn streams_repeated_short_rows() {
        let row = 500; // not a multiple of 16: unaligned pieces
        let src: Vec<u8> = (0..64 * row).map(|i| (i % 253) as u8).collect();
        let ranges: Vec<Range<usize>> =
            (0..64).flat_map(|r| std::iter::repeat_n(r..r + 1, 1 + (r * 37) % 300)).collect();
        // Every row is repeated, then the next one follows: one run, where a count of pieces would
        // not stream.
        let total = ranges.len() * row;
        assert!(streams(total, 1) && !streams(total, ranges.len()), "the streamed path is taken");
        let mut out = vec![0u8; total];
        gather_row_ranges(&src, row, &ranges, &mut out).unwrap();
        for (k, r) in ranges.iter().enumerate() {
            assert_eq!(out[k * row..(k + 1) * row], src[r.start * row..r.end * row], "row {k}");
        }
    }

    /// Every output row against the definition (row `h` written `offsets[h + 1] - offsets[h]`
    /// times), with repeats of 0, repeats longer than a task, and streamed and plain outputs.
    #[test]
    fn repeats_rows_as_the_offsets_say() {
        for (row, rows, stream) in [(12usize, 50usize, false), (516, 40, true)] {
            let src: Vec<u8> = (0..rows * row).map(|i| (i % 249) as u8).collect();
            // Repeats 0, 1, 2, ... and one far longer than a task (and, streamed, than STREAM_MIN_BYTES).
            let long = if stream { STREAM_MIN_BYTES / row + 3 } else { 3 * TASK_BYTES / row + 1 };
            let times: Vec<usize> = (0..rows).map(|h| if h == rows / 2 { long } else { h % 4 }).collect();
            let offsets: Vec<usize> = std::iter::once(0)
                .chain(times.iter().scan(0, |a, &n| {
                    *a += n;
                    Some(*a)
                }))
                .collect();
            let total = offsets[rows];
            assert_eq!(streams(total * row, 1), stream);
            let mut out = vec![0u8; total * row];
            repeat_rows(&src, row, &offsets, &mut out).unwrap();
            let mut k = 0;
            for (h, &n) in times.iter().enumerate() {
                for _ in 0..n {
                    assert_eq!(
                        out[k * row..(k + 1) * row],
                        src[h * row..(h + 1) * row],
                        "output row {k}, source row {h}"
                    );
                    k += 1;
                }
            }
        }
        // Offsets that do not start at 0, or do not match the source or the output.
        let src = [1u8, 2, 3, 4];
        assert!(repeat_rows(&src, 2, &[1, 2, 3], &mut [0u8; 4]).is_err());
        assert!(repeat_rows(&src, 2, &[0, 1, 2, 3], &mut [0u8; 6]).is_err());
        assert!(repeat_rows(&src, 2, &[0, 1, 3], &mut [0u8; 4]).is_err());
        repeat_rows(&src, 2, &[0, 1, 3], &mut [0u8; 6]).unwrap();
        // Rows of zero bytes: nothing to write.
        repeat_rows(&[], 0, &[0, 5, 9], &mut []).unwrap();
    }

    #[test]
    fn gathers_ranges_in_order() {
        let src: Vec<u8> = (0..10).collect(); // 5 rows of 2 bytes
        let mut out = vec![0u8; 8];
        gather_row_ranges(&src, 2, &[3..5, 0..1, 4..4, 1..2], &mut out).unwrap();
        assert_eq!(out, [6, 7, 8, 9, 0, 1, 2, 3]);
        let past_the_end = [Range { start: 4, end: 6 }];
        assert!(gather_row_ranges(&src, 2, &past_the_end, &mut [0u8; 4]).is_err());
        let too_short = [Range { start: 0, end: 1 }];
        assert!(gather_row_ranges(&src, 2, &too_short, &mut [0u8; 4]).is_err());
        let too_long = [0..2, 1..2];
        assert!(gather_row_ranges(&src, 2, &too_long, &mut [0u8; 4]).is_err());
        let reversed = [Range { start: 2, end: 1 }];
        assert!(gather_row_ranges(&src, 2, &reversed, &mut [0u8; 2]).is_err());
        let overflowing = [Range { start: usize::MAX / 2, end: usize::MAX / 2 + 1 }];
        assert!(gather_row_ranges(&src, 4, &overflowing, &mut [0u8; 4]).is_err());
        // Rows of zero bytes: any rows, nothing to copy; a reversed range is still refused.
        gather_row_ranges(&[], 0, &[5..9, 0..usize::MAX], &mut []).unwrap();
        assert!(gather_row_ranges(&[], 0, &[Range { start: 9, end: 5 }], &mut []).is_err());
        // Many short pieces: several tasks, each ending at a piece boundary.
        let rows: Vec<u8> = (0..=255).collect();
        let ranges: Vec<Range<usize>> = (0..3 * TASK_BYTES).map(|k| (k * 7) % 256..(k * 7) % 256 + 1).collect();
        let mut out = vec![0u8; ranges.len()];
        gather_row_ranges(&rows, 1, &ranges, &mut out).unwrap();
        assert!(out.iter().enumerate().all(|(k, &b)| b as usize == (k * 7) % 256));
    }
}
