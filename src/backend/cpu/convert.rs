//! Element conversion between any two of the ten dtypes (bool included), and filling with one
//! value: the kernels behind `cast` and `fill`, and the output side of `sequence_mask`.
//!
//! Conversions follow Rust's `as` everywhere it is defined: integer to integer wraps (keeps the
//! low bits), float to integer truncates toward zero and saturates (NaN becomes 0), integer or
//! float to float rounds to nearest, ties to even, overflowing to infinity. Rust has no `as` for
//! float16/bfloat16, so those are rounded correctly from the exact source value too (through
//! round-to-odd intermediates, never by rounding twice). bool reads as 0/1 (any non-zero byte
//! is true) and a number becomes `value != 0` (NaN is true, -0.0 is false).

use super::pool::for_each_segment;
use crate::dtype::DType;
use crate::error::{ensure, Result};
use crate::tensor::Tensor;
use half::{bf16, f16};

/// A value on its way between two dtypes: every integer dtype fits `Int`, every float `Float`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
}

/// The bool element: one byte, 0 or 1 when written by the library.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct BoolByte(pub u8);

/// An element of any of the ten dtypes, convertible through [`Value`].
///
/// # Safety
/// Implementors are plain data of exactly `DTYPE.size()` bytes, valid for every bit pattern.
pub unsafe trait CastElem: Copy + Send + Sync + 'static {
    const DTYPE: DType;
    fn to_value(self) -> Value;
    fn from_value(v: Value) -> Self;
}

macro_rules! cast_int {
    ($($t:ty => $d:ident),*) => {$(
        unsafe impl CastElem for $t {
            const DTYPE: DType = DType::$d;
            #[inline]
            fn to_value(self) -> Value { Value::Int(self as i64) }
            #[inline]
            fn from_value(v: Value) -> Self {
                match v { Value::Int(i) => i as $t, Value::Float(f) => f as $t }
            }
        }
    )*};
}
cast_int!(u8 => U8, i8 => I8, i16 => I16, i32 => I32, i64 => I64);

macro_rules! cast_float {
    ($($t:ty => $d:ident),*) => {$(
        unsafe impl CastElem for $t {
            const DTYPE: DType = DType::$d;
            #[inline]
            fn to_value(self) -> Value { Value::Float(self as f64) }
            #[inline]
            fn from_value(v: Value) -> Self {
                match v { Value::Int(i) => i as $t, Value::Float(f) => f as $t }
            }
        }
    )*};
}
cast_float!(f32 => F32, f64 => F64);

macro_rules! cast_half {
    ($($t:ty => $d:ident),*) => {$(
        unsafe impl CastElem for $t {
            const DTYPE: DType = DType::$d;
            #[inline]
            fn to_value(self) -> Value { Value::Float(self.to_f64()) }
            #[inline]
            fn from_value(v: Value) -> Self {
                // Round-to-odd keeps enough bits that the final nearest rounding is the correct
                // one (half's own f64 path looks at only the top 32 bits of the mantissa).
                let f = match v { Value::Int(i) => f64_to_f32_odd(i64_to_f64_odd(i)), Value::Float(f) => f64_to_f32_odd(f) };
                <$t>::from_f32(f)
            }
        }
    )*};
}
cast_half!(f16 => F16, bf16 => BF16);

unsafe impl CastElem for BoolByte {
    const DTYPE: DType = DType::Bool;
    #[inline]
    fn to_value(self) -> Value {
        Value::Int((self.0 != 0) as i64)
    }
    #[inline]
    fn from_value(v: Value) -> Self {
        BoolByte(match v {
            Value::Int(i) => (i != 0) as u8,
            Value::Float(f) => (f != 0.0) as u8,
        })
    }
}

/// `i` rounded to f64 with round-to-odd: the truncation toward zero, with the last bit set when
/// that was inexact.
fn i64_to_f64_odd(i: i64) -> f64 {
    let r = i as f64;
    if r as i128 == i as i128 || r.to_bits() & 1 == 1 {
        return r;
    }
    let bits = if (r as i128).abs() > (i as i128).abs() { r.to_bits() - 1 } else { r.to_bits() + 1 };
    f64::from_bits(bits)
}

/// `v` rounded to f32 with round-to-odd (see [`i64_to_f64_odd`]); beyond f32's range that is
/// ±f32::MAX, which still rounds on to infinity in float16 and bfloat16.
pub fn f64_to_f32_odd(v: f64) -> f32 {
    let r = v as f32;
    if r.is_nan() || r as f64 == v {
        return r;
    }
    if r.is_infinite() {
        return f32::MAX.copysign(r);
    }
    if r.to_bits() & 1 == 1 {
        return r;
    }
    let bits = if (r as f64).abs() > v.abs() { r.to_bits() - 1 } else { r.to_bits() + 1 };
    f32::from_bits(bits)
}

