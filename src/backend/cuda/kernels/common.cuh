// Put in front of every kernel file, for NVRTC and for the emulator alike.
//
// Rules every kernel file follows, so that it runs the same on a GPU and on the emulator (which
// compiles it as C++20 and runs each block's threads as host threads; see emulator/host.h):
// - Every `extern "C" __global__` kernel is listed once after it, with LODTENSOR_EXPORT(name),
//   or LODTENSOR_EXPORT_SYNC(name) when it calls __syncthreads() (the emulator runs the threads
//   of such a kernel's blocks at once; the others one by one). Names are unique across files.
// - Kernel parameters are pointers or integers/floats of at most 8 bytes.
// - Code that two kernel files share is a header in kernels/ (`name.cuh`), which each of them
//   names in its first comment lines, `// lodtensor-includes: name.cuh`: build.rs puts it after
//   this file and before theirs.
// - Block-wide cooperation uses shared memory of fixed size, declared with LODTENSOR_SHARED, and
//   __syncthreads() only, reached by every thread of the block (no early return before a barrier);
//   no warp intrinsics (__shfl_*, __ballot_*, ...), no dynamic shared memory, at most 1024 threads
//   per block.
// - Only the built-ins that emulator/host.h provides: the math functions of <cmath> (expf, logf,
//   sqrtf, fmaxf, ...), min/max, atomicAdd/atomicMax/atomicMin/atomicCAS/atomicExch on 32- and
//   64-bit integers and atomicAdd on float/double, __float_as_uint and friends, __ffs.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;

// The widest word the row-movement kernels copy in (the host picks it per call).
struct __align__(16) word16 { u64 a, b; };

#ifndef LODTENSOR_EXPORT
#define LODTENSOR_EXPORT(name)
#define LODTENSOR_EXPORT_SYNC(name)
#endif

// A block's shared memory: LODTENSOR_SHARED(T, name) is `__shared__ T name`, and
// LODTENSOR_SHARED(T, name, [N]) `__shared__ T name[N]`. (The emulator's race check notes where
// each block's shared memory is, emulator/host.h.)
#ifndef LODTENSOR_SHARED
#define LODTENSOR_SHARED(T, name, ...) __shared__ T name __VA_ARGS__
#endif

// Before a loop of constant trip count whose body indexes a register array: unrolled, the indices
// are constants and the array stays in registers (the emulator defines it empty).
#ifndef LODTENSOR_UNROLL
#define LODTENSOR_UNROLL _Pragma("unroll")
#endif
// Before a loop of unknown trip count that must stay rolled: unrolled copies of its body can cost a
// kernel bounded to few registers its spills.
#ifndef LODTENSOR_ROLLED
#define LODTENSOR_ROLLED _Pragma("unroll 1")
#endif

// ---- Element types and conversions, bit for bit as on the CPU -----------------------------------
// The CPU converts through Rust's `as` and the `half` crate (src/backend/cpu/convert.rs): a NaN
// keeps its payload (quieted), float16/bfloat16 round to nearest even from the exact value
// (round-to-odd intermediates), floats to integers truncate and saturate (NaN to 0), integers
// wrap. A GPU's own conversions return a canonical NaN, so NaNs and the 16-bit floats go through
// their bits here; the other conversions are IEEE round-to-nearest-even on both sides. Kernels see
// bool, float16 and bfloat16 as these structs, so that overloads tell the dtypes apart.

struct bool_t { u8 v; };
struct f16_t { u16 bits; };
struct bf16_t { u16 bits; };

__device__ __forceinline__ bool lt_is_nan32(u32 x) { return (x & 0x7fffffffu) > 0x7f800000u; }
__device__ __forceinline__ bool lt_is_nan64(u64 x) { return (x & 0x7fffffffffffffffull) > 0x7ff0000000000000ull; }

// f32 -> f64 (exact; a NaN is quieted, its payload kept: x86's cvtss2sd).
__device__ __forceinline__ double lt_f32_to_f64(float f) {
  const u32 x = __float_as_uint(f);
  if (lt_is_nan32(x))
    return __longlong_as_double((i64)(((u64)(x & 0x80000000u) << 32) | 0x7ff8000000000000ull |
                                      ((u64)(x & 0x7fffffu) << 29)));
  return (double)f;
}

