//! Launcher of `fill_on` on a device: one element repeated over a new tensor, with
//! `kernels/pad.cu`'s broadcast kernel (one launch).

use super::device::{device, new_tensor};
use super::launch::{launch_1d, upload, Args};
use crate::dim::Dim;
use crate::dtype::DType;
use crate::error::{ensure, Result};
use crate::tensor::Tensor;

/// A new tensor of `dtype` and `dims` on CUDA device `ordinal`, every element the bytes of
/// `element` (one `dtype` element, converted on the host). The element is repeated into the
/// widest word (up to 8 bytes) that divides the tensor's bytes and its address, so small dtypes
/// are written 8 bytes per thread.
pub fn fill(ordinal: u32, dtype: DType, dims: Dim, element: &[u8]) -> Result<Tensor> {
    let size = dtype.size();
    ensure!(element.len() == size, Internal, "fill: an element of {} bytes for {dtype}", element.len());
    let d = device(ordinal)?;
    let mut out = new_tensor(&d, dtype, dims)?;
    let nbytes = out.nbytes();
    if nbytes == 0 {
        return Ok(out);
    }
    let addr = out.as_ptr() as usize;
    let word = [8usize, 4, 2, 1]
        .into_iter()
        .find(|&w| w % size == 0 && nbytes % w == 0 && addr.is_multiple_of(w))
        .expect("the element size divides the tensor's bytes and its address");
    let pattern: Vec<u8> = element.iter().copied().cycle().take(word).collect();
    let value = upload(&d, &pattern)?;
    let words = (nbytes / word) as u64;
    let args = Args::new().buf(&value).arg(out.as_mut_ptr() as u64).arg(words);
    launch_1d(&d, "pad.cu", &format!("broadcast_{word}"), words, args)?;
    Ok(out)
}
