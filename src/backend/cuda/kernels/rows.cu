// The row kernels, behind every op that only rearranges rows. The range gather (reorder, the
// TensorArray's moves of nested sequences, scatter_rows' copy): output rows [dst_offsets[k],
// dst_offsets[k+1]) are the rows starting at device address src_addr[k], which may lie in any of
// several tensors. Where an op's own offsets say where each row comes from (sequence_expand,
// sequence_expand_as, sequence_concat, sequence_unpad, the TensorArray's unpack and pack of rows,
// gather_rows by a device index), a kernel of its own finds the row from them, so no table entry
// per row is built or uploaded. Each launch serves the whole op; the host uploads its tables once
// per call (a LoD level once per device: the LoD keeps its copy). Rows move in words of W bytes
// (the host picks the widest word that divides the row size and every address involved). The output
// is walked in tiles (common.cuh): each row's range is found once, by a search within its tile's
// ranges, not over all of them (with one range per row and millions of rows, a search over the
// whole table would read more than the rows). gather_rows by an index has nothing to search and
// walks the output's words directly.

template <typename W>
__device__ void gather_ranges(W *__restrict__ dst, u64 row_words, const u64 *__restrict__ src_addr,
                              const i64 *__restrict__ dst_offsets, u32 num_ranges, u64 total_rows,
                              u64 tile_rows) {
  move_rows(dst, dst_offsets, num_ranges, total_rows, row_words, tile_rows, [&](u64 row, u32 k) {
    return (const W *)src_addr[k] + (row - (u64)dst_offsets[k]) * row_words;
  });
}

