// Data movement of the TensorArray ops whose inputs or outputs are several device tensors: one
// launch with an uploaded table of device pointers, never one launch per tensor. Words of W bytes
// (the host picks the widest that divides every row/block size and every address).

struct __align__(16) ta_word16 { u64 a, b; };

// out = blocks of rows from several sources: block k copies rows [starts[k], starts[k] + n) of the
// source at srcs[k] (n = dst_offsets[k+1] - dst_offsets[k]) to rows [dst_offsets[k],
// dst_offsets[k+1]) of out. Grid-stride over output words; the block is found by a binary search
// over the (small, cached) offsets, as in rows.cu.
template <typename W>
static __device__ void gather_sources(const u64 *__restrict__ srcs, const i64 *__restrict__ starts,
                                      const i64 *__restrict__ dst_offsets, unsigned int num_blocks, W *__restrict__ dst,
                                      u64 row_words, u64 total_rows) {
  const u64 total = total_rows * row_words;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
    const u64 row = i / row_words;
    const u64 col = i - row * row_words;
    unsigned int lo = 0, hi = num_blocks;
    while (hi - lo > 1) {
      const unsigned int mid = lo + (hi - lo) / 2;
      if ((u64)dst_offsets[mid] <= row) lo = mid; else hi = mid;
    }
    const W *src = (const W *)srcs[lo];
    dst[i] = src[((u64)starts[lo] + (row - (u64)dst_offsets[lo])) * row_words + col];
  }
}

#define LODTENSOR_GATHER_SOURCES(NAME, W)                                                              \
  extern "C" __global__ void NAME(const u64 *srcs, const i64 *starts, const i64 *dst_offsets,          \
                                  unsigned int num_blocks, W *dst, u64 row_words, u64 total_rows) {    \
    gather_sources<W>(srcs, starts, dst_offsets, num_blocks, dst, row_words, total_rows);              \
  }                                                                                                    \
  LODTENSOR_EXPORT(NAME)

LODTENSOR_GATHER_SOURCES(gather_sources_1, unsigned char)
LODTENSOR_GATHER_SOURCES(gather_sources_2, unsigned short)
LODTENSOR_GATHER_SOURCES(gather_sources_4, unsigned int)
LODTENSOR_GATHER_SOURCES(gather_sources_8, u64)
LODTENSOR_GATHER_SOURCES(gather_sources_16, ta_word16)

// Concatenation along an axis and its inverse, seen as `outer` rows of the whole tensor (`whole`,
// rows of `whole_words`) where piece p owns words [col_offsets[p], col_offsets[p] + piece_words[p])
// of each row and is itself `outer` rows of piece_words[p]. to_whole != 0: pieces -> whole
// (concat, stack); else whole -> pieces (unstack). blockIdx.y walks the pieces, so no search:
// reads and writes are runs of consecutive words.
template <typename W>
static __device__ void pieces(const u64 *__restrict__ piece_ptrs, const u64 *__restrict__ piece_words,
                              const u64 *__restrict__ col_offsets, unsigned int num_pieces, W *whole, u64 whole_words,
                              u64 outer, int to_whole) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (unsigned int p = blockIdx.y; p < num_pieces; p += gridDim.y) {
    const u64 pw = piece_words[p], off = col_offsets[p];
    W *piece = (W *)piece_ptrs[p];
    const u64 total = outer * pw;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
      const u64 o = i / pw;
      const u64 at = o * whole_words + off + (i - o * pw);
      if (to_whole) whole[at] = piece[i]; else piece[i] = whole[at];
    }
  }
}

#define LODTENSOR_PIECES(NAME, W)                                                                      \
  extern "C" __global__ void NAME(const u64 *piece_ptrs, const u64 *piece_words, const u64 *col_offsets, \
                                  unsigned int num_pieces, W *whole, u64 whole_words, u64 outer,        \
                                  int to_whole) {                                                      \
    pieces<W>(piece_ptrs, piece_words, col_offsets, num_pieces, whole, whole_words, outer, to_whole);   \
  }                                                                                                    \
  LODTENSOR_EXPORT(NAME)

LODTENSOR_PIECES(pieces_1, unsigned char)
LODTENSOR_PIECES(pieces_2, unsigned short)
LODTENSOR_PIECES(pieces_4, unsigned int)
LODTENSOR_PIECES(pieces_8, u64)
LODTENSOR_PIECES(pieces_16, ta_word16)
