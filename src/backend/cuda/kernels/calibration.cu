// The read calibration of the GPU benchmark (benches/gpu.rs), used by no operator: a read-only
// pass over a tensor's bytes, in 8-byte words (grid-stride, consecutive threads on consecutive
// words: coalesced). Each thread adds its words and then makes one atomicAdd into *out, so the
// reads cannot be optimised away and no atomic sits in the loop.
extern "C" __global__ void read_sum_u64(const u64 *x, u64 words, u64 *out) {
  u64 acc = 0;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) acc += x[i];
  atomicAdd(out, acc);
}
LODTENSOR_EXPORT(read_sum_u64)
