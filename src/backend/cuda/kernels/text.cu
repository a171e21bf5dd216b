// utf8_check: whether bytes are UTF-8 string by string, where the strings are consecutive runs of
// the bytes that start at given offsets (a LoD level's). Bytes that are UTF-8 as a whole and have
// every string start at a character are UTF-8 string by string, so the kernel checks each byte
// where it lies, with no walk along a string: a thread per byte (or per offset) looks at most 3
// bytes either side of it, which its neighbours read too (served from cache).

// Whether b continues a character (10xxxxxx).
__device__ __forceinline__ bool lt_utf8_continues(u8 b) { return (b & 0xC0) == 0x80; }

// The length of the character that lead byte b starts (1-4), 0 for a byte that starts none: a
// continuation, C0 and C1 (always overlong), F5-FF (past U+10FFFF).
__device__ __forceinline__ u32 lt_utf8_length(u8 b) {
  if (b < 0x80) return 1;
  if (b < 0xC2) return 0;
  if (b < 0xE0) return 2;
  if (b < 0xF0) return 3;
  return b < 0xF5 ? 4 : 0;
}

// Whether byte i of bytes[0, n) is where UTF-8 allows it. A lead byte: its character is complete
// within the bytes and its second byte in the range the lead allows (no overlong form, no
// surrogate, nothing past U+10FFFF; RFC 3629's table). A continuation: the nearest lead before it,
// within 3 bytes, starts a character long enough to hold it. Every byte of the bytes so placed is
// exactly UTF-8 as a whole.
__device__ __forceinline__ bool lt_utf8_byte_ok(const u8 *__restrict__ bytes, u64 n, u64 i) {
  const u8 b = bytes[i];
  if (lt_utf8_continues(b)) {
    for (u32 back = 1; back <= 3 && back <= i; back++) {
      const u8 lead = bytes[i - back];
      if (!lt_utf8_continues(lead)) return lt_utf8_length(lead) > back;
    }
    return false;
  }
  const u32 len = lt_utf8_length(b);
  if (len == 0 || i + len > n) return false;
  if (len == 1) return true;
  const u8 second = bytes[i + 1];
  u8 lo = 0x80, hi = 0xBF;
  if (b == 0xE0) lo = 0xA0;
  if (b == 0xED) hi = 0x9F;
  if (b == 0xF0) lo = 0x90;
  if (b == 0xF4) hi = 0x8F;
  if (second < lo || second > hi) return false;
  for (u32 k = 2; k < len; k++)
    if (!lt_utf8_continues(bytes[i + k])) return false;
  return true;
}

// Counts into *bad, once a thread at most, when bytes[0, n) are not UTF-8 or one of the
// `num_offsets` offsets below n falls inside a character. Items [0, n) are the bytes, [n, n +
// num_offsets) the offsets.
extern "C" __global__ void utf8_check(const u8 *bytes, u64 n, const i64 *offsets, u64 num_offsets, u32 *bad) {
  bool broken = false;
  for_each_index<bool>(
      n + num_offsets,
      [&](u64 i) -> bool {
        if (i < n) return !lt_utf8_byte_ok(bytes, n, i);
        const u64 at = (u64)offsets[i - n];
        return at < n && lt_utf8_continues(bytes[at]);
      },
      [&](u64, bool b) { broken = broken || b; });
  if (broken) atomicAdd(bad, 1u);
}
LODTENSOR_EXPORT(utf8_check)
