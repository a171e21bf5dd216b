// Concatenation and splitting along an axis for the TensorArray ops whose inputs or outputs are
// several device tensors: one launch with an uploaded table of device pointers, never one launch
// per tensor. Words of W bytes (the host picks the widest that divides every size and address).
// (Row blocks from several tensors, as pack needs, are the concat kernel of sequence_misc.cu.)

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
LODTENSOR_PIECES(pieces_16, word16)
