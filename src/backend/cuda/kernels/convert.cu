// cast: every element converted between any two of the ten dtypes with the CPU's rules (the
// conversions of common.cuh), for_each_index's grid-stride loop, one kernel per (source,
// destination) pair.

// One element converted: through the CPU's `Value` (an f64 for the floats)...
template <typename S, typename D>
__device__ __forceinline__ void lt_cast(D *p, S v) { lt_store(p, lt_value(v)); }

// ...except from a float of 32 bits or fewer to one of 16 or 32 bits, which goes through f32. The
// source is exact in f32 and the f64 path's f32 round trip (to odd) returns it unchanged, a NaN
// quieted with its payload kept, as lt_f16_to_f32 and lt_bf16_to_f32 already make it and as
// lt_f32_to_f16 and lt_f32_to_bf16 do themselves: the same bits, without the five or so f64
// conversions and comparisons an element that held cast at 63-66% of the copy's rate on an H200
// (89-93% without them).
#define LODTENSOR_CAST_VIA_F32(S)                                                                 \
  __device__ __forceinline__ void lt_cast(f16_t *p, S v) { p->bits = lt_f32_to_f16(lt_cmp(v)); }  \
  __device__ __forceinline__ void lt_cast(bf16_t *p, S v) { p->bits = lt_f32_to_bf16(lt_cmp(v)); }
LODTENSOR_CAST_VIA_F32(float)
LODTENSOR_CAST_VIA_F32(f16_t)
LODTENSOR_CAST_VIA_F32(bf16_t)
__device__ __forceinline__ void lt_cast(float *p, f16_t v) { *p = lt_cmp(v); }
__device__ __forceinline__ void lt_cast(float *p, bf16_t v) { *p = lt_cmp(v); }

template <typename S, typename D>
__device__ void cast_elements(const S *__restrict__ src, D *__restrict__ dst, u64 n) {
  for_each_index<S>(n, [&](u64 i) { return src[i]; }, [&](u64 i, S v) { lt_cast(&dst[i], v); });
}

// float32 to float32 is a copy, signalling NaNs included: on the CPU the f32 -> f64 -> f32 round
// trip of `as` is folded away by the optimiser (a release build), so nothing quiets them there.
template <>
__device__ void cast_elements<float, float>(const float *__restrict__ src, float *__restrict__ dst, u64 n) {
  for_each_index<float>(n, [&](u64 i) { return src[i]; }, [&](u64 i, float v) { dst[i] = v; });
}

#define LODTENSOR_CAST(SN, S, DN, D)                                                            \
  extern "C" __global__ void cast_##SN##_##DN(const S *src, D *dst, u64 n) { cast_elements<S, D>(src, dst, n); } \
  LODTENSOR_EXPORT(cast_##SN##_##DN)

#define LODTENSOR_CAST_FROM(SN, S)         \
  LODTENSOR_CAST(SN, S, bool, bool_t)      \
  LODTENSOR_CAST(SN, S, uint8, u8)         \
  LODTENSOR_CAST(SN, S, int8, signed char) \
  LODTENSOR_CAST(SN, S, int16, short)      \
  LODTENSOR_CAST(SN, S, int32, i32)        \
  LODTENSOR_CAST(SN, S, int64, i64)        \
  LODTENSOR_CAST(SN, S, float16, f16_t)    \
  LODTENSOR_CAST(SN, S, bfloat16, bf16_t)  \
  LODTENSOR_CAST(SN, S, float32, float)    \
  LODTENSOR_CAST(SN, S, float64, double)

LODTENSOR_CAST_FROM(bool, bool_t)
LODTENSOR_CAST_FROM(uint8, u8)
LODTENSOR_CAST_FROM(int8, signed char)
LODTENSOR_CAST_FROM(int16, short)
LODTENSOR_CAST_FROM(int32, i32)
LODTENSOR_CAST_FROM(int64, i64)
LODTENSOR_CAST_FROM(float16, f16_t)
LODTENSOR_CAST_FROM(bfloat16, bf16_t)
LODTENSOR_CAST_FROM(float32, float)
LODTENSOR_CAST_FROM(float64, double)

// Arrow's bits: bool elements (any non-zero byte true) packed 8 to a byte, least significant
// first, the last byte's spare bits 0, as a device array lends them (the host's pack_bits in
// interop/arrow.rs); and bits [first, first + n) of such a buffer unpacked into bool elements, as
// a device array of them is taken. One output byte an index.
extern "C" __global__ void pack_bits(const bool_t *src, u8 *dst, u64 n) {
  for_each_index<u8>(
      (n + 7) / 8,
      [&](u64 i) {
        u8 b = 0;
        for (u32 k = 0; k < 8; k++) {
          const u64 j = i * 8 + k;
          if (j < n && src[j].v != 0) b |= (u8)(1u << k);
        }
        return b;
      },
      [&](u64 i, u8 b) { dst[i] = b; });
}
LODTENSOR_EXPORT(pack_bits)

extern "C" __global__ void unpack_bits(const u8 *bits, u64 first, bool_t *dst, u64 n) {
  for_each_index<u8>(
      n, [&](u64 i) { return (u8)((bits[(first + i) / 8] >> ((first + i) % 8)) & 1); },
      [&](u64 i, u8 v) { dst[i].v = v; });
}
LODTENSOR_EXPORT(unpack_bits)

// rebase_offsets_i32, rebase_offsets_i64: n offsets of an Arrow list (32- or 64-bit) as a LoD
// level's 8-byte offsets, each less the first (which the import has read: not negative, and no
// offset less than the one before).
template <typename T> __device__ __forceinline__ void lt_rebase_offsets(const T *src, u64 n, i64 first, i64 *dst) {
  for_each_index<i64>(n, [&](u64 i) { return (i64)src[i] - first; }, [&](u64 i, i64 v) { dst[i] = v; });
}
extern "C" __global__ void rebase_offsets_i32(const i32 *src, u64 n, i64 first, i64 *dst) {
  lt_rebase_offsets(src, n, first, dst);
}
LODTENSOR_EXPORT(rebase_offsets_i32)
extern "C" __global__ void rebase_offsets_i64(const i64 *src, u64 n, i64 first, i64 *dst) {
  lt_rebase_offsets(src, n, first, dst);
}
LODTENSOR_EXPORT(rebase_offsets_i64)
