// Row-range gather, the data-movement kernel: out = the concatenation of row ranges of src.
// Range k copies rows [starts[k], starts[k] + dst_offsets[k+1] - dst_offsets[k]) of src to rows
// [dst_offsets[k], dst_offsets[k+1]) of out. One launch serves all ranges; the ranges (host
// offsets) are uploaded once per call. Rows are moved in words of W bytes (the host picks the
// widest word that divides the row size and both addresses), one word per thread, grid-stride.

template <typename W>
__device__ void gather_row_ranges(const W *__restrict__ src, W *__restrict__ dst, u64 row_words,
                                  const i64 *__restrict__ starts, const i64 *__restrict__ dst_offsets,
                                  unsigned int num_ranges, u64 total_rows) {
  const u64 total = total_rows * row_words;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const u64 row = i / row_words;
    const u64 col = i - row * row_words;
    // The last range k with dst_offsets[k] <= row: empty ranges (equal offsets) are skipped,
    // because a later range with the same offset is preferred.
    unsigned int lo = 0, hi = num_ranges;
    while (hi - lo > 1) {
      const unsigned int mid = lo + (hi - lo) / 2;
      if ((u64)dst_offsets[mid] <= row) lo = mid; else hi = mid;
    }
    const u64 src_row = (u64)starts[lo] + (row - (u64)dst_offsets[lo]);
    dst[i] = src[src_row * row_words + col];
  }
}

#define LODTENSOR_GATHER(NAME, W)                                                                  \
  extern "C" __global__ void NAME(const W *src, W *dst, u64 row_words, const i64 *starts,          \
                                  const i64 *dst_offsets, unsigned int num_ranges,                 \
                                  u64 total_rows) {                                                \
    gather_row_ranges<W>(src, dst, row_words, starts, dst_offsets, num_ranges, total_rows);        \
  }

LODTENSOR_GATHER(gather_row_ranges_1, unsigned char)
LODTENSOR_GATHER(gather_row_ranges_2, unsigned short)
LODTENSOR_GATHER(gather_row_ranges_4, unsigned int)
LODTENSOR_GATHER(gather_row_ranges_8, u64)
LODTENSOR_GATHER(gather_row_ranges_16, word16)

LODTENSOR_EXPORT(gather_row_ranges_1)
LODTENSOR_EXPORT(gather_row_ranges_2)
LODTENSOR_EXPORT(gather_row_ranges_4)
LODTENSOR_EXPORT(gather_row_ranges_8)
LODTENSOR_EXPORT(gather_row_ranges_16)
