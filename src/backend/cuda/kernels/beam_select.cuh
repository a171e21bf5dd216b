// Paddle's per-source beam selection on the device (the lists of its sequential "Insert",
// exactly) and the placement of the lists in the step's output, grouped by prefix row: for the
// selection kernels of beam.cu (after the fused step's row top lists, or on Paddle's step's rows)
// and for the fused step's chunk kernel (fused_chunks.cu), which selects each source as soon as its
// rows' lists are merged. Included by both (`// lodtensor-includes:`, build.rs).

// A score with any NaN written as its type's one quiet NaN (sign clear, payload zero), as the host
// writes it: a device addition makes 0x7fffffff where the host keeps an operand's NaN, and the
// scores must agree bit for bit.
__device__ __forceinline__ float one_nan(float v) { return lt_is_nan(v) ? __uint_as_float(0x7fc00000u) : v; }
__device__ __forceinline__ double one_nan(double v) {
  return lt_is_nan(v) ? __longlong_as_double(0x7ff8000000000000ll) : v;
}

__device__ __forceinline__ float ln(float v) { return logf(v); }
__device__ __forceinline__ double ln(double v) { return log(v); }

// Threads of the selection kernels' blocks (beam.cu), and the fewest that select_source works
// with: a block selects one source at a time.
#define SELECT_THREADS 128
// The most threads of a block that places the selection (place_selection): the fused step's chunk
// blocks, of 256 threads, select and place too.
#define SELECT_MAX_THREADS 256
// Sources of at most this many offers are selected by rank (select_source), RANK_PER_THREAD a
// thread of a block of SELECT_THREADS or more; larger ones replay their offers.
#define RANK_MAX_OFFERS 256
#define RANK_PER_THREAD (RANK_MAX_OFFERS / SELECT_THREADS)
// A slot of select_source's table that holds no offer.
#define NO_OFFER 0xffffffffu

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
// The fused step's lists are read as volatile, past the L1 cache: in the chunk kernel, other
// blocks wrote them during the launch, and this SM's L1 may hold lines of them from before.
struct FusedCandidates {
  const volatile float *vals;  // [rows, k]
  const volatile i64 *cols;    // [rows, k]
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

// A selection's inputs, scratch and outputs, as the kernels take them (LODTENSOR_SELECT_PARAMS,
// after each kernel's own parameters): the sources' row offsets, the prefix rows' pre_ids, the
// lists' scratch (beam slots a source), where the next step's sources go (`next_sources`, sources +
// 1), and the outputs.
template <typename T>
struct SelectArgs {
  const i64 *source_rows;
  u32 sources;
  const i64 *pre_ids;
  i64 end_id;
  u32 beam;
  i64 *top_rows, *top_ids;
  T *top_scores;
  i64 *next_sources;
  Selection<T> out;
};

#define LODTENSOR_SELECT_PARAMS(T)                                                                         \
  const i64 *source_rows, u32 sources, const i64 *pre_ids, i64 end_id, u32 beam, i64 *top_rows, i64 *top_ids, \
      T *top_scores, i64 *row_offsets, i64 *out_ids, T *out_scores, i32 *out_parents, unsigned char *host,     \
      i64 *next_sources
// The same parameters' names, to pass them on.
#define LODTENSOR_SELECT_NAMES                                                                            \
  source_rows, sources, pre_ids, end_id, beam, top_rows, top_ids, top_scores, row_offsets, out_ids, out_scores, \
      out_parents, host, next_sources
// The SelectArgs of those parameters.
#define LODTENSOR_SELECT_ARGS(T)                                                                             \
  SelectArgs<T> {                                                                                           \
    source_rows, sources, pre_ids, end_id, beam, top_rows, top_ids, top_scores, next_sources,                \
        Selection<T>{row_offsets, out_ids, out_scores, out_parents, host, source_rows[sources],              \
                     (i64)sources * beam}                                                                    \
  }

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

// What a block shares while it selects one source by rank: the source's offers in offer order
// (slot (row - r0) * per_row + j), each one's score, row within the source (NO_OFFER: the slot
// holds no offer) and place in the list (beam or more: not kept); and the source's flags.
template <typename T>
struct SourceShared {
  T score[RANK_MAX_OFFERS];
  u32 row[RANK_MAX_OFFERS];
  u32 place[RANK_MAX_OFFERS];
  u32 offers;      // the source's offers
  u32 replay;      // replay the offers: too many of them, or a NaN score
  u32 straddle;    // replay the offers: equal items across the last place
  u32 unfinished;  // a kept item is not a finished row's end_id
};

// Source s's list (rows r0 .. r1) by one thread, replaying its offers (replay_offers), then in
// select_source's form: sorted by row (each row's items in list order: a stable insertion sort,
// lists are short), each row's offset among the items with s above it, the kept length.
template <typename T, typename Cands>
static __device__ void replay_source(u32 s, const SelectArgs<T> &a, const Cands &cands) {
  const i64 r0 = a.source_rows[s], r1 = a.source_rows[s + 1];
  const u64 at = (u64)s * a.beam;
  i64 *const gr = a.top_rows + at, *const gi = a.top_ids + at;
  T *const gs = a.top_scores + at;
  const i64 *const pre_ids = a.pre_ids;
  const i64 end_id = a.end_id;
  const u32 len = replay_offers(r0, r1, pre_ids, end_id, a.beam, cands, gr, gi, gs);
  bool all_finished = true;
  for (u32 j = 0; j < len; j++) all_finished = all_finished && gi[j] == end_id && pre_ids[gr[j]] == end_id;
  const u32 kept = all_finished ? 0 : len;
  for (u32 j = 1; j < kept; j++) {
    const i64 row = gr[j], id = gi[j];
    const T score = gs[j];
    u32 i = j;
    for (; i > 0 && gr[i - 1] > row; i--) {
      gr[i] = gr[i - 1];
      gi[i] = gi[i - 1];
      gs[i] = gs[i - 1];
    }
    gr[i] = row;
    gi[i] = id;
    gs[i] = score;
  }
  u32 before = 0;
  for (i64 r = r0; r < r1; r++) {
    while (before < kept && gr[before] < r) before++;
    a.out.row_offsets[r] = (i64)((u64)s << 32 | before);
  }
  a.next_sources[s] = kept;
}

// Source s's list, by the whole block (blocks of at least SELECT_THREADS threads; it
// synchronises): its kept items in its beam slots of top_* sorted by row, each row's items in
// list order (so that each item's output place is the source's first place plus its slot); its
// kept length in next_sources[s]; each of its rows' offset among the source's items in
// row_offsets, with s in the high 32 bits (place_selection turns both into output places). A
// source whose items all come from finished rows keeps none.
//
// By rank where the source has at most RANK_MAX_OFFERS offers: a thread per offer counts the
// offers that rank above it in Paddle's Item order (higher score, then higher row), those equal to
// it and those equal to it offered before it (same row, smaller j). Where no two equal items
// straddle the last place and no score is NaN, replaying the offers keeps exactly the items with
// fewer than `beam` above them, in that order, equal ones in offer order (an item leaves a list only
// from its last place, so an equal group that fits is never split), so an item's place is the sum
// of those counts. Otherwise one thread replays the offers (replay_source), as the CPU does. The
// replay is a chain of offers, each waiting for the list the last one left; by rank, a source
// costs the loads of its candidates and a pass over shared memory.
template <typename T, typename Cands>
static __device__ void select_source(u32 s, const SelectArgs<T> &a, const Cands &cands, SourceShared<T> &sh) {
  const u32 tid = threadIdx.x, threads = blockDim.x;
  const i64 r0 = a.source_rows[s], r1 = a.source_rows[s + 1];
  const u32 beam = a.beam;
  const i64 end_id = a.end_id;
  const u32 k = cands.count(0);  // the same for every row
  // A slot a row even where rows have no candidates: a finished row still offers itself.
  const u32 per_row = max(k, 1u);
  const u64 slots = (u64)(r1 - r0) * per_row;
  const bool ranked = slots <= RANK_MAX_OFFERS;
  if (tid == 0) {
    sh.offers = 0;
    sh.replay = !ranked;
    sh.straddle = 0;
    sh.unfinished = 0;
  }
  __syncthreads();
  // This thread's offers, slots tid + c * threads; row NO_OFFER: none.
  u32 row[RANK_PER_THREAD];
  i64 id[RANK_PER_THREAD];
  T score[RANK_PER_THREAD];
  bool finished[RANK_PER_THREAD];
  LODTENSOR_UNROLL
  for (u32 c = 0; c < RANK_PER_THREAD; c++) {
    const u32 slot = tid + c * threads;
    row[c] = NO_OFFER;
    if (!ranked || slot >= slots) continue;
    const u32 q = slot / per_row, j = slot - q * per_row;
    const i64 r = r0 + q;
    // The candidate's loads and the pre_id's, in flight together.
    i64 cand_id = 0;
    T cand_score = T();
    if (j < k) cands.get(r, j, cand_id, cand_score);
    const T pre_score = (T)cands.pre_scores[r];
    finished[c] = a.pre_ids[r] == end_id;
    const bool offered = finished[c] ? j == 0 : j < k;
    sh.row[slot] = offered ? q : NO_OFFER;
    if (!offered) continue;
    row[c] = q;
    id[c] = finished[c] ? end_id : cand_id;
    score[c] = finished[c] ? pre_score : cand_score;
    sh.score[slot] = score[c];
    atomicAdd(&sh.offers, 1u);
    if (lt_is_nan(score[c])) atomicExch(&sh.replay, 1u);
  }
  __syncthreads();
  if (!sh.replay) {
    LODTENSOR_UNROLL
    for (u32 c = 0; c < RANK_PER_THREAD; c++) {
      if (row[c] == NO_OFFER) continue;
      const u32 slot = tid + c * threads;
      u32 above = 0, equal = 0, equal_before = 0;
      for (u32 i = 0; i < (u32)slots; i++) {
        const u32 qi = sh.row[i];
        if (qi == NO_OFFER) continue;
        const T si = sh.score[i];
        if (item_less<T>(score[c], row[c], si, qi)) {
          above++;
        } else if (!item_less<T>(si, qi, score[c], row[c])) {
          equal++;  // the same row and score: offered before this one if its slot is smaller
          equal_before += i < slot;
        }
      }
      if (above < beam && above + equal > beam) atomicExch(&sh.straddle, 1u);
      const u32 place = above + equal_before;
      sh.place[slot] = place;
      if (place < beam && !(finished[c] && id[c] == end_id)) atomicExch(&sh.unfinished, 1u);
    }
  }
  __syncthreads();
  if (sh.replay || sh.straddle) {
    if (tid == 0) replay_source(s, a, cands);
  } else {
    const u32 kept = sh.unfinished ? min(beam, sh.offers) : 0;
    // Whether slot i holds a kept item before (row q, place p) in row order.
    const auto kept_before = [&](u32 i, u32 q, u32 p) {
      const u32 qi = sh.row[i];
      return qi != NO_OFFER && sh.place[i] < beam && (qi < q || (qi == q && sh.place[i] < p));
    };
    LODTENSOR_UNROLL
    for (u32 c = 0; c < RANK_PER_THREAD; c++) {
      const u32 slot = tid + c * threads;
      if (kept == 0 || row[c] == NO_OFFER || sh.place[slot] >= beam) continue;
      u64 at = (u64)s * beam;
      for (u32 i = 0; i < (u32)slots; i++) at += kept_before(i, row[c], sh.place[slot]);
      a.top_rows[at] = r0 + row[c];
      a.top_ids[at] = id[c];
      a.top_scores[at] = score[c];
    }
    for (u32 q = tid; q < (u32)(r1 - r0); q += threads) {
      u32 before = 0;
      if (kept > 0) {
        for (u32 i = 0; i < (u32)slots; i++) before += kept_before(i, q, 0);
      }
      a.out.row_offsets[r0 + q] = (i64)((u64)s << 32 | before);
    }
    if (tid == 0) a.next_sources[s] = kept;
  }
  __syncthreads();  // before the next source's offers go to `sh`
}

// Once every source is selected (select_source), by one block of at most SELECT_MAX_THREADS
// threads: each source's first output place, an exclusive scan of the kept lengths in
// next_sources (which then holds the places, and their total after the last source: the output
// LoD's level 0 in rows, where the next step finds its sources); each row's offset, the row
// offsets' values plus their source's first place; each kept item at its source's first place
// plus its slot. What other blocks wrote is read as volatile, past this SM's L1 cache, which
// may hold lines of it from before.
template <typename T>
static __device__ void place_selection(const SelectArgs<T> &a) {
  LODTENSOR_SHARED(i64, partial, [SELECT_MAX_THREADS]);
  const u32 tid = threadIdx.x, threads = blockDim.x, sources = a.sources, beam = a.beam;
  const Selection<T> &out = a.out;
  i64 *const next_sources = a.next_sources;
  const volatile i64 *kept_of = next_sources;
  // A source without rows has no list (the chunk kernel selects only sources with rows).
  const auto kept_at = [&](u32 s) -> i64 { return a.source_rows[s + 1] > a.source_rows[s] ? kept_of[s] : 0; };
  // A run of consecutive sources a thread.
  const u32 per = (sources + threads - 1) / threads;
  const u32 s_lo = min(tid * per, sources), s_hi = min(s_lo + per, sources);
  i64 count = 0;
  for (u32 s = s_lo; s < s_hi; s++) count += kept_at(s);
  // Inclusive scan of the runs' counts (Hillis-Steele).
  partial[tid] = count;
  __syncthreads();
  for (u32 off = 1; off < threads; off <<= 1) {
    const i64 v = tid >= off ? partial[tid - off] : 0;
    __syncthreads();
    partial[tid] += v;
    __syncthreads();
  }
  i64 at = partial[tid] - count;
  for (u32 s = s_lo; s < s_hi; s++) {
    const i64 kept = kept_at(s);
    next_sources[s] = at;
    at += kept;
  }
  if (tid == threads - 1) {
    out.row(out.rows, partial[tid]);
    next_sources[sources] = partial[tid];
  }
  __syncthreads();
  const volatile i64 *row_in_source = out.row_offsets;
  for (i64 r = tid; r < out.rows; r += threads) {
    const u64 v = (u64)row_in_source[r];
    out.row(r, next_sources[v >> 32] + (i64)(v & 0xffffffffu));
  }
  const volatile i64 *rows = a.top_rows, *ids = a.top_ids;
  const volatile T *scores = a.top_scores;
  for (u64 slot = tid; slot < (u64)sources * beam; slot += threads) {
    const u64 s = slot / beam, j = slot - s * beam;
    const i64 first = next_sources[s], kept = next_sources[s + 1] - first;
    if ((i64)j < kept) out.item(first + (i64)j, ids[slot], scores[slot], (i32)rows[slot]);
  }
}
