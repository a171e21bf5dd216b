//! Paddle's tensor file format: a tensor's record to bytes and back.

use super::args::{self, get, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;
use crate::error::err;
use crate::interop::paddle_format::{deserialize, deserialize_slice, serialized_size, write_record};
use std::ffi::c_void;

/// Writes `t` as a record of Paddle's tensor file format into `buf` and the record's length into
/// `*out_len`: the bytes Paddle's `save` op writes for a LoDTensor, and a tensor's part of a
/// `save_combine` file (records back to back, in the order of the variable list). With `buf`
/// NULL only `*out_len` is written (ask for the length, then call again with a buffer that
/// long). The record holds the LoD (relative offsets), the dtype and dims, and the elements in
/// host byte order (little-endian on every supported platform). A CUDA tensor's elements are
/// copied from the device straight into `buf`, after the work queued on the device (the call
/// waits for it; the length alone needs no wait).
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_len`), LODTENSOR_BUFFER_TOO_SMALL (`buf_len` below
/// the record's length; `buf` and `*out_len` are untouched), LODTENSOR_INTERNAL (a CUDA driver
/// failure copying a CUDA tensor's elements, named in the message; `buf`'s bytes are then
/// unspecified, `*out_len` untouched).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_serialize(
    t: *const lodtensor_t,
    buf: *mut c_void,
    buf_len: usize,
    out_len: *mut usize,
) -> lodtensor_status_t {
    boundary(|| {
        let t = &get(t, "t")?.inner;
        let out_len = Out::new(out_len, "out_len")?;
        if buf.is_null() {
            out_len.write(serialized_size(t));
            return Ok(());
        }
        let buf = args::out_array(buf.cast::<u8>(), buf_len, "buf")?;
        out_len.write(write_record(t, buf)?);
        Ok(())
    })
}

/// Reads the record of Paddle's tensor file format at the start of `buf` (`buf_len` bytes, which
/// may go on past the record, as a `save_combine` file's next records do): `*out` is a new host
/// tensor holding a copy of the record's elements, with its LoD and dims, for the caller to
/// destroy with `lodtensor_destroy`; `*out_consumed` is the record's length, where the next
/// record starts. `buf` needs no alignment. The LoD is validated as every LoD is (Paddle's
/// loader does not). On failure `*out` and `*out_consumed` are untouched.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`out`, `out_consumed`, or `buf` with a non-zero length),
/// LODTENSOR_INVALID_ARGUMENT (the bytes end inside the record; a version other than 0; a LoD
/// level whose byte size is not a multiple of 8; a negative desc size; a TensorDesc that is not a
/// protobuf message or has no data_type; a negative dim), LODTENSOR_UNSUPPORTED (a data_type with
/// no dtype in the library, such as SIZE_T or COMPLEX64; more than `LODTENSOR_MAX_DIMS` dims),
/// LODTENSOR_INVALID_LOD (a LoD rule broken, or the LoD does not end at the row count),
/// LODTENSOR_OUT_OF_MEMORY (dims whose element count overflows size_t; no memory for the LoD or
/// the copy).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_deserialize(
    buf: *const c_void,
    buf_len: usize,
    out_consumed: *mut usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (out_consumed, out) = (Out::new(out_consumed, "out_consumed")?, Out::new(out, "out")?);
        let bytes = args::slice(buf.cast::<u8>(), buf_len, "buf")?;
        let (x, consumed) = deserialize(bytes)?;
        new_handle(out, x);
        out_consumed.write(consumed);
        Ok(())
    })
}

/// Paddle's partial load (the `load` op's `seek` and `shape` attributes): from the record of
/// Paddle's tensor file format at the start of `buf`, read as `lodtensor_deserialize` reads it,
/// `*out` is a new host tensor of dims `dims[0..ndim]` holding a copy of the elements that start
/// at element `seek` of the record's row-major elements (`dims`' element count of them), for the
/// caller to destroy with `lodtensor_destroy`; `*out_consumed` is the whole record's length, where
/// the next record of a `save_combine` file starts. The whole record must be in `buf`; only the
/// slice is copied. The record must have no LoD: a slice of elements has none (Paddle's partial
/// load reads the LoD level count but not the levels, and so misreads such a record). On failure
/// `*out` and `*out_consumed` are untouched.
///
/// Returns the statuses of `lodtensor_deserialize` but LODTENSOR_INVALID_LOD, plus
/// LODTENSOR_NULL_ARGUMENT (`dims` with a non-zero `ndim`) and LODTENSOR_INVALID_ARGUMENT
/// (`seek` negative; `ndim` above `LODTENSOR_MAX_DIMS`; a negative dim; a record with LoD
/// levels; a slice that ends past the record's elements); LODTENSOR_OUT_OF_MEMORY also for
/// `dims` whose element count overflows.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_deserialize_slice(
    buf: *const c_void,
    buf_len: usize,
    seek: i64,
    dims: *const i64,
    ndim: usize,
    out_consumed: *mut usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let (out_consumed, out) = (Out::new(out_consumed, "out_consumed")?, Out::new(out, "out")?);
        let seek = usize::try_from(seek).map_err(|_| err!(InvalidArgument, "seek: {seek} is negative"))?;
        let dims = args::dims(dims, ndim)?;
        let bytes = args::slice(buf.cast::<u8>(), buf_len, "buf")?;
        let (x, consumed) = deserialize_slice(bytes, seek, dims)?;
        new_handle(out, x);
        out_consumed.write(consumed);
        Ok(())
    })
}
