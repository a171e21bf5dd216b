//! Launchers of `kernels/tensor_array.cu`: moves between one device tensor and several (pack,
//! concat/stack, unstack) in one launch each, the tensors' addresses uploaded as a table.

use super::device::{device, new_tensor, Device};
use super::launch::{launch, launch_1d, upload, Args, BLOCK};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::place::Place;
use crate::tensor::Tensor;
use std::ops::Range;
use std::sync::Arc;

/// The device of `tensors` (all on one CUDA device: callers check places).
fn device_of(tensors: &[&Tensor], what: &str) -> Result<Arc<Device>> {
    match tensors.first().map(|t| t.place()) {
        Some(Place::Cuda(n)) => device(n),
        other => Err(err!(Internal, "{what}: the CUDA kernel got tensors on {other:?}")),
    }
}

/// The widest word (16, 8, 4, 2 or 1 bytes) dividing every size and address.
fn word_for(sizes: impl Iterator<Item = u64> + Clone, addresses: impl Iterator<Item = u64> + Clone) -> usize {
    [16usize, 8, 4, 2, 1]
        .into_iter()
        .find(|&w| sizes.clone().chain(addresses.clone()).all(|v| v % w as u64 == 0))
        .expect("1 divides everything")
}

/// A new device tensor of `dims` and `dtype` whose rows are the blocks `(source, rows)`, in order:
/// rows `rows` of `srcs[source]` viewed as rows of `row_bytes` bytes. The blocks fit (callers
/// validate). One launch; the table (address, start row, output offset per block) is uploaded once.
pub fn gather_sources(
    srcs: &[&Tensor],
    row_bytes: usize,
    blocks: &[(usize, Range<usize>)],
    dtype: DType,
    dims: Dim,
) -> Result<Tensor> {
    let d = device_of(srcs, "array_to_lod_tensor")?;
    let mut out = new_tensor(&d, dtype, dims)?;
    let total_rows: usize = blocks.iter().map(|(_, r)| r.len()).sum();
    ensure!(
        total_rows * row_bytes == out.nbytes(),
        Internal,
        "gather_sources: {total_rows} rows of {row_bytes} bytes do not fill {} bytes",
        out.nbytes()
    );
    if out.nbytes() == 0 {
        return Ok(out);
    }
    let num_blocks = u32::try_from(blocks.len())
        .map_err(|_| err!(Unsupported, "array: {} row blocks; the CUDA kernel takes up to 2^32 - 1", blocks.len()))?;
    let addresses: Vec<u64> = blocks.iter().map(|(s, _)| srcs[*s].as_ptr() as u64).collect();
    let starts: Vec<i64> = blocks.iter().map(|(_, r)| r.start as i64).collect();
    let mut offsets = Vec::with_capacity(blocks.len() + 1);
    offsets.push(0i64);
    for (_, r) in blocks {
        offsets.push(offsets[offsets.len() - 1] + r.len() as i64);
    }
    let dst = out.as_mut_ptr() as u64;
    let word = word_for(std::iter::once(row_bytes as u64), addresses.iter().copied().chain(std::iter::once(dst)));
    let row_words = (row_bytes / word) as u64;
    let (addresses, starts, offsets) = (upload(&d, &addresses)?, upload(&d, &starts)?, upload(&d, &offsets)?);
    let args = Args::new()
        .buf(&addresses)
        .buf(&starts)
        .buf(&offsets)
        .arg(num_blocks)
        .arg(dst)
        .arg(row_words)
        .arg(total_rows as u64);
    launch_1d(&d, "tensor_array.cu", &format!("gather_sources_{word}"), total_rows as u64 * row_words, args)?;
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
    let word = word_for(piece_bytes.iter().map(|&b| b as u64), pieces.iter().copied().chain(std::iter::once(whole)));
    let words: Vec<u64> = piece_bytes.iter().map(|&b| (b / word) as u64).collect();
    let mut cols = Vec::with_capacity(words.len());
    let mut at = 0u64;
    for &w in &words {
        cols.push(at);
        at += w;
    }
    let most = words.iter().max().copied().unwrap_or(0) * outer as u64;
    let grid_y = num.min(65535);
    let grid_x = most.div_ceil(BLOCK as u64).clamp(1, (1u64 << 16) / grid_y as u64 + 1) as u32;
    let (table, words_t, cols) = (upload(d, pieces)?, upload(d, &words)?, upload(d, &cols)?);
    let args = Args::new()
        .buf(&table)
        .buf(&words_t)
        .buf(&cols)
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
    let d = device_of(srcs, "tensor_array_to_tensor")?;
    let mut out = new_tensor(&d, dtype, dims)?;
    let addresses: Vec<u64> = srcs.iter().map(|t| t.as_ptr() as u64).collect();
    pieces(&d, &addresses, inner, out.as_mut_ptr() as u64, outer, true)?;
    Ok(out)
}

/// The inverse for `n` equal pieces: piece `i` (a new tensor of `part_dims`) is bytes
/// `[(o * n + i) * inner, (o * n + i + 1) * inner)` of `x` for every row `o < outer`.
pub fn split_outer(x: &Tensor, inner: usize, n: usize, outer: usize, part_dims: Dim) -> Result<Vec<Tensor>> {
    let d = device_of(&[x], "unstack")?;
    let mut parts = (0..n).map(|_| new_tensor(&d, x.dtype(), part_dims)).collect::<Result<Vec<_>>>()?;
    let addresses: Vec<u64> = parts.iter_mut().map(|t| t.as_mut_ptr() as u64).collect();
    pieces(&d, &addresses, &vec![inner; n], x.as_ptr() as u64, outer, false)?;
    Ok(parts)
}
