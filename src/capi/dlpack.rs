//! DLPack: lending a tensor's memory to other frameworks, and taking theirs, without a copy.

use super::args::{self, Out};
use super::boundary;
use super::tensor::{lodtensor_t, new_handle};
use super::types::lodtensor_status_t;
use crate::interop::dlpack::{self, from_dlpack, to_dlpack, ManagedTensor};

/// DLPack's managed tensor, opaque here; the header declares it as a bare struct (cbindgen.toml).
pub struct DLManagedTensorVersioned {
    _opaque: [u8; 0],
}

/// DLPack's managed tensor before version 1.0, opaque here as the versioned one is.
pub struct DLManagedTensor {
    _opaque: [u8; 0],
}

/// Lends `t`'s elements as a new DLPack managed tensor (`*out`) that shares its memory, zero
/// copy: DLPack version 1.0, `flags` 0 (writable: writes are seen through `t` and every handle
/// sharing its memory), `shape` and compact row-major `strides` (in elements) set,
/// `byte_offset` 0, `data` the address of `t`'s first element (a device address for a CUDA
/// tensor, written by the work queued on the device's stream: synchronise, or order your stream
/// after `lodtensor_cuda_stream`'s, before reading it). DLPack has no LoD: read it from `t`. The
/// consumer calls `(*out)->deleter(*out)` exactly once when done, from any thread; the memory
/// stays until then, also after `t` is destroyed.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out`).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_dlpack(
    t: *const lodtensor_t,
    out: *mut *mut DLManagedTensorVersioned,
) -> lodtensor_status_t {
    export::<dlpack::DLManagedTensorVersioned, _>(t, out)
}

/// Takes a DLPack managed tensor of major version 1 (`managed`, as another framework's
/// `to_dlpack` or `__dlpack__` gives it) as a new tensor, zero copy, with a LoD given as in
/// `lodtensor_create` (`num_levels` 0: none). On success the library owns `managed`: it calls
/// `managed->deleter(managed)` (unless NULL) exactly once, when the last handle over the memory
/// (this one, its shares, slices and split pieces) is destroyed, on the thread that destroys it
/// (for a CUDA tensor after the work queued on the device has finished); the caller must not call
/// it. The elements must be writable (no `DLPACK_FLAG_BITMASK_READ_ONLY`) and compact row-major
/// (`strides` NULL, or compact, with any stride on dims of size 1), `data + byte_offset` aligned
/// to the element size, on the CPU (`kDLCPU`, or `kDLCUDAHost` page-locked memory) or a CUDA
/// device (`kDLCUDA`, or `kDLCUDAManaged` managed memory, taken as that device's; read in the
/// order of the device's stream, as `lodtensor_from_buffer`'s).
/// On failure nothing is taken: the deleter is not called, `managed` stays the caller's, and
/// `*out` is untouched.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`managed`, `out`, a NULL `shape` with dims or `data` with
/// elements, a NULL LoD buffer with a non-zero length), LODTENSOR_UNSUPPORTED (another DLPack
/// major version, a read-only tensor, another device type, a CUDA device in a build without
/// CUDA, a dtype with lanes other than 1 or of no dtype here, more than `LODTENSOR_MAX_DIMS`
/// dims, strides that are not compact row-major), LODTENSOR_INVALID_ARGUMENT (a negative ndim or
/// dim, misaligned data, a CUDA device id beyond the count or memory the device cannot use, bad
/// `lod_kind` or level sizes), LODTENSOR_INVALID_LOD (a LoD rule broken, or the LoD does not end
/// at the row count), LODTENSOR_OUT_OF_MEMORY (a shape whose element or byte count overflows
/// size_t; no memory for the LoD), LODTENSOR_INTERNAL (a CUDA driver failure).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_dlpack(
    managed: *mut DLManagedTensorVersioned,
    lod_kind: i32,
    level_sizes: *const usize,
    num_levels: usize,
    lod: *const usize,
    lod_len: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    import(managed.cast::<dlpack::DLManagedTensorVersioned>(), lod_kind, level_sizes, num_levels, lod, lod_len, out)
}

/// `lodtensor_to_dlpack` for a consumer of DLPack before version 1.0: the same managed tensor as
/// a `DLManagedTensor` (no version, no flags; `dl_tensor`, `manager_ctx` and `deleter` as there).
/// Such a consumer cannot be told that a tensor is read-only, and none of the library's is.
///
/// Returns LODTENSOR_NULL_ARGUMENT (`t`, `out`).
#[no_mangle]
pub unsafe extern "C" fn lodtensor_to_dlpack_legacy(
    t: *const lodtensor_t,
    out: *mut *mut DLManagedTensor,
) -> lodtensor_status_t {
    export::<dlpack::DLManagedTensor, _>(t, out)
}

/// `lodtensor_from_dlpack` for a managed tensor of DLPack before version 1.0 (`DLManagedTensor`,
/// as frameworks' older `to_dlpack` calls and a `__dlpack__()` asked for no version give it):
/// taken the same way, with the same ownership of `managed` and its deleter, on success and on
/// failure. It has no version to check and no flags: its elements are taken as writable, as
/// DLPack then lent them.
///
/// Returns the statuses of `lodtensor_from_dlpack` but those of the version and the read-only
/// flag.
#[no_mangle]
pub unsafe extern "C" fn lodtensor_from_dlpack_legacy(
    managed: *mut DLManagedTensor,
    lod_kind: i32,
    level_sizes: *const usize,
    num_levels: usize,
    lod: *const usize,
    lod_len: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    import(managed.cast::<dlpack::DLManagedTensor>(), lod_kind, level_sizes, num_levels, lod, lod_len, out)
}

/// Both exports: `t` lent as a managed tensor of the form `M`, into `*out` (the header's opaque
/// struct `O` of that form).
unsafe fn export<M: ManagedTensor, O>(t: *const lodtensor_t, out: *mut *mut O) -> lodtensor_status_t {
    boundary(|| {
        let t = &args::get(t, "t")?.inner;
        Out::new(out, "out")?.write(to_dlpack::<M>(t).cast());
        Ok(())
    })
}

/// Both imports: `managed`, of the form `M`, taken with the LoD given as in `lodtensor_create`.
unsafe fn import<M: ManagedTensor>(
    managed: *mut M,
    lod_kind: i32,
    level_sizes: *const usize,
    num_levels: usize,
    lod: *const usize,
    lod_len: usize,
    out: *mut *mut lodtensor_t,
) -> lodtensor_status_t {
    boundary(|| {
        let out = Out::new(out, "out")?;
        let lod = args::lod(lod_kind, level_sizes, num_levels, lod, lod_len)?;
        new_handle(out, from_dlpack(managed, lod)?);
        Ok(())
    })
}