// f64 -> f32, nearest even (a NaN is quieted, the top of its payload kept: x86's cvtsd2ss).
__device__ __forceinline__ float lt_f64_to_f32(double d) {
  const u64 x = (u64)__double_as_longlong(d);
  if (lt_is_nan64(x))
    return __uint_as_float((u32)((x >> 32) & 0x80000000u) | 0x7fc00000u | (u32)((x >> 29) & 0x7fffffu));
  return (float)d;
}

// f64 -> f32 rounded to odd (the CPU's f64_to_f32_odd): truncation with the last bit set when
// inexact; beyond f32's range +-FLT_MAX. Followed by one nearest rounding to 16 bits it gives the
// correctly rounded result.
__device__ __forceinline__ float lt_f64_to_f32_odd(double v) {
  const float r = lt_f64_to_f32(v);
  u32 b = __float_as_uint(r);
  if (lt_is_nan32(b) || (double)r == v) return r;
  if ((b & 0x7fffffffu) == 0x7f800000u) return __uint_as_float((b & 0x80000000u) | 0x7f7fffffu);
  if (b & 1u) return r;
  const bool away = v > 0 ? (double)r > v : (double)r < v;
  return __uint_as_float(away ? b - 1u : b + 1u);
}

// i64 -> f64 rounded to odd (the CPU's i64_to_f64_odd).
__device__ __forceinline__ double lt_i64_to_f64_odd(i64 i) {
  const double r = (double)i;
  const u64 b = (u64)__double_as_longlong(r);
  bool exact, away;
  if (r >= 9223372036854775808.0) {
    exact = false;
    away = true;
  } else {
    const i64 ri = (i64)r;
    exact = ri == i;
    away = i >= 0 ? ri > i : ri < i;
  }
  if (exact || (b & 1ull)) return r;
  return __longlong_as_double((i64)(away ? b - 1ull : b + 1ull));
}

// float16 <-> f32: the `half` crate's conversions (equal to the F16C instructions it uses).
__device__ __forceinline__ float lt_f16_to_f32(u16 h) {
  const u32 sign = (u32)(h & 0x8000u) << 16, exp = h & 0x7c00u, man = h & 0x3ffu;
  if (exp == 0x7c00u) return __uint_as_float(sign | 0x7f800000u | (man ? 0x400000u | (man << 13) : 0u));
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24 exactly.
    const float m = (float)man * 5.9604644775390625e-8f;
    return sign ? -m : m;
  }
  return __uint_as_float(sign | (((exp >> 10) + 112u) << 23) | (man << 13));
}

__device__ __forceinline__ u16 lt_f32_to_f16(float f) {
  const u32 x = __float_as_uint(f);
  const u32 sign = x & 0x80000000u, exp = x & 0x7f800000u, man = x & 0x7fffffu;
  const u32 hs = sign >> 16;
  if (exp == 0x7f800000u) return (u16)(hs | 0x7c00u | (man ? 0x200u : 0u) | (man >> 13));
  const i32 he = (i32)(exp >> 23) - 127 + 15;
  if (he >= 0x1f) return (u16)(hs | 0x7c00u);
  if (he <= 0) {
    if (14 - he > 24) return (u16)hs;
    const u32 m = man | 0x800000u;
    u32 hm = m >> (14 - he);
    const u32 round = 1u << (13 - he);
    if ((m & round) && (m & (3u * round - 1u))) hm += 1u;
    return (u16)(hs | hm);
  }
  const u32 h = hs | ((u32)he << 10) | (man >> 13);
  return (u16)(((man & 0x1000u) && (man & 0x2fffu)) ? h + 1u : h);
}

// bfloat16 <-> f32: the `half` crate's conversions.
__device__ __forceinline__ float lt_bf16_to_f32(u16 h) {
  const u32 x = (u32)h;
  return __uint_as_float(((x & 0x7fffu) > 0x7f80u ? x | 0x40u : x) << 16);
}

__device__ __forceinline__ u16 lt_f32_to_bf16(float f) {
  const u32 x = __float_as_uint(f);
  if (lt_is_nan32(x)) return (u16)((x >> 16) | 0x40u);
  return (u16)(((x & 0x8000u) && (x & 0x17fffu)) ? (x >> 16) + 1u : x >> 16);
}