#define LODTENSOR_GATHER(W, SUFFIX)                                                                \
  extern "C" __global__ void gather_ranges_##SUFFIX(W *dst, u64 row_words, const u64 *src_addr,         \
                                                    const i64 *dst_offsets, u32 num_ranges,             \
                                                    u64 total_rows, u64 tile_rows) {                    \
    gather_ranges<W>(dst, row_words, src_addr, dst_offsets, num_ranges, total_rows, tile_rows);         \
  }                                                                                                \
  LODTENSOR_EXPORT_SYNC(gather_ranges_##SUFFIX)

// sequence_expand_as: output rows [offsets[k], offsets[k+1]) are each row k of src. The table is
// the LoD itself, not a range per output row.
template <typename W>
__device__ void repeat_rows(W *__restrict__ dst, const W *__restrict__ src, u64 row_words,
                            const i64 *__restrict__ offsets, u32 count, u64 total_rows, u64 tile_rows) {
  move_rows(dst, offsets, count, total_rows, row_words, tile_rows,
            [&](u64, u32 k) { return src + (u64)k * row_words; });
}

// sequence_concat: output rows [out_offsets[i], out_offsets[i+1]) are sequence i of source 0, then
// of source 1, ... sources[j] is source j's first row's device address and sources[num_sources +
// j] that of its sequences' row offsets (its LoD level as the device keeps it), and out_offsets
// are their sums (concat_offsets). The tables are the LoD levels, not a range per sequence and
// source.
template <typename W>
__device__ void concat_rows(W *__restrict__ dst, const u64 *__restrict__ sources, u32 num_sources, u64 row_words,
                            const i64 *__restrict__ out_offsets, u32 sequences, u64 total_rows, u64 tile_rows) {
  move_rows(dst, out_offsets, sequences, total_rows, row_words, tile_rows, [&](u64 row, u32 i) {
    u64 local = row - (u64)out_offsets[i];
    for (u32 j = 0;; j++) {
      const i64 *offsets = (const i64 *)sources[num_sources + j];
      const u64 start = (u64)offsets[i], len = (u64)offsets[i + 1] - start;
      // The output's offsets are the sums of the sources', so the row is in some source's part;
      // the last source takes it regardless, so the walk ends there.
      if (local < len || j + 1 == num_sources) return (const W *)sources[j] + (start + local) * row_words;
      local -= len;
    }
  });
}

#define LODTENSOR_CONCAT_ROWS(W, SUFFIX)                                                           \
  extern "C" __global__ void concat_rows_##SUFFIX(W *dst, const u64 *sources, u32 num_sources,       \
                                                  u64 row_words, const i64 *out_offsets,             \
                                                  u32 sequences, u64 total_rows, u64 tile_rows) {    \
    concat_rows<W>(dst, sources, num_sources, row_words, out_offsets, sequences, total_rows, tile_rows); \
  }                                                                                                  \
  LODTENSOR_EXPORT_SYNC(concat_rows_##SUFFIX)

// sequence_concat's output offsets: out[i] is the sum over the sources of their offsets[i], for
// i < n (the sequences and one more); sources[num_sources + j] is source j's offset table. The
// host checked that the last sum, the largest, fits.
extern "C" __global__ void concat_offsets(i64 *out, const u64 *sources, u32 num_sources, u64 n) {
  for_each_index<i64>(
      n,
      [&](u64 i) {
        i64 sum = 0;
        for (u32 j = 0; j < num_sources; j++) sum += ((const i64 *)sources[num_sources + j])[i];
        return sum;
      },
      [&](u64 i, i64 v) { out[i] = v; });
}
LODTENSOR_EXPORT(concat_offsets)

// sequence_unpad: output rows [offsets[i], offsets[i+1]) are the first rows of slot i of src, slot
// i being rows [i * padded, (i + 1) * padded). The table is the output's LoD level.
template <typename W>
__device__ void unpad_rows(W *__restrict__ dst, const W *__restrict__ src, u64 row_words, u64 padded,
                           const i64 *__restrict__ offsets, u32 count, u64 total_rows, u64 tile_rows) {
  move_rows(dst, offsets, count, total_rows, row_words, tile_rows, [&](u64 row, u32 i) {
    return src + ((u64)i * padded + row - (u64)offsets[i]) * row_words;
  });
}

#define LODTENSOR_UNPAD_ROWS(W, SUFFIX)                                                            \
  extern "C" __global__ void unpad_rows_##SUFFIX(W *dst, const W *src, u64 row_words, u64 padded,    \
                                                 const i64 *offsets, u32 count, u64 total_rows,      \
                                                 u64 tile_rows) {                                    \
    unpad_rows<W>(dst, src, row_words, padded, offsets, count, total_rows, tile_rows);               \
  }                                                                                                  \
  LODTENSOR_EXPORT_SYNC(unpad_rows_##SUFFIX)

// sequence_expand of an x with a LoD: output rows [starts[i], starts[i+1]) are the copies of x's
// sequence i (rows [x_offsets[i], x_offsets[i+1])), one after another; starts are where each
// sequence's first copy starts (expand_run_rows, then the scan). The tile search over starts finds
// a row's sequence, and its place among the copies' rows, modulo the sequence's length, its row in
// x: no search of y's level or of the copies' offsets for each row, which with one-row sequences
// cost more dependent reads than the row's own move.
template <typename W>
__device__ void expand_rows(W *__restrict__ dst, const W *__restrict__ src, u64 row_words,
                            const i64 *__restrict__ x_offsets, const i64 *__restrict__ starts, u32 sequences,
                            u64 total_rows, u64 tile_rows) {
  move_rows(dst, starts, sequences, total_rows, row_words, tile_rows, [&](u64 row, u32 i) {
    // The search passes over sequences of no rows, so sequence i has rows.
    const u64 first = (u64)x_offsets[i], len = (u64)x_offsets[i + 1] - first;
    u64 local = row - (u64)starts[i];
    // A 64-bit division is a long routine; rows of the first copy, and one-row sequences, need none.
    if (local >= len) local = len == 1 ? 0 : local % len;
    return src + (first + local) * row_words;
  });
}

#define LODTENSOR_EXPAND_ROWS(W, SUFFIX)                                                             \
  extern "C" __global__ void expand_rows_##SUFFIX(W *dst, const W *src, u64 row_words,                 \
                                                  const i64 *x_offsets, const i64 *starts,              \
                                                  u32 sequences, u64 total_rows, u64 tile_rows) {       \
    expand_rows<W>(dst, src, row_words, x_offsets, starts, sequences, total_rows, tile_rows);          \
  }                                                                                                    \
  LODTENSOR_EXPORT_SYNC(expand_rows_##SUFFIX)

// sequence_expand's output offsets, first step: starts[i] = the rows of x's sequence i times its
// copies (x_offsets: x's level, in rows; repeats: y's level, whose sequence i counts the copies),
// for i < n, and starts[n] = 0. Their exclusive scan (group.cu's) is then the row where each
// sequence's first copy starts, and at n the output's row count.
extern "C" __global__ void expand_run_rows(u64 *starts, const i64 *x_offsets, const i64 *repeats, u64 n) {
  for_each_index<u64>(
      n + 1,
      [&](u64 i) {
        return i == n ? 0 : (u64)(x_offsets[i + 1] - x_offsets[i]) * (u64)(repeats[i + 1] - repeats[i]);
      },
      [&](u64 i, u64 v) { starts[i] = v; });
}
LODTENSOR_EXPORT(expand_run_rows)

// The output's offsets (its LoD's device copy), from the scan: out[c] = starts[i] + (c - repeats[i])
// * (rows of x's sequence i) for each copy c < copies, i being the sequence copy c is of, and
// out[copies] = starts[sequences], the row count. A tile kernel over the copies, so each copy's
// sequence is found between those of its tile's ends.
extern "C" __global__ void expand_offsets(i64 *out, const i64 *x_offsets, const i64 *repeats, u32 sequences,
                                          const u64 *starts, u32 copies, u64 tile_rows) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[copies] = (i64)starts[sequences];
  LODTENSOR_FOR_EACH_TILE_ELEMENT(out, repeats, sequences, copies, 1, tile_rows, {
    return (i64)(starts[seq] + (row - (u64)repeats[seq]) * (u64)(x_offsets[seq + 1] - x_offsets[seq]));
  });
}
LODTENSOR_EXPORT_SYNC(expand_offsets)

