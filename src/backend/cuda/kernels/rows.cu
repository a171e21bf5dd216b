// The row gather, the data-movement kernel behind every op that only rearranges rows (expand,
// pack, unpack, reorder, gather, concat, scatter_rows' copy): output rows
// [dst_offsets[k], dst_offsets[k+1]) are the rows starting at device address src_addr[k], which
// may lie in any of several tensors. One launch serves all ranges; the host uploads the table
// once per call. Rows move in words of W bytes (the host picks the widest word that divides the
// row size and every address involved). The output is walked in tiles (common.cuh): each row's
// range is found once, by a search within its tile's ranges, not over all of them (with one range
// per row and millions of rows, a search over the whole table would read more than the rows).

template <typename W>
__device__ void gather_ranges(W *__restrict__ dst, u64 row_words, const u64 *__restrict__ src_addr,
                              const i64 *__restrict__ dst_offsets, u32 num_ranges, u64 total_rows,
                              u64 tile_rows) {
  // Each row's source, found once per row; its words are then one shared-memory read away.
  __shared__ const W *row_src[TILE_MAX_ROWS];
  for_each_tile(
      dst, dst_offsets, num_ranges, total_rows, row_words, tile_rows,
      [&](u32 r, u64 row, u32 k) { row_src[r] = (const W *)src_addr[k] + (row - (u64)dst_offsets[k]) * row_words; },
      [&](u32 r, u64, u64 col) { return row_src[r][col]; });
}

#define LODTENSOR_GATHER(W, SUFFIX)                                                                \
  extern "C" __global__ void gather_ranges_##SUFFIX(W *dst, u64 row_words, const u64 *src_addr,         \
                                                    const i64 *dst_offsets, u32 num_ranges,             \
                                                    u64 total_rows, u64 tile_rows) {                    \
    gather_ranges<W>(dst, row_words, src_addr, dst_offsets, num_ranges, total_rows, tile_rows);         \
  }                                                                                                \
  LODTENSOR_EXPORT_SYNC(gather_ranges_##SUFFIX)

LODTENSOR_GATHER(u8, 1)
LODTENSOR_GATHER(u16, 2)
LODTENSOR_GATHER(u32, 4)
LODTENSOR_GATHER(u64, 8)
LODTENSOR_GATHER(word16, 16)
