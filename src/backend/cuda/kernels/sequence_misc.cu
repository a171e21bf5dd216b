// Kernels of the smaller sequence operators (ops/sequence_misc.rs, ops/scatter.rs): reverse, mask,
// enumerate, conv and the scatter-add (sequence_concat is a row kernel of rows.cu). They walk
// the output in tiles (move_rows and LODTENSOR_FOR_EACH_TILE_ELEMENT, common.cuh).

// ---- sequence_reverse, in words of W bytes (the host picks the widest word that divides the row
// size and both addresses): row r of sequence s = [offsets[s], offsets[s+1]) is row
// offsets[s] + offsets[s+1] - 1 - r of the input.
template <typename W>
__device__ void reverse_rows(const W *__restrict__ src, W *__restrict__ dst, u64 row_words,
                             const i64 *__restrict__ offsets, u32 num_seqs, u64 total_rows, u64 tile_rows) {
  move_rows(dst, offsets, num_seqs, total_rows, row_words, tile_rows, [&](u64 row, u32 seq) {
    return src + ((u64)offsets[seq] + (u64)offsets[seq + 1] - 1 - row) * row_words;
  });
}

#define LODTENSOR_MISC_MOVE(W, SUFFIX)                                                             \
  extern "C" __global__ void sequence_reverse_rows_##SUFFIX(const W *src, W *dst, u64 row_words,        \
                                                            const i64 *offsets, u32 num_seqs,           \
                                                            u64 total_rows, u64 tile_rows) {            \
    reverse_rows<W>(src, dst, row_words, offsets, num_seqs, total_rows, tile_rows);                     \
  }

LODTENSOR_MISC_MOVE(u8, 1)
LODTENSOR_MISC_MOVE(u16, 2)
LODTENSOR_MISC_MOVE(u32, 4)
LODTENSOR_MISC_MOVE(u64, 8)
LODTENSOR_MISC_MOVE(word16, 16)

LODTENSOR_EXPORT_SYNC(sequence_reverse_rows_1)
LODTENSOR_EXPORT_SYNC(sequence_reverse_rows_2)
LODTENSOR_EXPORT_SYNC(sequence_reverse_rows_4)
LODTENSOR_EXPORT_SYNC(sequence_reverse_rows_8)
LODTENSOR_EXPORT_SYNC(sequence_reverse_rows_16)

// ---- sequence_mask: out[i * maxlen + j] = (j < x[i]) ? one : zero, compared in double as the
// CPU does ((j as f64) < x.to_f64()). `one` and `zero` are the output dtype's bit patterns (the
// host converts 1 and 0 with the CPU's rules), so one kernel per output width serves every dtype.
// x[r] is read as the CPU's value (lt_value: the same f64 for every number a comparison can see).

template <typename X, typename D>
__device__ void sequence_mask(const X *__restrict__ x, D *__restrict__ out, u64 maxlen, u64 total, D one,
                              D zero) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const u64 r = i / maxlen;
    const u64 j = i - r * maxlen;
    out[i] = (double)j < (double)lt_value(x[r]) ? one : zero;
  }
}

