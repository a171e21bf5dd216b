//! Dense tensors: an allocation, a shape, a dtype and a byte offset (so row slices share memory).

use crate::dim::Dim;
use crate::dtype::{DType, Element};
use crate::error::{ensure, err, Result};
use crate::memory::{lists, Allocation};
use crate::place::Place;
use std::ops::Range;
use std::sync::Arc;

/// A dense, row-major n-d array. `Clone` shares the memory; [`Tensor::copy`] duplicates it.
#[derive(Clone)]
pub struct Tensor {
    alloc: Arc<Allocation>,
    offset: usize,
    dims: Dim,
    dtype: DType,
}

impl Tensor {
    /// A zero-filled host tensor.
    pub fn zeros(dtype: DType, dims: Dim) -> Result<Tensor> {
        let nbytes = nbytes_of(dtype, &dims)?;
        Ok(Tensor { alloc: Allocation::zeroed(nbytes)?, offset: 0, dims, dtype })
    }

    /// A host tensor whose elements are unspecified until written: only for an output that the
    /// kernel filling it writes completely before anything reads it (the kernels check that
    /// their pieces cover the output exactly), which then costs no zero fill.
    pub(crate) fn uninit(dtype: DType, dims: Dim) -> Result<Tensor> {
        let nbytes = nbytes_of(dtype, &dims)?;
        Ok(Tensor { alloc: Allocation::uninit(nbytes)?, offset: 0, dims, dtype })
    }

    /// A host tensor holding a copy of `bytes`, which must be exactly `numel * dtype.size()` long.
    pub fn from_bytes(dtype: DType, dims: Dim, bytes: &[u8]) -> Result<Tensor> {
        let nbytes = nbytes_of(dtype, &dims)?;
        ensure!(
            bytes.len() == nbytes,
            InvalidArgument,
            "data_len: {} bytes given, a {dtype} tensor of dims {dims:?} needs {nbytes}",
            bytes.len()
        );
        Ok(Tensor { alloc: Allocation::copy_of(bytes)?, offset: 0, dims, dtype })
    }

