// lodtensor-includes: beam_select.cuh
// Top-k and beam search: the block-per-row top-k behind `top_k` and the fused beam step (whose
// lists for k <= 16 come from fused_chunks.cu instead), the selection kernels (beam_select.cuh's
// per-source selection and placement: after those lists, and on Paddle's step's rows; for k <= 16
// the fused step's chunk kernel selects itself), and gather_tree.
//
// The order of top-k is total: a value ranks before another when it is greater (smallest: less),
// NaN above every number, and equal values (NaN vs NaN included, -0 vs +0 included) by the smaller
// column. So "the k first of the row" is one well-defined set in one order, whatever the split of
// the row among threads, and the block merge can take the best head of the per-thread lists.


// Whether value a ranks strictly before value b (ties are decided by the column, elsewhere).
template <typename C>
static __device__ inline bool beats(C a, C b, bool largest) {
  const bool an = lt_is_nan(a), bn = lt_is_nan(b);
  return largest ? (a > b || (an && !bn)) : (a < b || (bn && !an));
}

// Whether (a, ai) ranks strictly before (b, bi) in the total order.
template <typename C>
static __device__ inline bool before(C a, u64 ai, C b, u64 bi, bool largest) {
  return beats(a, b, largest) || (!beats(b, a, largest) && ai < bi);
}

// ---- top-k of one row by one block ----------------------------------------------------------

// Threads per block of the top-k kernels: at most this many (the host picks a power of two).
#define TOPK_THREADS 256
// Entries of a thread's own sorted list: k above it takes ceil(k / TOPK_LIST) passes over the row.
#define TOPK_LIST 64
// Elements each thread loads before looking at them: loads in flight hide memory latency.
#define TOPK_UNROLL 8

// Shared state of one block's merge, for any key type (8-byte slots hold every key).
template <typename C>
struct TopkShared {
  C val[TOPK_THREADS];
  u64 col[TOPK_THREADS];
  u32 thread[TOPK_THREADS];
  u32 has[TOPK_THREADS];
};

// The first k (in the total order) of row[0, width) for the whole block: calls emit(rank, column,
// key) on thread 0 for rank 0 .. k-1, best first. Every thread of the block must call it (it
// synchronises); k <= width. A column equal to `banned` reads as -inf (the decoder's min_length).
template <typename S, typename C, typename Emit>
static __device__ void block_topk(const S *__restrict__ row, u64 width, u32 k, bool largest, i64 banned,
                                  TopkShared<C> &sh, Emit emit) {
  const u32 tid = threadIdx.x, threads = blockDim.x;
  C lv[TOPK_LIST];
  u64 li[TOPK_LIST];
  C last_v = C();
  u64 last_i = 0;
  for (u32 done = 0; done < k;) {
    const u32 kk = min(k - done, (u32)TOPK_LIST);
    u32 n = 0;
    C worst = C();
    for (u64 base = 0; base < width; base += (u64)TOPK_UNROLL * threads) {
      C v[TOPK_UNROLL];
      for (u32 u = 0; u < TOPK_UNROLL; u++) {
        const u64 j = base + tid + (u64)u * threads;
        v[u] = j < width ? lt_cmp(row[j]) : C();
        if ((i64)j == banned) v[u] = lt_banned<C>();
      }
      for (u32 u = 0; u < TOPK_UNROLL; u++) {
        const u64 j = base + tid + (u64)u * threads;
        if (j >= width) break;
        // A later pass only sees what ranks after the last pick.
        if (done > 0 && !before(last_v, last_i, v[u], j, largest)) continue;
        // This thread's columns increase, so a value equal to the worst kept one loses to it.
        if (n == kk && !beats(v[u], worst, largest)) continue;
        u32 p = n < kk ? n++ : kk - 1;
        while (p > 0 && beats(v[u], lv[p - 1], largest)) {
          lv[p] = lv[p - 1];
          li[p] = li[p - 1];
          p--;
        }
        lv[p] = v[u];
        li[p] = j;
        worst = lv[n - 1];
      }
    }
    // Merge: kk rounds, each taking the best head among the threads' lists.
    u32 head = 0;
    for (u32 r = 0; r < kk; r++) {
      sh.has[tid] = head < n;
      sh.val[tid] = head < n ? lv[head] : C();
      sh.col[tid] = head < n ? li[head] : 0;
      sh.thread[tid] = tid;
      __syncthreads();
      for (u32 s = threads / 2; s > 0; s >>= 1) {
        if (tid < s) {
          const u32 o = tid + s;
          const bool take = sh.has[o] && (!sh.has[tid] || before(sh.val[o], sh.col[o], sh.val[tid], sh.col[tid], largest));
          if (take) {
            sh.has[tid] = 1;
            sh.val[tid] = sh.val[o];
            sh.col[tid] = sh.col[o];
            sh.thread[tid] = sh.thread[o];
          }
        }
        __syncthreads();
      }
      if (sh.thread[0] == tid) head++;
      if (tid == 0) emit(done + r, sh.col[0], sh.val[0]);
      last_v = sh.val[0];
      last_i = sh.col[0];
      __syncthreads();
    }
    done += kk;
  }
}

