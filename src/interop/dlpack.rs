//! DLPack: tensors lent to and taken from other frameworks without a copy, as
//! `DLManagedTensorVersioned` (major version 1) or as the `DLManagedTensor` of DLPack before 1.0,
//! which frameworks' older `to_dlpack` calls still give. The structs below have DLPack's layout
//! (`dlpack.h`); the C header only forward-declares the managed tensors, so a caller's own
//! `dlpack.h` defines them.
//!
//! DLPack has no LoD: an exported tensor is its dense elements (read the LoD from the tensor);
//! an imported one gets the LoD the caller gives.

use crate::dim::{Dim, MAX_DIMS};
use crate::dtype::DType;
use crate::error::{ensure, err, Result};
use crate::lod::Lod;
use crate::lod_tensor::{check_lod_for_dims, LoDTensor};
use crate::place::{dlpack_device, Place};
use crate::tensor::Tensor;
use std::ffi::c_void;

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    pub major: u32,
    pub minor: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    pub device_type: i32,
    pub device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

#[repr(C)]
pub struct DLTensor {
    pub data: *mut c_void,
    pub device: DLDevice,
    pub ndim: i32,
    pub dtype: DLDataType,
    pub shape: *mut i64,
    /// In elements; NULL means compact row-major.
    pub strides: *mut i64,
    pub byte_offset: u64,
}

pub type Deleter = unsafe extern "C" fn(*mut DLManagedTensorVersioned);

#[repr(C)]
pub struct DLManagedTensorVersioned {
    pub version: DLPackVersion,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<Deleter>,
    pub flags: u64,
    pub dl_tensor: DLTensor,
}

pub type LegacyDeleter = unsafe extern "C" fn(*mut DLManagedTensor);

/// DLPack's managed tensor before version 1.0: the tensor first, no version and no flags (so no
/// read-only mark either).
#[repr(C)]
pub struct DLManagedTensor {
    pub dl_tensor: DLTensor,
    pub manager_ctx: *mut c_void,
    pub deleter: Option<LegacyDeleter>,
}

/// The two forms of DLPack's managed tensor, for the one export and the one import written over
/// both.
pub trait ManagedTensor: Sized + 'static {
    /// A new managed tensor of `dl_tensor`, freed by `deleter`, its context NULL (and, versioned,
    /// DLPack 1.0 and writable).
    fn exported(dl_tensor: DLTensor, deleter: unsafe extern "C" fn(*mut Self)) -> Self;
    fn dl_tensor(&self) -> &DLTensor;
    fn dl_tensor_mut(&mut self) -> &mut DLTensor;
    fn manager_ctx(&self) -> *mut c_void;
    fn set_manager_ctx(&mut self, ctx: *mut c_void);
    fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)>;
    /// The form's own rules, checked before its tensor is read: a versioned tensor's version and
    /// flags.
    fn check(&self) -> Result<()>;
}

/// The accessors of the fields both forms have, by the same names.
macro_rules! managed_fields {
    () => {
        fn dl_tensor(&self) -> &DLTensor {
            &self.dl_tensor
        }
        fn dl_tensor_mut(&mut self) -> &mut DLTensor {
            &mut self.dl_tensor
        }
        fn manager_ctx(&self) -> *mut c_void {
            self.manager_ctx
        }
        fn set_manager_ctx(&mut self, ctx: *mut c_void) {
            self.manager_ctx = ctx;
        }
        fn deleter(&self) -> Option<unsafe extern "C" fn(*mut Self)> {
            self.deleter
        }
    };
}

impl ManagedTensor for DLManagedTensorVersioned {
    fn exported(dl_tensor: DLTensor, deleter: Deleter) -> Self {
        DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(deleter),
            flags: 0,
            dl_tensor,
        }
    }
    managed_fields!();
    fn check(&self) -> Result<()> {
        let DLPackVersion { major, minor } = self.version;
        ensure!(
            major == VERSION.major,
            Unsupported,
            "managed: DLPack version {major}.{minor} is not supported (major version 1 is; DLPack's managed \
             tensor before 1.0, DLManagedTensor, has no version: lodtensor_from_dlpack_legacy takes it)"
        );
        ensure!(
            self.flags & FLAG_READ_ONLY == 0,
            Unsupported,
            "managed: the tensor is read-only (DLPACK_FLAG_BITMASK_READ_ONLY), and the library's tensors can be \
             written; copy it into a tensor of its own (lodtensor_create)"
        );
        Ok(())
    }
}

