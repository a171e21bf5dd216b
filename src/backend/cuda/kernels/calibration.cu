// The read calibration of the GPU speed tests and benchmark (benches/gpu.rs), used by no operator:
// one read-only pass over a tensor's bytes in 8-byte words (grid-stride, consecutive threads on
// consecutive words: coalesced). Each block writes its sum to out[blockIdx.x], so the reads cannot
// be optimised away and no atomic or contended address sits in the timed work.
extern "C" __global__ void read_sum_u64(const u64 *x, u64 words, u64 *out) {
  LODTENSOR_SHARED(u64, part, [256]);
  u64 acc = 0;
  const u64 stride = (u64)gridDim.x * blockDim.x;
  for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += stride) acc += x[i];
  part[threadIdx.x] = acc;
  __syncthreads();
  for (u32 s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}
LODTENSOR_EXPORT_SYNC(read_sum_u64)