// top_k: rows of `width`, k per row; values (S, copied bit for bit) and int64 columns.
template <typename S, typename C>
static __device__ void top_k_rows(const S *x, u64 rows, u64 width, u32 k, int largest, S *values, i64 *indices) {
  LODTENSOR_SHARED(TopkShared<C>, sh);
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    const S *row = x + r * width;
    block_topk<S, C>(row, width, k, largest != 0, -1, sh, [&](u32 rank, u64 col, C) {
      indices[r * k + rank] = (i64)col;
      values[r * k + rank] = row[col];
    });
  }
}

#define LODTENSOR_TOPK(NAME, S, C)                                                                 \
  extern "C" __global__ void NAME(const S *x, u64 rows, u64 width, u32 k, int largest, S *values, \
                                  i64 *indices) {                                                  \
    top_k_rows<S, C>(x, rows, width, k, largest, values, indices);                                 \
  }                                                                                                \
  LODTENSOR_EXPORT_SYNC(NAME)

LODTENSOR_TOPK(top_k_u8, u8, u32)
LODTENSOR_TOPK(top_k_i8, signed char, i32)
LODTENSOR_TOPK(top_k_i16, short, i32)
LODTENSOR_TOPK(top_k_i32, i32, i32)
LODTENSOR_TOPK(top_k_i64, i64, i64)
LODTENSOR_TOPK(top_k_f16, f16_t, float)
LODTENSOR_TOPK(top_k_bf16, bf16_t, float)
LODTENSOR_TOPK(top_k_f32, float, float)
LODTENSOR_TOPK(top_k_f64, double, double)

// The fused step's first pass: for every prefix row not finished (pre_ids[r] != end_id), its k
// best log-probabilities (largest, NaN first, ties by smaller token) as float and their tokens.
// Finished rows are not read. Column `banned` (>= 0) reads as -inf.
template <typename S>
static __device__ void fused_row_topk(const S *log_probs, u64 rows, u64 vocab, u32 k, const i64 *pre_ids,
                                      i64 end_id, i64 banned, float *cand_vals, i64 *cand_ids) {
  LODTENSOR_SHARED(TopkShared<float>, sh);
  for (u64 r = blockIdx.x; r < rows; r += gridDim.x) {
    if (pre_ids[r] == end_id) continue;  // the same for the whole block
    block_topk<S, float>(log_probs + r * vocab, vocab, k, true, banned, sh, [&](u32 rank, u64 col, float v) {
      cand_ids[r * k + rank] = (i64)col;
      cand_vals[r * k + rank] = v;
    });
  }
}

