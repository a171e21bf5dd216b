//! Softmax and log-softmax over segments of a flat array (sequences for `sequence_softmax`, rows
//! of the last axis for `log_softmax`), with the segment's maximum subtracted so that no `exp`
//! overflows. The exponentials are computed in the type `A` (f32 for float32, float16 and
//! bfloat16, f64 for float64), their sum in f64.

use super::pool::for_each_segment;
use crate::dtype::Scalar;
use crate::error::{ensure, Result};

/// The float type the exponentials are computed in.
pub trait Compute: Copy + Send + Sync + 'static {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    fn exp(self) -> Self;
}

macro_rules! compute {
    ($($t:ty),*) => {$(
        impl Compute for $t {
            #[inline]
            fn from_f64(v: f64) -> Self { v as $t }
            #[inline]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline]
            fn exp(self) -> Self { <$t>::exp(self) }
        }
    )*};
}
compute!(f32, f64);

/// For each segment `[bounds[i], bounds[i+1])` of `x`: `out = exp(x - m) / Σ exp(x - m)`, or with
/// `log` `out = x - m - ln Σ exp(x - m)`, where `m` is the segment's maximum (NaN ignored there;
/// a NaN element still makes its whole segment NaN through the sum).
pub fn softmax_segments<T: Scalar, A: Compute>(x: &[T], bounds: &[usize], log: bool, out: &mut [T]) -> Result<()> {
    ensure!(x.len() == out.len(), Internal, "softmax: {} elements into {}", x.len(), out.len());
    let shifted = |v: T, max: f64| A::from_f64(v.to_f64() - max);
    for_each_segment(out, bounds, |i, seg| {
        let xs = &x[bounds[i]..bounds[i + 1]];
        let max = xs.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v.to_f64()));
        let sum: f64 = xs.iter().map(|&v| shifted(v, max).exp().to_f64()).sum();
        if log {
            let ln_sum = sum.ln();
            for (o, &v) in seg.iter_mut().zip(xs) {
                *o = T::cast_f64(v.to_f64() - max - ln_sum);
            }
        } else {
            let inv = 1.0 / sum;
            for (o, &v) in seg.iter_mut().zip(xs) {
                *o = T::cast_f64(shifted(v, max).exp().to_f64() * inv);
            }
        }
    })
}
