//! Kernels of the sequence operators that do more than gather row ranges: reversing rows within
//! sequences, the mask of lengths, sliding windows and token erasure. Each runs over output
//! segments (one task per chunk of whole sequences or of elements), so results never depend on the
//! thread count.

use super::convert::{chunk_bounds, CastElem, Value, CHUNK};
use super::pool::{
    for_each_segment, for_each_segment_with_work, for_each_sequence_chunk, for_each_sequence_rows_chunk, num_threads,
    work_chunks,
};
use super::rows::{copy, TASK_BYTES};
use crate::dtype::Scalar;
use crate::error::{ensure, err, Result};
use crate::memory::lists;
use std::sync::atomic::{AtomicBool, Ordering};

/// Rows of `row_bytes` bytes; sequence `i` is rows `[offsets[i], offsets[i+1])` of `src`. Writes
/// each sequence's rows in reverse order into the same place of `out`.
pub fn reverse_rows(src: &[u8], row_bytes: usize, offsets: &[usize], out: &mut [u8]) -> Result<()> {
    ensure!(src.len() == out.len(), Internal, "reverse: {} bytes into {}", src.len(), out.len());
    if row_bytes == 0 {
        return Ok(()); // no bytes to move
    }
    for_each_sequence_rows_chunk(out, offsets, row_bytes, |seqs, seg| {
        let offsets = &offsets[seqs.start..=seqs.end];
        by_row_size!(Some(row_bytes), reverse_chunk(src, row_bytes, offsets, seg))
    })
}

/// The sequences of one chunk of `reverse_rows` (`offsets`, their bounds) into `seg`, which starts
/// at the first one's first row. `N` is `row_bytes` when not 0.
#[inline(always)]
fn reverse_chunk<const N: usize>(src: &[u8], row_bytes: usize, offsets: &[usize], seg: &mut [u8]) {
    let row = if N == 0 { row_bytes } else { N };
    let base = offsets[0];
    for w in offsets.windows(2) {
        let dst = &mut seg[(w[0] - base) * row..(w[1] - base) * row];
        let from = &src[w[0] * row..w[1] * row];
        for (d, s) in dst.chunks_exact_mut(row).zip(from.chunks_exact(row).rev()) {
            d.copy_from_slice(s);
        }
    }
}

/// `out[i * maxlen + j] = (j < x[i]) as D` (1 or 0 in `D`).
pub fn mask<X: Scalar, D: CastElem>(x: &[X], maxlen: usize, out: &mut [D]) -> Result<()> {
    ensure!(x.len().checked_mul(maxlen) == Some(out.len()), Internal, "mask: output size mismatch");
    if out.is_empty() {
        return Ok(());
    }
    let per_task = (CHUNK / maxlen).max(1);
    let bounds = chunk_bounds(out.len(), per_task * maxlen);
    let (one, zero) = (D::from_value(Value::Int(1)), D::from_value(Value::Int(0)));
    for_each_segment(out, &bounds, |i, seg| {
        for (row, &v) in seg.chunks_exact_mut(maxlen).zip(&x[i * per_task..]) {
            let v = v.to_f64();
            for (j, o) in row.iter_mut().enumerate() {
                *o = if (j as f64) < v { one } else { zero };
            }
        }
    })
}

/// Sliding windows of `win` elements within each sequence `[offsets[i], offsets[i+1])` of `x`:
/// `out[r * win + k] = x[r + k]` while `r + k` is inside r's sequence, else `pad`.
pub fn enumerate<T: Copy + Send + Sync>(x: &[T], offsets: &[usize], win: usize, pad: T, out: &mut [T]) -> Result<()> {
    ensure!(x.len().checked_mul(win) == Some(out.len()), Internal, "enumerate: output size mismatch");
    if win == 0 {
        return Ok(()); // the output is empty
    }
    for_each_sequence_rows_chunk(out, offsets, win, |seqs, seg| {
        let base = offsets[seqs.start];
        for i in seqs {
            let xs = &x[offsets[i]..offsets[i + 1]];
            let rows = &mut seg[(offsets[i] - base) * win..(offsets[i + 1] - base) * win];
            for (r, row) in rows.chunks_exact_mut(win).enumerate() {
                for (k, o) in row.iter_mut().enumerate() {
                    *o = xs.get(r + k).copied().unwrap_or(pad);
                }
            }
        }
    })
}

