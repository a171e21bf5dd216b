// sequence_pad: slot s of the output holds the rows of sequence s, then copies of the pad row up
// to `padded` rows, and lengths[s] is the sequence's length. One launch for all sequences, from
// the one upload of the offsets; for_each_index over the output's words (W bytes, the widest word
// that divides the row and the three addresses): consecutive threads write consecutive words, and
// the sequence of a word is a division, not a search.

// A pad value of one element of `elem` bytes (1, 2, 4 or 8) repeated into a word of W bytes
// (whole elements: W is a multiple of elem).
__device__ __forceinline__ void lt_word_of(u8 &w, u64 v) { w = (u8)v; }
__device__ __forceinline__ void lt_word_of(u16 &w, u64 v) { w = (u16)v; }
__device__ __forceinline__ void lt_word_of(u32 &w, u64 v) { w = (u32)v; }
__device__ __forceinline__ void lt_word_of(u64 &w, u64 v) { w = v; }
__device__ __forceinline__ void lt_word_of(word16 &w, u64 v) { w.a = v; w.b = v; }

template <typename W>
__device__ __forceinline__ W lt_repeated(const W *pad, u32 elem) {
  const u8 *p = (const u8 *)pad;
  u64 v = elem == 1 ? p[0] : elem == 2 ? *(const u16 *)p : elem == 4 ? *(const u32 *)p : *(const u64 *)p;
  for (u32 s = elem; s < 8; s *= 2) v |= v << (8 * s);
  W w;
  lt_word_of(w, v);
  return w;
}

// N: the type of the index arithmetic (LODTENSOR_NARROW_AND_WIDE). `pad` is a whole pad row
// (pad_elem 0), or one element of pad_elem bytes, no more than W (every address is a multiple of
// its elements' size, so the host's word is at least one element), repeated into each pad word
// where it is stored: no pad row is made first, and a word kept for the whole loop would cost
// the 16-byte kernel a spill.
template <typename W, typename N>
__device__ void pad_rows(const W *__restrict__ src, W *__restrict__ dst, const W *__restrict__ pad, u32 pad_elem,
                         u64 row_words, u64 padded, const i64 *__restrict__ offsets, u64 total,
                         i64 *__restrict__ lengths, u64 sequences) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 s = (u64)blockIdx.x * blockDim.x + threadIdx.x; s < sequences; s += stride)
    lengths[s] = offsets[s + 1] - offsets[s];
  for_each_index<W>(
      total,
      [&](u64 i) {
        const N row = (N)i / (N)row_words;
        const N col = (N)i - row * (N)row_words;
        const N seq = row / (N)padded;
        const N step = row - seq * (N)padded;
        const i64 start = offsets[seq];
        if ((i64)step < offsets[seq + 1] - start) return src[((u64)start + step) * row_words + col];
        return pad_elem == 0 ? pad[col] : lt_repeated(pad, pad_elem);
      },
      [&](u64 i, W v) { dst[i] = v; });
}

#define LODTENSOR_PAD(W, SUFFIX)                                                                    \
  LODTENSOR_NARROW_AND_WIDE(pad_rows_##SUFFIX,                                                      \
                            (const W *src, W *dst, const W *pad, u32 pad_elem, u64 row_words,       \
                             u64 padded, const i64 *offsets, u64 total, i64 *lengths, u64 sequences), \
                            (pad_rows<W, Index>(src, dst, pad, pad_elem, row_words, padded, offsets, total, \
                                                lengths, sequences)))

LODTENSOR_PAD(u8, 1)
LODTENSOR_PAD(u16, 2)
LODTENSOR_PAD(u32, 4)
LODTENSOR_PAD(u64, 8)
LODTENSOR_PAD(word16, 16)

// dst[0..n) = value[0]: one pad element repeated into a pad row (and fill's kernel), E bytes each.
template <typename E>
__device__ void broadcast(const E *__restrict__ value, E *__restrict__ dst, u64 n) {
  const u64 stride = (u64)gridDim.x * blockDim.x;
  const E v = value[0];
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = v;
}

#define LODTENSOR_BROADCAST(NAME, E)                                                 \
  extern "C" __global__ void NAME(const E *value, E *dst, u64 n) { broadcast<E>(value, dst, n); } \
  LODTENSOR_EXPORT(NAME)

LODTENSOR_BROADCAST(broadcast_1, u8)
LODTENSOR_BROADCAST(broadcast_2, u16)
LODTENSOR_BROADCAST(broadcast_4, u32)
LODTENSOR_BROADCAST(broadcast_8, u64)
