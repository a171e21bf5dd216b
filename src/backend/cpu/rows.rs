//! Row-block data movement, the kernel behind every op that only rearranges rows (expand, pack,
//! unpack, reorder, concat, slice, gather): the output is a concatenation of row ranges of the
//! input. Rows are copied as bytes, so one kernel serves every dtype.

use super::pool::for_each_segment;
use crate::error::{ensure, Result};
use std::ops::Range;

/// Writes into `out` the rows `ranges[0]`, then `ranges[1]`, ... of `src`, whose rows are
/// `row_bytes` long. `out` must be exactly as long as all ranges together.
pub fn gather_row_ranges(src: &[u8], row_bytes: usize, ranges: &[Range<usize>], out: &mut [u8]) -> Result<()> {
    // Zero-width rows: any row index is in range.
    let src_rows = src.len().checked_div(row_bytes).unwrap_or(usize::MAX);
    let mut bounds = Vec::with_capacity(ranges.len() + 1);
    bounds.push(0usize);
    for (i, r) in ranges.iter().enumerate() {
        ensure!(
            r.start <= r.end && r.end <= src_rows,
            Internal,
            "row range {i} = {r:?} is outside the source's {src_rows} rows"
        );
        bounds.push(bounds[i] + (r.end - r.start) * row_bytes);
    }
    ensure!(
        bounds[ranges.len()] == out.len(),
        Internal,
        "row ranges cover {} bytes, the output has {}",
        bounds[ranges.len()],
        out.len()
    );
    for_each_segment(out, &bounds, |i, seg| {
        let r = &ranges[i];
        seg.copy_from_slice(&src[r.start * row_bytes..r.end * row_bytes]);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