/// How many elements of each sequence `[offsets[i], offsets[i+1])` of `x` survive erasing every
/// element found in `tokens` (sorted).
pub fn erase_counts<T: Copy + Into<i64> + Send + Sync>(
    x: &[T],
    offsets: &[usize],
    tokens: &[i64],
) -> Result<Vec<usize>> {
    let mut counts = lists::filled(offsets.len() - 1, 0usize, "erase: survivors per sequence")?;
    let share = TASK_BYTES.div_ceil(std::mem::size_of::<T>());
    for_each_sequence_chunk(
        &mut counts,
        offsets,
        share,
        |i| i,
        |seqs, c| {
            for (c, i) in c.iter_mut().zip(seqs) {
                *c =
                    x[offsets[i]..offsets[i + 1]].iter().filter(|&&v| tokens.binary_search(&v.into()).is_err()).count();
            }
        },
    )?;
    Ok(counts)
}

/// Writes the survivors of each sequence (see [`erase_counts`]) at `out_offsets[i]` of `out`.
pub fn erase<T: Copy + Into<i64> + Send + Sync>(
    x: &[T],
    offsets: &[usize],
    tokens: &[i64],
    out_offsets: &[usize],
    out: &mut [T],
) -> Result<()> {
    let share = TASK_BYTES.div_ceil(std::mem::size_of::<T>());
    for_each_sequence_chunk(
        out,
        offsets,
        share,
        |i| out_offsets[i],
        |seqs, seg| {
            let base = out_offsets[seqs.start];
            for i in seqs {
                let survivors =
                    x[offsets[i]..offsets[i + 1]].iter().filter(|&&v| tokens.binary_search(&v.into()).is_err());
                for (o, &v) in seg[out_offsets[i] - base..out_offsets[i + 1] - base].iter_mut().zip(survivors) {
                    *o = v;
                }
            }
        },
    )
}

/// Concatenates sequence by sequence: output sequence `i` is sequence `i` of `srcs[0]`, then of
/// `srcs[1]`, ...; sequence `i` of source `j` is rows `[offsets[j][i], offsets[j][i+1])`, rows of
/// `row_bytes` bytes. `out_offsets` are the output's row offsets.
pub fn concat_sequences(
    srcs: &[&[u8]],
    offsets: &[&[usize]],
    row_bytes: usize,
    out_offsets: &[usize],
    out: &mut [u8],
) -> Result<()> {
    let rows = out_offsets[out_offsets.len() - 1];
    ensure!(
        rows.checked_mul(row_bytes) == Some(out.len()),
        Internal,
        "sequence_concat: {rows} rows of {row_bytes} bytes for an output of {}",
        out.len()
    );
    for_each_sequence_rows_chunk(out, out_offsets, row_bytes, |seqs, seg| {
        let mut at = 0;
        for i in seqs {
            for (src, offs) in srcs.iter().zip(offsets) {
                let part = &src[offs[i] * row_bytes..offs[i + 1] * row_bytes];
                copy(&mut seg[at..at + part.len()], part, false);
                at += part.len();
            }
        }
    })
}

/// sequence_concat's output offsets: offset `i` is the sum of `levels[j][i]` over the levels (at
/// least 2, of equal length; the caller checked that the sums fit). Each offset is written once,
/// straight into the list's unused capacity, in chunks on the pool: the output may hold millions,
/// and a fill before the sums would be one more pass over fresh memory.
pub fn sum_offsets(levels: &[&[usize]]) -> Result<Vec<usize>> {
    let n = levels[0].len();
    let mut sums: Vec<usize> = lists::with_capacity(n, "sequence_concat: output LoD")?;
    let bounds = chunk_bounds(n, CHUNK);
    for_each_segment(&mut sums.spare_capacity_mut()[..n], &bounds, |c, out| {
        let range = bounds[c]..bounds[c + 1];
        for ((o, a), b) in out.iter_mut().zip(&levels[0][range.clone()]).zip(&levels[1][range.clone()]) {
            o.write(a + b);
        }
        for level in &levels[2..] {
            for (o, v) in out.iter_mut().zip(&level[range.clone()]) {
                // SAFETY: the loop over the first two levels wrote every place of `out`.
                unsafe { *o.assume_init_mut() += v };
            }
        }
    })?;
    // SAFETY: the segments cover [0, n), and each task wrote every place of its segment.
    unsafe { sums.set_len(n) };
    Ok(sums)
}

