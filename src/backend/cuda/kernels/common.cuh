// Put in front of every kernel file, for NVRTC and for the emulator alike.
//
// Rules every kernel file follows, so that it runs the same on a GPU and on the emulator (which
// compiles it as C++20 and runs each block's threads as host threads; see emulator/host.h):
// - Every `extern "C" __global__` kernel is listed once after it, with LODTENSOR_EXPORT(name),
//   or LODTENSOR_EXPORT_SYNC(name) when it calls __syncthreads() (the emulator runs the threads
//   of such a kernel's blocks at once; the others one by one). Names are unique across files.
// - Kernel parameters are pointers or integers/floats of at most 8 bytes.
// - Block-wide cooperation uses __shared__ arrays of fixed size and __syncthreads() only, reached
//   by every thread of the block (no early return before a barrier); no warp intrinsics
//   (__shfl_*, __ballot_*, ...), no dynamic shared memory, at most 1024 threads per block.
// - Only the built-ins that emulator/host.h provides: the math functions of <cmath> (expf, logf,
//   sqrtf, fmaxf, ...), min/max, atomicAdd/atomicMax/atomicMin/atomicCAS/atomicExch on 32- and
//   64-bit integers and atomicAdd on float/double, __float_as_uint and friends.

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef int i32;
typedef unsigned long long u64;
typedef long long i64;

#ifndef LODTENSOR_EXPORT
#define LODTENSOR_EXPORT(name)
#define LODTENSOR_EXPORT_SYNC(name)
#endif
