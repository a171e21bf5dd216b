// lodtensor-variants: CHUNK_LIST=4 CHUNK_LIST=8 CHUNK_LIST=16
// lodtensor-includes: beam_select.cuh
// The fused beam step for k <= 16, in one launch: the k best log-probs of every prefix row, with
// rows in chunks, then the selection (beam_select.cuh) of each source as soon as its rows are done.
// A file of its own, compiled once per list length (CHUNK_LIST, the variants above: build.rs),
// because these kernels take most of the beam kernels' compile time, which top_k, Paddle's step
// and gather_tree need not pay, and a step needs only one list length.
//
// One block per row leaves most of the GPU idle when rows are few and long (320 rows of 32000).
// Here a row is split into chunks of CHUNK_ELEMS; a block takes a chunk and writes its K largest
// keys to scratch (see chunk_keys); the block that finishes a row's last chunk merges the
// row's chunk lists (merge_row: each thread keeps a list of K in registers; the block merges them
// pairwise, two sorted lists in K steps, in log2(threads) rounds through shared memory) and reads
// the winners' values back from the row. Lists hold one 64-bit key per element (order_key), so
// ranking, inserting and merging are plain integer comparisons: the order is that of beam.cu's
// block_topk, and the result is the same k items in the same order. Columns are 32-bit (the host
// takes this path for rows of fewer than 2^32 elements).

#define CHUNK_THREADS 256
// Elements each thread of the chunk kernel loads.
#define CHUNK_LOADS 32
#define CHUNK_ELEMS (CHUNK_THREADS * CHUNK_LOADS)

// A log-prob's place in block_topk's order as an unsigned integer, larger is better: the bits
// mapped to an unsigned order, -0 as +0, every NaN above every number. Every value's rank is at
// least 1 (-inf's is 0x007fffff), so 0 can mark "no element".
static __device__ inline u32 value_rank(float v) {
  const u32 b = __float_as_uint(v == 0.0f ? 0.0f : v);
  return lt_is_nan(v) ? 0xffffffffu : ((b & 0x80000000u) ? ~b : (b | 0x80000000u));
}

// The rank of (log-prob, column col) as an integer, larger is better, in block_topk's order
// (equal values by the smaller column): the value's rank above the complement of the column. No
// element's key is 0, which marks an empty slot.
static __device__ inline u64 order_key(u32 rank, u32 col) { return ((u64)rank << 32) | (u64)(~col); }

// The K largest keys offered so far, largest first, in registers (every index is a constant once
// the loops are unrolled); empty slots are 0.
template <int K>
struct RegTop {
  u64 k[K];

  __device__ void clear() {
    LODTENSOR_UNROLL
    for (int i = 0; i < K; i++) k[i] = 0;
  }

  // Keeps `key` if it is among the K largest; false if it is below all of a full list (as is every
  // key after it in a list sorted largest first).
  __device__ bool offer(u64 key) {
    if (key <= k[K - 1]) return false;
    // Slot i takes the larger of its key and the smaller of (key, slot i - 1's old key).
    LODTENSOR_UNROLL
    for (int i = K - 1; i > 0; i--) {
      const u64 lower = key < k[i - 1] ? key : k[i - 1];
      k[i] = k[i] > lower ? k[i] : lower;
    }
    k[0] = k[0] > key ? k[0] : key;
    return true;
  }
};

template <int K>
struct MergeShared {
  u64 k[CHUNK_THREADS][K];
};