/// sequence_expand's output offsets for an `x` with a LoD: copy `c` of the output is `x`'s
/// sequence `i` (rows `[x[i], x[i+1])`) for `repeats[i] <= c < repeats[i+1]` (`x` and `repeats`
/// are level offsets of equal length); a row count past `usize` is `OutOfMemory`. In two steps,
/// for a caller that needs the output's rows before its offsets: [`Self::rows`] sums them, and
/// [`Self::write`] then writes the offsets (a device moves the rows meanwhile). The offsets are
/// written in chunks of sequences on the pool, each once, into the list's unused capacity; each
/// chunk needs its first row, which the sum of each chunk's rows gives. One chunk (a small batch,
/// or a pool of one thread) starts at 0, so `write` alone makes no first pass for it.
pub struct ExpandOffsets<'a> {
    x: &'a [usize],
    repeats: &'a [usize],
    /// The chunks, as bounds on the sequences.
    bounds: Vec<usize>,
    /// Each chunk's first row and the rows of all, once summed.
    sums: Option<(Vec<usize>, usize)>,
    /// Whether x's rows times its copies fit in `usize`. No copy is longer than x, so then no sum
    /// can overflow and neither pass checks a sequence.
    fits: bool,
}

impl<'a> ExpandOffsets<'a> {
    pub fn new(x: &'a [usize], repeats: &'a [usize]) -> Result<Self> {
        let n = x.len() - 1;
        let bounds = expand_chunks(repeats, num_threads()?)?;
        Ok(Self { x, repeats, bounds, sums: None, fits: x[n].checked_mul(repeats[n]).is_some() })
    }

    /// The output's rows: a pass on the pool that sums each chunk's rows.
    pub fn rows(&mut self) -> Result<usize> {
        if let Some((_, rows)) = self.sums {
            return Ok(rows);
        }
        let chunks = self.bounds.len() - 1;
        let mut rows = lists::filled(chunks, Some(0usize), "sequence_expand: chunk rows")?;
        let each = lists::collect(0..chunks + 1, "sequence_expand: chunk bounds")?;
        let work = 16 * (self.x.len() - 1);
        let this = &*self;
        for_each_segment_with_work(&mut rows, &each, work, |k, out| {
            out[0] = match this.fits {
                true => this.runs(k).try_fold(0, add::<false>),
                false => this.runs(k).try_fold(0, add::<true>),
            };
        })?;
        let mut starts = lists::with_capacity(chunks, "sequence_expand: chunk starts")?;
        let mut at = 0usize;
        for r in rows {
            starts.push(at);
            at = r.and_then(|r| at.checked_add(r)).ok_or_else(overflow)?;
        }
        self.sums = Some((starts, at));
        Ok(at)
    }

    /// The offsets, `repeats`' last + 1 of them. Several chunks are summed first if
    /// [`Self::rows`] has not summed them.
    pub fn write(mut self) -> Result<Vec<usize>> {
        if self.sums.is_none() && self.bounds.len() > 2 {
            self.rows()?;
        }
        // Summed, the rows fit, and so does every offset.
        match self.fits || self.sums.is_some() {
            true => self.write_chunks::<false>(),
            false => self.write_chunks::<true>(),
        }
    }

    /// [`Self::write`], each sequence's rows checked against overflow if `CHECKED`.
    fn write_chunks<const CHECKED: bool>(&self) -> Result<Vec<usize>> {
        let copies = self.repeats[self.repeats.len() - 1];
        let mut offsets: Vec<usize> = lists::with_capacity(copies + 1, "output LoD")
            .map_err(|_| err!(OutOfMemory, "output LoD: {copies} sequences cannot be listed"))?;
        offsets.push(0);
        // Chunk k ends copies [repeats[bounds[k]], repeats[bounds[k+1]]), whose ends follow the 0.
        let ends = lists::collect(self.bounds.iter().map(|&b| self.repeats[b]), "sequence_expand: chunk copies")?;
        let fits = AtomicBool::new(true);
        for_each_segment(&mut offsets.spare_capacity_mut()[..copies], &ends, |k, out| {
            let mut end = self.sums.as_ref().map_or(0, |(starts, _)| starts[k]);
            let mut at = 0;
            for (len, times) in self.runs(k) {
                // Checked once a sequence: its copies' offsets then rise to `end + len * times`.
                if add::<CHECKED>(end, (len, times)).is_none() {
                    fits.store(false, Ordering::Relaxed);
                    return;
                }
                if times == 1 {
                    // The common case (one copy each), without the loop's setup.
                    end += len;
                    out[at].write(end);
                } else {
                    for o in &mut out[at..at + times] {
                        end += len;
                        o.write(end);
                    }
                }
                at += times;
            }
        })?;
        if !fits.into_inner() {
            return Err(overflow());
        }
        // SAFETY: the segments cover the copies, and each chunk wrote an offset for each of its
        // copies (it returns early only when the count overflows, which returned above); with the 0
        // that makes copies + 1.
        unsafe { offsets.set_len(copies + 1) };
        Ok(offsets)
    }