impl ManagedTensor for DLManagedTensor {
    fn exported(dl_tensor: DLTensor, deleter: LegacyDeleter) -> Self {
        DLManagedTensor { dl_tensor, manager_ctx: std::ptr::null_mut(), deleter: Some(deleter) }
    }
    managed_fields!();
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// The version this module writes: every field it sets is DLPack 1.0's.
pub const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 0 };
/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write the elements.
pub const FLAG_READ_ONLY: u64 = 1 << 0;
/// `kDLCUDAHost`: page-locked host memory, which the host reads as any other.
const DEVICE_CUDA_HOST: i32 = 3;
/// `kDLCUDAManaged`: CUDA managed memory, taken as the device's (its device_id names it).
const DEVICE_CUDA_MANAGED: i32 = 13;

/// What an exported tensor keeps: the DLPack struct handed out, the tensor whose memory it lends,
/// and the shape and strides it points to. One box, freed by `delete_export`.
#[repr(C)]
struct Export<M> {
    managed: M,
    tensor: Tensor,
    shape: [i64; MAX_DIMS],
    strides: [i64; MAX_DIMS],
}

/// `x`'s elements as a new DLPack managed tensor of either form that shares its memory (zero
/// copy): compact row-major strides set, byte_offset 0, the data address where `x`'s first
/// element is (a device address for a CUDA tensor); versioned, it is version 1.0 and writable
/// (flags 0; writes are seen through `x` and every handle sharing its memory). The memory stays
/// until the consumer calls the managed tensor's deleter, once, from any thread, also after `x`
/// has gone.
pub fn to_dlpack<M: ManagedTensor>(x: &LoDTensor) -> *mut M {
    let tensor = x.tensor().clone();
    let dim = *tensor.dims();
    let dims = dim.as_slice();
    let (code, bits) = tensor.dtype().dlpack();
    let (device_type, device_id) = tensor.place().dlpack();
    let dl_tensor = DLTensor {
        data: tensor.as_ptr().cast_mut().cast(),
        device: DLDevice { device_type, device_id },
        ndim: dims.len() as i32,
        dtype: DLDataType { code, bits, lanes: 1 },
        shape: std::ptr::null_mut(),
        strides: std::ptr::null_mut(),
        byte_offset: 0,
    };
    let mut export = Box::new(Export {
        managed: M::exported(dl_tensor, delete_export::<M>),
        shape: [0; MAX_DIMS],
        strides: [0; MAX_DIMS],
        tensor,
    });
    let mut stride = 1i64;
    for (i, &d) in dims.iter().enumerate().rev() {
        export.shape[i] = d as i64;
        export.strides[i] = stride;
        stride = stride.wrapping_mul(d as i64);
    }
    // The box does not move from here on: the struct's pointers into it stay valid.
    let raw = Box::into_raw(export);
    // SAFETY: `raw` is the live box just made.
    unsafe {
        let t = (*raw).managed.dl_tensor_mut();
        t.shape = (*raw).shape.as_mut_ptr();
        t.strides = (*raw).strides.as_mut_ptr();
        (*raw).managed.set_manager_ctx(raw.cast());
        &mut (*raw).managed
    }
}

/// The deleter of exported tensors: frees the box, which lets go of the tensor's memory. A panic
/// (none is expected) is not let out into the consumer's frames.
unsafe extern "C" fn delete_export<M: ManagedTensor>(managed: *mut M) {
    if let Some(m) = managed.as_ref() {
        let export = m.manager_ctx().cast::<Export<M>>();
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(Box::from_raw(export))));
    }
}

/// The place of a DLPack device: the CPU (and CUDA host memory, which the host reads directly)
/// or a CUDA device (and CUDA managed memory, which the device's kernels read as its own).
fn place_of(device: DLDevice) -> Result<Place> {
    let on = |device_type| Place::from_dlpack(device_type, device.device_id).map_err(|e| e.context("managed: "));
    match device.device_type {
        DEVICE_CUDA_HOST => Ok(Place::Cpu),
        DEVICE_CUDA_MANAGED => on(dlpack_device::CUDA),
        dlpack_device::CPU | dlpack_device::CUDA => on(device.device_type),
        other => Err(err!(
            Unsupported,
            "managed: device type {other} is not supported (kDLCPU 1, kDLCUDA 2, kDLCUDAHost 3 and kDLCUDAManaged \
             13 are)"
        )),
    }
}