    /// A host tensor holding a copy of `data`.
    pub fn from_slice<T: Element>(data: &[T], dims: &[usize]) -> Result<Tensor> {
        // SAFETY: `Element` types are plain data without padding.
        let bytes = unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) };
        Tensor::from_bytes(T::DTYPE, Dim::new(dims)?, bytes)
    }

    /// Checks that a buffer at `ptr` of `len` bytes can hold a `dtype` tensor of `dims`: exactly
    /// `numel * dtype.size()` bytes, aligned to the element size.
    pub fn check_buffer(dtype: DType, dims: &Dim, ptr: *const u8, len: usize) -> Result<()> {
        let nbytes = nbytes_of(dtype, dims)?;
        ensure!(
            len == nbytes,
            InvalidArgument,
            "data_len: {len} bytes given, a {dtype} tensor of dims {dims:?} needs {nbytes}"
        );
        ensure!(
            (ptr as usize).is_multiple_of(dtype.size()),
            InvalidArgument,
            "data: address {ptr:p} is not aligned to {} bytes, as {dtype} elements must be",
            dtype.size()
        );
        Ok(())
    }

    /// A tensor over a caller's buffer of `len` bytes at `ptr` on `place`, without copying it.
    /// Every rule is checked before the buffer is taken: on failure `release` is dropped without
    /// being called and the buffer stays the caller's; on success `release` runs exactly once,
    /// when the last tensor over the buffer goes. On a CUDA place the driver is asked whether the
    /// device can use the buffer's first and last byte.
    ///
    /// # Safety
    /// `ptr` must be valid for reads and writes of `len` bytes on `place` until `release` runs.
    pub unsafe fn borrowed(
        place: Place,
        dtype: DType,
        dims: Dim,
        ptr: *mut u8,
        len: usize,
        release: Option<crate::memory::Release>,
    ) -> Result<Tensor> {
        place.ensure_usable()?;
        ensure!(!ptr.is_null() || len == 0, NullArgument, "data: must not be NULL when data_len is {len}");
        Tensor::check_buffer(dtype, &dims, ptr, len)?;
        if let (Place::Cuda(n), true) = (place, len > 0) {
            crate::backend::cuda::check_device_buffer(n, ptr, len)?;
        }
        Tensor::from_allocation(Allocation::borrowed(ptr, len, place, release)?, dtype, dims)
    }

    /// A tensor over all of `alloc` (see [`Tensor::check_buffer`]).
    pub fn from_allocation(alloc: Arc<Allocation>, dtype: DType, dims: Dim) -> Result<Tensor> {
        Tensor::check_buffer(dtype, &dims, alloc.as_ptr(), alloc.len())?;
        Ok(Tensor { alloc, offset: 0, dims, dtype })
    }

    pub fn dtype(&self) -> DType {
        self.dtype
    }

    pub fn dims(&self) -> &Dim {
        &self.dims
    }

    pub fn place(&self) -> Place {
        self.alloc.place()
    }

    pub fn numel(&self) -> usize {
        self.dims.numel()
    }

    pub fn nbytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }

    /// `dims[0]`; a 0-d tensor has no rows.
    pub fn rows(&self) -> Result<usize> {
        self.dims.rows().ok_or_else(|| err!(InvalidArgument, "tensor: a 0-d tensor has no rows"))
    }

    /// Bytes per row (`dims[1..]` elements).
    pub fn row_bytes(&self) -> usize {
        self.dims.row_width() * self.dtype.size()
    }

    /// Whether another tensor (a share or a row slice) uses the same memory.
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.alloc) > 1
    }

    /// Whether `self` and `other` use the same allocation.
    pub fn shares_memory_with(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.alloc, &other.alloc)
    }

    /// Address of the first element (on the tensor's place).
    pub fn as_ptr(&self) -> *const u8 {
        // SAFETY: `offset` stays within the allocation (checked by `slice_rows`).
        unsafe { self.alloc.as_ptr().add(self.offset) }
    }

    /// Writable address of the first element. Writes are seen by every tensor sharing the memory.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        // SAFETY: as in `as_ptr`.
        unsafe { self.alloc.as_ptr().add(self.offset) }
    }

    fn ensure_host(&self) -> Result<()> {
        ensure!(
            self.place() == Place::Cpu,
            Unsupported,
            "tensor: its memory is on {}, this operation reads host memory",
            self.place()
        );
        Ok(())
    }

    /// The elements as raw bytes (host tensors only).
    pub fn bytes(&self) -> Result<&[u8]> {
        self.ensure_host()?;
        // SAFETY: the allocation holds `offset + nbytes` bytes and outlives `&self`.
        Ok(unsafe { std::slice::from_raw_parts(self.as_ptr(), self.nbytes()) })
    }

    /// The elements as `&[T]`; `T` must be the tensor's dtype (host tensors only).
    pub fn as_slice<T: Element>(&self) -> Result<&[T]> {
        self.check_element::<T>()?;
        let bytes = self.bytes()?;
        // SAFETY: dtype matches `T`; alignment is checked at construction and row offsets are
        // multiples of the element size.
        Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), self.numel()) })
    }

    /// The elements as writable raw bytes. Refused while the memory is shared, so a `&mut` never
    /// aliases (host tensors only).
    pub fn bytes_mut(&mut self) -> Result<&mut [u8]> {
        self.ensure_host()?;
        ensure!(
            !self.is_shared(),
            InvalidArgument,
            "tensor: its memory is shared with another tensor; copy it before writing through Rust"
        );
        let n = self.nbytes();
        // SAFETY: uniquely held host memory of `offset + nbytes` bytes.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), n) })
    }

    /// The elements as `&mut [T]` (see [`Tensor::bytes_mut`]).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T]> {
        self.check_element::<T>()?;
        let n = self.numel();
        let bytes = self.bytes_mut()?;
        // SAFETY: dtype and alignment as in `as_slice`.
        Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), n) })
    }

    fn check_element<T: Element>(&self) -> Result<()> {
        ensure!(T::DTYPE == self.dtype, InvalidArgument, "tensor: dtype is {}, accessed as {}", self.dtype, T::DTYPE);
        Ok(())
    }

    /// The elements of an int32 or int64 tensor (an index or offset input) widened to i64; other
    /// dtypes are `Unsupported`, naming the argument `name`.
    pub fn index_values(&self, name: &str) -> Result<Vec<i64>> {
        self.check_index_dtype(name)?;
        match self.dtype {
            DType::I32 => lists::collect(self.as_slice::<i32>()?.iter().map(|&v| v as i64), name),
            _ => lists::copy_of(self.as_slice::<i64>()?, name),
        }
    }

    /// `index_values`' dtype rule without reading the elements (which may be on a device).
    pub(crate) fn check_index_dtype(&self, name: &str) -> Result<()> {
        ensure!(
            matches!(self.dtype, DType::I32 | DType::I64),
            Unsupported,
            "{name}: dtype {} is not supported here; supported: int32, int64",
            self.dtype
        );
        Ok(())
    }

    /// A new tensor with its own copy of the elements, on the same place.
    pub fn copy(&self) -> Result<Tensor> {
        match self.place() {
            Place::Cpu => {
                Ok(Tensor { alloc: Allocation::copy_of(self.bytes()?)?, offset: 0, dims: self.dims, dtype: self.dtype })
            }
            // On the device's stream, like every op there.
            Place::Cuda(n) => crate::backend::cuda::copy_to_device(self, n),
        }
    }

    /// The same elements seen with `dims` (which must hold as many), sharing this tensor's memory.
    pub(crate) fn reshaped(&self, dims: Dim) -> Result<Tensor> {
        ensure!(
            dims.numel() == self.numel(),
            InvalidArgument,
            "dims: {dims:?} hold {} elements, the tensor {:?} has {}",
            dims.numel(),
            self.dims,
            self.numel()
        );
        nbytes_of(self.dtype, &dims)?;
        Ok(Tensor { alloc: self.alloc.clone(), offset: self.offset, dims, dtype: self.dtype })
    }

    /// Rows `[range.start, range.end)` as a tensor sharing this tensor's memory.
    pub fn slice_rows(&self, range: Range<usize>) -> Result<Tensor> {
        let rows = self.rows()?;
        ensure!(
            range.start <= range.end && range.end <= rows,
            OutOfRange,
            "rows: range [{}, {}) is not within the tensor's {rows} rows",
            range.start,
            range.end
        );
        Ok(Tensor {
            alloc: self.alloc.clone(),
            offset: self.offset + range.start * self.row_bytes(),
            dims: self.dims.with_rows(range.end - range.start)?,
            dtype: self.dtype,
        })
    }
}

