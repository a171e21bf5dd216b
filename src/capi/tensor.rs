//! Tensor handles: construction, sharing, copying, destruction and the dense accessors.

use super::args::{self, copy_out, get, get_mut, Out};
use super::boundary;
use super::types::{lodtensor_dtype_t, lodtensor_place_t, lodtensor_status_t};
use crate::lod_tensor::{check_lod_for_dims, LoDTensor};
use crate::tensor::Tensor;
use std::ffi::c_void;

/// A tensor of variable-length sequences: a dense row-major array (up to `LODTENSOR_MAX_DIMS`
/// dims, of one dtype, on one place) plus a LoD that always matches its row count.
///
/// Threads: any number of threads may read one handle at once; a call that changes it
/// (`lodtensor_set_lod`, `lodtensor_clear_lod`, writing through `lodtensor_data_mut`) needs
/// exclusive access. Handles sharing memory (`lodtensor_share`, `lodtensor_slice`,
/// `lodtensor_split`) see each other's element writes.
pub struct lodtensor_t {
    pub(crate) inner: LoDTensor,
}

/// Called exactly once with the caller's buffer and `user_data` when the last tensor using a
/// buffer given to `lodtensor_from_buffer` is destroyed, on the thread that destroys it.
pub type lodtensor_release_fn = Option<unsafe extern "C" fn(data: *mut c_void, user_data: *mut c_void)>;

pub(crate) fn new_handle(out: Out<*mut lodtensor_t>, inner: LoDTensor) {
    out.write(into_handle(inner));
}

/// A new handle owning `inner`, for the caller to destroy.
pub(crate) fn into_handle(inner: LoDTensor) -> *mut lodtensor_t {
    Box::into_raw(Box::new(lodtensor_t { inner }))
}

/// The tensors of a caller's array of handles (`name`), each checked non-NULL (`name[i]` named).
pub(crate) unsafe fn tensors_of<'a>(
    handles: &[*const lodtensor_t],
    name: &str,
) -> crate::error::Result<Vec<&'a LoDTensor>> {
    let tensors = handles
        .iter()
        .enumerate()
        .map(|(i, &h)| h.as_ref().map(|h| &h.inner).ok_or_else(|| super::args::null(&format!("{name}[{i}]"))));
    crate::memory::lists::try_collect(handles.len(), tensors, name)
}

/// The body of a read-only accessor: `*out = f(t)`.
pub(crate) unsafe fn read<T>(
    t: *const lodtensor_t,
    out: *mut T,
    f: impl FnOnce(&LoDTensor) -> T,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        Out::new(out, "out")?.write(f(&t.inner));
        Ok(())
    })
}

/// Creates a host tensor holding a copy of `data`.
///
/// `dtype`: the element type. `dims`/`ndim`: the shape (`ndim` <= `LODTENSOR_MAX_DIMS`, every
/// dim >= 0, and the product of the non-zero dims times the element size at most `INT64_MAX`,
/// so that no count, row size or stride of any tensor overflows `int64_t`, even one of no
/// elements; `dims` may be NULL when `ndim` is 0). `data`/`data_len`: exactly
/// `numel * element size` bytes (NULL allowed when that is 0). The LoD: `lod_kind` is
/// `LODTENSOR_LOD_OFFSETS` or `LODTENSOR_LOD_LENGTHS`; `level_sizes[i]` is the number of values of
/// level i (top level first); `lod` holds all levels' values concatenated, `lod_len` in total.
/// `num_levels` 0 means no LoD. On success `*out` is a new handle the caller destroys with
/// `lodtensor_destroy`; on failure `*out` is untouched.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`, or a buffer with a non-zero length is NULL),
/// LODTENSOR_UNSUPPORTED (unknown dtype), LODTENSOR_INVALID_ARGUMENT (more than 9 dims, a
/// negative dim, `data_len` wrong, bad `lod_kind`, level sizes not adding up to `lod_len`),
/// LODTENSOR_INVALID_LOD (a LoD rule broken, or the LoD does not end at `dims[0]`),
/// LODTENSOR_OUT_OF_MEMORY (no memory, or a shape past the bound above).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_create(
    dtype: lodtensor_dtype_t,
    dims: *const i64,
    ndim: usize,
    data: *const c_void,
    data_len: usize,
    lod_kind: i32,
    level_sizes: *const usize,
    num_levels: usize,
    lod: *const usize,
    lod_len: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let dtype = dtype.to_dtype()?;
        let dims = args::dims(dims, ndim)?;
        let lod = args::lod(lod_kind, level_sizes, num_levels, lod, lod_len)?;
        check_lod_for_dims(&dims, &lod)?;
        let bytes = args::slice(data.cast::<u8>(), data_len, "data")?;
        let tensor = Tensor::from_bytes(dtype, dims, bytes)?;
        new_handle(out, LoDTensor::new(tensor, lod)?);
        Ok(())
    })
}

