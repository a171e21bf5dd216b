// Softmax and log-softmax over segments (sequences for sequence_softmax, rows of the last axis for
// log_softmax), as the CPU computes them: m = the segment's maximum in f64 (NaN ignored), the
// exponentials of (x - m) in A (f32 for float16/bfloat16/float32, f64 for float64), their sum in
// f64; out = exp(x - m) / sum, or x - m - ln(sum), rounded once to the element type. Segment s is
// [bounds[s], bounds[s+1]), or [s * width, (s + 1) * width) when bounds is null.
// Two kernels: a thread per segment for short segments (sums in the CPU's order), a block per
// segment with shared-memory tree reductions for long ones (sums in a tree: equal to float
// tolerance).

#define LODTENSOR_SOFTMAX_BLOCK 128

__device__ __forceinline__ double lt_max_ignoring_nan(double a, double b) {
  if (a != a) return b;
  if (b != b) return a;
  return a < b ? b : a;
}

__device__ __forceinline__ float lt_exp(float v) { return expf(v); }
__device__ __forceinline__ double lt_exp(double v) { return exp(v); }
__device__ __forceinline__ void lt_narrow(float *p, double v) { *p = lt_f64_to_f32(v); }
__device__ __forceinline__ void lt_narrow(double *p, double v) { *p = v; }

// exp(x - m) computed in A, widened to f64.
template <typename A, typename T>
__device__ __forceinline__ double lt_shifted_exp(T v, double m) {
  A s;
  lt_narrow(&s, lt_value(v) - m);
  return (double)lt_exp(s);
}

__device__ __forceinline__ void lt_segment(const i64 *bounds, u64 width, u64 s, u64 *b0, u64 *b1) {
  if (bounds) {
    *b0 = (u64)bounds[s];
    *b1 = (u64)bounds[s + 1];
  } else {
    *b0 = s * width;
    *b1 = *b0 + width;
  }
}

template <typename T, typename A>
__device__ void softmax_threads(const T *__restrict__ x, T *__restrict__ out, const i64 *__restrict__ bounds,
                                u64 width, u64 segments, int log) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 s = (u64)blockIdx.x * blockDim.x + threadIdx.x; s < segments; s += stride) {
    u64 b0, b1;
    lt_segment(bounds, width, s, &b0, &b1);
    double m = __longlong_as_double((i64)0xfff0000000000000ull);
    for (u64 k = b0; k < b1; k++) m = lt_max_ignoring_nan(m, lt_value(x[k]));
    double sum = 0.0;
    for (u64 k = b0; k < b1; k++) sum += lt_shifted_exp<A>(x[k], m);
    if (log) {
      const double ln_sum = ::log(sum);
      for (u64 k = b0; k < b1; k++) lt_store(&out[k], lt_value(x[k]) - m - ln_sum);
    } else {
      const double inv = 1.0 / sum;
      for (u64 k = b0; k < b1; k++) lt_store(&out[k], lt_shifted_exp<A>(x[k], m) * inv);
    }
  }
}

// blockDim.x == LODTENSOR_SOFTMAX_BLOCK; a block-stride loop over segments (every thread of a
// block takes the same segments, so all reach every barrier).
template <typename T, typename A>
__device__ void softmax_blocks(const T *__restrict__ x, T *__restrict__ out, const i64 *__restrict__ bounds,
                               u64 width, u64 segments, int log) {
  LODTENSOR_SHARED(double, red, [LODTENSOR_SOFTMAX_BLOCK]);
  const unsigned int t = threadIdx.x;
  for (u64 s = blockIdx.x; s < segments; s += gridDim.x) {
    u64 b0, b1;
    lt_segment(bounds, width, s, &b0, &b1);
    double m = __longlong_as_double((i64)0xfff0000000000000ull);
    for (u64 k = b0 + t; k < b1; k += LODTENSOR_SOFTMAX_BLOCK) m = lt_max_ignoring_nan(m, lt_value(x[k]));
    red[t] = m;
    __syncthreads();
    for (unsigned int h = LODTENSOR_SOFTMAX_BLOCK / 2; h > 0; h >>= 1) {
      if (t < h) red[t] = lt_max_ignoring_nan(red[t], red[t + h]);
      __syncthreads();
    }
    m = red[0];
    __syncthreads();
    double sum = 0.0;
    for (u64 k = b0 + t; k < b1; k += LODTENSOR_SOFTMAX_BLOCK) sum += lt_shifted_exp<A>(x[k], m);
    red[t] = sum;
    __syncthreads();
    for (unsigned int h = LODTENSOR_SOFTMAX_BLOCK / 2; h > 0; h >>= 1) {
      if (t < h) red[t] += red[t + h];
      __syncthreads();
    }
    sum = red[0];
    // Every thread reads the sum before the next segment's maximum overwrites red.
    __syncthreads();
    if (log) {
      const double ln_sum = ::log(sum);
      for (u64 k = b0 + t; k < b1; k += LODTENSOR_SOFTMAX_BLOCK) lt_store(&out[k], lt_value(x[k]) - m - ln_sum);
    } else {
      const double inv = 1.0 / sum;
      for (u64 k = b0 + t; k < b1; k += LODTENSOR_SOFTMAX_BLOCK)
        lt_store(&out[k], lt_shifted_exp<A>(x[k], m) * inv);
    }
  }
}

#define LODTENSOR_SOFTMAX(SUFFIX, T, A)                                                             \
  extern "C" __global__ void softmax_threads_##SUFFIX(const T *x, T *out, const i64 *bounds, u64 width, \
                                                      u64 segments, int log) {                     \
    softmax_threads<T, A>(x, out, bounds, width, segments, log);                                    \
  }                                                                                                 \
  LODTENSOR_EXPORT(softmax_threads_##SUFFIX)                                                        \
  extern "C" __global__ void softmax_blocks_##SUFFIX(const T *x, T *out, const i64 *bounds, u64 width, \
                                                     u64 segments, int log) {                      \
    softmax_blocks<T, A>(x, out, bounds, width, segments, log);                                     \
  }                                                                                                 \
  LODTENSOR_EXPORT_SYNC(softmax_blocks_##SUFFIX)

LODTENSOR_SOFTMAX(f16, f16_t, float)
LODTENSOR_SOFTMAX(bf16, bf16_t, float)
LODTENSOR_SOFTMAX(f32, float, float)
LODTENSOR_SOFTMAX(f64, double, double)
