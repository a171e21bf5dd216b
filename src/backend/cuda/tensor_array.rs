//! Launchers of `kernels/tensor_array.cu`: moves between one device tensor and several (pack,
//! concat/stack, unstack) in one launch each, the tensors' addresses and sizes uploaded as one
//! table.

use super::device::{new_tensor, new_tensors, Device};
use super::launch::{launch, max_blocks, upload, Args, BLOCK};
use super::rows::gather_ranges_from;
use super::seq_common::{device_of, upload_joined, word_for};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{err, Result};
use crate::lod_tensor::LoDTensor;
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
    if let Some(pw) = narrow(&words, word, outer) {
        return narrow_pieces(d, pieces, num, pw, word, whole, outer, to_whole);
    }
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

/// Rows of a tile of the `narrow_pieces` kernels (tensor_array.cu's NARROW_ROWS).
const NARROW_ROWS: u64 = 32;

/// The words in a row of each piece where the tiled kernel moves them: pieces of one size, each
/// row of them narrower than a 32-byte sector, in more than one row.
fn narrow(words: &[u64], word: usize, outer: usize) -> Option<u32> {
    let pw = *words.first()?;
    let narrow = pw > 0 && pw * (word as u64) < 32 && outer > 1 && words.iter().all(|&w| w == pw);
    narrow.then_some(pw as u32)
}

/// Launches `narrow_pieces_{word}` over the `num` pieces at `pieces`: piece `p` is `pw` words a
/// row, words `[p * pw, (p + 1) * pw)` of each row of `whole`.
#[allow(clippy::too_many_arguments)]
fn narrow_pieces(
    d: &Arc<Device>,
    pieces: &[u64],
    num: u32,
    pw: u32,
    word: usize,
    whole: u64,
    outer: usize,
    to_whole: bool,
) -> Result<()> {
    let tiles = (num as u64).div_ceil((32 / pw) as u64) * (outer as u64).div_ceil(NARROW_ROWS);
    let table = upload(d, pieces)?;
    let args = Args::new().buf(&table).arg(num).arg(pw).arg(whole).arg(outer as u64).arg(to_whole as i32);
    let blocks = tiles.min(max_blocks()) as u32;
    launch(d, "tensor_array.cu", &format!("narrow_pieces_{word}"), [blocks, 1, 1], [BLOCK, 1, 1], args)
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

/// The inverse for `n` equal pieces: piece `i` (a new tensor of `part_dims`, without LoD) is bytes
/// `[(o * n + i) * inner, (o * n + i + 1) * inner)` of `x` for every row `o < outer`.
pub fn split_outer(x: &Tensor, inner: usize, n: usize, outer: usize, part_dims: Dim) -> Result<Vec<LoDTensor>> {
    let d = device_of(x, "unstack")?;
    let mut parts = new_tensors(&d, n, |_| (x.dtype(), part_dims), LoDTensor::dense)?;
    let addresses =
        lists::collect(parts.iter_mut().map(|t| t.tensor_mut().as_mut_ptr() as u64), "unstack: part addresses")?;
    let sizes = lists::filled(n, inner, "unstack: part sizes")?;
    pieces(&d, &addresses, &sizes, x.as_ptr() as u64, outer, false)?;
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::super::KERNEL_SOURCES;
    use super::*;

    #[test]
    fn tile_rows_match_the_kernels() {
        let source = KERNEL_SOURCES.iter().find(|(n, _)| *n == "tensor_array.cu").unwrap().1;
        assert!(source.contains(&format!("#define NARROW_ROWS {NARROW_ROWS}\n")));
    }

    /// The tiled kernel takes pieces of one size whose rows are narrower than 32 bytes, in more
    /// than one row; the others stay with the untiled one.
    #[test]
    fn narrow_pieces_are_those_of_one_narrow_size() {
        assert_eq!(narrow(&[1, 1, 1], 4, 2), Some(1));
        assert_eq!(narrow(&[3, 3], 2, 100), Some(3));
        assert_eq!(narrow(&[31], 1, 2), Some(31));
        assert_eq!(narrow(&[1, 1], 16, 2), Some(1));
        assert_eq!(narrow(&[2, 2], 16, 2), None, "32-byte rows");
        assert_eq!(narrow(&[8], 4, 5), None, "32-byte rows");
        assert_eq!(narrow(&[1, 2], 4, 5), None, "two sizes");
        assert_eq!(narrow(&[1, 1], 4, 1), None, "one row: a plain concatenation");
        assert_eq!(narrow(&[0, 0], 4, 5), None, "empty pieces");
        assert_eq!(narrow(&[], 4, 5), None, "no pieces");
    }
}
