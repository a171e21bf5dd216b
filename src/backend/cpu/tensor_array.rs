//! Data movement of the TensorArray ops that split one tensor along an axis into many (unstack)
//! or join many into one (concat, stack). Seen from the axis, the one tensor is `outer` rows, each
//! the concatenation of one row of every member (a part, or a source): the kernels copy between
//! that contiguous side and the members' rows. Bytes only, so one kernel serves every dtype.

use super::pool::for_each_segment_with_work;
use super::prefetch_lines;
use super::rows::{copy, copy_line, store_fence, streams, PREFETCH_AHEAD_BYTES, STREAM_MIN_BYTES, TASK_BYTES};
use super::transpose::{transposer, Square, Transpose};
use crate::error::{ensure, Result};
use crate::memory::lists;
use std::cell::RefCell;
use std::ops::Range;

/// The rows of consecutive members are copied together, up to this many bytes of a row of the
/// contiguous side: a task then reads or writes that side in runs of this length, and touches the
/// pages of its block of members only, not of every member at every row. Unstacking 4096 parts of
/// 64-byte rows took 2.4-2.6 ms with blocks of 1 KiB, 3.3-3.6 ms with 4 KiB (benches/REPORT.md).
const BLOCK_BYTES: usize = 1024;

/// A task's rows of each member in a block hold at least this many bytes where the task can be
/// that long: with rows of a byte, a task of `TASK_BYTES` had a piece of 64 bytes for each of its
/// 1024 members, and listing those pieces cost more than moving their bytes (unstacking the
/// columns of a [4096, 2048] uint8 matrix: 1.8-2.1 ms, 0.97-1.06 ms with pieces of 1 KiB;
/// benches/REPORT.md).
const PIECE_BYTES: usize = 1024;

/// A concatenation through squares takes this many squares down the rows at a time (a tile): it
/// goes down the tile's squares for each set of sources before the next set, so that it reads
/// each source in runs of several lines (16 lines for rows of a 4-byte word), not a line of every
/// source of the block in turn. On Zen 3 the stack of the columns of a [4096, 512] float matrix
/// took 3.6 ms a square at a time, 2.5 ms in tiles of 16 squares; on Zen 4, with AVX-512's
/// squares, tiles of 16 squares (256 rows) took 1.25-1.47 ms and of 128 rows 1.58-1.62
/// (benches/REPORT.md).
const TILE_SQUARES: usize = 16;

/// A tile's rows where the squares store half lines ([`Square::half_lines`]) and the output
/// streams: the tile's rows are assembled in the thread's [`TILE`], then streamed out whole, not
/// half a line of each of its rows at a time. On Zen 3 the stack of the float columns took 2.5 ms
/// in tiles streamed in place, 2.2 ms streamed from the buffer; of uint8 columns 3.7 and 2.5 ms.
/// A buffer of 64 to 128 rows was the fastest for each word size there. With AVX-512's squares,
/// which store whole lines, on Zen 4 the buffer made the same stacks slower (float columns
/// 1.25-1.47 -> 1.85-2.00 ms), so they stream in place (benches/REPORT.md).
const TILE_ROWS: usize = 128;
const _: () =
    assert!(TILE_ROWS <= 64 * TILE_SQUARES && TILE_ROWS.is_multiple_of(64), "a buffered tile is whole squares");