// An element as the CPU's `Value`: an i64 for bool and the integers, an f64 for the floats.
__device__ __forceinline__ i64 lt_value(bool_t v) { return v.v != 0; }
__device__ __forceinline__ i64 lt_value(u8 v) { return v; }
__device__ __forceinline__ i64 lt_value(signed char v) { return v; }
__device__ __forceinline__ i64 lt_value(short v) { return v; }
__device__ __forceinline__ i64 lt_value(i32 v) { return v; }
__device__ __forceinline__ i64 lt_value(i64 v) { return v; }
__device__ __forceinline__ double lt_value(f16_t v) { return lt_f32_to_f64(lt_f16_to_f32(v.bits)); }
__device__ __forceinline__ double lt_value(bf16_t v) { return lt_f32_to_f64(lt_bf16_to_f32(v.bits)); }
__device__ __forceinline__ double lt_value(float v) { return lt_f32_to_f64(v); }
__device__ __forceinline__ double lt_value(double v) { return v; }

// A float truncated toward zero into [lo, hi) as an integer type (lo and hi exact in f64),
// saturating; NaN is 0.
template <typename T>
__device__ __forceinline__ T lt_trunc_sat(double v, double lo, double hi, T tmin, T tmax) {
  if (v != v) return (T)0;
  if (v <= lo) return tmin;
  if (v >= hi) return tmax;
  return (T)(i64)v;
}

// Stores a `Value` as an element (the CPU's `from_value`).
__device__ __forceinline__ void lt_store(bool_t *p, i64 v) { p->v = v != 0; }
__device__ __forceinline__ void lt_store(bool_t *p, double v) { p->v = v != 0.0; }
__device__ __forceinline__ void lt_store(u8 *p, i64 v) { *p = (u8)(u64)v; }
__device__ __forceinline__ void lt_store(u8 *p, double v) { *p = lt_trunc_sat<u8>(v, 0.0, 256.0, 0, 255); }
__device__ __forceinline__ void lt_store(signed char *p, i64 v) { *p = (signed char)(u8)(u64)v; }
__device__ __forceinline__ void lt_store(signed char *p, double v) {
  *p = lt_trunc_sat<signed char>(v, -128.0, 128.0, -128, 127);
}
__device__ __forceinline__ void lt_store(short *p, i64 v) { *p = (short)(u16)(u64)v; }
__device__ __forceinline__ void lt_store(short *p, double v) {
  *p = lt_trunc_sat<short>(v, -32768.0, 32768.0, -32768, 32767);
}
__device__ __forceinline__ void lt_store(i32 *p, i64 v) { *p = (i32)(u32)(u64)v; }
__device__ __forceinline__ void lt_store(i32 *p, double v) {
  *p = lt_trunc_sat<i32>(v, -2147483648.0, 2147483648.0, (i32)0x80000000u, 0x7fffffff);
}
__device__ __forceinline__ void lt_store(i64 *p, i64 v) { *p = v; }
__device__ __forceinline__ void lt_store(i64 *p, double v) {
  *p = lt_trunc_sat<i64>(v, -9223372036854775808.0, 9223372036854775808.0, (i64)0x8000000000000000ull,
                         0x7fffffffffffffffll);
}
__device__ __forceinline__ void lt_store(f16_t *p, i64 v) {
  p->bits = lt_f32_to_f16(lt_f64_to_f32_odd(lt_i64_to_f64_odd(v)));
}
__device__ __forceinline__ void lt_store(f16_t *p, double v) { p->bits = lt_f32_to_f16(lt_f64_to_f32_odd(v)); }
__device__ __forceinline__ void lt_store(bf16_t *p, i64 v) {
  p->bits = lt_f32_to_bf16(lt_f64_to_f32_odd(lt_i64_to_f64_odd(v)));
}
__device__ __forceinline__ void lt_store(bf16_t *p, double v) { p->bits = lt_f32_to_bf16(lt_f64_to_f32_odd(v)); }
__device__ __forceinline__ void lt_store(float *p, i64 v) { *p = (float)v; }
__device__ __forceinline__ void lt_store(float *p, double v) { *p = lt_f64_to_f32(v); }
__device__ __forceinline__ void lt_store(double *p, i64 v) { *p = (double)v; }
__device__ __forceinline__ void lt_store(double *p, double v) { *p = v; }