/// Creates a tensor over the caller's buffer without copying it (zero copy).
///
/// `place` says where `data` lives (CPU, or a CUDA device in builds with CUDA). `data`/`data_len`
/// must be exactly `numel * element size` bytes, aligned to the element size, and stay valid and
/// unmoved until `release` runs. Arguments as in `lodtensor_create`. On success the library owns
/// the buffer's lifetime: `release(data, user_data)` runs exactly once, when the last handle using
/// the buffer (this one, its shares, slices and split pieces) is destroyed (for a CUDA place, after
/// the work queued on the device has finished). `release` may be NULL when the caller keeps the
/// buffer alive longer than every such handle. Device memory is read by ops in the order of the
/// device's stream (`lodtensor_cuda_stream`): what the caller writes there must be queued on that
/// stream, or finished, before an op reads it. On failure nothing is taken: `release` is not
/// called, the buffer stays the caller's, and `*out` is untouched.
///
/// Returns the statuses of `lodtensor_create`, plus LODTENSOR_INVALID_ARGUMENT for an unknown
/// place, a misaligned `data`, or, for a CUDA place, `data` whose first or last byte the device's
/// kernels cannot use (device memory of another device; host memory the driver does not know,
/// such as malloc's, on a GPU that cannot read pageable memory: device memory, managed and pinned
/// host memory are accepted), LODTENSOR_UNSUPPORTED for a CUDA place in a build without CUDA, and
/// LODTENSOR_INTERNAL for a CUDA driver failure.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_buffer(
    place: lodtensor_place_t,
    dtype: lodtensor_dtype_t,
    dims: *const i64,
    ndim: usize,
    data: *mut c_void,
    data_len: usize,
    lod_kind: i32,
    level_sizes: *const usize,
    num_levels: usize,
    lod: *const usize,
    lod_len: usize,
    release: lodtensor_release_fn,
    user_data: *mut c_void,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let place = place.to_place()?;
        place.ensure_usable()?;
        let dtype = dtype.to_dtype()?;
        let dims = args::dims(dims, ndim)?;
        let lod = args::lod(lod_kind, level_sizes, num_levels, lod, lod_len)?;
        check_lod_for_dims(&dims, &lod)?;
        // The callback gets back exactly the pointers the caller passed (NULL data included).
        let (data_arg, user_data) = (SendPtr(data), SendPtr(user_data));
        let release = release.map(|f| -> crate::memory::Release {
            Box::new(move || {
                let (data_arg, user_data) = (&data_arg, &user_data);
                f(data_arg.0, user_data.0)
            })
        });
        let tensor = Tensor::borrowed(place, dtype, dims, data.cast(), data_len, release)?;
        new_handle(out, LoDTensor::new(tensor, lod)?);
        Ok(())
    })
}

/// A caller's pointer, carried to whichever thread runs the release callback.
pub(crate) struct SendPtr(pub(crate) *mut c_void);
// SAFETY: the pointer is only handed back to the caller's callback, as documented.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