thread_local! {
    /// The buffer where a thread assembles a tile of a streamed concatenation through squares that
    /// store half lines: `TILE_ROWS` rows of a block, at most 128 KiB; kept for the thread's life
    /// so that a call does not allocate it (never allocated where the squares store whole lines).
    static TILE: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Whether `tile` holds `bytes` bytes, grown where it holds fewer and the allocation succeeds.
fn tile_of(tile: &mut Vec<u8>, bytes: usize) -> bool {
    if tile.len() < bytes {
        if tile.try_reserve_exact(bytes - tile.len()).is_err() {
            return false;
        }
        tile.resize(bytes, 0);
    }
    true
}

/// Rows of a size that the copies are not compiled for (`N` = 0) go this many at a time, each
/// member's rows of the group one after another (in a split, rows shorter than a line only). Row
/// by row, a row of every member of a block in turn, the line of each member (85 of them for rows
/// of 12 bytes) was touched again for each of the next rows, which cost more than the rows moved:
/// the stack of the 512 columns of 3 floats of a [4096, 512, 3] matrix took 16-17 ms, 11-12 ms by
/// groups (benches/REPORT.md).
const ODD_ROWS: usize = 16;

/// Consecutive members whose rows lie at `at..at + bytes` of each row of the contiguous side, and
/// the rows a task of theirs copies.
struct Block {
    members: Range<usize>,
    at: usize,
    bytes: usize,
    rows_per_task: usize,
}

/// The members, of `inner[i]` bytes a row, in blocks of at most `BLOCK_BYTES` a row (one member
/// at least); each block's tasks copy about `TASK_BYTES`.
fn blocks(inner: &[usize], outer: usize) -> Result<Vec<Block>> {
    let mut blocks = lists::with_capacity(inner.len(), "array: member blocks")?;
    let (mut start, mut at) = (0, 0);
    while start < inner.len() {
        let (mut end, mut bytes) = (start + 1, inner[start]);
        while end < inner.len() && bytes + inner[end] <= BLOCK_BYTES {
            bytes += inner[end];
            end += 1;
        }
        let narrowest = inner[start..end].iter().copied().filter(|&w| w > 0).min().unwrap_or(1);
        let rows = (TASK_BYTES / bytes.max(1)).max(PIECE_BYTES / narrowest);
        let rows_per_task = rows.clamp(1, outer.max(1));
        blocks.push(Block { members: start..end, at, bytes, rows_per_task });
        (start, at) = (end, at + bytes);
    }
    Ok(blocks)
}

/// How many rows ahead of the copy a block's rows are prefetched.
fn rows_ahead(block_bytes: usize) -> usize {
    PREFETCH_AHEAD_BYTES.div_ceil(block_bytes.max(1))
}

/// Splits `src`, `outer` rows of `outs.len()` member rows of `inner` bytes, into its members:
/// `outs[i]` (exactly `outer * inner` bytes) receives member row `i` of every row, in order. The
/// inverse of stacking; unstack along axis 0 is the case `outer` = 1.
pub fn split_outer(src: &[u8], inner: usize, outer: usize, outs: &mut [&mut [u8]]) -> Result<()> {
    let n = outs.len();
    ensure!(
        src.len() == outer * n * inner,
        Internal,
        "split source has {} bytes, expected {outer} x {n} x {inner}",
        src.len()
    );
    for (i, o) in outs.iter().enumerate() {
        ensure!(o.len() == outer * inner, Internal, "part {i} has {} bytes, expected {outer} x {inner}", o.len());
    }
    if src.is_empty() {
        return Ok(());
    }
    let blocks = blocks(&lists::collect(std::iter::repeat_n(inner, n), "unstack: row sizes")?, outer)?;
    // Each task's part of each of its members: block by block, tile by tile, member by member.
    let tiles: usize = blocks.iter().map(|b| b.members.len() * outer.div_ceil(b.rows_per_task)).sum();
    let mut pieces = lists::with_capacity(tiles, "unstack: part tiles")?;
    let mut tasks = lists::with_capacity(tiles, "unstack: tasks")?;
    let mut bounds = lists::with_capacity(tiles + 1, "unstack: task bounds")?;
    bounds.push(0);
    let mut rest = outs;
    for (b, block) in blocks.iter().enumerate() {
        let (members, tail) = std::mem::take(&mut rest).split_at_mut(block.members.len());
        rest = tail;
        let mut tiles = lists::collect(
            members.iter_mut().map(|m| m.chunks_mut(block.rows_per_task * inner)),
            "unstack: member tiles",
        )?;
        for first in (0..outer).step_by(block.rows_per_task) {
            pieces.extend(tiles.iter_mut().filter_map(|t| t.next()));
            tasks.push((b, first));
            bounds.push(pieces.len());
        }
    }
    ensure!(pieces.len() == tiles, Internal, "unstack: {} part tiles, expected {tiles}", pieces.len());
    // Rows of a line or less are written a line at a time (see `split_task`), which streams well
    // however scattered the lines.
    let stream = streams(src.len(), n * outer) || (src.len() >= STREAM_MIN_BYTES && 64 % inner == 0);
    for_each_segment_with_work(&mut pieces, &bounds, 2 * src.len(), |t, parts| {
        let (b, first) = tasks[t];
        by_row_size!(Some(inner), split_task(src, n * inner, &blocks[b], inner, first, parts, stream));
        if stream {
            store_fence();
        }
    })
}

/// One task of `split_outer`: rows `first..` of `block` (rows of `row` bytes in `src`) into
/// `parts`, each the tile of one member's rows. `N` is `inner` when not 0.
#[inline(always)]
fn split_task<const N: usize>(
    src: &[u8],
    row: usize,
    block: &Block,
    inner: usize,
    first: usize,
    parts: &mut [&mut [u8]],
    stream: bool,
) {
    let inner = if N == 0 { inner } else { N };
    let rows = parts.first().map_or(0, |p| p.len() / inner);
    let ahead = rows_ahead(block.bytes);
    let line = |o: usize| &src[o * row + block.at..][..block.bytes];
    let prefetch = |o: usize| {
        if o * row < src.len() {
            prefetch_lines(line(o).as_ptr(), block.bytes.min(PREFETCH_AHEAD_BYTES));
        }
    };
    (first..first + ahead.min(rows)).for_each(prefetch);
    // Rows shorter than a line go a line's worth at a time: each member's rows of the group are
    // then written as one line, not a piece of a line per row. Shorter rows of other sizes go
    // `ODD_ROWS` at a time; longer ones row by row, as grouping them was not seen to help (rows
    // of 100 bytes: within this machine's spread either way).
    let odd = if inner < 64 { ODD_ROWS } else { 1 };
    let group = 64usize.checked_div(N).map_or(odd, |g| g.max(1));
    let square = if N > 0 { transposer::<N>() } else { None };
    let mut lines: [&[u8]; 64] = [&[]; 64];
    for g in (0..rows).step_by(group) {
        let k = group.min(rows - g);
        for (r, l) in lines[..k].iter_mut().enumerate() {
            prefetch(first + g + r + ahead);
            *l = line(first + g + r);
        }
        // A full group's members go `group` at a time through registers where the CPU can.
        let mut m = 0;
        if let (Some(Square { transpose, .. }), true) = (square, k == group) {
            let (mut src, mut dst) = ([std::ptr::null(); 64], [std::ptr::null_mut(); 64]);
            while m + group <= parts.len() {
                for (s, l) in src.iter_mut().zip(&lines[..group]) {
                    *s = l[m * N..][..64].as_ptr();
                }
                for (d, p) in dst.iter_mut().zip(&mut parts[m..m + group]) {
                    *d = p[g * N..][..64].as_mut_ptr();
                }
                // SAFETY: each of the first `group` pointers starts a line of its slice (the
                // slicing checked), the parts' lines apart from each other and from `src`.
                unsafe { transpose(&src, &dst, stream) };
                m += group;
            }
        }
        for (m, p) in parts.iter_mut().enumerate().skip(m) {
            let dst = &mut p[g * inner..(g + k) * inner];
            if N > 0 && k == group {
                let mut line = [0u8; 64];
                for (d, l) in line.chunks_exact_mut(inner).zip(&lines[..k]) {
                    d.copy_from_slice(&l[m * inner..(m + 1) * inner]);
                }
                copy_line(dst, &line, stream);
                continue;
            }
            for (d, l) in dst.chunks_exact_mut(inner).zip(&lines[..k]) {
                copy(d, &l[m * inner..(m + 1) * inner], stream);
            }
        }
    }
}

/// Concatenation along an axis, seen as `outer` rows: output row `o` is the concatenation over
/// sources `i` of bytes `[o * inner[i], (o + 1) * inner[i])` of `srcs[i]`. Stacking is the case
/// where every source contributes one block of its trailing dims per row.
pub fn concat_outer(srcs: &[&[u8]], inner: &[usize], outer: usize, out: &mut [u8]) -> Result<()> {
    ensure!(srcs.len() == inner.len(), Internal, "{} sources but {} block sizes", srcs.len(), inner.len());
    for (i, (s, &n)) in srcs.iter().zip(inner).enumerate() {
        ensure!(s.len() == n * outer, Internal, "source {i} has {} bytes, expected {outer} x {n}", s.len());
    }
    let row: usize = inner.iter().sum();
    ensure!(out.len() == outer * row, Internal, "concat covers {outer} x {row} bytes, output has {}", out.len());
    if out.is_empty() {
        return Ok(());
    }
    let blocks = blocks(inner, outer)?;
    // Each task's part of the output: a tile of whole rows when one block spans the row, else one
    // piece per row of a block, block by block (the rows of a tile are then not contiguous).
    let count: usize = blocks.iter().map(|b| outer.div_ceil(b.rows_per_task)).sum();
    let mut tasks = lists::with_capacity(count, "concat: tasks")?;
    let mut bounds = lists::with_capacity(count + 1, "concat: task bounds")?;
    bounds.push(0);
    // Rows of a line or less are written a line at a time (see `concat_task`), which streams well.
    let lines = inner.iter().all(|&w| w == inner[0] && w > 0 && 64 % w == 0);
    let stream = streams(out.len(), srcs.len() * outer) || (out.len() >= STREAM_MIN_BYTES && lines);
    let bytes = out.len();
    let piece_count = if blocks.len() == 1 { count } else { blocks.len() * outer };
    let mut pieces = lists::with_capacity(piece_count, "concat: output pieces")?;
    if let [block] = &blocks[..] {
        pieces.extend(out.chunks_mut(block.rows_per_task * row));
        for (t, first) in (0..outer).step_by(block.rows_per_task).enumerate() {
            tasks.push((0, first));
            bounds.push(t + 1);
        }
    } else {
        let mut slots = lists::collect((0..blocks.len() * outer).map(|_| None), "concat: row pieces")?;
        for (o, mut rest) in out.chunks_mut(row).enumerate() {
            for (b, block) in blocks.iter().enumerate() {
                let (piece, tail) = std::mem::take(&mut rest).split_at_mut(block.bytes);
                slots[b * outer + o] = Some(piece);
                rest = tail;
            }
        }
        pieces.extend(slots.into_iter().flatten());
        for (b, block) in blocks.iter().enumerate() {
            for first in (0..outer).step_by(block.rows_per_task) {
                tasks.push((b, first));
                bounds.push(b * outer + (first + block.rows_per_task).min(outer));
            }
        }
    }
    for_each_segment_with_work(&mut pieces, &bounds, 2 * bytes, |t, dsts| {
        let (b, first) = tasks[t];
        let block = &blocks[b];
        let widths = &inner[block.members.clone()];
        let common = widths.iter().all(|&w| w == widths[0]).then_some(widths[0]);
        by_row_size!(common, concat_task(&srcs[block.members.clone()], widths, block.bytes, first, dsts, stream));
        if stream {
            store_fence();
        }
    })
}

/// One task of `concat_outer`: rows `first..` of a block's `srcs` (rows of `widths` bytes; all
/// `N` when not 0) into `dsts`, pieces of whole block rows (`block_bytes` each), in order.
#[inline(always)]
fn concat_task<const N: usize>(
    srcs: &[&[u8]],
    widths: &[usize],
    block_bytes: usize,
    first: usize,
    dsts: &mut [&mut [u8]],
    stream: bool,
) {
    let ahead = rows_ahead(block_bytes);
    // Rows `o..o + k` of every source.
    let prefetch = |o: usize, k: usize| {
        for (s, &w) in srcs.iter().zip(widths) {
            let w = if N == 0 { w } else { N };
            // Rows shorter than a line: only the row that starts a line asks for it.
            if let Some(r) = s.get(o * w..(o + k) * w) {
                if r.len() >= 64 || (r.as_ptr() as usize) % 64 < w {
                    prefetch_lines(r.as_ptr(), r.len().min(PREFETCH_AHEAD_BYTES));
                }
            }
        }
    };
    let rows = dsts.iter().map(|d| d.len() / block_bytes.max(1)).sum::<usize>();
    (first..first + ahead.min(rows)).for_each(|o| prefetch(o, 1));
    // Sources of rows of a line or less fill a line of the output `per_line` at a time; where the
    // CPU can, `per_line` rows of `per_line` sources at a time, through registers, in tiles of
    // `TILE_SQUARES` squares, or of `TILE_ROWS` rows through the buffer.
    let per_line = 64usize.checked_div(N).map_or(1, |g| g.max(1));
    let square = if N > 0 { transposer::<N>() } else { None };
    let buffered = stream && square.is_some_and(|s| s.half_lines);
    let mut out_rows = dsts.iter_mut().flat_map(|d| d.chunks_exact_mut(block_bytes.max(1)));
    let mut group: [Option<&mut [u8]>; 64 * TILE_SQUARES] = [const { None }; 64 * TILE_SQUARES];
    let mut o = first;
    loop {
        let mut k = 0;
        let take = match (square, N) {
            (Some(_), _) if buffered => TILE_ROWS,
            (Some(_), _) => per_line * TILE_SQUARES,
            (None, 0) => ODD_ROWS,
            (None, _) => 1,
        };
        for (slot, row) in group.iter_mut().zip(out_rows.by_ref().take(take)) {
            *slot = Some(row);
            k += 1;
        }
        if k == 0 {
            break;
        }
        // The sources done through squares for rows `o..o + squared` of the tile (whole squares).
        let squared = k / per_line * per_line;
        let done = match square {
            Some(Square { transpose, .. }) if squared > 0 && buffered => TILE.with_borrow_mut(|tile| {
                let tile = tile_of(tile, squared * block_bytes).then_some(&mut tile[..]);
                squares_streamed::<N>(transpose, srcs, o, &mut group[..squared], tile, block_bytes)
            }),
            Some(Square { transpose, .. }) if squared > 0 => {
                squares::<N>(transpose, srcs, o, &mut group[..squared], stream)
            }
            _ => 0,
        };
        if N == 0 {
            // Source by source, each source's rows of the group.
            (o..o + k).for_each(|r| prefetch(r + ahead, 1));
            let mut at = 0;
            for (s, &w) in srcs.iter().zip(widths) {
                for (r, slot) in group[..k].iter_mut().enumerate() {
                    let d = slot.as_mut().expect("filled above");
                    copy(&mut d[at..at + w], &s[(o + r) * w..(o + r + 1) * w], stream);
                }
                at += w;
            }
            group[..k].iter_mut().for_each(|slot| *slot = None);
            o += k;
            continue;
        }
        for (r, slot) in group[..k].iter_mut().enumerate() {
            let d = slot.take().expect("filled above");
            let from = if r < squared { done } else { 0 };
            if from < srcs.len() {
                prefetch(o + r + ahead, 1);
            }
            concat_row::<N>(&srcs[from..], o + r, &mut d[from * N..], stream);
        }
        o += k;
    }
}

/// Rows `o..o + rows.len()` of the first sources of `srcs` (rows of `N` bytes, not 0), as many
/// as make whole squares, into the start of `rows` (all filled, a whole number of squares), a set
/// of sources at a time down all the rows; returns the number of sources done.
#[inline(always)]
fn squares<const N: usize>(
    transpose: Transpose,
    srcs: &[&[u8]],
    o: usize,
    rows: &mut [Option<&mut [u8]>],
    stream: bool,
) -> usize {
    let per_line = 64 / N;
    let (mut src, mut dst) = ([std::ptr::null(); 64], [std::ptr::null_mut(); 64]);
    let mut done = 0;
    while done + per_line <= srcs.len() {
        for g in (0..rows.len()).step_by(per_line) {
            for (p, s) in src.iter_mut().zip(&srcs[done..done + per_line]) {
                *p = s[(o + g) * N..][..64].as_ptr();
            }
            for (p, row) in dst.iter_mut().zip(rows[g..g + per_line].iter_mut().flatten()) {
                *p = row[done * N..][..64].as_mut_ptr();
            }
            // SAFETY: each of the first `per_line` pointers starts a line of its slice (the slicing
            // checked; the square's rows are filled), the rows apart from each other and from the
            // sources.
            unsafe { transpose(&src, &dst, stream) };
        }
        done += per_line;
    }
    done
}

/// [`squares`] into rows of `block_bytes` that stream: assembled in `tile` (at least
/// `rows.len()` rows of `block_bytes`), then streamed out row by row; without a tile (the
/// thread's could not grow), the squares stream into the rows themselves.
#[inline(always)]
fn squares_streamed<const N: usize>(
    transpose: Transpose,
    srcs: &[&[u8]],
    o: usize,
    rows: &mut [Option<&mut [u8]>],
    tile: Option<&mut [u8]>,
    block_bytes: usize,
) -> usize {
    let Some(tile) = tile else {
        return squares::<N>(transpose, srcs, o, rows, true);
    };
    let mut staged: [Option<&mut [u8]>; TILE_ROWS] = [const { None }; TILE_ROWS];
    for (slot, row) in staged.iter_mut().zip(tile.chunks_exact_mut(block_bytes)) {
        *slot = Some(row);
    }
    let staged = &mut staged[..rows.len()];
    let done = squares::<N>(transpose, srcs, o, staged, false);
    for (d, s) in rows.iter_mut().zip(staged.iter()) {
        let (d, s) = (d.as_mut().expect("rows filled"), s.as_ref().expect("tile rows filled"));
        copy(&mut d[..done * N], &s[..done * N], true);
    }
    done
}

/// Row `o` of `srcs` (rows of `N` bytes, not 0: other sizes go by groups in `concat_task`) into
/// `d`, their concatenation.
#[inline(always)]
fn concat_row<const N: usize>(srcs: &[&[u8]], o: usize, d: &mut [u8], stream: bool) {
    let per_line = (64 / N).max(1);
    for (these, d) in srcs.chunks(per_line).zip(d.chunks_mut(per_line * N)) {
        if these.len() == per_line {
            let mut line = [0u8; 64];
            for (l, s) in line.chunks_exact_mut(N).zip(these) {
                l.copy_from_slice(&s[o * N..(o + 1) * N]);
            }
            copy_line(d, &line, stream);
            continue;
        }
        for (d, s) in d.chunks_exact_mut(N).zip(these) {
            copy(d, &s[o * N..(o + 1) * N], stream);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cpu::rows::gather_blocks;

    #[test]
    fn gathers_blocks_of_several_sources() {
        let a: Vec<u8> = (0..6).collect(); // 3 rows of 2
        let b: Vec<u8> = (10..14).collect(); // 2 rows of 2
        let mut out = vec![0u8; 8];
        gather_blocks(&[&a, &b], 2, &[(1, 1..2), (0, 0..2), (1, 0..0), (0, 2..3)], &mut out).unwrap();
        assert_eq!(out, [12, 13, 0, 1, 2, 3, 4, 5]);
        assert!(gather_blocks(&[&a], 2, &[(1, 0..1)], &mut [0u8; 2]).is_err());
        assert!(gather_blocks(&[&a], 2, &[(0, 2..4)], &mut [0u8; 4]).is_err());
    }

    /// Member `i`'s rows, `inner[i]` bytes each, distinct for every member and row.
    fn members(inner: &[usize], outer: usize) -> Vec<Vec<u8>> {
        inner
            .iter()
            .enumerate()
            .map(|(i, &w)| (0..w * outer).map(|b| ((b * 7 + i * 13) % 251) as u8).collect())
            .collect()
    }

    /// The plain loop: row `o` of the contiguous side is row `o` of every member in turn.
    fn joined(members: &[Vec<u8>], inner: &[usize], outer: usize) -> Vec<u8> {
        (0..outer)
            .flat_map(|o| members.iter().zip(inner).flat_map(move |(m, &w)| m[o * w..(o + 1) * w].to_vec()))
            .collect()
    }

    /// `n` members of `outer` rows of `inner` bytes: split from, and concatenated into, what the
    /// plain loop joins.
    fn split_and_concat(inner: usize, n: usize, outer: usize) {
        let widths = vec![inner; n];
        let want_members = members(&widths, outer);
        let src = joined(&want_members, &widths, outer);
        let mut parts = vec![vec![0u8; inner * outer]; n];
        let mut outs: Vec<&mut [u8]> = parts.iter_mut().map(|p| &mut p[..]).collect();
        split_outer(&src, inner, outer, &mut outs).unwrap();
        assert!(parts == want_members, "split: {n} x {outer} rows of {inner}");
        let srcs: Vec<&[u8]> = want_members.iter().map(|m| &m[..]).collect();
        let mut out = vec![0u8; src.len()];
        concat_outer(&srcs, &widths, outer, &mut out).unwrap();
        assert!(out == src, "concat: {n} x {outer} rows of {inner}");
    }

    /// Splits and concatenations equal the plain loop: rows of each size the copies are compiled
    /// for (1 to 64 bytes) and of others (0, 3, 100, 1029: streamed when large), one member or
    /// enough for several blocks, one row or enough for several tasks and line groups that do not
    /// come out even; concatenation also of sources of unequal sizes (zero among them).
    #[test]
    fn splits_and_concatenates_like_the_plain_loop() {
        for inner in [1usize, 2, 3, 4, 8, 16, 32, 64, 100, 1029, 0] {
            for (n, outer) in [(1usize, 1usize), (5, 1), (300, 7), (3, 1000), (130, 67)] {
                split_and_concat(inner, n, outer);
            }
        }
        // Large enough to stream: 4 MiB and more in rows of at least 1 KiB, or of a line or less
        // (written a line at a time), with tiles of rows that do not come out even.
        // Of the blocks of rows of 2 and 8 bytes, the last has sources left over from its squares.
        let streamed = [
            (1029usize, 40usize, 110usize),
            (64, 300, 251),
            (4, 1024, 1100),
            (1, 2100, 2001),
            (2, 1100, 2000),
            (8, 300, 2001),
        ];
        for (inner, n, outer) in streamed {
            assert!(inner * n * outer >= STREAM_MIN_BYTES);
            split_and_concat(inner, n, outer);
        }
        // Unequal sources: some blocks of one source, some of many, a source of no bytes.
        let widths = [4usize, 0, 2000, 12, 12, 700, 1, 1, 64, 5000, 3];
        for outer in [1usize, 2, 33] {
            let srcs_owned = members(&widths, outer);
            let srcs: Vec<&[u8]> = srcs_owned.iter().map(|m| &m[..]).collect();
            let mut out = vec![0u8; widths.iter().sum::<usize>() * outer];
            concat_outer(&srcs, &widths, outer, &mut out).unwrap();
            assert!(out == joined(&srcs_owned, &widths, outer), "concat of unequal sources, {outer} rows");
        }
    }

    /// A tile of squares streamed out through a buffer and, as when the thread's buffer cannot
    /// grow, without one, against the plain loop: the rows of the sources the squares do.
    #[test]
    fn streamed_squares_with_and_without_a_buffer() {
        fn check<const N: usize>() {
            let Some(Square { transpose, .. }) = transposer::<N>() else { return };
            let per_line = 64 / N;
            // Sources left over from the squares, rows of the sources starting a tile in.
            let (n, outer, o, tile_rows) = (3 * per_line + 5, 3 * TILE_ROWS, TILE_ROWS, TILE_ROWS);
            let widths = vec![N; n];
            let members = members(&widths, outer);
            let srcs: Vec<&[u8]> = members.iter().map(|m| &m[..]).collect();
            let want = joined(&members, &widths, outer);
            let block_bytes = n * N;
            for buffered in [false, true] {
                let mut out = vec![0u8; tile_rows * block_bytes];
                let mut rows: Vec<Option<&mut [u8]>> = out.chunks_exact_mut(block_bytes).map(Some).collect();
                let mut buffer = vec![0u8; tile_rows * block_bytes];
                let tile = buffered.then_some(&mut buffer[..]);
                let done = squares_streamed::<N>(transpose, &srcs, o, &mut rows, tile, block_bytes);
                store_fence();
                assert_eq!(done, 3 * per_line, "rows of {N} bytes");
                for (r, row) in out.chunks_exact(block_bytes).enumerate() {
                    let at = (o + r) * block_bytes;
                    assert!(
                        row[..done * N] == want[at..at + done * N],
                        "rows of {N} bytes, row {r}, buffer {buffered}"
                    );
                    assert!(row[done * N..].iter().all(|&b| b == 0), "rows of {N} bytes, row {r}: past the squares");
                }
            }
        }
        check::<1>();
        check::<2>();
        check::<4>();
        check::<8>();
    }

    /// Lengths that do not fit are errors and nothing is written.
    #[test]
    fn split_checks_its_lengths() {
        let src = [1u8; 12];
        let (mut a, mut b) = ([9u8; 6], [9u8; 6]);
        assert!(split_outer(&src[..10], 3, 2, &mut [&mut a[..], &mut b[..]]).is_err(), "short source");
        assert!(split_outer(&src, 3, 2, &mut [&mut a[..], &mut b[..5]]).is_err(), "short part");
        assert!(a.iter().chain(&b).all(|&x| x == 9), "nothing written");
        split_outer(&[], 3, 0, &mut [&mut [][..], &mut [][..]]).unwrap();
        split_outer(&[], 0, 9, &mut [&mut [][..]]).unwrap();
    }

    #[test]
    fn concatenates_rows_of_sources() {
        let a = [1u8, 2, 3, 4]; // 2 rows of 2
        let b = [9u8, 8]; // 2 rows of 1
        let mut out = [0u8; 6];
        concat_outer(&[&a, &b], &[2, 1], 2, &mut out).unwrap();
        assert_eq!(out, [1, 2, 9, 3, 4, 8]);
        assert!(concat_outer(&[&a, &b], &[2, 2], 2, &mut out).is_err());
    }
}
