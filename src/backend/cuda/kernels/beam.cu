// Top-k and beam search: the block-per-row top-k behind `top_k` and the fused beam step (whose
// lists for k <= 16 come from fused_chunks.cu instead), the per-source selection (the lists of
// Paddle's sequential "Insert", exactly), the regrouping of the selection by prefix row, and
// gather_tree.
//
// The order of top-k is total: a value ranks before another when it is greater (smallest: less),
// NaN above every number, and equal values (NaN vs NaN included, -0 vs +0 included) by the smaller
// column. So "the k first of the row" is one well-defined set in one order, whatever the split of
// the row among threads, and the block merge can take the best head of the per-thread lists.

// A score with any NaN written as its type's one quiet NaN (sign clear, payload zero), as the host
// writes it: a device addition makes 0x7fffffff where the host keeps an operand's NaN, and the
// scores must agree bit for bit.
static __device__ inline float one_nan(float v) { return lt_is_nan(v) ? __uint_as_float(0x7fc00000u) : v; }
static __device__ inline double one_nan(double v) {
  return lt_is_nan(v) ? __longlong_as_double(0x7ff8000000000000ll) : v;
}

static __device__ inline float ln(float v) { return logf(v); }
static __device__ inline double ln(double v) { return log(v); }

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

// ---- per-source selection and regrouping (one block) -------------------------------------------

#define SELECT_THREADS 256

// Paddle's Item::operator<: lower score, or equal score and lower row.
template <typename T>
static __device__ inline bool item_less(T as, i64 ar, T bs, i64 br) {
  return as < bs || (as == bs && ar < br);
}

// Paddle's Insert into a list of capacity `beam` holding `len` items; returns the new length.
// Step for step the CPU's `offer`: ties and NaN (never less, never greater) land where they do there.
template <typename T>
static __device__ inline u32 offer(i64 *rows, i64 *ids, T *scores, u32 beam, u32 len, i64 row, i64 id, T score) {
  u32 n;
  if (len < beam) {
    n = len + 1;
  } else if (item_less(score, row, scores[beam - 1], rows[beam - 1])) {
    return len;
  } else {
    n = beam;
  }
  u32 k = n - 1;
  while (k > 0 && item_less(scores[k - 1], rows[k - 1], score, row)) {
    rows[k] = rows[k - 1];
    ids[k] = ids[k - 1];
    scores[k] = scores[k - 1];
    k--;
  }
  rows[k] = row;
  ids[k] = id;
  scores[k] = score;
  return n;
}

// Where the candidates come from: the fused step's per-row top lists, or Paddle's step's rows.
struct FusedCandidates {
  const float *vals;  // [rows, k]
  const i64 *cols;    // [rows, k]
  const float *pre_scores;
  u32 k;
  __device__ u32 count(i64) const { return k; }
  __device__ void get(i64 r, u32 j, i64 &id, float &score) const {
    id = cols[r * k + j];
    score = one_nan(pre_scores[r] + vals[r * k + j]);
  }
};

template <typename T>
struct StepCandidates {
  const T *scores;  // [rows, width]
  const i64 *ids;   // [rows, width] or null: the column is the token
  const T *pre_scores;
  u64 width;
  int accumulated;
  __device__ u32 count(i64) const { return (u32)width; }
  __device__ void get(i64 r, u32 j, i64 &id, T &score) const {
    const u64 i = (u64)r * width + j;
    id = ids ? ids[i] : (i64)j;
    score = accumulated ? scores[i] : one_nan(pre_scores[r] + ln(scores[i]));
  }
};

// Lists of up to this many items are built in the thread's own (local) memory, which the L1 cache
// keeps, and then copied to the global scratch: every offer reads and shifts the tail of the
// list it has just written, and in global memory each of those reads would go to L2.
#define LOCAL_BEAM 16
// Candidates the selection fetches before offering them.
#define SELECT_FETCH 8

// Where a selection is written: the outputs, and (when `host` is set) the same row offsets and
// items once more, back to back in one block, so that the host brings them all down in one copy:
// rows + 1 offsets, then `cap` ids, `cap` scores and `cap` parents.
template <typename T>
struct Selection {
  i64 *row_offsets, *ids;
  T *scores;
  i32 *parents;
  unsigned char *host;
  i64 rows, cap;

