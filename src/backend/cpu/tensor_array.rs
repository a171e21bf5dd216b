//! Data movement of the TensorArray ops that read several source tensors: packing time steps back
//! into one tensor (row blocks of many sources) and concatenating/stacking along an axis. Bytes
//! only, so one kernel serves every dtype; each output block is one task of `for_each_segment`.

use super::pool::for_each_segment;
use crate::error::{ensure, Result};
use crate::memory::lists;

/// Concatenation along an axis, seen as `outer` rows: output row `o` is the concatenation over
/// sources `i` of bytes `[o * inner[i], (o + 1) * inner[i])` of `srcs[i]`. Stacking is the case
/// where every source contributes one block of its trailing dims per row.
pub fn concat_outer(srcs: &[&[u8]], inner: &[usize], outer: usize, out: &mut [u8]) -> Result<()> {
    ensure!(srcs.len() == inner.len(), Internal, "{} sources but {} block sizes", srcs.len(), inner.len());
    for (i, (s, &n)) in srcs.iter().zip(inner).enumerate() {
        ensure!(s.len() == n * outer, Internal, "source {i} has {} bytes, expected {outer} x {n}", s.len());
    }
    let n = srcs.len();
    // One segment per (row, source) pair: parallel whether `outer` is 1 (axis 0) or large.
    let mut bounds = lists::with_capacity(outer * n + 1, "concat: block bounds")?;
    bounds.push(0usize);
    for _ in 0..outer {
        for &b in inner {
            bounds.push(bounds[bounds.len() - 1] + b);
        }
    }
    ensure!(
        bounds[bounds.len() - 1] == out.len(),
        Internal,
        "concat covers {} bytes, output has {}",
        bounds[bounds.len() - 1],
        out.len()
    );
    for_each_segment(out, &bounds, |k, seg| {
        let (o, i) = (k / n, k % n);
        seg.copy_from_slice(&srcs[i][o * inner[i]..(o + 1) * inner[i]]);
    })
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
