//! Softmax and log-softmax over segments of a flat array (sequences for `sequence_softmax`, rows
//! of the last axis for `log_softmax`). Computed in f64 whatever the dtype (float16 and bfloat16
//! included), with the segment's maximum subtracted so that no `exp` overflows.

use super::pool::for_each_segment;
use crate::dtype::Scalar;
use crate::error::{ensure, Result};

/// For each segment `[bounds[i], bounds[i+1])` of `x`: `out = exp(x - m) / Σ exp(x - m)`, or with
/// `log` `out = x - m - ln Σ exp(x - m)`, where `m` is the segment's maximum (NaN ignored there;
/// a NaN element still makes its whole segment NaN through the sum).
pub fn softmax_segments<T: Scalar>(x: &[T], bounds: &[usize], log: bool, out: &mut [T]) -> Result<()> {
    ensure!(x.len() == out.len(), Internal, "softmax: {} elements into {}", x.len(), out.len());
    for_each_segment(out, bounds, |i, seg| {
        let xs = &x[bounds[i]..bounds[i + 1]];
        let max = xs.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v.to_f64()));
        let sum: f64 = xs.iter().map(|&v| (v.to_f64() - max).exp()).sum();
        if log {
            let ln_sum = sum.ln();
            for (o, &v) in seg.iter_mut().zip(xs) {
                *o = T::from_f64(v.to_f64() - max - ln_sum);
            }
        } else {
            for (o, &v) in seg.iter_mut().zip(xs) {
                *o = T::from_f64((v.to_f64() - max).exp() / sum);
            }
        }
    })
}
