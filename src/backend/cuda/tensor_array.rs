//! Launchers of `kernels/tensor_array.cu`: moves between one device tensor and several (pack,
//! concat/stack, unstack) in one launch each, the tensors' addresses and sizes uploaded as one
//! table.

use super::device::{new_tensor, Device};
use super::launch::{launch, max_blocks, Args, BLOCK};
use super::rows::gather_ranges_from;
use super::seq_common::{device_of, upload_joined, word_for};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{err, Result};
use crate::memory::lists;
use crate::tensor::Tensor;
use std::ops::Range;
use std::sync::Arc;

/// A new device tensor of `dims` and `dtype` whose rows are the blocks `(source, rows)`, in order:
/// rows `rows` of `srcs[source]` viewed as rows of `row_bytes` bytes. The blocks fit (callers
/// validate). One launch of the row gather (`gather_ranges_from`).
pub fn gather_sources(
    srcs: &[&Tensor],
    row_bytes: usize,
    blocks: &[(usize, Range<usize>)],
    dtype: DType,
    dims: Dim,
) -> Result<Tensor> {
    let first = srcs.first().ok_or_else(|| err!(Internal, "gather_sources: no source tensors"))?;
    let d = device_of(first, "gather_sources")?;
    let mut out = new_tensor(&d, dtype, dims)?;
    let bases = lists::collect(srcs.iter().map(|t| t.as_ptr() as u64), "array: source addresses")?;
    let table = blocks.iter().map(|(s, r)| (bases[*s] + (r.start * row_bytes) as u64, r.len()));
    gather_ranges_from(&d, &mut out, row_bytes, &bases, table, "array")?;
    Ok(out)
}

/// Launches the pieces kernel: `whole` is `outer` rows; piece `p` (at `pieces[p]`) owns
/// `piece_bytes[p]` bytes of each row, after the pieces before it.
fn pieces(
    d: &Arc<Device>,
    pieces: &[u64],
    piece_bytes: &[usize],
    whole: u64,
    outer: usize,
    to_whole: bool,
) -> Result<()> {
    let whole_bytes: usize = piece_bytes.iter().sum();
    if whole_bytes == 0 || outer == 0 {
        return Ok(());
    }
    let num = u32::try_from(pieces.len())
        .map_err(|_| err!(Unsupported, "array: {} elements; the CUDA kernel takes up to 2^32 - 1", pieces.len()))?;
    // Every piece's size and address, and the whole's, are multiples of the word.
    let sizes = piece_bytes.iter().map(|&b| b as u64);
    let word = word_for(0, sizes.chain(pieces.iter().copied()).chain([whole]));
    let words = lists::collect(piece_bytes.iter().map(|&b| (b / word) as u64), "array: piece sizes")?;
    let mut cols = lists::with_capacity(words.len(), "array: piece columns")?;
    let mut at = 0u64;
    for &w in &words {
        cols.push(at);
        at += w;
    }
    let most = words.iter().max().copied().unwrap_or(0) * outer as u64;
    // A grid's y extent is at most 65535.
    let grid_y = (num as u64).min(65535).min(max_blocks()) as u32;
    let grid_x = most.div_ceil(BLOCK as u64).clamp(1, max_blocks() / grid_y as u64 + 1) as u32;
    let (_table, tables) = upload_joined(d, &[pieces, &words, &cols])?;
    let args = Args::new()
        .arg(tables[0])
        .arg(tables[1])
        .arg(tables[2])
        .arg(num)
        .arg(whole)
        .arg(at)
        .arg(outer as u64)
        .arg(to_whole as i32);
    launch(d, "tensor_array.cu", &format!("pieces_{word}"), [grid_x, grid_y, 1], [BLOCK, 1, 1], args)
}

/// Concatenation of device tensors seen as `outer` rows: output row `o` is the concatenation over
/// `i` of bytes `[o * inner[i], (o + 1) * inner[i])` of `srcs[i]` (callers validate sizes).
pub fn concat_outer(srcs: &[&Tensor], inner: &[usize], outer: usize, dtype: DType, dims: Dim) -> Result<Tensor> {
    let d = device_of(srcs[0], "tensor_array_to_tensor")?;
    let mut out = new_tensor(&d, dtype, dims)?;
    let addresses = lists::collect(srcs.iter().map(|t| t.as_ptr() as u64), "array: element addresses")?;
    pieces(&d, &addresses, inner, out.as_mut_ptr() as u64, outer, true)?;
    Ok(out)
}

/// The inverse for `n` equal pieces: piece `i` (a new tensor of `part_dims`) is bytes
/// `[(o * n + i) * inner, (o * n + i + 1) * inner)` of `x` for every row `o < outer`.
pub fn split_outer(x: &Tensor, inner: usize, n: usize, outer: usize, part_dims: Dim) -> Result<Vec<Tensor>> {
    let d = device_of(x, "unstack")?;
    let mut parts = lists::try_collect(n, (0..n).map(|_| new_tensor(&d, x.dtype(), part_dims)), "unstack: parts")?;
    let addresses = lists::collect(parts.iter_mut().map(|t| t.as_mut_ptr() as u64), "unstack: part addresses")?;
    let sizes = lists::filled(n, inner, "unstack: part sizes")?;
    pieces(&d, &addresses, &sizes, x.as_ptr() as u64, outer, false)?;
    Ok(parts)
}