// Leaves the K largest keys of the first `lists` threads' lists in thread 0's `top` (the other
// threads' lists empty; lists <= blockDim.x, a power of two at most CHUNK_THREADS): each round the
// active threads put their lists in shared memory and each thread of the lower half merges its
// list with one of the upper half's. The rounds start at the lists' span, so a row of 4 chunks
// takes 2 rounds, not 8.
template <int K>
static __device__ void block_merge(RegTop<K> &top, MergeShared<K> &sh, u32 lists) {
  const u32 tid = threadIdx.x;
  u32 span = 1;  // the same for the whole block
  while (span < lists) span *= 2;
  for (u32 half = span / 2; half > 0; half /= 2) {
    if (tid < 2 * half) {
      LODTENSOR_UNROLL
      for (int i = 0; i < K; i++) sh.k[tid][i] = top.k[i];
    }
    __syncthreads();
    // An empty upper list (a thread without a chunk list in merge_row) leaves `top` as it is.
    if (tid < half && sh.k[tid + half][0] != 0) {
      const u64 *a = sh.k[tid], *b = sh.k[tid + half];
      u32 ia = 0, ib = 0;  // ia + ib = i < K: both stay in their lists
      LODTENSOR_UNROLL
      for (int i = 0; i < K; i++) {
        const u64 x = a[ia], y = b[ib];
        if (x >= y) {
          top.k[i] = x;
          ia++;
        } else {
          top.k[i] = y;
          ib++;
        }
      }
    }
    __syncthreads();
  }
}

// A row's log-prob as the fused step reads it: column `banned` (>= 0) is -inf.
template <typename S>
static __device__ inline float fused_value(const S *row, u64 col, i64 banned) {
  return (i64)col == banned ? lt_banned<float>() : lt_cmp(row[col]);
}

// Threads whose largest ranks block_bound reduces in its first step.
#define BOUND_SPAN 8

// A lower bound of the value rank of the K-th largest key the block's threads hold between them,
// from each thread's largest rank (`best`, 0 for none): the threads in K groups of consecutive
// threads, the smallest of the groups' largest ranks. Those are the ranks of K distinct elements,
// so at least K keys have a rank of at least the bound. Every thread returns the same bound.
// Spans of BOUND_SPAN threads are reduced first, then every thread reduces the spans' maxima, so
// that no thread walks a whole group while the block waits for it.
template <int K>
static __device__ u32 block_bound(u32 best) {
  constexpr u32 spans = CHUNK_THREADS / BOUND_SPAN, per_group = spans / K;
  static_assert(per_group >= 1, "a group spans at least one span");
  LODTENSOR_SHARED(u32, bests, [CHUNK_THREADS]);
  LODTENSOR_SHARED(u32, span_best, [spans]);
  const u32 tid = threadIdx.x;
  bests[tid] = best;
  __syncthreads();
  if (tid < spans) {
    u32 m = 0;
    LODTENSOR_UNROLL
    for (u32 i = 0; i < BOUND_SPAN; i++) m = max(m, bests[tid * BOUND_SPAN + i]);
    span_best[tid] = m;
  }
  __syncthreads();
  u32 bound = 0xffffffffu;
  LODTENSOR_UNROLL
  for (u32 g = 0; g < (u32)K; g++) {
    u32 m = 0;
    LODTENSOR_UNROLL
    for (u32 i = 0; i < per_group; i++) m = max(m, span_best[g * per_group + i]);
    bound = min(bound, m);
  }
  // The next call writes `bests` after its loads and `span_best` after its first barrier, which
  // every thread reaches only once it has read these.
  return bound;
}

// The value ranks of -inf and +inf (value_rank).
#define RANK_NEG_INF 0x007fffffu
#define RANK_POS_INF 0xff800000u

// The value of rank r, from -inf's to +inf's (value_rank's inverse).
static __device__ inline float rank_value(u32 r) { return __uint_as_float(r & 0x80000000u ? r & 0x7fffffffu : ~r); }

// A log-prob as load_chunk takes it: lt_cmp's value for every number, and a NaN for a NaN. For
// float16, lt_cmp's conversion, which keeps a NaN's payload for the values a step writes, takes
// about 30 instructions an element, three times the rest of the chunk's work; a GPU converts in
// one, exactly for every number, to a NaN of its own for a NaN, whose payload does not change its
// rank. (The emulator, which has no PTX, takes lt_cmp's: the same value for every number.)
template <typename S>
static __device__ inline float chunk_value(S v) {
  return lt_cmp(v);
}
static __device__ inline float chunk_value(f16_t v) {
#ifdef __CUDA_ARCH__
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.bits));
  return f;
#else
  return lt_cmp(v);
#endif
}