#define LODTENSOR_REPEAT_ROWS(W, SUFFIX)                                                           \
  extern "C" __global__ void repeat_rows_##SUFFIX(W *dst, const W *src, u64 row_words,               \
                                                  const i64 *offsets, u32 count, u64 total_rows,      \
                                                  u64 tile_rows) {                                    \
    repeat_rows<W>(dst, src, row_words, offsets, count, total_rows, tile_rows);                       \
  }                                                                                                  \
  LODTENSOR_EXPORT_SYNC(repeat_rows_##SUFFIX)

// lod_tensor_to_array of rows: output rows [step_rows[t], step_rows[t+1]) are time step t, whose
// row i is row firsts[i] + t of src (firsts: each sequence's first row, in rank order). The table
// is a row offset per step and per sequence, not a range per row.
template <typename W>
__device__ void unpack_rows(W *__restrict__ dst, const W *__restrict__ src, u64 row_words,
                            const i64 *__restrict__ step_rows, u32 steps, const i64 *__restrict__ firsts,
                            u64 total_rows, u64 tile_rows) {
  move_rows(dst, step_rows, steps, total_rows, row_words, tile_rows, [&](u64 row, u32 t) {
    return src + ((u64)firsts[row - (u64)step_rows[t]] + t) * row_words;
  });
}

// array_to_lod_tensor of rows: output rows [seq_rows[s], seq_rows[s+1]) are sequence s, whose row
// t is row position[s] of time step t (at device address steps[t]).
template <typename W>
__device__ void pack_rows(W *__restrict__ dst, const u64 *__restrict__ steps, u64 row_words,
                          const i64 *__restrict__ seq_rows, u32 seqs, const i64 *__restrict__ position,
                          u64 total_rows, u64 tile_rows) {
  move_rows(dst, seq_rows, seqs, total_rows, row_words, tile_rows, [&](u64 row, u32 s) {
    return (const W *)steps[row - (u64)seq_rows[s]] + (u64)position[s] * row_words;
  });
}

#define LODTENSOR_STEP_ROWS(W, SUFFIX)                                                             \
  extern "C" __global__ void unpack_rows_##SUFFIX(W *dst, const W *src, u64 row_words,               \
                                                  const i64 *step_rows, u32 steps, const i64 *firsts, \
                                                  u64 total_rows, u64 tile_rows) {                    \
    unpack_rows<W>(dst, src, row_words, step_rows, steps, firsts, total_rows, tile_rows);             \
  }                                                                                                  \
  LODTENSOR_EXPORT_SYNC(unpack_rows_##SUFFIX)                                                        \
  extern "C" __global__ void pack_rows_##SUFFIX(W *dst, const u64 *steps, u64 row_words,             \
                                                const i64 *seq_rows, u32 seqs, const i64 *position,   \
                                                u64 total_rows, u64 tile_rows) {                      \
    pack_rows<W>(dst, steps, row_words, seq_rows, seqs, position, total_rows, tile_rows);             \
  }                                                                                                  \
  LODTENSOR_EXPORT_SYNC(pack_rows_##SUFFIX)

// gather_rows with its index on the device: output row k is row index[k] of src (src_rows rows).
// An index outside [0, src_rows) is counted in *bad (once per row) and its row is left as zeros;
// the host then finds and reports the first such index from its own copy. No table and no search,
// so not a tile kernel: for_each_index over the output's words, each finding its row's source
// from the index (a load shared by the row's words), four words a thread in flight. Zero-width
// rows are one item each, so their indices are checked too.
//
// The load of output word e, and its store (none for zero-width rows).
template <typename W, typename I, typename N>
__device__ __forceinline__ auto indexed_word(const W *__restrict__ src, u64 row_words, const I *__restrict__ index,
                                             u64 src_rows, u32 *bad) {
  return [=](u64 e) -> W {
    const u64 per_row = row_words ? row_words : 1;
    const u64 row = (N)e / (N)per_row;
    const u64 col = e - row * per_row;
    const i64 i = (i64)index[row];
    if (i >= 0 && (u64)i < src_rows) return row_words ? src[(u64)i * row_words + col] : W();
    if (col == 0) atomicAdd(bad, 1u);
    return W();
  };
}

template <typename W>
__device__ __forceinline__ auto indexed_store(W *__restrict__ dst, u64 row_words) {
  return [=](u64 e, W v) {
    if (row_words) dst[e] = v;
  };
}

template <typename W, typename I, typename N>
__device__ void gather_by_index(W *__restrict__ dst, const W *__restrict__ src, u64 row_words,
                                const I *__restrict__ index, u64 rows, u64 src_rows, u32 *bad) {
  for_each_index<W>(rows * (row_words ? row_words : 1), indexed_word<W, I, N>(src, row_words, index, src_rows, bad),
                    indexed_store(dst, row_words));
}

#define LODTENSOR_GATHER_BY_INDEX(W, SUFFIX, I, INAME)                                                   \
  LODTENSOR_NARROW_AND_WIDE(gather_by_index_##INAME##_##SUFFIX,                                            \
                            (W *dst, const W *src, u64 row_words, const I *index, u64 rows, u64 src_rows,   \
                             u32 *bad),                                                                    \
                            (gather_by_index<W, I, Index>(dst, src, row_words, index, rows, src_rows, bad)))

// beam_search_gather_states: gather_by_index of several tensors by one index, in one launch.
// `table` holds INDEXED_ENTRY u64s a tensor: its output's and its source's addresses, its words a
// row and its source's rows, and its first chunk. A chunk is STRIDE_UNROLL * blockDim.x of a
// tensor's items (as for_each_index takes them); the first chunks ascend from 0, each tensor
// having at least one (the host counts them). Each block takes a chunk at a time and finds its
// tensor by one search over the first chunks (the same addresses in every thread, so one read
// serves the block), so a large tensor and a small one cost what their words cost, not a launch
// each.
#define INDEXED_ENTRY 5

template <typename W, typename I, typename N>
__device__ void gather_each_by_index(const u64 *__restrict__ table, u32 count, u64 chunks,
                                     const I *__restrict__ index, u64 rows, u32 *bad) {
  const u64 chunk = (u64)STRIDE_UNROLL * blockDim.x;
  for (u64 c = blockIdx.x; c < chunks; c += gridDim.x) {
    u32 lo = 0, hi = count;
    while (hi - lo > 1) {
      const u32 mid = lo + (hi - lo) / 2;
      if (table[(u64)mid * INDEXED_ENTRY + 4] <= c) lo = mid; else hi = mid;
    }
    const u64 *t = table + (u64)lo * INDEXED_ENTRY;
    const u64 row_words = t[2];
    for_each_index_of_chunk<W>((c - t[4]) * chunk + threadIdx.x, rows * (row_words ? row_words : 1),
                               indexed_word<W, I, N>((const W *)t[1], row_words, index, t[3], bad),
                               indexed_store((W *)t[0], row_words));
  }
}

#define LODTENSOR_GATHER_EACH_BY_INDEX(W, SUFFIX, I, INAME)                                              \
  LODTENSOR_NARROW_AND_WIDE_IN(6, gather_each_by_index_##INAME##_##SUFFIX,                                \
                            (const u64 *table, u32 count, u64 chunks, const I *index, u64 rows, u32 *bad),  \
                            (gather_each_by_index<W, I, Index>(table, count, chunks, index, rows, bad)))

// scatter_rows OVERWRITE, in two launches and without a plan made on the host. First, one thread
// per update: winner[r] becomes 1 + the last i with index[i] == r (the largest, by atomic maxima;
// 0, as the host zeroed it, where no update names row r), and an index outside [0, rows) is
// counted in *bad.
template <typename I>
__device__ void last_writers(const I *__restrict__ index, u64 n, u64 rows, u64 *winner, u32 *bad) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const i64 r = lt_checked((i64)index[i], rows, bad);
    if (r >= 0) atomicMax(&winner[r], i + 1);
  }
}

