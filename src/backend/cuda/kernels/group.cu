// Grouping by key on the device, for the ops that add several values into one place in the CPU's
// order (scatter_rows ADD, sequence_scatter): positions 0..n sorted by their keys, stably (an LSD radix sort of 8
// bits a pass over the key bits in use), then each key's first place in that order. Stable, so the
// positions of one key stay increasing. Also the exclusive scan the sort places by. Every count
// is 64-bit: no input size has a limit here.

#define RADIX_BITS 8
// Threads per block of the radix kernels: thread d of a block owns digit d.
#define RADIX_DIGITS 256
// Keys per block and tile of a pass.
#define RADIX_TILE 1024
#define SCAN_THREADS 256
#define SCAN_ITEMS 8
#define SCAN_TILE (SCAN_THREADS * SCAN_ITEMS)

// One tile of a pass: its keys and values are read into shared memory, then thread d walks them in
// order and calls visit(key, value) for each whose digit (at `shift`) is d. A thread sees its
// digit's keys in position order: that is what keeps the sort stable. All threads read the same
// key each step (one broadcast read of shared memory for the block).
template <typename Visit>
__device__ void radix_walk(const u64 *__restrict__ keys, const u64 *__restrict__ vals, u64 n, u32 shift, u64 tile,
                           Visit visit) {
  LODTENSOR_SHARED(u64, tile_keys, [RADIX_TILE]);
  LODTENSOR_SHARED(u64, tile_vals, [RADIX_TILE]);
  const u64 first = tile * RADIX_TILE;
  const u32 len = (u32)min((u64)RADIX_TILE, n - first);
  for (u32 k = threadIdx.x; k < len; k += blockDim.x) {
    tile_keys[k] = keys[first + k];
    // The first pass sorts the positions themselves.
    tile_vals[k] = vals ? vals[first + k] : first + k;
  }
  __syncthreads();
  const u64 digit = threadIdx.x;
  for (u32 k = 0; k < len; k++) {
    const u64 key = tile_keys[k];
    if (((key >> shift) & (RADIX_DIGITS - 1)) == digit) visit(key, tile_vals[k]);
  }
  __syncthreads();  // before the next tile overwrites the shared arrays
}

// counts[d * tiles + t] = the keys of tile t whose digit is d: laid out digit by digit, so that the
// exclusive scan of `counts` is where each tile's keys of each digit go.
extern "C" __global__ void radix_count(const u64 *keys, u64 n, u32 shift, u64 tiles, u64 *counts) {
  for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    u64 c = 0;
    radix_walk(keys, nullptr, n, shift, t, [&](u64, u64) { c++; });
    counts[threadIdx.x * tiles + t] = c;
  }
}
LODTENSOR_EXPORT_SYNC(radix_count)

// The pass's stable placement: tile t's keys of digit d go, in order, from starts[d * tiles + t]
// on. `vals` null: the values are the positions (the first pass).
extern "C" __global__ void radix_place(const u64 *keys, const u64 *vals, u64 n, u32 shift, u64 tiles,
                                       const u64 *starts, u64 *keys_out, u64 *vals_out) {
  for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    u64 at = starts[threadIdx.x * tiles + t];
    radix_walk(keys, vals, n, shift, t, [&](u64 key, u64 val) {
      keys_out[at] = key;
      vals_out[at] = val;
      at++;
    });
  }
}
LODTENSOR_EXPORT_SYNC(radix_place)

// Exclusive scan of data[0..n) in place within each tile of SCAN_TILE values; each tile's total goes
// to sums[tile]. A thread takes SCAN_ITEMS consecutive values; the threads' totals are scanned in
// shared memory (Hillis-Steele).
extern "C" __global__ void scan_tiles(u64 *data, u64 n, u64 tiles, u64 *sums) {
  LODTENSOR_SHARED(u64, part, [SCAN_THREADS]);
  for (u64 t = blockIdx.x; t < tiles; t += gridDim.x) {
    const u64 base = t * SCAN_TILE + (u64)threadIdx.x * SCAN_ITEMS;
    u64 v[SCAN_ITEMS];
    u64 total = 0;
    LODTENSOR_UNROLL
    for (u32 j = 0; j < SCAN_ITEMS; j++) {
      v[j] = base + j < n ? data[base + j] : 0;
      total += v[j];
    }
    part[threadIdx.x] = total;
    __syncthreads();
    for (u32 s = 1; s < SCAN_THREADS; s <<= 1) {
      const u64 before = threadIdx.x >= s ? part[threadIdx.x - s] : 0;
      __syncthreads();
      part[threadIdx.x] += before;
      __syncthreads();
    }
    u64 run = part[threadIdx.x] - total;
    LODTENSOR_UNROLL
    for (u32 j = 0; j < SCAN_ITEMS; j++) {
      if (base + j < n) data[base + j] = run;
      run += v[j];
    }
    if (threadIdx.x == SCAN_THREADS - 1) sums[t] = part[threadIdx.x];
    __syncthreads();  // before the next tile overwrites `part`
  }
}
LODTENSOR_EXPORT_SYNC(scan_tiles)

// data[i] += offsets[tile of i]: the tiles' scanned totals added to their values.
extern "C" __global__ void scan_add(u64 *data, u64 n, const u64 *offsets) {
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x)
    data[i] += offsets[i / SCAN_TILE];
}
LODTENSOR_EXPORT(scan_add)

// starts[k] = the first place q with sorted[q] >= k, for k in [0, key_count]: key k's values are
// places [starts[k], starts[k + 1]) of the sorted order.
extern "C" __global__ void key_starts(const u64 *sorted, u64 n, u64 key_count, u64 *starts) {
  for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k <= key_count; k += (u64)gridDim.x * blockDim.x) {
    u64 lo = 0, hi = n;
    while (lo < hi) {
      const u64 mid = lo + (hi - lo) / 2;
      if (sorted[mid] < k)
        lo = mid + 1;
      else
        hi = mid;
    }
    starts[k] = lo;
  }
}
LODTENSOR_EXPORT(key_starts)
