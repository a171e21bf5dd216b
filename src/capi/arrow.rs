//! The Arrow C data interface: lending a LoD tensor to Arrow, and taking Arrow's arrays, without
//! copying the elements.

use super::args::{self, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;
use crate::interop::arrow::{self, from_arrow, from_arrow_device, to_arrow, to_arrow_device};
use crate::lod_tensor::LoDTensor;

/// Arrow's schema struct, opaque here; the header defines it under Arrow's own guard
/// (`ARROW_C_DATA_INTERFACE`, cbindgen.toml).
pub struct ArrowSchema {
    _opaque: [u8; 0],
}

/// Arrow's array struct, as `ArrowSchema`.
pub struct ArrowArray {
    _opaque: [u8; 0],
}

/// The C device data interface's array struct, as `ArrowSchema` (under
/// `ARROW_C_DEVICE_DATA_INTERFACE`).
pub struct ArrowDeviceArray {
    _opaque: [u8; 0],
}

/// Fills `*out_schema` and `*out_array` (structs the caller provides, as the interface has it)
/// with `t` as an Arrow array that shares its memory, zero copy: one `large_list` (`+L`) per LoD
/// level, outermost first, whose int64 offsets are the level's; then one `fixed_size_list`
/// (`+w:n`) per dim after the first; then the elements (`b`, `C`, `c`, `s`, `i`, `l`, `e`, `f`
/// or `g`). So one LoD level over `[N, D]` float rows is `large_list<fixed_size_list<float, D>>`
/// of one entry per sequence; a tensor without LoD is an array of its rows. Bool elements are
/// packed into Arrow's bits (a copy); every other dtype's elements are `t`'s memory, written
/// through it and every handle sharing it. Nothing is nullable and there are no nulls (validity
/// buffers NULL); the root is named "" and the children "item". The caller releases each struct
/// once, with its `release` callback, from any thread (moving children out as the interface
/// allows); the memory stays until the array is released, also after `t` is destroyed.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED (a
/// CUDA tensor, whose memory the interface cannot carry: lend it with
/// `lodtensor_to_arrow_device`, or copy it with `lodtensor_to_place` first; bfloat16, which has
/// no Arrow type), LODTENSOR_INVALID_ARGUMENT (a 0-d tensor, which has no rows),
/// LODTENSOR_OUT_OF_MEMORY (no memory for the bits of bool elements). On failure neither struct is
/// written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow(
    t: *const lodtensor_t,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowArray,
) -> lodtensor_status_t {
    lend(t, out_schema, out_array.cast::<arrow::ArrowArray>(), to_arrow)
}

/// Fills `*out_schema` and `*out_array` with `t` as an Arrow device array (the C device data
/// interface) that shares its memory, zero copy, in the form `lodtensor_to_arrow` makes. A host
/// tensor is lent as `lodtensor_to_arrow` lends it, with `device_type` ARROW_DEVICE_CPU and
/// `device_id` -1 (no device, as Arrow's own CPU exports say). A tensor on CUDA device n is lent
/// with `device_type` ARROW_DEVICE_CUDA and `device_id` n: its elements and its LoD offsets (the
/// int64 copies the LoD keeps on the device, uploaded at their first use there) are device
/// memory, and the call waits for the work queued on the device, so `sync_event` is NULL and the
/// buffers can be read at once. `reserved` is zeroed. The caller releases the schema and
/// `out_array->array` once each, as for `lodtensor_to_arrow`; the memory stays until the array is
/// released.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out_schema`, `out_array`), LODTENSOR_UNSUPPORTED
/// (bfloat16, which has no Arrow type; bool on a CUDA device: cast it to uint8 or copy it to the
/// CPU first), LODTENSOR_INVALID_ARGUMENT (a 0-d tensor), LODTENSOR_OUT_OF_MEMORY (no memory for
/// the bits of a host tensor's bool elements), LODTENSOR_INTERNAL (a CUDA driver failure, named in
/// the message). On failure neither struct is written.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_arrow_device(
    t: *const lodtensor_t,
    out_schema: *mut ArrowSchema,
    out_array: *mut ArrowDeviceArray,
) -> lodtensor_status_t {
    lend(t, out_schema, out_array.cast::<arrow::ArrowDeviceArray>(), to_arrow_device)
}