  __device__ void row(i64 r, i64 offset) const {
    row_offsets[r] = offset;
    if (host) ((i64 *)host)[r] = offset;
  }
  __device__ void item(i64 o, i64 id, T score, i32 parent) const {
    ids[o] = id;
    scores[o] = score;
    parents[o] = parent;
    if (host) {
      i64 *const h_ids = (i64 *)host + rows + 1;
      T *const h_scores = (T *)(h_ids + cap);
      i32 *const h_parents = (i32 *)(h_scores + cap);
      h_ids[o] = id;
      h_scores[o] = score;
      h_parents[o] = parent;
    }
  }
};

// A source's candidates of prefix row r, as its offers come: a finished row (pre_ids[r] ==
// end_id) offers itself once (end_id, its pre_score), any other row its cands.count(r) candidates;
// candidate() is its j-th.
template <typename Cands>
static __device__ inline u32 offers_of(const Cands &cands, bool finished, i64 r) {
  return finished ? 1 : cands.count(r);
}

template <typename T, typename Cands>
static __device__ inline void candidate(const Cands &cands, bool finished, i64 end_id, i64 r, u32 j, i64 &id,
                                        T &score) {
  if (finished) {
    id = end_id;
    score = (T)cands.pre_scores[r];
  } else {
    cands.get(r, j, id, score);
  }
}

// Replays Paddle's offers of one source's candidates (those of rows r0 .. r1, in order) into its
// top list (gr, gi, gs: beam slots), as the CPU does; returns the list's length.
template <typename T, typename Cands>
static __device__ u32 replay_offers(i64 r0, i64 r1, const i64 *pre_ids, i64 end_id, u32 beam, const Cands &cands,
                                    i64 *gr, i64 *gi, T *gs) {
  i64 local_rows[LOCAL_BEAM], local_ids[LOCAL_BEAM];
  T local_scores[LOCAL_BEAM];
  const bool local = beam <= LOCAL_BEAM;
  i64 *lr = local ? local_rows : gr, *li = local ? local_ids : gi;
  T *ls = local ? local_scores : gs;
  u32 len = 0;
  for (i64 r = r0; r < r1; r++) {
    // Candidates are fetched SELECT_FETCH at a time, so their loads overlap.
    const bool finished = pre_ids[r] == end_id;
    const u32 m = offers_of(cands, finished, r);
    for (u32 j0 = 0; j0 < m; j0 += SELECT_FETCH) {
      i64 id[SELECT_FETCH];
      T score[SELECT_FETCH];
      LODTENSOR_UNROLL
      for (u32 u = 0; u < SELECT_FETCH; u++) {
        if (j0 + u < m) candidate<T>(cands, finished, end_id, r, j0 + u, id[u], score[u]);
      }
      LODTENSOR_UNROLL
      for (u32 u = 0; u < SELECT_FETCH; u++) {
        if (j0 + u < m) len = offer(lr, li, ls, beam, len, r, id[u], score[u]);
      }
    }
  }
  if (local) {
    for (u32 j = 0; j < len; j++) {
      gr[j] = lr[j];
      gi[j] = li[j];
      gs[j] = ls[j];
    }
  }
  return len;
}

// Sources of at most this many candidates are selected by rank (rank_candidates); larger ones
// replay their offers.
#define RANK_MAX_CANDS 64