    /// Each sequence of chunk `k` as (its rows, its copies).
    fn runs(&self, k: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let (a, b) = (self.bounds[k], self.bounds[k + 1]);
        let (x, r) = (&self.x[a..=b], &self.repeats[a..=b]);
        x.windows(2).zip(r.windows(2)).map(|(x, r)| (x[1] - x[0], r[1] - r[0]))
    }
}

/// `end` plus a sequence's rows times its copies; None past `usize` if `CHECKED` (unchecked, the
/// caller knows it fits).
fn add<const CHECKED: bool>(end: usize, (len, times): (usize, usize)) -> Option<usize> {
    match CHECKED {
        true => len.checked_mul(times).and_then(|rows| end.checked_add(rows)),
        false => Some(end + len * times),
    }
}

/// The error of an output whose rows do not fit in `usize`, whichever pass finds it.
fn overflow() -> crate::error::Error {
    err!(OutOfMemory, "output LoD: the row count overflows")
}

/// The chunks of [`ExpandOffsets`]: one for one thread, else up to 4 a thread, of at least CHUNK
/// work each (see [`work_chunks`]; a sequence's copies are its length there).
fn expand_chunks(repeats: &[usize], threads: usize) -> Result<Vec<usize>> {
    let n = repeats.len() - 1;
    let work = n.saturating_add(repeats[n]);
    let share = if threads <= 1 { usize::MAX } else { work.div_ceil(4 * threads).max(CHUNK) };
    work_chunks(repeats, share)
}

/// The shape of a sequence convolution: `width` = N columns of x, `out_width` = M columns of the
/// output, `context_length` rows of context starting `context_start` rows from each row, and
/// `up_pad` (rows of `padding` used before a sequence; the rows after it follow).
pub struct ConvShape {
    pub width: usize,
    pub out_width: usize,
    pub context_length: usize,
    pub context_start: i64,
    pub up_pad: usize,
}

/// `out[r] = Σ_j context(r, j) · filter[j*N .. (j+1)*N]`, where `context(r, j)` is row
/// `p = r + context_start + j` of r's own sequence (`offsets`), or, outside it, zeros
/// (`padding` None) or `padding[up_pad + p]` before it and `padding[up_pad + p - len]` after it.
pub fn sequence_conv<T>(
    x: &[T],
    offsets: &[usize],
    filter: &[T],
    padding: Option<&[T]>,
    s: &ConvShape,
    out: &mut [T],
) -> Result<()>
where
    T: Copy + Send + Sync + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let (n, m) = (s.width, s.out_width);
    // Rows of no columns contribute nothing, however long the context.
    let context_length = if n == 0 { 0 } else { s.context_length };
    if m == 0 {
        return Ok(()); // the output is empty
    }
    for_each_sequence_rows_chunk(out, offsets, m, |seqs, seg| {
        let base = offsets[seqs.start];
        for i in seqs {
            let (start, len) = (offsets[i], offsets[i + 1] - offsets[i]);
            let rows = &mut seg[(start - base) * m..(start - base + len) * m];
            conv_sequence(&x[start * n..(start + len) * n], len, filter, padding, s, context_length, rows);
        }
    })
}

/// The output rows of one sequence of [`sequence_conv`], its `len` rows `xs`.
#[inline(always)]
fn conv_sequence<T>(
    xs: &[T],
    len: usize,
    filter: &[T],
    padding: Option<&[T]>,
    s: &ConvShape,
    context_length: usize,
    out: &mut [T],
) where
    T: Copy + Default + std::ops::Add<Output = T> + std::ops::Mul<Output = T>,
{
    let (n, m) = (s.width, s.out_width);
    for (r, row) in out.chunks_exact_mut(m).enumerate() {
        row.fill(T::default());
        for j in 0..context_length {
            let p = r as i64 + s.context_start + j as i64;
            let src = if (0..len as i64).contains(&p) {
                &xs[p as usize * n..(p as usize + 1) * n]
            } else if let Some(pad) = padding {
                let k = if p < 0 { (s.up_pad as i64 + p) as usize } else { s.up_pad + (p as usize - len) };
                &pad[k * n..(k + 1) * n]
            } else {
                continue;
            };
            for (c, &a) in src.iter().enumerate() {
                let f = &filter[(j * n + c) * m..(j * n + c + 1) * m];
                for (o, &w) in row.iter_mut().zip(f) {
                    *o = *o + a * w;
                }
            }
        }
    }
}
