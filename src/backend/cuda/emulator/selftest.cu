// Kernels that test the emulator itself (emulator.rs's unit tests): block barriers, __shared__
// memory, atomics and the thread/block indices of 3-D launches. Compiled into the emulator only.

// Sum of x[0..n) into *out: a grid-stride partial sum per thread, a shared-memory tree per block,
// one atomicAdd per block. Wrong barriers or shared memory give a wrong sum.
extern "C" __global__ void emulator_block_sum(const i32 *x, i32 *out, u32 n) {
  LODTENSOR_SHARED(i32, partial, [256]);
  const u32 t = threadIdx.x;
  i32 s = 0;
  for (u32 i = blockIdx.x * blockDim.x + t; i < n; i += gridDim.x * blockDim.x) s += x[i];
  partial[t] = s;
  __syncthreads();
  for (u32 w = blockDim.x / 2; w > 0; w /= 2) {
    if (t < w) partial[t] += partial[t + w];
    __syncthreads();
  }
  if (t == 0) atomicAdd(out, partial[0]);
}
LODTENSOR_EXPORT_SYNC(emulator_block_sum)

// Every thread of a 3-D grid of 3-D blocks writes its linear global index at that index.
extern "C" __global__ void emulator_indices(u32 *out) {
  const u32 block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  const u32 thread = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  const u32 at = block * (blockDim.x * blockDim.y * blockDim.z) + thread;
  out[at] = at;
}
LODTENSOR_EXPORT(emulator_indices)

// Every thread takes the next ticket: out[its linear global index] = the order in which it ran.
extern "C" __global__ void emulator_tickets(u32 *counter, u32 *out) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = atomicAdd(counter, 1u);
}
LODTENSOR_EXPORT(emulator_tickets)

// Each block, once all its threads have arrived, takes the next ticket: out[block] = the order in
// which the blocks ran.
extern "C" __global__ void emulator_block_tickets(u32 *counter, u32 *out) {
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = atomicAdd(counter, 1u);
}
LODTENSOR_EXPORT_SYNC(emulator_block_tickets)

// Each thread takes a ticket, waits at a barrier, and takes another: out[p * blockDim.x + t] =
// the order in which thread t took its ticket of phase p.
extern "C" __global__ void emulator_phase_tickets(u32 *counter, u32 *out) {
  for (u32 p = 0; p < 2; p++) {
    out[p * blockDim.x + threadIdx.x] = atomicAdd(counter, 1u);
    __syncthreads();
  }
}
LODTENSOR_EXPORT_SYNC(emulator_phase_tickets)

// Threads below `returning` return at once; the others wait at a barrier (a kernel bug unless
// `returning` is 0 or the block's size).
extern "C" __global__ void emulator_early_return(u32 returning) {
  if (threadIdx.x < returning) return;
  __syncthreads();
}
LODTENSOR_EXPORT_SYNC(emulator_early_return)

// The race check's tests. Every thread adds one to a __shared__ count without an atomic: a race
// between the threads of a block, though running them in turn gives the right count.
extern "C" __global__ void emulator_racy_count(u32 *out) {
  LODTENSOR_SHARED(u32, count);
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  count += 1;
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = count;
}
LODTENSOR_EXPORT_SYNC(emulator_racy_count)

// The same count taken with atomicAdd: no race.
extern "C" __global__ void emulator_atomic_count(u32 *out) {
  LODTENSOR_SHARED(u32, count);
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  atomicAdd(&count, 1u);
  __syncthreads();
  if (threadIdx.x == 0) out[blockIdx.x] = count;
}
LODTENSOR_EXPORT_SYNC(emulator_atomic_count)

// Every thread of a block writes one word of global memory: a race between the threads of a
// kernel without barriers.
extern "C" __global__ void emulator_racy_store(u32 *out) { out[blockIdx.x] = threadIdx.x; }
LODTENSOR_EXPORT(emulator_racy_store)

// Thread 0 of every block writes one word of global memory: a race between the blocks of a launch.
extern "C" __global__ void emulator_racy_blocks(u32 *out) {
  if (threadIdx.x == 0) out[0] = blockIdx.x;
}
LODTENSOR_EXPORT(emulator_racy_blocks)