/// Takes `managed` (a DLPack managed tensor of either form; versioned, of major version 1 and
/// writable; compact row-major) as a tensor with LoD `lod`, without copying its elements: on
/// success the tensor owns it and calls its deleter (when not NULL) exactly once, when the last
/// tensor over its memory goes, on the thread that drops it. On failure nothing is taken: the
/// deleter is not called and `managed` stays the caller's. DLPack before 1.0 cannot mark a tensor
/// read-only: such a tensor is taken as writable.
///
/// Errors: `NullArgument` (`managed`; its data with elements, its shape with dims);
/// `Unsupported` (versioned: another major version, the read-only flag; a device other than CPU,
/// CUDA host, CUDA or CUDA managed, or CUDA in a build without it; a dtype without lanes 1 or not of the
/// library; more than `MAX_DIMS` dims; strides that are not compact row-major);
/// `InvalidArgument` (a negative ndim or dim; data + byte_offset not aligned to the element size;
/// a CUDA device id beyond the count; on a CUDA device, memory the device cannot use);
/// `InvalidLod` (the LoD does not fit); `OutOfMemory` (a shape whose element count or byte count
/// overflows).
///
/// # Safety
/// `managed` is NULL or a valid DLPack managed tensor of the form `M` whose shape and strides
/// hold `ndim` values and whose elements stay valid until its deleter runs.
pub unsafe fn from_dlpack<M: ManagedTensor>(managed: *mut M, lod: Lod) -> Result<LoDTensor> {
    let m = managed.as_ref().ok_or_else(|| err!(NullArgument, "managed: must not be NULL"))?;
    m.check()?;
    let t = m.dl_tensor();
    let place = place_of(t.device)?;
    let dtype = DType::from_dlpack(t.dtype.code, t.dtype.bits, t.dtype.lanes).map_err(|e| e.context("managed: "))?;
    ensure!(t.ndim >= 0, InvalidArgument, "managed: ndim {} is negative", t.ndim);
    let ndim = t.ndim as usize;
    ensure!(ndim <= MAX_DIMS, Unsupported, "managed: {ndim} dims; a tensor of the library has at most {MAX_DIMS}");
    ensure!(!t.shape.is_null() || ndim == 0, NullArgument, "managed: shape is NULL for {ndim} dims");
    let shape: &[i64] = if ndim == 0 { &[] } else { std::slice::from_raw_parts(t.shape, ndim) };
    let dims = Dim::from_i64(shape).map_err(|e| e.context("managed: "))?;
    if !t.strides.is_null() && dims.numel() > 0 {
        let strides = std::slice::from_raw_parts(t.strides, ndim);
        let mut compact = 1i64;
        for i in (0..ndim).rev() {
            // A dim of size 1 is never stepped over: any stride will do there.
            ensure!(
                shape[i] == 1 || strides[i] == compact,
                Unsupported,
                "managed: strides {strides:?} for shape {shape:?} are not compact row-major (dims[{i}] needs \
                 stride {compact}), as the library's tensors are; copy it into a compact one first"
            );
            compact *= shape[i];
        }
    }
    check_lod_for_dims(&dims, &lod)?;
    let len = dims.numel().checked_mul(dtype.size()).ok_or_else(|| {
        err!(OutOfMemory, "managed: the elements of shape {shape:?} take more bytes than memory holds")
    })?;
    // An offset from NULL is no address: checked here, as the sum would pass for one.
    ensure!(
        !t.data.is_null() || len == 0,
        NullArgument,
        "managed: data is NULL (byte_offset {}) for {} elements",
        t.byte_offset,
        dims.numel()
    );
    let data = t.data.cast::<u8>().wrapping_add(t.byte_offset as usize);
    let release = m.deleter().map(|deleter| {
        let managed = Taken(managed);
        Box::new(move || {
            let managed = &managed;
            deleter(managed.0)
        }) as crate::memory::Release
    });
    let tensor = Tensor::borrowed(place, dtype, dims, data, len, release).map_err(|e| e.context("managed: "))?;
    LoDTensor::new(tensor, lod)
}

/// A managed tensor taken over, carried to whichever thread drops the last tensor over it.
struct Taken<M>(*mut M);
// SAFETY: only handed back to the tensor's own deleter, as DLPack's ownership transfer allows.
unsafe impl<M> Send for Taken<M> {}
unsafe impl<M> Sync for Taken<M> {}