/// Bytes needed for `dims` of `dtype`, or an error if the shape's extent in bytes (see
/// [`Dim::extent`]; it bounds the byte size, a row's bytes and every stride in bytes) passes
/// `isize::MAX`.
fn nbytes_of(dtype: DType, dims: &Dim) -> Result<usize> {
    ensure!(
        dims.extent().and_then(|e| e.checked_mul(dtype.size())).is_some_and(|b| b <= isize::MAX as usize),
        OutOfMemory,
        "dims: a {dtype} tensor of dims {dims:?} overflows: the product of its non-zero dims times {} bytes must be at most {}",
        dtype.size(),
        isize::MAX
    );
    Ok(dims.numel() * dtype.size())
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor({}, {:?}, {})", self.dtype, self.dims, self.place())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reshaped tensor shares the memory (a row slice's offset kept); another element count is
    /// refused.
    #[test]
    fn reshaped_shares_memory() {
        let t = Tensor::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[3, 2]).unwrap();
        let s = t.slice_rows(1..3).unwrap();
        let r = s.reshaped(Dim::new(&[4]).unwrap()).unwrap();
        assert!(r.shares_memory_with(&t));
        assert_eq!(r.dims().as_slice(), &[4]);
        assert_eq!(r.as_slice::<f32>().unwrap(), &[3., 4., 5., 6.]);
        assert!(
            matches!(s.reshaped(Dim::new(&[3]).unwrap()), Err(crate::Error::InvalidArgument(m)) if m.contains("3 elements"))
        );
    }

    #[test]
    fn share_copy_slice() {
        let t = Tensor::from_slice(&[1f32, 2., 3., 4., 5., 6.], &[3, 2]).unwrap();
        let s = t.slice_rows(1..3).unwrap();
        assert_eq!(s.as_slice::<f32>().unwrap(), &[3., 4., 5., 6.]);
        assert!(s.shares_memory_with(&t));
        let mut c = t.copy().unwrap();
        assert!(!c.shares_memory_with(&t));
        c.as_mut_slice::<f32>().unwrap()[0] = 9.;
        assert_eq!(t.as_slice::<f32>().unwrap()[0], 1.);
        let mut shared = t.clone();
        assert!(shared.as_mut_slice::<f32>().is_err());
        assert!(t.as_slice::<i32>().is_err());
        assert!(t.slice_rows(2..4).is_err());
        assert!(Tensor::from_bytes(DType::F32, Dim::new(&[2]).unwrap(), &[0u8; 7]).is_err());
    }
}
