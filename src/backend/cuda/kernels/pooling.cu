// sequence_pool: one thread per (sequence, column), grid-stride over sequences x width in output
// order, so consecutive threads read consecutive columns of a row (coalesced) and narrow rows put
// several sequences in one warp. Each thread walks its sequence's rows in order, exactly as the
// CPU kernel does per column: sums in f64 from 0 in row order, divided and rounded once (so the
// results equal the CPU's bit for bit); max/min with a strict comparison (the first extreme wins,
// NaN never replaces a value, a NaN first row stays).

// mode 0: the sum; 1: divided by the length; 2: divided by its square root.
template <typename T>
__device__ void pool_sum(const T *__restrict__ x, T *__restrict__ out, const i64 *__restrict__ offsets,
                         u64 width, u64 total, int mode, u64 pad_bits) {
  T pad;
  lt_from_bits(&pad, pad_bits);
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const u64 seq = i / width;
    const u64 col = i - seq * width;
    const i64 start = offsets[seq], end = offsets[seq + 1];
    if (start == end) {
      out[i] = pad;
      continue;
    }
    double acc = 0.0;
    for (i64 r = start; r < end; r++) acc += lt_value(x[(u64)r * width + col]);
    const double n = (double)(end - start);
    const double d = mode == 0 ? 1.0 : mode == 1 ? n : sqrt(n);
    lt_store(&out[i], acc / d);
  }
}

// max != 0: the largest value, else the smallest; index: its absolute row (-1 when empty).
template <typename T>
__device__ void pool_extreme(const T *__restrict__ x, T *__restrict__ out, i32 *__restrict__ index,
                             const i64 *__restrict__ offsets, u64 width, u64 total, int max, u64 pad_bits) {
  T pad;
  lt_from_bits(&pad, pad_bits);
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const u64 seq = i / width;
    const u64 col = i - seq * width;
    const i64 start = offsets[seq], end = offsets[seq + 1];
    if (start == end) {
      out[i] = pad;
      index[i] = -1;
      continue;
    }
    T best = x[(u64)start * width + col];
    i64 at = start;
    for (i64 r = start + 1; r < end; r++) {
      const T v = x[(u64)r * width + col];
      if (max ? lt_cmp(v) > lt_cmp(best) : lt_cmp(v) < lt_cmp(best)) {
        best = v;
        at = r;
      }
    }
    out[i] = best;
    index[i] = (i32)at;
  }
}

// last != 0: the last row of each sequence, else the first; pad when empty. E: the element's bytes.
template <typename E>
__device__ void pool_select(const E *__restrict__ x, E *__restrict__ out, const i64 *__restrict__ offsets,
                            u64 width, u64 total, int last, u64 pad_bits) {
  const E pad = (E)pad_bits;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const u64 seq = i / width;
    const u64 col = i - seq * width;
    const i64 start = offsets[seq], end = offsets[seq + 1];
    out[i] = start == end ? pad : x[(u64)(last ? end - 1 : start) * width + col];
  }
}

#define LODTENSOR_POOL(SUFFIX, T)                                                                   \
  extern "C" __global__ void pool_sum_##SUFFIX(const T *x, T *out, const i64 *offsets, u64 width,    \
                                               u64 total, int mode, u64 pad_bits) {                \
    pool_sum<T>(x, out, offsets, width, total, mode, pad_bits);                                     \
  }                                                                                                 \
  LODTENSOR_EXPORT(pool_sum_##SUFFIX)                                                               \
  extern "C" __global__ void pool_extreme_##SUFFIX(const T *x, T *out, i32 *index, const i64 *offsets, \
                                                   u64 width, u64 total, int max, u64 pad_bits) {  \
    pool_extreme<T>(x, out, index, offsets, width, total, max, pad_bits);                           \
  }                                                                                                 \
  LODTENSOR_EXPORT(pool_extreme_##SUFFIX)

LODTENSOR_POOL(f16, f16_t)
LODTENSOR_POOL(bf16, bf16_t)
LODTENSOR_POOL(f32, float)
LODTENSOR_POOL(f64, double)

#define LODTENSOR_POOL_SELECT(NAME, E)                                                              \
  extern "C" __global__ void NAME(const E *x, E *out, const i64 *offsets, u64 width, u64 total, int last, \
                                  u64 pad_bits) {                                                  \
    pool_select<E>(x, out, offsets, width, total, last, pad_bits);                                  \
  }                                                                                                 \
  LODTENSOR_EXPORT(NAME)

LODTENSOR_POOL_SELECT(pool_select_2, u16)
LODTENSOR_POOL_SELECT(pool_select_4, u32)
LODTENSOR_POOL_SELECT(pool_select_8, u64)