#define LODTENSOR_FUSED_TOPK(NAME, S)                                                               \
  extern "C" __global__ void NAME(const S *log_probs, u64 rows, u64 vocab, u32 k, const i64 *pre_ids, \
                                  i64 end_id, i64 banned, float *cand_vals, i64 *cand_ids) {        \
    fused_row_topk<S>(log_probs, rows, vocab, k, pre_ids, end_id, banned, cand_vals, cand_ids);     \
  }                                                                                                 \
  LODTENSOR_EXPORT_SYNC(NAME)

LODTENSOR_FUSED_TOPK(fused_row_topk_f32, float)
LODTENSOR_FUSED_TOPK(fused_row_topk_f16, f16_t)
LODTENSOR_FUSED_TOPK(fused_row_topk_bf16, bf16_t)

// ---- the selection kernels ---------------------------------------------------------------------

// After each kernel's candidates' parameters and the selection's: a block per source
// (grid-stride), then the last block to finish places every source's list (`done`: zero at the
// start, and again at the end).
template <typename T, typename Cands>
static __device__ void select_and_place(const SelectArgs<T> &a, const Cands &cands, u32 *done) {
  LODTENSOR_SHARED(SourceShared<T>, sh);
  for (u32 s = blockIdx.x; s < a.sources; s += gridDim.x) select_source<T>(s, a, cands, sh);
  if (block_completes(done, 1, gridDim.x)) place_selection<T>(a);
}

extern "C" __global__ void fused_select(const float *cand_vals, const i64 *cand_cols, const float *pre_scores, u32 k,
                                        LODTENSOR_SELECT_PARAMS(float), u32 *done) {
  select_and_place<float>(LODTENSOR_SELECT_ARGS(float), FusedCandidates{cand_vals, cand_cols, pre_scores, k}, done);
}
LODTENSOR_EXPORT_SYNC(fused_select)

#define LODTENSOR_STEP_SELECT(NAME, T)                                                                   \
  extern "C" __global__ void NAME(const T *scores, const i64 *ids, const T *pre_scores, u64 width,       \
                                  int accumulated, LODTENSOR_SELECT_PARAMS(T), u32 *done) {              \
    select_and_place<T>(LODTENSOR_SELECT_ARGS(T), StepCandidates<T>{scores, ids, pre_scores, width, accumulated}, \
                        done);                                                                           \
  }                                                                                                      \
  LODTENSOR_EXPORT_SYNC(NAME)

LODTENSOR_STEP_SELECT(step_select_f32, float)
LODTENSOR_STEP_SELECT(step_select_f64, double)

// ---- gather_tree -------------------------------------------------------------------------------

// One thread per chain (batch entry b, slot k), walking back from the last step; consecutive
// threads write consecutive slots. A parent outside [0, beam) sets *bad and ends the chain (the
// host then reports the error the CPU path names).
template <typename T>
static __device__ void gather_tree(const T *ids, const T *parents, u64 steps, u64 batch, u64 beam, T *out, u32 *bad) {
  const u64 chains = batch * beam;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 c = (u64)blockIdx.x * blockDim.x + threadIdx.x; c < chains; c += stride) {
    const u64 b = c / beam, k = c - b * beam;
    u64 at = (steps - 1) * chains + c;
    out[at] = ids[at];
    i64 p = (i64)parents[at];
    for (u64 t = steps - 1; t-- > 0;) {
      if (p < 0 || (u64)p >= beam) {
        atomicExch(bad, 1u);
        break;
      }
      const u64 from = (t * batch + b) * beam + (u64)p;
      out[(t * batch + b) * beam + k] = ids[from];
      p = (i64)parents[from];
    }
  }
}

#define LODTENSOR_GATHER_TREE(NAME, T)                                                                  \
  extern "C" __global__ void NAME(const T *ids, const T *parents, u64 steps, u64 batch, u64 beam, T *out, \
                                  u32 *bad) {                                                           \
    gather_tree<T>(ids, parents, steps, batch, beam, out, bad);                                         \
  }                                                                                                     \
  LODTENSOR_EXPORT(NAME)

LODTENSOR_GATHER_TREE(gather_tree_i32, i32)
LODTENSOR_GATHER_TREE(gather_tree_i64, i64)