// The fused step's selection of every source at once, by rank: a thread per candidate counts the
// source's candidates that rank above it (Paddle's Item order: higher score, then higher row),
// those equal to it, and those equal to it offered before it (same row, smaller j). Where no two
// equal items straddle the last place and no score is NaN, replaying the offers keeps exactly the
// items with fewer than `beam` above them, in that order, equal ones in offer order (an item is
// dropped only from the last place, so an equal group that fits is never split), so each item's
// place is those counts' sum. Replaying takes a thread per source through its offers one by one,
// each waiting for the list the last one left: with the ~25 candidates of a source of 5 rows, a
// chain that ncu showed as few instructions and long waits. A source with a NaN score, a
// straddling tie or more than RANK_MAX_CANDS candidates is marked in `replay` (zeroed by the
// caller) and replays its offers after all. Every thread of the block calls it; the caller
// synchronises after it.
template <typename T, typename Cands>
static __device__ void rank_candidates(const i64 *source_rows, u32 sources, const i64 *pre_ids, i64 end_id,
                                       u32 beam, const Cands &cands, i64 *top_rows, i64 *top_ids, T *top_scores,
                                       i64 *replay) {
  const i64 rows = source_rows[sources];
  const u32 k = cands.count(0);  // the same for every row
  // A slot a row even where rows have no candidates (an empty vocabulary): a finished row still
  // offers itself.
  const u32 per_row = max(k, 1u);
  const u64 slots = (u64)rows * per_row;
  for (u64 slot = threadIdx.x; slot < slots; slot += blockDim.x) {
    const i64 r = (i64)(slot / per_row);
    const u32 j = (u32)(slot - (u64)r * per_row);
    const bool finished = pre_ids[r] == end_id;
    if (finished ? j > 0 : j >= k) continue;
    const u32 s = last_at_or_below(source_rows, 0, sources, (u64)r);
    const i64 r0 = source_rows[s], r1 = source_rows[s + 1];
    i64 id;
    T score;
    candidate<T>(cands, finished, end_id, r, j, id, score);
    // Several threads may mark a source; each writes the same 1.
    if (lt_is_nan(score) || (u64)(r1 - r0) * k > RANK_MAX_CANDS) {
      atomicExch((u64 *)&replay[s], 1ull);
      continue;
    }
    u32 above = 0, equal = 0, equal_before = 0;
    bool nan = false;
    for (i64 q = r0; q < r1; q++) {
      const bool q_finished = pre_ids[q] == end_id;
      const u32 m = offers_of(cands, q_finished, q);
      for (u32 i = 0; i < m; i++) {
        i64 q_id;
        T q_score;
        candidate<T>(cands, q_finished, end_id, q, i, q_id, q_score);
        nan |= lt_is_nan(q_score);
        if (item_less(score, r, q_score, q)) {
          above++;
        } else if (!item_less(q_score, q, score, r)) {
          equal++;  // the same row (and score): offered before this one if its j is smaller
          equal_before += i < j;
        }
      }
    }
    // A NaN of the source marks it (above) and its counts place nothing: a NaN is "equal" to
    // every item, so two items could take one place, two threads writing one slot.
    if (nan) continue;
    if (above < beam && above + equal > beam) {
      atomicExch((u64 *)&replay[s], 1ull);
    } else if (above + equal_before < beam) {
      const u64 at = (u64)s * beam + above + equal_before;
      top_rows[at] = r;
      top_ids[at] = id;
      top_scores[at] = score;
    }
  }
}