// A thread's elements of its chunk, first + threadIdx.x + u * CHUNK_THREADS for
// u * CHUNK_THREADS below `left`, as floats into v (the banned column as -inf, slots past the end
// -inf too), and the largest value rank among them (0 for none). Plain: every slot is an element
// and none is banned, so no slot needs a check. Every load is issued before any value is used (a
// load behind a branch of its own would wait for the one before): a slot past the end reads the
// chunk's first element, and is dropped.
template <bool Plain, typename S>
static __device__ inline u32 load_chunk(const S *row, u64 first, u32 left, i64 banned, float *v) {
  const u64 mine = first + threadIdx.x;
  const S *p = row + mine;
  const u32 skip = banned >= (i64)mine && (u64)banned - mine < (u64)left ? (u32)((u64)banned - mine) : 0xffffffffu;
  S raw[CHUNK_LOADS];
  LODTENSOR_UNROLL
  for (u32 u = 0; u < CHUNK_LOADS; u++) {
    const u32 at = u * CHUNK_THREADS;
    raw[u] = Plain ? p[at] : *(at < left ? p + at : row + first);
  }
  // The largest value (fmaxf passes NaN over) and whether there is a NaN, which ranks above all.
  float m = lt_banned<float>();
  bool nan = false;
  LODTENSOR_UNROLL
  for (u32 u = 0; u < CHUNK_LOADS; u++) {
    const u32 at = u * CHUNK_THREADS;
    v[u] = Plain || (at < left && at != skip) ? chunk_value(raw[u]) : lt_banned<float>();
    m = fmaxf(m, v[u]);
    nan = nan || lt_is_nan(v[u]);
  }
  return !Plain && left == 0 ? 0 : nan ? 0xffffffffu : value_rank(m);
}

// The keys that reach the chunk kernel's bound are gathered in shared memory, at most this many;
// more (values tied around the bound) and the block falls back to lists per thread.
#define CHUNK_CANDS 256

template <int K>
struct ChunkShared {
  u64 cand[CHUNK_CANDS];
  u32 count;
  MergeShared<K> merge;
};

// Row r's k largest keys (k <= K) from its chunk lists (K each, written by other blocks: read as
// volatile, past this SM's L1, which may hold a line of them from before they were written), their
// values read back from the row and their columns into cand_vals / cand_ids. Every thread of the
// block calls it (block_merge synchronises). Not inlined: within the chunk kernel's 64 registers
// its list of K keys made the kernel spill (ptxas, sm_90); as a call it spills nothing for K = 4
// and 8, and only around the call and within it for K = 16.
template <typename S, int K>
static __device__ __noinline__ void merge_row(const S *row, u64 r, u32 chunks, u32 k, i64 banned,
                                              const u64 *part_keys, float *cand_vals, i64 *cand_ids,
                                              MergeShared<K> &sh) {
  RegTop<K> top;
  top.clear();
  for (u32 ch = threadIdx.x; ch < chunks; ch += blockDim.x) {
    const volatile u64 *list = part_keys + (r * chunks + ch) * K;
    u64 keys[K];  // loaded together, then offered
    LODTENSOR_UNROLL
    for (int i = 0; i < K; i++) keys[i] = list[i];
    LODTENSOR_UNROLL
    for (int i = 0; i < K; i++) {
      if (!top.offer(keys[i])) break;
    }
  }
  block_merge(top, sh, min(chunks, blockDim.x));
  if (threadIdx.x == 0) {
    LODTENSOR_UNROLL
    for (int i = 0; i < K; i++) {
      if ((u32)i < k) {
        const u64 col = (u64)(~(u32)top.k[i]);
        cand_vals[r * k + i] = fused_value(row, col, banned);
        cand_ids[r * k + i] = (i64)col;
      }
    }
  }
}