// scatter_rows ADD's keys, for the sort by row (group.cu): keys[i] = index[i], the row update i
// adds to; an index outside [0, rows) is counted in *bad and keyed 0, so the sort stays in bounds.
template <typename I>
__device__ void row_keys(const I *__restrict__ index, u64 n, u64 rows, u64 *keys, u32 *bad) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
    const i64 r = lt_checked((i64)index[i], rows, bad);
    keys[i] = r < 0 ? 0 : (u64)r;
  }
}

// Both kernels per index dtype; `out` is `winner` (a u64 per row) or `keys` (one per update).
#define LODTENSOR_SCATTER_INDEX(KERNEL, I, INAME)                                                  \
  extern "C" __global__ void KERNEL##_##INAME(const I *index, u64 n, u64 rows, u64 *out, u32 *bad) { \
    KERNEL<I>(index, n, rows, out, bad);                                                           \
  }                                                                                                \
  LODTENSOR_EXPORT(KERNEL##_##INAME)

LODTENSOR_SCATTER_INDEX(last_writers, i32, i32)
LODTENSOR_SCATTER_INDEX(last_writers, i64, i64)
LODTENSOR_SCATTER_INDEX(row_keys, i32, i32)
LODTENSOR_SCATTER_INDEX(row_keys, i64, i64)

// Then the output's words, as gather_by_index walks them: row r is row winner[r] - 1 of updates,
// or row r of x where no update names it.
template <typename W, typename N>
__device__ void overwrite_rows(W *__restrict__ dst, const W *__restrict__ x, const W *__restrict__ updates,
                               u64 row_words, const u64 *__restrict__ winner, u64 rows) {
  const u64 n = rows * row_words;
  for_each_index<W>(
      n,
      [&](u64 e) -> W {
        const u64 row = (N)e / (N)row_words;
        const u64 w = winner[row];
        return w ? updates[(w - 1) * row_words + (e - row * row_words)] : x[e];
      },
      [&](u64 e, W v) { dst[e] = v; });
}

#define LODTENSOR_OVERWRITE_ROWS(W, SUFFIX)                                                            \
  LODTENSOR_NARROW_AND_WIDE(overwrite_rows_##SUFFIX,                                                   \
                            (W *dst, const W *x, const W *updates, u64 row_words, const u64 *winner,    \
                             u64 rows),                                                                \
                            (overwrite_rows<W, Index>(dst, x, updates, row_words, winner, rows)))

#define LODTENSOR_GATHER_ALL(W, SUFFIX)         \
  LODTENSOR_GATHER(W, SUFFIX)                   \
  LODTENSOR_REPEAT_ROWS(W, SUFFIX)              \
  LODTENSOR_EXPAND_ROWS(W, SUFFIX)              \
  LODTENSOR_CONCAT_ROWS(W, SUFFIX)              \
  LODTENSOR_UNPAD_ROWS(W, SUFFIX)               \
  LODTENSOR_STEP_ROWS(W, SUFFIX)                \
  LODTENSOR_GATHER_BY_INDEX(W, SUFFIX, i32, i32) \
  LODTENSOR_GATHER_BY_INDEX(W, SUFFIX, i64, i64) \
  LODTENSOR_GATHER_EACH_BY_INDEX(W, SUFFIX, i32, i32) \
  LODTENSOR_GATHER_EACH_BY_INDEX(W, SUFFIX, i64, i64) \
  LODTENSOR_OVERWRITE_ROWS(W, SUFFIX)

LODTENSOR_GATHER_ALL(u8, 1)
LODTENSOR_GATHER_ALL(u16, 2)
LODTENSOR_GATHER_ALL(u32, 4)
LODTENSOR_GATHER_ALL(u64, 8)
LODTENSOR_GATHER_ALL(word16, 16)
