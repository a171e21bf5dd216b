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

// Rows of a tile of narrow_pieces: tensor_array.rs's NARROW_ROWS, the same number.
#define NARROW_ROWS 32

// One phase of narrow_tiles: from one side into the tile, every load before the first store, then
// out to the other side. `from(u)` and `to(u)` give word u of the thread's place in memory and in
// the tile (no place: a null `mem`). A template, not a generic lambda: NVRTC of CUDA 13.0 takes
// a generic lambda's call operator for a host function and refuses it.
template <typename W, unsigned int EACH, typename From, typename To>
static __device__ __forceinline__ void narrow_move(W (*tile)[33], From from, To to) {
  W v[EACH];
  LODTENSOR_UNROLL
  for (unsigned int u = 0; u < EACH; u++) {
    const auto p = from(u);
    if (p.mem) v[u] = *p.mem;
  }
  LODTENSOR_UNROLL
  for (unsigned int u = 0; u < EACH; u++) {
    const auto p = from(u);
    if (p.mem) tile[p.row][p.col] = v[u];
  }
  __syncthreads();
  LODTENSOR_UNROLL
  for (unsigned int u = 0; u < EACH; u++) {
    const auto p = to(u);
    if (p.mem) *p.mem = tile[p.row][p.col];
  }
}

// Pieces of one size, each row of them narrower than a 32-byte sector (stack, unstack, and concat
// of equal pieces along an inner axis): in `pieces`, a warp's 32 words on the whole's side lie a
// row apart, a sector moved for each word. Here a block moves tiles of NARROW_ROWS rows by the
// words of 32 / pw pieces through shared memory instead, so that the whole's side moves in runs
// of a tile's row and each piece's in runs of the tile's rows. Tiles go piece group first: the
// blocks running at once cover whole rows of the whole. A thread loads its EACH words of a phase
// before it stores any, so that as many reads are in flight.
template <typename W>
static __device__ __forceinline__ void narrow_tiles(W (*tile)[33], const u64 *__restrict__ piece_ptrs,
                                                    unsigned int num_pieces, unsigned int pw, W *whole, u64 outer,
                                                    int to_whole) {
  constexpr unsigned int EACH = NARROW_ROWS * 32 / STRIDE_THREADS;
  const unsigned int per = 32 / pw, run = NARROW_ROWS * pw;  // pieces a tile, words of each
  const u64 piece_tiles = (num_pieces + per - 1) / per, row_tiles = (outer + NARROW_ROWS - 1) / NARROW_ROWS;
  const u64 whole_words = (u64)num_pieces * pw;
  for (u64 t = blockIdx.x; t < piece_tiles * row_tiles; t += gridDim.x) {
    const unsigned int p0 = (unsigned int)(t % piece_tiles) * per;
    const u64 o0 = t / piece_tiles * NARROW_ROWS;
    const unsigned int pieces = min(per, num_pieces - p0), rows = (unsigned int)min((u64)NARROW_ROWS, outer - o0);
    const unsigned int span = pieces * pw;  // words of a row in this tile
    W *row0 = whole + o0 * whole_words + (u64)p0 * pw;
    // Word u of a thread in a phase is i = threadIdx.x + u * STRIDE_THREADS: tile row i / 32,
    // column i % 32 on the whole's side; word k = i % run of piece i / run on a piece's side (tile
    // row k / pw). The compiler drops the divisions by pw and run for pw = 1 (narrow_pieces). Each
    // side gives the word's place in memory and in the tile, or no place outside the tile.
    struct Place {
      W *mem;
      unsigned int row, col;
    };
    auto on_whole = [&](unsigned int u) -> Place {
      const unsigned int i = threadIdx.x + u * STRIDE_THREADS, r = i / 32, c = i % 32;
      if (r < rows && c < span) return {row0 + r * whole_words + c, r, c};
      return {nullptr, 0, 0};
    };
    auto on_piece = [&](unsigned int u) -> Place {
      const unsigned int i = threadIdx.x + u * STRIDE_THREADS, q = i / run, k = i - q * run, r = k / pw;
      if (q < pieces && r < rows) return {(W *)piece_ptrs[p0 + q] + o0 * pw + k, r, q * pw + (k - r * pw)};
      return {nullptr, 0, 0};
    };
    if (to_whole)
      narrow_move<W, EACH>(tile, on_piece, on_whole);
    else
      narrow_move<W, EACH>(tile, on_whole, on_piece);
    // The next tile's first phase overwrites what this one's last phase reads.
    __syncthreads();
  }
}

template <typename W>
static __device__ void narrow_pieces(const u64 *__restrict__ piece_ptrs, unsigned int num_pieces, unsigned int pw,
                                     W *whole, u64 outer, int to_whole) {
  // A row of 33 words: a column of the tile, read a word a thread, falls in 32 banks.
  LODTENSOR_SHARED(W, tile, [NARROW_ROWS][33]);
  // pw is 1 but where the word had to be narrower than the row; that case gets its own copy of
  // the loops, with a constant divisor.
  if (pw == 1)
    narrow_tiles<W>(tile, piece_ptrs, num_pieces, 1, whole, outer, to_whole);
  else
    narrow_tiles<W>(tile, piece_ptrs, num_pieces, pw, whole, outer, to_whole);
}

// Blocks of STRIDE_THREADS threads.
#define LODTENSOR_NARROW_PIECES(NAME, W)                                                                  \
  extern "C" __global__ void NAME(const u64 *piece_ptrs, unsigned int num_pieces, unsigned int pw, W *whole, \
                                  u64 outer, int to_whole) {                                             \
    narrow_pieces<W>(piece_ptrs, num_pieces, pw, whole, outer, to_whole);                                \
  }                                                                                                       \
  LODTENSOR_EXPORT_SYNC(NAME)

LODTENSOR_NARROW_PIECES(narrow_pieces_1, unsigned char)
LODTENSOR_NARROW_PIECES(narrow_pieces_2, unsigned short)
LODTENSOR_NARROW_PIECES(narrow_pieces_4, unsigned int)
LODTENSOR_NARROW_PIECES(narrow_pieces_8, u64)
LODTENSOR_NARROW_PIECES(narrow_pieces_16, word16)