/// `export` of `t` written into the caller's structs, only when it succeeds.
unsafe fn lend<A>(
    t: *const lodtensor_t,
    out_schema: *mut ArrowSchema,
    out_array: *mut A,
    export: fn(&LoDTensor) -> crate::Result<(arrow::ArrowSchema, A)>,
) -> lodtensor_status_t {
    boundary(|| {
        let t = &args::get(t, "t")?.inner;
        let out_schema = Out::new(out_schema.cast::<arrow::ArrowSchema>(), "out_schema")?;
        let out_array = Out::new(out_array, "out_array")?;
        let (schema, array) = export(t)?;
        out_schema.write(schema);
        out_array.write(array);
        Ok(())
    })
}

/// Takes the Arrow array `*array` of type `*schema` as a new LoD tensor, zero copy: the form
/// `lodtensor_to_arrow` makes, with `list` (`+l`, int32 offsets) accepted as well as
/// `large_list`. The lists, outermost first, become the LoD (each level re-based to start at 0,
/// as Arrow's offsets need not), the fixed-size lists the dims after the first, and the
/// elements, from the array offsets and lengths given (slices of Arrow arrays are taken as they
/// are), the tensor's. Bool elements are unpacked into a tensor of their own (a copy).
///
/// On success the library owns the array: `array->release` is set to NULL (the array is moved
/// out, as the interface says), and its release callback runs exactly once, when the last handle
/// over the memory (this one, its shares, slices and split pieces) is destroyed, on the thread
/// that destroys it (for bool, before this call returns). `*schema` is only read and stays the
/// caller's to release. On failure nothing is taken: `*array` is untouched and `*out` not
/// written.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`schema`, `array`, `out`; a NULL format, children, child or
/// buffer that the type needs), LODTENSOR_INVALID_ARGUMENT (a released schema or array; a
/// negative length, offset or null count, or an offset past any buffer; a child count, buffer
/// count or length that does not fit the type; offsets that decrease or run past their child; a
/// null among the entries taken; a fixed-size list format without a size; elements not aligned
/// to their size), LODTENSOR_UNSUPPORTED (a format with no tensor form, such as a struct,
/// string or unsigned 16-64 bit type; a dictionary; a list inside a fixed-size list; more than
/// `LODTENSOR_MAX_DIMS` dims; a chain over 64 arrays deep), LODTENSOR_INVALID_LOD (the lists
/// break a LoD rule: the outermost needs at least one entry), LODTENSOR_OUT_OF_MEMORY (sizes that
/// overflow, or no memory for the LoD or bool elements).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_arrow(
    schema: *const ArrowSchema,
    array: *mut ArrowArray,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let t = from_arrow(schema.cast::<arrow::ArrowSchema>(), array.cast::<arrow::ArrowArray>())?;
        new_handle(out, t);
        Ok(())
    })
}

/// Takes the Arrow device array `*array` (the C device data interface) of type `*schema` as a
/// new LoD tensor, zero copy, as `lodtensor_from_arrow` takes an array: on the CPU for
/// ARROW_DEVICE_CPU and ARROW_DEVICE_CUDA_HOST (page-locked host memory); on CUDA device n for
/// ARROW_DEVICE_CUDA with `device_id` n, where the elements stay in the producer's device memory
/// and the LoD offsets (and any validity bits) are read from the device. A non-NULL `sync_event`
/// (a `cudaEvent_t*`, of the device's primary context) is waited for before anything reads the
/// buffers: the device's stream waits for it (and, for CUDA host memory, the host too). On
/// success `array->array` is moved out (its `release` becomes NULL) and released once, when the
/// last handle over the memory goes (for a CUDA tensor, after the work queued on the device);
/// `*schema` stays the caller's. On failure nothing is taken and `*out` is not written.
///
/// Returns what `lodtensor_from_arrow` returns, naming `array.array` for the array, and
/// LODTENSOR_UNSUPPORTED (another device type; a CUDA device in a build without CUDA; a
/// `sync_event` on ARROW_DEVICE_CPU; bool elements on a CUDA device), LODTENSOR_INVALID_ARGUMENT
/// (on ARROW_DEVICE_CUDA, or with a `sync_event` on ARROW_DEVICE_CUDA_HOST, a `device_id` that is
/// negative or beyond the device count; device buffers the device cannot use; on the CPU the id
/// is not read), LODTENSOR_INTERNAL (a CUDA driver failure, such as an event it does not know).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_arrow_device(
    schema: *const ArrowSchema,
    array: *mut ArrowDeviceArray,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let t = from_arrow_device(schema.cast::<arrow::ArrowSchema>(), array.cast::<arrow::ArrowDeviceArray>())?;
        new_handle(out, t);
        Ok(())
    })
}
