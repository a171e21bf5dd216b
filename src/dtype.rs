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
        DType::ALL.into_iter().find(|d| d.dlpack() == (code, bits)).ok_or_else(|| {
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

/// `values` as elements of `U`, where `U` is `T` (each type is the element of exactly one dtype):
/// for kernels written for one type, called from code written over the trait.
pub(crate) fn retyped<T: Element, U: Element>(values: &[T]) -> Option<&[U]> {
    // SAFETY: `U` is `T` (one dtype, one type), so the same size, alignment and values.
    (T::DTYPE == U::DTYPE).then(|| unsafe { std::slice::from_raw_parts(values.as_ptr().cast(), values.len()) })
}

/// [`retyped`] for a slice to write.
pub(crate) fn retyped_mut<T: Element, U: Element>(values: &mut [T]) -> Option<&mut [U]> {
    // SAFETY: as in `retyped`; `values` is borrowed exclusively for the result's life.
    (T::DTYPE == U::DTYPE).then(|| unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast(), values.len()) })
}

/// A numeric element: the arithmetic kernels (pooling, softmax, scatter-add, fill, cast) are
/// written once over this trait. f16 and bf16 compute through f32.
pub trait Scalar: Element + PartialOrd + Default {
    const ZERO: Self;
    const ONE: Self;
    fn to_f64(self) -> f64;
    /// `v` converted with Rust's `as` rules: floats round to nearest, integers truncate toward
    /// zero and saturate, NaN becomes 0. Not named `from_f64`: inside `dispatch_dtype!` the type
    /// is named concretely, and there float16's and bfloat16's inherent `from_f64`, which can
    /// round the wrong way, would be called instead.
    fn cast_f64(v: f64) -> Self;
    /// Addition that wraps for integers (never panics) and rounds for floats.
    fn add(self, other: Self) -> Self;
}

macro_rules! scalar_int {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const ZERO: Self = 0;
            const ONE: Self = 1;
            fn to_f64(self) -> f64 { self as f64 }
            fn cast_f64(v: f64) -> Self { v as $t }
            fn add(self, other: Self) -> Self { self.wrapping_add(other) }
        }
    )*};
}
scalar_int!(u8, i8, i16, i32, i64);

macro_rules! scalar_float {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            fn to_f64(self) -> f64 { self as f64 }
            fn cast_f64(v: f64) -> Self { v as $t }
            fn add(self, other: Self) -> Self { self + other }
        }
    )*};
}
scalar_float!(f32, f64);

macro_rules! scalar_half {
    ($($t:ty),*) => {$(
        impl Scalar for $t {
            const ZERO: Self = <$t>::ZERO;
            const ONE: Self = <$t>::ONE;
            fn to_f64(self) -> f64 { self.to_f64() }
            // half's own f64 conversion reads only the top 32 bits of the mantissa and can round
            // the wrong way; round-to-odd through f32 rounds correctly.
            fn cast_f64(v: f64) -> Self { <$t>::from_f32($crate::backend::cpu::convert::f64_to_f32_odd(v)) }
            fn add(self, other: Self) -> Self { <$t>::from_f32(self.to_f32() + other.to_f32()) }
        }
    )*};
}
scalar_half!(f16, bf16);

/// The Rust element type of a `DType` variant. `Bool` has none: bool data moves as bytes, and an
/// op that computes on bools handles them itself.
macro_rules! element_type {
    (U8) => {
        u8
    };
    (I8) => {
        i8
    };
    (I16) => {
        i16
    };
    (I32) => {
        i32
    };
    (I64) => {
        i64
    };
    (F16) => {
        ::half::f16
    };
    (BF16) => {
        ::half::bf16
    };
    (F32) => {
        f32
    };
    (F64) => {
        f64
    };
}
pub(crate) use element_type;

/// Runs `$body` (which returns a `Result`) with the type `$T` bound to the element type of
/// `$dtype`, for the listed `DType` variants; any other dtype is an `Unsupported` error naming
/// `$what` (the argument, e.g. "x") and the supported dtypes. This is the one place a kernel
/// written over [`Element`] or [`Scalar`] meets a run-time dtype.
macro_rules! dispatch_dtype {
    ($dtype:expr, $what:expr, [$($v:ident),+ $(,)?], |$T:ident| $body:expr) => {
        match $dtype {
            $( $crate::dtype::DType::$v => {
                #[allow(dead_code)]
                type $T = $crate::dtype::element_type!($v);
                $body
            } )+
            #[allow(unreachable_patterns)]
            other => Err($crate::error::Error::Unsupported(format!(
                "{}: dtype {} is not supported here; supported: {}",
                $what,
                other,
                [$($crate::dtype::DType::$v.name()),+].join(", ")
            ))),
        }
    };
}
pub(crate) use dispatch_dtype;

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

    fn sum_as_f64<T: Scalar>(v: &[T]) -> f64 {
        v.iter().fold(T::ZERO, |a, &b| a.add(b)).to_f64()
    }

    #[test]
    fn dispatch_binds_the_element_type() {
        let run = |d: DType| -> crate::Result<f64> {
            dispatch_dtype!(d, "x", [I32, F16, F64], |T| Ok(sum_as_f64(&[T::ONE, T::ONE, T::cast_f64(2.0)])))
        };
        assert_eq!(run(DType::I32).unwrap(), 4.0);
        assert_eq!(run(DType::F16).unwrap(), 4.0);
        assert_eq!(run(DType::F64).unwrap(), 4.0);
        let e = run(DType::U8).unwrap_err().to_string();
        assert!(e.contains("x: dtype uint8") && e.contains("int32, float16, float64"), "{e}");
        assert_eq!(i8::MAX.add(1), i8::MIN);
        assert_eq!(<u8 as Scalar>::cast_f64(300.0), 255);
    }
}