#define LODTENSOR_MASK(X, XNAME, D, DBYTES)                                                        \
  extern "C" __global__ void sequence_mask_##XNAME##_##DBYTES(const X *x, D *out, u64 maxlen, u64 total, \
                                                              u64 one, u64 zero) {                    \
    sequence_mask<X, D>(x, out, maxlen, total, (D)one, (D)zero);                                       \
  }                                                                                                \
  LODTENSOR_EXPORT(sequence_mask_##XNAME##_##DBYTES)

#define LODTENSOR_MASK_ALL_OUT(X, XNAME) \
  LODTENSOR_MASK(X, XNAME, u8, 1)        \
  LODTENSOR_MASK(X, XNAME, u16, 2)       \
  LODTENSOR_MASK(X, XNAME, u32, 4)       \
  LODTENSOR_MASK(X, XNAME, u64, 8)

LODTENSOR_MASK_ALL_OUT(u8, u8)
LODTENSOR_MASK_ALL_OUT(signed char, i8)
LODTENSOR_MASK_ALL_OUT(short, i16)
LODTENSOR_MASK_ALL_OUT(i32, i32)
LODTENSOR_MASK_ALL_OUT(i64, i64)
LODTENSOR_MASK_ALL_OUT(f16_t, f16)
LODTENSOR_MASK_ALL_OUT(bf16_t, bf16)
LODTENSOR_MASK_ALL_OUT(float, f32)
LODTENSOR_MASK_ALL_OUT(double, f64)

// ---- sequence_enumerate: out[r * win + k] = x[r + k] while row r + k is in r's sequence (of
// the last LoD level), else pad.
template <typename T>
__device__ void sequence_enumerate(const T *__restrict__ x, T *__restrict__ out, const i64 *__restrict__ offsets,
                                   u32 num_seqs, u64 rows, u64 win, T pad, u64 tile_rows) {
  LODTENSOR_FOR_EACH_TILE_ELEMENT(out, offsets, num_seqs, rows, win, tile_rows, {
    return row + col < (u64)offsets[seq + 1] ? x[row + col] : pad;
  });
}

#define LODTENSOR_ENUMERATE(T, NAME)                                                               \
  extern "C" __global__ void sequence_enumerate_##NAME(const T *x, T *out, const i64 *offsets, u32 num_seqs, \
                                                       u64 rows, u64 win, T pad, u64 tile_rows) {     \
    sequence_enumerate<T>(x, out, offsets, num_seqs, rows, win, pad, tile_rows);                       \
  }                                                                                                \
  LODTENSOR_EXPORT_SYNC(sequence_enumerate_##NAME)

LODTENSOR_ENUMERATE(i32, i32)
LODTENSOR_ENUMERATE(i64, i64)

// ---- sequence_conv: one thread per output element (r, m), the dot product of r's context
// (context_length rows of width n side by side) with column m of the filter. The sums run in the
// CPU kernel's order (context block j, then column c) with explicitly rounded multiplies and adds,
// which the compiler may not fuse into FMAs: the result is the CPU's, bit for bit.
__device__ __forceinline__ float conv_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float conv_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double conv_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double conv_add(double a, double b) { return __dadd_rn(a, b); }

template <typename T>
__device__ void sequence_conv(const T *__restrict__ x, const T *__restrict__ filter, const T *__restrict__ padding,
                              T *__restrict__ out, const i64 *__restrict__ offsets, u32 num_seqs, u64 rows,
                              u64 n, u64 m, u64 context_length, i64 context_start, u64 up_pad, u64 tile_rows) {
  LODTENSOR_FOR_EACH_TILE_ELEMENT(out, offsets, num_seqs, rows, m, tile_rows, {
    const u64 start = (u64)offsets[seq];
    const i64 len = offsets[seq + 1] - offsets[seq];
    const i64 r = (i64)(row - start);
    T acc = (T)0;
    for (u64 j = 0; j < context_length; j++) {
      const i64 p = r + context_start + (i64)j;
      const T *src;
      if (p >= 0 && p < len) {
        src = x + (start + (u64)p) * n;
      } else if (padding) {
        const u64 k = p < 0 ? (u64)((i64)up_pad + p) : up_pad + (u64)(p - len);
        src = padding + k * n;
      } else {
        continue;
      }
      const T *f = filter + j * n * m + col;
      for (u64 c = 0; c < n; c++) acc = conv_add(acc, conv_mul(src[c], f[c * m]));
    }
    return acc;
  });
}

#define LODTENSOR_CONV(T, NAME)                                                                    \
  extern "C" __global__ void sequence_conv_##NAME(const T *x, const T *filter, const T *padding, T *out,   \
                                                  const i64 *offsets, u32 num_seqs, u64 rows, u64 n, u64 m, \
                                                  u64 context_length, i64 context_start, u64 up_pad,       \
                                                  u64 tile_rows) {                                        \
    sequence_conv<T>(x, filter, padding, out, offsets, num_seqs, rows, n, m, context_length, context_start, \
                     up_pad, tile_rows);                                                                  \
  }                                                                                                \
  LODTENSOR_EXPORT_SYNC(sequence_conv_##NAME)

LODTENSOR_CONV(float, f32)
LODTENSOR_CONV(double, f64)

// ---- The scatter-adds of sequence_scatter and of scatter_rows (ADD): the updates are sorted by
// target (an element of x; a row, for scatter_rows) on the device, stably (group.cu), and the one
// thread owning a target element adds its updates in that order, the CPU's: the results are the
// CPU's exactly (integers wrap; 16-bit floats add in float and round once per add, as
// `Scalar::add` does, with common.cuh's conversions).
__device__ __forceinline__ u8 scatter_add(u8 a, u8 b) { return (u8)(a + b); }
__device__ __forceinline__ signed char scatter_add(signed char a, signed char b) {
  return (signed char)(u8)((u8)a + (u8)b);
}
__device__ __forceinline__ short scatter_add(short a, short b) { return (short)(u16)((u16)a + (u16)b); }
__device__ __forceinline__ i32 scatter_add(i32 a, i32 b) { return (i32)((u32)a + (u32)b); }
__device__ __forceinline__ i64 scatter_add(i64 a, i64 b) { return (i64)((u64)a + (u64)b); }
__device__ __forceinline__ float scatter_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double scatter_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ f16_t scatter_add(f16_t a, f16_t b) {
  f16_t r;
  r.bits = lt_f32_to_f16(__fadd_rn(lt_f16_to_f32(a.bits), lt_f16_to_f32(b.bits)));
  return r;
}
__device__ __forceinline__ bf16_t scatter_add(bf16_t a, bf16_t b) {
  bf16_t r;
  r.bits = lt_f32_to_bf16(__fadd_rn(lt_bf16_to_f32(a.bits), lt_bf16_to_f32(b.bits)));
  return r;
}

// sequence_scatter's keys, for the sort by target element (group.cu): id p of sequence s (of
// `offsets`, `count` sequences) targets element s * width + ids[p]. An id outside [0, width) is
// counted in *bad and keyed 0, so the sort stays in bounds.
template <typename I>
__device__ void scatter_keys(const I *__restrict__ ids, const i64 *__restrict__ offsets, u32 count, u64 n, u64 width,
                             u64 *keys, u32 *bad) {
  for (u64 p = (u64)blockIdx.x * blockDim.x + threadIdx.x; p < n; p += (u64)gridDim.x * blockDim.x) {
    const u64 s = last_at_or_below(offsets, 0, count, p);
    const i64 id = lt_checked((i64)ids[p], width, bad);
    keys[p] = id < 0 ? 0 : s * width + (u64)id;
  }
}

#define LODTENSOR_SCATTER_KEYS(I, INAME)                                                            \
  extern "C" __global__ void scatter_keys_##INAME(const I *ids, const i64 *offsets, u32 count, u64 n, \
                                                  u64 width, u64 *keys, u32 *bad) {               \
    scatter_keys<I>(ids, offsets, count, n, width, keys, bad);                                     \
  }                                                                                               \
  LODTENSOR_EXPORT(scatter_keys_##INAME)

LODTENSOR_SCATTER_KEYS(i32, i32)
LODTENSOR_SCATTER_KEYS(i64, i64)

// sequence_scatter's adds: each run of equal keys in `sorted` (the sort of the ids by target) is
// one target element; the thread at the run's first place adds the run's updates order[q], in
// order, to out[key]. Nothing is written when *bad is not 0: an id was out of range, and the op
// reports it with its target untouched (x itself, for the in-place scatter).
template <typename T>
__device__ void scatter_add_sorted(T *__restrict__ out, const T *__restrict__ updates, const u64 *__restrict__ sorted,
                                   const u64 *__restrict__ order, u64 n, const u32 *bad) {
  if (*bad) return;
  for (u64 q = (u64)blockIdx.x * blockDim.x + threadIdx.x; q < n; q += (u64)gridDim.x * blockDim.x) {
    const u64 key = sorted[q];
    if (q > 0 && sorted[q - 1] == key) continue;
    T acc = out[key];
    for (u64 p = q; p < n && sorted[p] == key; p++) acc = scatter_add(acc, updates[order[p]]);
    out[key] = acc;
  }
}

// scatter_rows ADD: out = x, plus to row r the updates order[q] for q in [starts[r], starts[r + 1])
// (group.cu's sort of the updates by row), for all `rows` rows: the copy of x and the adds in one
// pass over the output. Consecutive threads take consecutive elements of a row, so wide rows are
// read and written coalesced. One element at a time and the adds' loop rolled: with
// for_each_index's four elements in flight, or the loop unrolled, the narrow kernels spilled under
// their bound of 32 registers (ptxas, sm_90: up to 140 bytes for float64).
template <typename T, typename N>
__device__ void scatter_add_rows(T *__restrict__ out, const T *__restrict__ x, const T *__restrict__ updates,
                                 const u64 *__restrict__ starts, const u64 *__restrict__ order, u64 rows, u64 width) {
  const u64 total = rows * width;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (u64)gridDim.x * blockDim.x) {
    const u64 r = (N)i / (N)width;
    const u64 c = i - r * width;
    T acc = x[i];
    LODTENSOR_ROLLED
    for (u64 q = starts[r]; q < starts[r + 1]; q++) acc = scatter_add(acc, updates[order[q] * width + c]);
    out[i] = acc;
  }
}

