//! Element types and their DLPack (code, bits) encoding.

use crate::error::{err, Result};
use half::{bf16, f16};

/// The element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

/// DLPack type codes (`DLDataTypeCode`).
pub mod dlpack_code {
    pub const INT: u8 = 0;
    pub const UINT: u8 = 1;
    pub const FLOAT: u8 = 2;
    pub const BFLOAT: u8 = 4;
    pub const BOOL: u8 = 6;
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// Bytes per element.
    pub fn size(self) -> usize {
        self.dlpack().1 as usize / 8
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The DLPack `(code, bits)` pair. DLPack stores bool as code 6 with 8 bits.
    pub fn dlpack(self) -> (u8, u8) {
        use dlpack_code::*;
        match self {
            DType::Bool => (BOOL, 8),
            DType::U8 => (UINT, 8),
            DType::I8 => (INT, 8),
            DType::I16 => (INT, 16),
            DType::I32 => (INT, 32),
            DType::I64 => (INT, 64),
            DType::F16 => (FLOAT, 16),
            DType::BF16 => (BFLOAT, 16),
            DType::F32 => (FLOAT, 32),
            DType::F64 => (FLOAT, 64),
        }
    }

    /// The dtype for a DLPack `(code, bits, lanes)` triple; only single-lane types are supported.
    pub fn from_dlpack(code: u8, bits: u8, lanes: u16) -> Result<DType> {
        if lanes != 1 {
            return Err(err!(Unsupported, "dtype: lanes must be 1 (vector types are not supported), got {lanes}"));
        }
        DType::ALL
            .into_iter()
            .find(|d| d.dlpack() == (code, bits))
            .ok_or_else(|| {
                err!(
                    Unsupported,
                    "dtype: (code {code}, bits {bits}) is not a supported type; supported: \
                     bool (6,8), uint8 (1,8), int8/16/32/64 (0,N), float16/32/64 (2,N), bfloat16 (4,16)"
                )
            })
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that is the element of exactly one dtype. Kernels are written once over this trait.
///
/// # Safety
/// Implementors must be plain data: every bit pattern of `size_of::<Self>()` bytes produced by the
/// library for this dtype is a valid value, and the type has no padding.
pub unsafe trait Element: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const DTYPE: DType;
}

macro_rules! element {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(unsafe impl Element for $t { const DTYPE: DType = DType::$d; })*
    };
}
// `bool` is stored as one byte; the library only ever writes 0 or 1 into bool tensors, and caller
// data is read through `u8` unless its values have been checked.
element!(u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64, f16 => F16, bf16 => BF16, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dlpack_round_trip_and_sizes() {
        for d in DType::ALL {
            let (c, b) = d.dlpack();
            assert_eq!(DType::from_dlpack(c, b, 1).unwrap(), d);
        }
        assert_eq!(DType::F32.size(), 4);
        assert_eq!(DType::Bool.size(), 1);
        assert_eq!(DType::BF16.size(), 2);
        assert!(DType::from_dlpack(2, 32, 4).is_err());
        assert!(DType::from_dlpack(3, 32, 1).is_err());
        assert!(DType::from_dlpack(0, 128, 1).is_err());
    }
}