// The K largest keys of chunk b of row r (`row`) into out[0 .. K) (0 for empty slots), by the whole
// block. Each thread loads its CHUNK_LOADS elements at once, and the block agrees on a bound below
// the value rank of the chunk's K-th largest key (block_bound): most elements then cost a load, a
// maximum, a NaN test and one comparison. The few that reach the bound are gathered in shared
// memory, and each one's place is the number of gathered keys above it (keys are distinct).
// Indices within the chunk are 32-bit.
template <typename S, int K>
static __device__ void chunk_keys(const S *row, u64 b, u64 r, u32 chunks, u64 vocab, i64 banned, u64 *out,
                                  ChunkShared<K> &sh) {
  const u32 tid = threadIdx.x;
  const u64 first = (b - r * chunks) * CHUNK_ELEMS, end = min(first + CHUNK_ELEMS, vocab), mine = first + tid;
  const u32 left = mine < end ? (u32)(end - mine) : 0;
  // The same for the whole block.
  const bool plain = first + CHUNK_ELEMS <= end && !(banned >= (i64)first && (u64)banned < first + CHUNK_ELEMS);
  if (tid == 0) sh.count = 0;  // counted on after block_bound's barriers
  float v[CHUNK_LOADS];
  const u32 best =
      plain ? load_chunk<true>(row, first, left, banned, v) : load_chunk<false>(row, first, left, banned, v);
  const u32 bound = block_bound<K>(best);
  // As a value, within [-inf, +inf]: lowering a bound keeps it a bound, so -inf lets every
  // element through and +inf lets +inf and NaN through (`!(x < +inf)`).
  const float floor = rank_value(min(max(bound, RANK_NEG_INF), RANK_POS_INF));
  // Bit u: slot u is an element that reaches the bound: a comparison and a select a slot, where
  // a branch a slot cost ten times that. The few reaching slots' values are then read again from
  // the row (from L1: the block has just loaded them), since a register array indexed by a
  // variable would go to local memory.
  u32 reach = 0;
  LODTENSOR_UNROLL
  for (u32 u = 0; u < CHUNK_LOADS; u++) reach |= (u32)!(v[u] < floor) << u;
  if (!plain) {
    const u32 slots = (left + CHUNK_THREADS - 1) / CHUNK_THREADS;  // those below `left`
    reach &= slots >= CHUNK_LOADS ? ~0u : (1u << slots) - 1;
  }
  // Slot u's key: the banned column reads -inf, as in load_chunk.
  const auto key_of = [&](u32 u) -> u64 {
    const u64 col = mine + u * CHUNK_THREADS;
    return order_key(value_rank(fused_value(row, col, banned)), (u32)col);
  };
  LODTENSOR_ROLLED
  for (u32 m = reach; m != 0; m &= m - 1) {
    const u32 slot = atomicAdd(&sh.count, 1u);
    if (slot < CHUNK_CANDS) sh.cand[slot] = key_of((u32)__ffs((int)m) - 1);
  }
  __syncthreads();
  const u32 n = sh.count;  // the same for the whole block
  if (n <= CHUNK_CANDS) {
    for (u32 c = tid; c < n; c += blockDim.x) {
      const u64 key = sh.cand[c];
      u32 place = 0;
      for (u32 j = 0; j < n; j++) place += sh.cand[j] > key;
      if (place < K) out[place] = key;
    }
    for (u32 i = n + tid; i < K; i += blockDim.x) out[i] = 0;
  } else {
    RegTop<K> top;
    top.clear();
    LODTENSOR_ROLLED
    for (u32 m = reach; m != 0; m &= m - 1) top.offer(key_of((u32)__ffs((int)m) - 1));
    block_merge(top, sh.merge, blockDim.x);
    if (tid == 0) {
      LODTENSOR_UNROLL
      for (int i = 0; i < K; i++) out[i] = top.k[i];
    }
  }
}