/// Elements per task of the element-wise kernels: large enough to amortise a task.
pub const CHUNK: usize = 1 << 16;

/// Segment bounds splitting `len` elements into runs of `chunk`.
pub fn chunk_bounds(len: usize, chunk: usize) -> Vec<usize> {
    let mut bounds: Vec<usize> = (0..len).step_by(chunk.max(1)).collect();
    bounds.push(len);
    bounds
}

/// The elements of a host tensor of dtype `T::DTYPE`.
pub fn elements<T: CastElem>(t: &Tensor) -> Result<&[T]> {
    ensure!(t.dtype() == T::DTYPE, Internal, "tensor: dtype {} read as {}", t.dtype(), T::DTYPE);
    let bytes = t.bytes()?;
    ensure!(
        (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()),
        Internal,
        "tensor: misaligned elements"
    );
    // SAFETY: dtype, size and alignment checked; `CastElem` types accept every bit pattern.
    Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), t.numel()) })
}

/// The elements of an unshared host tensor of dtype `T::DTYPE`, for writing.
pub fn elements_mut<T: CastElem>(t: &mut Tensor) -> Result<&mut [T]> {
    ensure!(t.dtype() == T::DTYPE, Internal, "tensor: dtype {} written as {}", t.dtype(), T::DTYPE);
    let n = t.numel();
    let bytes = t.bytes_mut()?;
    ensure!(
        (bytes.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()),
        Internal,
        "tensor: misaligned elements"
    );
    // SAFETY: as in `elements`, and the bytes are uniquely borrowed.
    Ok(unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr().cast::<T>(), n) })
}

/// `out[i] = D::from(src[i])`.
pub fn cast<S: CastElem, D: CastElem>(src: &[S], out: &mut [D]) -> Result<()> {
    ensure!(src.len() == out.len(), Internal, "cast: {} elements into {}", src.len(), out.len());
    let bounds = chunk_bounds(out.len(), CHUNK);
    for_each_segment(out, &bounds, |i, seg| {
        let src = &src[i * CHUNK..i * CHUNK + seg.len()];
        for (o, &s) in seg.iter_mut().zip(src) {
            *o = D::from_value(s.to_value());
        }
    })
}

/// Every element of `out` set to `value`.
pub fn fill<T: CastElem>(out: &mut [T], value: T) -> Result<()> {
    let bounds = chunk_bounds(out.len(), CHUNK);
    for_each_segment(out, &bounds, |_, seg| seg.fill(value))
}

/// Runs `$body` with `$T` bound to the [`CastElem`] type of any of the ten dtypes: the numeric ones
/// through `dispatch_dtype!`, bool as [`BoolByte`].
macro_rules! dispatch_any_dtype {
    ($dtype:expr, $what:expr, |$T:ident| $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Bool => {
                type $T = $crate::backend::cpu::convert::BoolByte;
                $body
            }
            other => {
                $crate::dtype::dispatch_dtype!(other, $what, [U8, I8, I16, I32, I64, F16, BF16, F32, F64], |$T| $body)
            }
        }
    };
}
pub(crate) use dispatch_any_dtype;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_to_odd_then_nearest_is_correct() {
        // 2^k from its bits: `powi`'s precision is unspecified (Miri perturbs it).
        let pow2 = |k: i32| f64::from_bits(((k + 1023) as u64) << 52);
        // 1 + 2^-11 + 2^-40 lies just above the midpoint of two float16 neighbours: it must round up.
        let v = 1.0 + pow2(-11) + pow2(-40);
        assert_eq!(f16::from_value(Value::Float(v)), f16::from_f64(1.0 + pow2(-10)));
        assert_eq!(f16::from_value(Value::Float(1.0 + pow2(-11))), f16::ONE);
        assert_eq!(f16::from_value(Value::Float(1e6)), f16::INFINITY);
        assert_eq!(f16::from_value(Value::Float(-1e300)), f16::NEG_INFINITY);
        assert_eq!(bf16::from_value(Value::Int(i64::MAX)), bf16::from_f64(i64::MAX as f64));
        // Scalar::cast_f64 (the arithmetic kernels' way back to float16/bfloat16) rounds the same.
        use crate::dtype::Scalar;
        for v in [26456998543384.0, 1.0 + pow2(-11) + pow2(-40), -3.3e38, 1e-9] {
            assert_eq!(<bf16 as Scalar>::cast_f64(v), bf16::from_value(Value::Float(v)));
            assert_eq!(<f16 as Scalar>::cast_f64(v), f16::from_value(Value::Float(v)));
        }
        assert_eq!(<bf16 as Scalar>::cast_f64(26456998543384.0).to_bits(), 0x55c1);
        assert_eq!(chunk_bounds(0, 4), vec![0]);
        assert_eq!(chunk_bounds(9, 4), vec![0, 4, 8, 9]);
    }
}