#define LODTENSOR_SCATTER(T, NAME)                                                                   \
  extern "C" __global__ void scatter_add_sorted_##NAME(T *out, const T *updates, const u64 *sorted,      \
                                                       const u64 *order, u64 n, const u32 *bad) {        \
    scatter_add_sorted<T>(out, updates, sorted, order, n, bad);                                        \
  }                                                                                                    \
  LODTENSOR_EXPORT(scatter_add_sorted_##NAME)                                                          \
  LODTENSOR_NARROW_AND_WIDE(scatter_add_rows_##NAME,                                                   \
                            (T *out, const T *x, const T *updates, const u64 *starts, const u64 *order, \
                             u64 rows, u64 width),                                                     \
                            (scatter_add_rows<T, Index>(out, x, updates, starts, order, rows, width)))

LODTENSOR_SCATTER(u8, u8)
LODTENSOR_SCATTER(signed char, i8)
LODTENSOR_SCATTER(short, i16)
LODTENSOR_SCATTER(i32, i32)
LODTENSOR_SCATTER(i64, i64)
LODTENSOR_SCATTER(f16_t, f16)
LODTENSOR_SCATTER(bf16_t, bf16)
LODTENSOR_SCATTER(float, f32)
LODTENSOR_SCATTER(double, f64)