// Row r's lists are merged (by the block that merged them): the row counts in its source, the
// block that counts a source's last row selects the source (select_source), and the block whose
// source completes the batch's rows places every source's list (place_selection): the selection
// needs no launch of its own, and overlaps the chunks of later rows. Not inlined, like merge_row,
// and given the kernel's parameters one by one: the chunk loop keeps none of the selection's
// values in registers (with a SelectArgs built by the kernel and passed on, its loads spilled).
static __device__ __noinline__ void select_after_row(u64 r, u32 k, const float *cand_vals, const i64 *cand_ids,
                                                     const float *pre_scores, LODTENSOR_SELECT_PARAMS(float),
                                                     u32 *source_done, u32 *batch_done) {
  LODTENSOR_SHARED(SourceShared<float>, sh);
  const SelectArgs<float> a = LODTENSOR_SELECT_ARGS(float);
  const u32 s = last_at_or_below(source_rows, 0, sources, r);
  const u32 rows = (u32)(source_rows[s + 1] - source_rows[s]);
  if (!block_completes(&source_done[s], 1, rows)) return;  // the same for the whole block
  select_source<float>(s, a, FusedCandidates{cand_vals, cand_ids, pre_scores, k}, sh);
  if (block_completes(batch_done, rows, (u32)a.out.rows)) place_selection<float>(a);
}

// The fused step for k <= K, in one launch of a block per chunk (b: chunk b % chunks of row b /
// chunks): chunk_keys of the chunk into part_keys[b * K ...]; then, in the block that finishes
// row r's last chunk, row r's k best into cand_vals / cand_ids (merge_row), and the selection
// (select_after_row). Finished rows are not read, but their chunks are counted like the others',
// so that their sources are selected too. The counters (row_done: a row's chunks; source_done: a
// source's rows; batch_done: the rows of the sources selected) are zero at the start, and again
// at the end. No grid-stride loop: with the selection's call inside one, every value the loop kept
// across it went to local memory, the chunk's loads' addresses included (ptxas, sm_90).
template <typename S, int K>
static __device__ void fused_chunk_step(const S *log_probs, u64 vocab, u32 chunks, u32 k, i64 banned,
                                        u64 *part_keys, u32 *row_done, float *cand_vals, i64 *cand_ids,
                                        const float *pre_scores, LODTENSOR_SELECT_PARAMS(float), u32 *source_done,
                                        u32 *batch_done) {
  LODTENSOR_SHARED(ChunkShared<K>, sh);
  const u32 b = blockIdx.x, r = b / chunks;
  const bool finished = pre_ids[r] == end_id;  // the same for the whole block
  const S *row = log_probs + (u64)r * vocab;
  if (!finished) chunk_keys<S, K>(row, b, r, chunks, vocab, banned, part_keys + (u64)b * K, sh);
  if (!block_completes(&row_done[r], 1, chunks)) return;  // the same for the whole block
  if (!finished) merge_row<S, K>(row, r, chunks, k, banned, part_keys, cand_vals, cand_ids, sh.merge);
  select_after_row(r, k, cand_vals, cand_ids, pre_scores, LODTENSOR_SELECT_NAMES, source_done, batch_done);
}

// The chunk kernel runs four blocks an SM (64 registers a thread): blocks spend much of their time
// at barriers, and the others' loads fill it.
#define LODTENSOR_FUSED_CHUNK(S, NAME, K)                                                                    \
  extern "C" __global__ void __launch_bounds__(CHUNK_THREADS, 4) fused_chunk_step_##NAME##_##K(               \
      const S *log_probs, u64 vocab, u32 chunks, u32 k, i64 banned, u64 *part_keys, u32 *row_done,             \
      float *cand_vals, i64 *cand_ids, const float *pre_scores, LODTENSOR_SELECT_PARAMS(float),                \
      u32 *source_done, u32 *batch_done) {                                                                     \
    fused_chunk_step<S, K>(log_probs, vocab, chunks, k, banned, part_keys, row_done, cand_vals, cand_ids,      \
                           pre_scores, LODTENSOR_SELECT_NAMES, source_done, batch_done);                       \
  }                                                                                                           \
  LODTENSOR_EXPORT_SYNC(fused_chunk_step_##NAME##_##K)

#define LODTENSOR_FUSED_CHUNKS(K)        \
  LODTENSOR_FUSED_CHUNK(float, f32, K)   \
  LODTENSOR_FUSED_CHUNK(f16_t, f16, K) \
  LODTENSOR_FUSED_CHUNK(bf16_t, bf16, K)

LODTENSOR_FUSED_CHUNKS(CHUNK_LIST)