/// Destroys a handle. NULL is accepted and ignored. The memory is freed (or released to its
/// owner) when the last handle using it is destroyed.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_destroy(t: *mut lodtensor_t) {
    if !t.is_null() {
        let _ = boundary(|| {
            drop(Box::from_raw(t));
            Ok(())
        });
    }
}

/// A new handle on the same memory and the same LoD (no element is copied). Element writes
/// through one are seen by the other; each is destroyed on its own.
/// Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_share(t: *const lodtensor_t, out: *mut *mut lodtensor_t) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let out = Out::new(out, "out")?;
        new_handle(out, t.inner.clone());
        Ok(())
    })
}

/// A new handle with its own copy of the elements, on the same place, and the same LoD (a copy on a
/// device is queued on its stream). Returns LODTENSOR_NULL_ARGUMENT, LODTENSOR_UNSUPPORTED (the
/// tensor is on a CUDA device that cannot be used), LODTENSOR_OUT_OF_MEMORY.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_copy(t: *const lodtensor_t, out: *mut *mut lodtensor_t) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let out = Out::new(out, "out")?;
        new_handle(out, t.inner.copy()?);
        Ok(())
    })
}

/// The element type. Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_dtype(t: *const lodtensor_t, out: *mut lodtensor_dtype_t) -> lodtensor_status_t {
    read(t, out, |t| lodtensor_dtype_t::from_dtype(t.tensor().dtype()))
}

/// Where the elements live. Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_place(t: *const lodtensor_t, out: *mut lodtensor_place_t) -> lodtensor_status_t {
    read(t, out, |t| lodtensor_place_t::from_place(t.tensor().place()))
}

/// The number of dimensions (0 to `LODTENSOR_MAX_DIMS`). Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_ndim(t: *const lodtensor_t, out: *mut usize) -> lodtensor_status_t {
    read(t, out, |t| t.dims().ndim())
}

/// Copies the shape into `buf` and its length into `*out_ndim`. With `buf` NULL only `*out_ndim`
/// is written (a buffer of `LODTENSOR_MAX_DIMS` always suffices).
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_ndim`), LODTENSOR_BUFFER_TOO_SMALL (`buf_len` < ndim).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_dims(
    t: *const lodtensor_t,
    buf: *mut i64,
    buf_len: usize,
    out_ndim: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let t = get(t, "t")?;
        let out_ndim = Out::new(out_ndim, "out_ndim")?;
        copy_out(t.inner.dims().as_slice().iter().map(|&d| d as i64), buf, buf_len, out_ndim, "buf")
    })
}

/// The number of elements (product of the dims; 1 for a 0-d tensor).
/// Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_numel(t: *const lodtensor_t, out: *mut usize) -> lodtensor_status_t {
    read(t, out, |t| t.tensor().numel())
}

/// The size of the elements in bytes (numel * element size). Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_nbytes(t: *const lodtensor_t, out: *mut usize) -> lodtensor_status_t {
    read(t, out, |t| t.tensor().nbytes())
}

/// The address of the first element, for reading (a device address for a CUDA place, written by
/// work queued on the device's stream: read it after `lodtensor_synchronize`, or by work queued
/// on that stream, see `lodtensor_cuda_stream`). Borrowed: valid while any handle sharing the
/// memory lives. Rows are contiguous, row-major.
/// Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_data(t: *const lodtensor_t, out: *mut *const c_void) -> lodtensor_status_t {
    read(t, out, |t| t.tensor().as_ptr().cast())
}

/// The address of the first element, for writing. Writes are seen by every handle sharing the
/// memory (shares, slices, split pieces); copy first to write privately. Lifetime as in
/// `lodtensor_data`. Returns LODTENSOR_NULL_ARGUMENT.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_data_mut(t: *mut lodtensor_t, out: *mut *mut c_void) -> lodtensor_status_t {
    boundary(|| {
        let t = get_mut(t, "t")?;
        Out::new(out, "out")?.write(t.inner.tensor_mut().as_mut_ptr().cast());
        Ok(())
    })
}
