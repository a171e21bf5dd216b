//! Tensor shapes: up to `MAX_DIMS` dimensions, zero-sized dimensions allowed.

use crate::error::{ensure, err, Result};

/// The most dimensions a tensor may have.
pub const MAX_DIMS: usize = 9;

/// A shape of 0 to `MAX_DIMS` dimensions whose extent (the product of its non-zero dims) is at most
/// `i64::MAX`, so that no product of its dims (an element count, a row width, a stride) overflows
/// the C API's `int64_t`, even in a shape of no elements.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim {
    len: u8,
    sizes: [usize; MAX_DIMS],
}

impl Dim {
    /// A checked shape: at most `MAX_DIMS` dims and an extent of at most `i64::MAX`
    /// (`OutOfMemory` otherwise: a size overflowed).
    pub fn new(sizes: &[usize]) -> Result<Dim> {
        ensure!(
            sizes.len() <= MAX_DIMS,
            InvalidArgument,
            "dims: a tensor has at most {MAX_DIMS} dimensions, got {}",
            sizes.len()
        );
        let mut all = [0usize; MAX_DIMS];
        all[..sizes.len()].copy_from_slice(sizes);
        let dim = Dim { len: sizes.len() as u8, sizes: all };
        ensure!(
            dim.extent().is_some_and(|e| e <= i64::MAX as usize),
            OutOfMemory,
            "dims: {dim:?} overflows: the product of the non-zero dims must be at most 2^63 - 1"
        );
        Ok(dim)
    }

    /// A shape from signed sizes (the C and DLPack convention); negative sizes are rejected.
    pub fn from_i64(sizes: &[i64]) -> Result<Dim> {
        let sizes = sizes
            .iter()
            .enumerate()
            .map(|(i, &s)| {
                ensure!(s >= 0, InvalidArgument, "dims: dims[{i}] = {s} is negative");
                usize::try_from(s).map_err(|_| err!(OutOfMemory, "dims: dims[{i}] = {s} is too large"))
            })
            .collect::<Result<Vec<usize>>>()?;
        Dim::new(&sizes)
    }

    pub fn as_slice(&self) -> &[usize] {
        &self.sizes[..self.len as usize]
    }

    pub fn ndim(&self) -> usize {
        self.len as usize
    }

    pub fn numel(&self) -> usize {
        // Each product of dims is at most the extent, checked at construction.
        self.as_slice().iter().product()
    }

    /// The product of the non-zero dims (the element count were each 0 a 1), which bounds every
    /// product of dims; `None` if it overflows `usize`.
    pub(crate) fn extent(&self) -> Option<usize> {
        self.as_slice().iter().filter(|&&s| s != 0).try_fold(1usize, |acc, &s| acc.checked_mul(s))
    }

    /// `dims[0]`, or `None` for a 0-d tensor.
    pub fn rows(&self) -> Option<usize> {
        self.as_slice().first().copied()
    }

    /// Elements per row: the product of `dims[1..]` (1 for a 1-d tensor).
    pub fn row_width(&self) -> usize {
        self.as_slice().iter().skip(1).product()
    }

    /// The same shape with `dims[0]` replaced.
    pub fn with_rows(&self, rows: usize) -> Result<Dim> {
        ensure!(self.len > 0, InvalidArgument, "dims: a 0-d tensor has no rows");
        let mut sizes = self.sizes;
        sizes[0] = rows;
        Dim::new(&sizes[..self.len as usize])
    }
}

impl std::fmt::Debug for Dim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", self.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let d = Dim::new(&[3, 0, 4]).unwrap();
        assert_eq!(d.numel(), 0);
        assert_eq!(d.rows(), Some(3));
        assert_eq!(d.row_width(), 0);
        assert_eq!(Dim::new(&[]).unwrap().numel(), 1);
        assert!(Dim::new(&[1; 10]).is_err());
        assert!(Dim::new(&[1; 9]).is_ok());
        assert!(Dim::new(&[usize::MAX, 2]).is_err());
        // No elements, but steps along the axes that overflow: refused wherever the 0 is.
        let (big, half) = (1usize << 62, 1usize << 31);
        for sizes in [[big, 2, 0], [0, big, 2], [2, 0, big], [2 * half, 0, 2 * half]] {
            assert!(matches!(Dim::new(&sizes), Err(crate::error::Error::OutOfMemory(m)) if m.contains("overflows")));
        }
        let widest = Dim::new(&[0, i64::MAX as usize, 1]).unwrap();
        assert_eq!(
            (widest.numel(), widest.row_width(), widest.extent()),
            (0, i64::MAX as usize, Some(i64::MAX as usize))
        );
        assert!(Dim::new(&[big, 0, 1]).is_ok() && Dim::new(&[2 * big, 0]).is_err());
        assert!(Dim::from_i64(&[2, -1]).is_err());
    }
}