// One block does the whole selection: each source's top list (`top_*`, beam slots per source) by
// rank (Ranked: the fused step's few candidates a row; rank_candidates) or by replaying its
// offers, a run of consecutive sources per thread; the sources whose items all come from finished
// rows are dropped. A scan of the threads' item counts places each run in the output; then the
// items go to `out` row by row (each row's items in list order), with the row offsets (rows + 1),
// and the offset of each source's first row to `next_sources` (sources + 1): the output LoD's
// level 0 in rows, which is where the next step finds its sources. Until then `next_sources` holds
// rank_candidates' marks.
template <typename T, bool Ranked, typename Cands>
static __device__ void select_and_regroup(const i64 *source_rows, u32 sources, const i64 *pre_ids, i64 end_id,
                                          u32 beam, Cands cands, i64 *top_rows, i64 *top_ids, T *top_scores,
                                          Selection<T> out, i64 *next_sources) {
  LODTENSOR_SHARED(i64, partial, [SELECT_THREADS]);
  const u32 tid = threadIdx.x, threads = blockDim.x;
  const i64 rows = source_rows[sources];
  if (Ranked) {
    for (u32 s = tid; s < sources; s += threads) next_sources[s] = 0;
    __syncthreads();
    rank_candidates<T>(source_rows, sources, pre_ids, end_id, beam, cands, top_rows, top_ids, top_scores,
                       next_sources);
    __syncthreads();
  }
  // Each thread takes a run of consecutive sources: a scan of the threads' item counts then gives
  // each run its first output place, and the run's rows are consecutive too.
  const u32 per = (sources + threads - 1) / threads;
  const u32 s_lo = min(tid * per, sources), s_hi = min(s_lo + per, sources);
  i64 count = 0;
  for (u32 s = s_lo; s < s_hi; s++) {
    i64 *const gr = top_rows + (u64)s * beam, *const gi = top_ids + (u64)s * beam;
    T *const gs = top_scores + (u64)s * beam;
    const i64 r0 = source_rows[s], r1 = source_rows[s + 1];
    u32 len;
    if (Ranked && !next_sources[s]) {
      // Every offer is taken while the list has room: the list holds min(beam, offers).
      u64 offers = 0;
      for (i64 r = r0; r < r1; r++) offers += offers_of(cands, pre_ids[r] == end_id, r);
      len = (u32)min((u64)beam, offers);
    } else {
      len = replay_offers(r0, r1, pre_ids, end_id, beam, cands, gr, gi, gs);
    }
    bool all_finished = true;
    for (u32 j = 0; j < len; j++) all_finished = all_finished && gi[j] == end_id && pre_ids[gr[j]] == end_id;
    const u32 kept = len > 0 && !all_finished ? len : 0;
    // The regrouping reads an item's id and score only where its row is set.
    for (u32 j = kept; j < beam; j++) gr[j] = -1;
    count += kept;
  }
  // Inclusive scan of the counts (Hillis-Steele).
  partial[tid] = count;
  __syncthreads();
  for (u32 off = 1; off < threads; off <<= 1) {
    const i64 v = tid >= off ? partial[tid - off] : 0;
    __syncthreads();
    partial[tid] += v;
    __syncthreads();
  }
  // Each source's first output place (its run's, then its kept items' count after each source).
  i64 at = partial[tid] - count;
  for (u32 s = s_lo; s < s_hi; s++) {
    next_sources[s] = at;
    const i64 *const gr = top_rows + (u64)s * beam;
    for (u32 j = 0; j < beam; j++) at += gr[j] >= 0;
  }
  if (tid == threads - 1) {
    out.row(rows, partial[tid]);
    next_sources[sources] = partial[tid];
  }
  __syncthreads();
  // The output holds each source's items grouped by row in row order, each row's in list order
  // (a list's kept items are its first slots; the rest hold row -1). Each place is counted from
  // the source's list alone, so rows and items are placed by a thread each, with no chain of
  // updates to shared counts: a row's offset is its source's first place plus the items of its
  // earlier rows; an item's place is its row's offset plus the items of its row before it.
  for (i64 r = tid; r < rows; r += threads) {
    const u32 s = last_at_or_below(source_rows, 0, sources, (u64)r);
    const i64 *const gr = top_rows + (u64)s * beam;
    i64 place = next_sources[s];
    for (u32 j = 0; j < beam; j++) {
      const i64 g = gr[j];
      place += g >= 0 && g < r;
    }
    out.row(r, place);
  }
  for (u64 slot = tid; slot < (u64)sources * beam; slot += threads) {
    const u64 s = slot / beam, j = slot - s * beam;
    const i64 *const gr = top_rows + s * beam;
    const i64 r = gr[j];
    if (r < 0) continue;
    i64 place = next_sources[s];
    for (u32 i = 0; i < beam; i++) {
      const i64 g = gr[i];
      place += g >= 0 && (g < r || (g == r && i < j));
    }
    out.item(place, top_ids[slot], top_scores[slot], (i32)r);
  }
}

// The launchers' arguments after the candidates': the scratch, then the outputs.
#define LODTENSOR_SELECT_OUTPUTS(T)                                                                    \
  i64 *top_rows, i64 *top_ids, T *top_scores, i64 *row_offsets, i64 *out_ids, T *out_scores,             \
      i32 *out_parents, unsigned char *host, i64 *next_sources
#define LODTENSOR_SELECTION(T) \
  Selection<T> { row_offsets, out_ids, out_scores, out_parents, host, source_rows[sources], (i64)sources * beam }

extern "C" __global__ void fused_select(const i64 *source_rows, u32 sources, const i64 *pre_ids, i64 end_id, u32 beam,
                                        const float *cand_vals, const i64 *cand_cols, const float *pre_scores, u32 k,
                                        LODTENSOR_SELECT_OUTPUTS(float)) {
  FusedCandidates c{cand_vals, cand_cols, pre_scores, k};
  select_and_regroup<float, true>(source_rows, sources, pre_ids, end_id, beam, c, top_rows, top_ids, top_scores,
                                  LODTENSOR_SELECTION(float), next_sources);
}
LODTENSOR_EXPORT_SYNC(fused_select)

#define LODTENSOR_STEP_SELECT(NAME, T)                                                                       \
  extern "C" __global__ void NAME(const i64 *source_rows, u32 sources, const i64 *pre_ids, i64 end_id,       \
                                  u32 beam, const T *scores, const i64 *ids, const T *pre_scores, u64 width, \
                                  int accumulated, LODTENSOR_SELECT_OUTPUTS(T)) {                            \
    StepCandidates<T> c{scores, ids, pre_scores, width, accumulated};                                        \
    select_and_regroup<T, false>(source_rows, sources, pre_ids, end_id, beam, c, top_rows, top_ids,          \
                                 top_scores, LODTENSOR_SELECTION(T), next_sources);                          \
  }                                                                                                          \
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

