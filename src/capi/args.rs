//! Argument checks shared by every export: NULL checks that name the argument, C buffers as
//! slices, output pointers written only on success, and the flat LoD encoding.

use super::types::{LODTENSOR_LOD_LENGTHS, LODTENSOR_LOD_OFFSETS};
use crate::dim::{Dim, MAX_DIMS};
use crate::error::{ensure, err, Error, Result};
use crate::lod::Lod;
use crate::memory::lists;

/// `&*p`, or `NullArgument` naming `name`.
pub(crate) unsafe fn get<'a, T>(p: *const T, name: &str) -> Result<&'a T> {
    p.as_ref().ok_or_else(|| null(name))
}

/// `&mut *p`, or `NullArgument` naming `name`.
pub(crate) unsafe fn get_mut<'a, T>(p: *mut T, name: &str) -> Result<&'a mut T> {
    p.as_mut().ok_or_else(|| null(name))
}

pub(crate) fn null(name: &str) -> Error {
    err!(NullArgument, "{name}: must not be NULL")
}

/// The dims argument `dims[0..ndim]` (NULL allowed when `ndim` is 0). `ndim` is checked against
/// `MAX_DIMS` before the buffer is read, so a wrong `ndim` never spans memory the caller did not
/// pass.
pub(crate) unsafe fn dims(dims: *const i64, ndim: usize) -> Result<Dim> {
    ensure!(ndim <= MAX_DIMS, InvalidArgument, "ndim: {ndim} dims given; a tensor has at most {MAX_DIMS}");
    Dim::from_i64(slice(dims, ndim, "dims")?)
}

/// A caller's buffer of `len` elements as a slice. NULL is accepted when `len` is 0.
pub(crate) unsafe fn slice<'a, T>(p: *const T, len: usize, name: &str) -> Result<&'a [T]> {
    if len == 0 {
        return Ok(&[]);
    }
    ensure!(!p.is_null(), NullArgument, "{name}: must not be NULL when its length is {len}");
    ensure!(
        len.checked_mul(std::mem::size_of::<T>()).is_some_and(|b| b <= isize::MAX as usize),
        InvalidArgument,
        "{name}: length {len} is larger than any buffer can be"
    );
    ensure!(
        (p as usize).is_multiple_of(std::mem::align_of::<T>()),
        InvalidArgument,
        "{name}: address {p:p} is not aligned to {} bytes",
        std::mem::align_of::<T>()
    );
    Ok(std::slice::from_raw_parts(p, len))
}

/// A caller's output array of `len` slots, checked as `slice` checks an input; written only once
/// the call has succeeded.
pub(crate) unsafe fn out_array<'a, T>(p: *mut T, len: usize, name: &str) -> Result<&'a mut [T]> {
    slice(p.cast_const(), len, name)?;
    if len == 0 {
        return Ok(&mut []);
    }
    Ok(std::slice::from_raw_parts_mut(p, len))
}

/// An output slot that is written only once the call has succeeded.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// Checks the output pointer up front, so no work is done for a call that cannot report it.
    pub(crate) fn new(p: *mut T, name: &str) -> Result<Out<T>> {
        if p.is_null() {
            return Err(null(name));
        }
        Ok(Out(p))
    }

    pub(crate) fn write(self, value: T) {
        // SAFETY: checked non-NULL in `new`; the caller promised a writable slot.
        unsafe { self.0.write(value) }
    }
}

/// The copy-out convention for variable-length results: with `buf` NULL only the length is
/// reported; otherwise `buf_len` must hold all `values`, which are written there and their count
/// reported. The values are made as they are written, so no list of them is allocated.
pub(crate) unsafe fn copy_out<T>(
    values: impl ExactSizeIterator<Item = T>,
    buf: *mut T,
    buf_len: usize,
    out_len: Out<usize>,
    name: &str,
) -> Result<()> {
    let n = values.len();
    if !buf.is_null() {
        ensure!(buf_len >= n, BufferTooSmall, "{name}: holds {buf_len} value(s), {n} are needed");
        for (i, v) in values.enumerate() {
            buf.add(i).write(v);
        }
    }
    out_len.write(n);
    Ok(())
}

/// A LoD passed as `num_levels` level sizes plus all levels' values concatenated, in offsets or
/// lengths form (`kind`). `num_levels == 0` means no LoD. The result is validated on its own; the
/// caller checks it against the tensor's rows.
pub(crate) unsafe fn lod(
    kind: i32,
    level_sizes: *const usize,
    num_levels: usize,
    values: *const usize,
    values_len: usize,
) -> Result<Lod> {
    ensure!(
        kind == LODTENSOR_LOD_OFFSETS || kind == LODTENSOR_LOD_LENGTHS,
        InvalidArgument,
        "lod_kind: {kind} is neither LODTENSOR_LOD_OFFSETS (0) nor LODTENSOR_LOD_LENGTHS (1)"
    );
    let sizes = slice(level_sizes, num_levels, "level_sizes")?;
    let values = slice(values, values_len, "lod")?;
    let total = sizes.iter().try_fold(0usize, |acc, &s| acc.checked_add(s));
    ensure!(
        total == Some(values_len),
        InvalidArgument,
        "lod_len: {values_len} value(s) given, but level_sizes add up to {}",
        total.map_or("more than usize::MAX".to_string(), |t| t.to_string())
    );
    let mut levels = lists::with_capacity(sizes.len(), "lod")?;
    let mut rest = values;
    for &n in sizes {
        let (level, tail) = rest.split_at(n);
        levels.push(lists::copy_of(level, "lod")?);
        rest = tail;
    }
    let lod = if kind == LODTENSOR_LOD_LENGTHS { Lod::from_lengths(&levels) } else { Lod::from_offsets(levels) };
    lod.map_err(|e| e.context("lod: "))
}
