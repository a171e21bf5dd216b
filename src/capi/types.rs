//! Plain C types shared by every export: status codes, dtype and place descriptors, constants.

use crate::dtype::DType;
use crate::error::Result;
use crate::place::Place;

/// Status code returned by every fallible function. 0 is success; any other value is a failure
/// whose detail is in `lodtensor_last_error_message()`.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum lodtensor_status_t {
    /// Success.
    LODTENSOR_OK = 0,
    /// A required pointer argument was NULL.
    LODTENSOR_NULL_ARGUMENT = 1,
    /// An argument broke a documented rule (bad code, shape, size, mismatch).
    LODTENSOR_INVALID_ARGUMENT = 2,
    /// A LoD broke a validity rule or does not match the tensor's rows.
    LODTENSOR_INVALID_LOD = 3,
    /// An index, level or range is out of range.
    LODTENSOR_OUT_OF_RANGE = 4,
    /// A caller's output buffer is too small; query the needed length with a NULL buffer.
    LODTENSOR_BUFFER_TOO_SMALL = 5,
    /// The request is valid but not supported by this build, dtype or place.
    LODTENSOR_UNSUPPORTED = 6,
    /// Memory could not be allocated, or a size overflowed.
    LODTENSOR_OUT_OF_MEMORY = 7,
    /// A bug inside the library (for example a caught panic).
    LODTENSOR_INTERNAL = 8,
    /// A caller-supplied callback returned a non-zero status; the message says which and when.
    LODTENSOR_CALLBACK_FAILED = 9,
}

/// An element type in DLPack form (`DLDataType`): `code` is one of the `LODTENSOR_DTYPE_CODE_*`
/// values, `bits` the element size in bits, `lanes` must be 1.
/// Supported: bool {6,8}, uint8 {1,8}, int8/16/32/64 {0,N}, float16/32/64 {2,N}, bfloat16 {4,16}.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct lodtensor_dtype_t {
    pub code: u8,
    pub bits: u8,
    pub lanes: u16,
}

/// A memory location in DLPack form (`DLDevice`): `device_type` 1 = CPU (device_id 0),
/// 2 = CUDA (device_id = the GPU ordinal).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct lodtensor_place_t {
    pub device_type: i32,
    pub device_id: i32,
}

/// DLPack dtype code of signed integers.
pub const LODTENSOR_DTYPE_CODE_INT: u8 = 0;
/// DLPack dtype code of unsigned integers.
pub const LODTENSOR_DTYPE_CODE_UINT: u8 = 1;
/// DLPack dtype code of IEEE floats.
pub const LODTENSOR_DTYPE_CODE_FLOAT: u8 = 2;
/// DLPack dtype code of bfloat16.
pub const LODTENSOR_DTYPE_CODE_BFLOAT: u8 = 4;
/// DLPack dtype code of bool (stored as one byte, 0 or 1).
pub const LODTENSOR_DTYPE_CODE_BOOL: u8 = 6;

/// DLPack device type of host memory.
pub const LODTENSOR_DEVICE_CPU: i32 = 1;
/// DLPack device type of CUDA device memory.
pub const LODTENSOR_DEVICE_CUDA: i32 = 2;

/// The most dimensions a tensor may have.
pub const LODTENSOR_MAX_DIMS: usize = 9;

/// LoD values are offsets: each level starts at 0 and never decreases.
pub const LODTENSOR_LOD_OFFSETS: i32 = 0;
/// LoD values are lengths: each level lists the size of each sequence.
pub const LODTENSOR_LOD_LENGTHS: i32 = 1;

impl lodtensor_dtype_t {
    pub(crate) fn to_dtype(self) -> Result<DType> {
        DType::from_dlpack(self.code, self.bits, self.lanes)
    }

    pub(crate) fn from_dtype(d: DType) -> Self {
        let (code, bits) = d.dlpack();
        lodtensor_dtype_t { code, bits, lanes: 1 }
    }
}

impl lodtensor_place_t {
    pub(crate) fn to_place(self) -> Result<Place> {
        Place::from_dlpack(self.device_type, self.device_id)
    }

    pub(crate) fn from_place(p: Place) -> Self {
        let (device_type, device_id) = p.dlpack();
        lodtensor_place_t { device_type, device_id }
    }
}