// An element as the value its comparisons use (exact; the integers widened to at least 32 bits),
// and an element from the low bits of a kernel argument.
__device__ __forceinline__ u32 lt_cmp(u8 v) { return v; }
__device__ __forceinline__ i32 lt_cmp(signed char v) { return v; }
__device__ __forceinline__ i32 lt_cmp(short v) { return v; }
__device__ __forceinline__ i32 lt_cmp(i32 v) { return v; }
__device__ __forceinline__ i64 lt_cmp(i64 v) { return v; }
__device__ __forceinline__ float lt_cmp(f16_t v) { return lt_f16_to_f32(v.bits); }
__device__ __forceinline__ float lt_cmp(bf16_t v) { return lt_bf16_to_f32(v.bits); }
__device__ __forceinline__ float lt_cmp(float v) { return v; }
__device__ __forceinline__ double lt_cmp(double v) { return v; }
__device__ __forceinline__ void lt_from_bits(f16_t *p, u64 b) { p->bits = (u16)b; }
__device__ __forceinline__ void lt_from_bits(bf16_t *p, u64 b) { p->bits = (u16)b; }
__device__ __forceinline__ void lt_from_bits(float *p, u64 b) { *p = __uint_as_float((u32)b); }
__device__ __forceinline__ void lt_from_bits(double *p, u64 b) { *p = __longlong_as_double((i64)b); }

// Whether a comparison value (lt_cmp's) is NaN, and the value a column banned from a top-k reads
// as: -inf (only the fused beam step bans a column, and its values are float).
__device__ __forceinline__ bool lt_is_nan(float v) { return v != v; }
__device__ __forceinline__ bool lt_is_nan(double v) { return v != v; }
template <typename C>
__device__ __forceinline__ bool lt_is_nan(C) { return false; }
template <typename C>
__device__ __forceinline__ C lt_banned() { return C(); }
template <>
__device__ __forceinline__ float lt_banned<float>() { return __uint_as_float(0xff800000u); }

// ---- Indices checked where they lie: `v` if it is in [0, bound), else -1 after counting it in
// *bad (the count the host reads back, to name the value from a copy only when there is one).
__device__ __forceinline__ i64 lt_checked(i64 v, u64 bound, u32 *bad) {
  if (v >= 0 && (u64)v < bound) return v;
  atomicAdd(bad, 1u);
  return -1;
}

// ---- The block that completes a count: blocks that each do a part of some work (a launch's
// blocks, a row's chunks, a batch's rows) add their parts to a counter, zero until then, once
// each, after their writes; the one whose part brings it to `whole` does what needs all of it.
// block_completes adds the calling block's `part` and returns, for every thread of the block,
// whether it completed the count (it synchronises). Each thread's writes are fenced before the
// block adds, so the completing block can read every other block's writes, past its L1 cache
// (volatile), which may hold lines of them from before. The completing block sets the counter
// back to zero: a kernel's counters stay zero from one launch to the next (kept_zero.rs). Not
// inlined: inline, it cost fused_chunks.cu's chunk kernel, bounded to 64 registers, a spill
// (ptxas, sm_90).
__device__ __noinline__ bool block_completes(u32 *counter, u32 part, u32 whole) {
  LODTENSOR_SHARED(bool, completes);
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    completes = atomicAdd(counter, part) == whole - part;
    if (completes) *counter = 0;
  }
  __syncthreads();
  // A later call writes `completes` only after its barrier, which every thread reaches after
  // this read.
  return completes;
}

// ---- Grid-stride loops with reads in flight (cast, sequence_pad, gather_rows by an index). Each
// block takes chunks of STRIDE_UNROLL * blockDim.x consecutive items; a thread loads its
// STRIDE_UNROLL items of a chunk (consecutive threads on consecutive items) before it stores any.
// With one item at a time a thread waits a whole memory round trip per item, and the threads a GPU
// holds cannot keep enough reads in flight to reach its bandwidth. launch.rs's STRIDE_UNROLL is
// the same number and sizes the grid to match.
#define STRIDE_UNROLL 4
// Threads per block of the grid-stride kernels: launch.rs's BLOCK, the same number.
#define STRIDE_THREADS 256

// Grid-stride kernels whose items' rows are divisions come twice: NAME with 32-bit index
// arithmetic, for fewer than 2^32 items, bounded to 32 registers a thread so that 8 blocks fit an
// SM (64-bit divisions alone took such kernels to 34-46; ptxas, sm_90, no spills with the bound),
// and NAME##_wide with 64-bit arithmetic for the rest (launch.rs's `index_width` picks). PARAMS is
// the parenthesised parameter list; CALL, parenthesised, runs the kernel with `Index` the type.
// LODTENSOR_NARROW_AND_WIDE_IN is the same with BLOCKS blocks an SM for NAME: 6 leaves it 40
// registers.
#define LODTENSOR_NARROW_AND_WIDE_IN(BLOCKS, NAME, PARAMS, CALL)                                   \
  extern "C" __global__ void __launch_bounds__(STRIDE_THREADS, BLOCKS) NAME PARAMS {               \
    using Index = u32;                                                                             \
    CALL;                                                                                          \
  }                                                                                                \
  LODTENSOR_EXPORT(NAME)                                                                           \
  extern "C" __global__ void NAME##_wide PARAMS {                                                  \
    using Index = u64;                                                                             \
    CALL;                                                                                          \
  }                                                                                                \
  LODTENSOR_EXPORT(NAME##_wide)
#define LODTENSOR_NARROW_AND_WIDE(NAME, PARAMS, CALL) LODTENSOR_NARROW_AND_WIDE_IN(8, NAME, PARAMS, CALL)

// One thread's part of one chunk: store(i, load(i)) for i = base, base + blockDim.x, ...
// (STRIDE_UNROLL of them, those below n), every load before the first store.
template <typename V, typename Load, typename Store>
__device__ __forceinline__ void for_each_index_of_chunk(u64 base, u64 n, Load load, Store store) {
  V v[STRIDE_UNROLL];
  LODTENSOR_UNROLL
  for (u32 u = 0; u < STRIDE_UNROLL; u++) {
    const u64 i = base + (u64)u * blockDim.x;
    if (i < n) v[u] = load(i);
  }
  LODTENSOR_UNROLL
  for (u32 u = 0; u < STRIDE_UNROLL; u++) {
    const u64 i = base + (u64)u * blockDim.x;
    if (i < n) store(i, v[u]);
  }
}

// store(i, load(i)) for every i in [0, n), load(i) returning a V.
template <typename V, typename Load, typename Store>
__device__ __forceinline__ void for_each_index(u64 n, Load load, Store store) {
  const u64 chunk = (u64)STRIDE_UNROLL * blockDim.x;
  for (u64 base = (u64)blockIdx.x * chunk + threadIdx.x; base < n; base += chunk * gridDim.x) {
    for_each_index_of_chunk<V>(base, n, load, store);
  }
}

// ---- Tiles: how the kernels whose output rows fall into sequences or ranges (the row gather of
// rows.cu, the sequence kernels) walk their output. A tile is a run of whole rows, at most
// TILE_MAX_ROWS of them; each block takes one tile at a time (grid-stride over tiles). Every
// thread finds the sequences of the tile's first and last rows (the same searches in every thread:
// the same addresses, served from cache; the two in one loop, last_at_or_below2); then each row's
// sequence is found once, by one thread, with a search between those two, and kept in shared
// memory for the row's elements. A search per
// element instead costs a chain of dependent loads per element, which with short sequences (one
// row each, say) is far more time than moving the element. Consecutive threads handle consecutive
// elements of the output, so reads of a row and all writes are coalesced.

// Rows per tile at most: the per-row values a tile kernel keeps in shared memory. launch.rs's
// TILE_MAX_ROWS is the same number.
#define TILE_MAX_ROWS 2048

// The last k in [lo, hi) with offsets[k] <= row, given offsets[lo] <= row: the sequence (or
// range) holding `row`. Empty sequences (an offset equal to the next one) are passed over,
// because the later of equal offsets wins.
__device__ __forceinline__ u32 last_at_or_below(const i64 *__restrict__ offsets, u32 lo, u32 hi, u64 row) {
  while (hi - lo > 1) {
    const u32 mid = lo + (hi - lo) / 2;
    if ((u64)offsets[mid] <= row) lo = mid; else hi = mid;
  }
  return lo;
}

// last_at_or_below for two rows at once, a <= b, both in [lo, hi) and offsets[lo] <= a: their
// searches take the same steps (each span shrinks to the larger half: the entry found stays in
// it), so each step's two reads are in flight together and the pair costs one search's wait.
__device__ __forceinline__ void last_at_or_below2(const i64 *__restrict__ offsets, u32 lo, u32 hi, u64 a, u64 b,
                                                  u32 &ka, u32 &kb) {
  u32 la = lo, lb = lo;
  for (u32 n = hi - lo; n > 1;) {
    const u32 half = n / 2;
    const u64 oa = (u64)offsets[la + half], ob = (u64)offsets[lb + half];
    la = oa <= a ? la + half : la;
    lb = ob <= b ? lb + half : lb;
    n -= half;
  }
  ka = la;
  kb = lb;
}

// Output elements each thread fetches before it stores any: loads in flight hide memory latency
// (a store waits for its load, and a thread issues in order).
#define TILE_UNROLL 4

// The tile loop: `total_rows` output rows of `row_elems` elements in tiles of `tile_rows` rows
// (launch_tiles' choice: at most TILE_MAX_ROWS rows, and a tile of several rows holds fewer than
// 2^32 elements); `offsets` (count + 1 of them, offsets[count] == total_rows) split the rows
// into sequences (or are null: every seq is then 0). on_row(r, row, seq) runs once per row (r: the
// row's place in its tile, < rows); then, after a barrier, out[e] = fetch(r, row, col) for every
// element (col: its place in the row, e: its index in the output), TILE_UNROLL fetches before
// their stores; a barrier follows each tile. Every thread of the block must call it.
template <typename V, typename OnRow, typename Fetch>
__device__ __forceinline__ void for_each_tile(V *__restrict__ out, const i64 *__restrict__ offsets, u32 count,
                                              u64 total_rows, u64 row_elems, u64 tile_rows, OnRow on_row,
                                              Fetch fetch) {
  const u64 num_tiles = (total_rows + tile_rows - 1) / tile_rows;
  for (u64 tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const u64 first = tile * tile_rows;
    const u32 rows = (u32)min(tile_rows, total_rows - first);
    // The sequences of the tile's first and last rows, then of each row between them, two rows
    // a thread at a time.
    u32 lo = 0, hi = 0;
    if (offsets) {
      last_at_or_below2(offsets, 0, count, first, first + rows - 1, lo, hi);
      hi++;
    }
    for (u32 r = threadIdx.x; r < rows; r += blockDim.x) {
      on_row(r, first + r, offsets ? last_at_or_below(offsets, lo, hi, first + r) : 0);
    }
    __syncthreads();
    const u64 n = (u64)rows * row_elems;
    V *const tile_out = out + first * row_elems;
    for (u64 base = threadIdx.x; base < n; base += (u64)TILE_UNROLL * blockDim.x) {
      V v[TILE_UNROLL];
      LODTENSOR_UNROLL
      for (u32 u = 0; u < TILE_UNROLL; u++) {
        const u64 i = base + (u64)u * blockDim.x;
        if (i < n) {
          // 32-bit division: a tile of several rows holds fewer than 2^32 elements.
          const u32 r = rows == 1 ? 0 : (u32)i / (u32)row_elems;
          v[u] = fetch(r, first + r, i - (u64)r * row_elems);
        }
      }
      LODTENSOR_UNROLL
      for (u32 u = 0; u < TILE_UNROLL; u++) {
        const u64 i = base + (u64)u * blockDim.x;
        if (i < n) tile_out[i] = v[u];
      }
    }
    __syncthreads();
  }
}

// The loop of the tile kernels that move whole rows (rows.cu's, sequence_reverse): output row
// `row` (of sequence or range `seq` of `offsets`) is the row at row_source(row, seq). Each row's
// source is found once, by one thread, and kept in shared memory for the row's words, so the loop
// over the words does no arithmetic of the row's sequence (fewer registers: sequence_reverse of
// 16-byte words went from 40 to 32 a thread this way, ptxas, sm_90).
template <typename W, typename Source>
__device__ void move_rows(W *__restrict__ dst, const i64 *__restrict__ offsets, u32 count, u64 total_rows,
                          u64 row_words, u64 tile_rows, Source row_source) {
  LODTENSOR_SHARED(const W *, row_src, [TILE_MAX_ROWS]);
  for_each_tile(
      dst, offsets, count, total_rows, row_words, tile_rows,
      [&](u32 r, u64 row, u32 seq) { row_src[r] = row_source(row, seq); },
      [&](u32 r, u64, u64 col) { return row_src[r][col]; });
}

// for_each_tile for a value that needs only the row's sequence: the body (the last argument)
// sees `row`, `col` and `seq` and returns the value of out[e]. Kernels that use it are exported
// with LODTENSOR_EXPORT_SYNC.
#define LODTENSOR_FOR_EACH_TILE_ELEMENT(out, offsets, count, total_rows, row_elems, tile_rows, ...)    \
  do {                                                                                              \
    LODTENSOR_SHARED(u32, tile_seq_, [TILE_MAX_ROWS]);                                              \
    for_each_tile((out), (offsets), (count), (total_rows), (row_elems), (tile_rows),                \
                  [&](u32 r_, u64, u32 s_) { tile_seq_[r_] = s_; },                                 \
                  [&](u32 r_, u64 row, u64 col) {                                                   \
                    const u32 seq = tile_seq_[r_];                                                  \
                    __VA_ARGS__                                                                     \
                  });                                                                               \
  } while (0)
