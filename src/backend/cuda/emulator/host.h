// The CUDA built-ins that kernel files may use (see kernels/common.cuh), defined for the host so
// that the emulator compiles the kernel sources unchanged as C++20. A kernel exported with
// LODTENSOR_EXPORT runs its threads one after another on one host thread (they may not wait for
// each other); one exported with LODTENSOR_EXPORT_SYNC runs each block's threads as fibers of the
// launching host thread, each on a stack of its own: every thread runs until its next
// __syncthreads() (or its return), then the next one, so a barrier is a switch of stacks, not a
// wait of one host thread for another. Shared memory is statics (launches are serialised, and
// one block runs at a time). Atomics are std::atomic_ref operations. Under the race check
// (launch.cpp) every kernel's threads are fibers.
#pragma once
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__
#define __align__(n) alignas(n)
// A kernel's shared memory (kernels/common.cuh): a static. The race check also notes it for the
// launch, to forget its accesses before each further block (launch.cpp).
#if defined(__SANITIZE_THREAD__)
#define LODTENSOR_SHARED(T, name, ...) \
  static T name __VA_ARGS__;           \
  ::lodtensor_emulator::shared_memory(&name, sizeof name)
#else
#define LODTENSOR_SHARED(T, name, ...) static T name __VA_ARGS__
#endif
// Not __shared__ itself, which the race check would not know of.
#define __shared__ static_assert(false, "declare shared memory with LODTENSOR_SHARED (kernels/common.cuh)");
#define __launch_bounds__(...)

struct uint3 {
  unsigned int x, y, z;
};
struct dim3 {
  unsigned int x = 1, y = 1, z = 1;
};

namespace lodtensor_emulator {
// The calling thread's indices, and the launch's shape (one launch at a time).
inline thread_local uint3 thread_idx;
inline thread_local uint3 block_idx;
// Whether the calling host thread runs a block's threads as fibers (LODTENSOR_EXPORT_SYNC).
inline thread_local bool in_team = false;
inline dim3 block_dim;
inline dim3 grid_dim;
// A __syncthreads() in a kernel exported without _SYNC: a bug in the kernel file; aborts.
[[noreturn]] void barrier_outside_team();
// __syncthreads() in a team: the calling fiber waits there, and the next one runs.
void team_barrier();
// Under the race check: `bytes` at `p` are shared memory of the running launch's kernel.
void shared_memory(const void *p, std::size_t bytes);

template <typename T>
T bits_as(const auto &v) {
  static_assert(sizeof(T) == sizeof(v));
  T t;
  std::memcpy(&t, &v, sizeof t);
  return t;
}
}  // namespace lodtensor_emulator

#define threadIdx (::lodtensor_emulator::thread_idx)
#define blockIdx (::lodtensor_emulator::block_idx)
#define blockDim (::lodtensor_emulator::block_dim)
#define gridDim (::lodtensor_emulator::grid_dim)

inline void __syncthreads() {
  if (!::lodtensor_emulator::in_team) ::lodtensor_emulator::barrier_outside_team();
  ::lodtensor_emulator::team_barrier();
}
#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer models no fences. (What a fence orders on a GPU, a block's writes before its
// atomic that another block's atomic reads, the emulator's atomics order for the race check: they
// are sequentially consistent, ThreadSanitizer's acquire and release. So a missing fence goes
// unseen.)
inline void __threadfence() {}
#else
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

template <typename T>
inline T __ldg(const T *p) { return *p; }

inline float __uint_as_float(unsigned int v) { return lodtensor_emulator::bits_as<float>(v); }
inline unsigned int __float_as_uint(float v) { return lodtensor_emulator::bits_as<unsigned int>(v); }
inline float __int_as_float(int v) { return lodtensor_emulator::bits_as<float>(v); }
inline int __float_as_int(float v) { return lodtensor_emulator::bits_as<int>(v); }
inline double __longlong_as_double(long long v) { return lodtensor_emulator::bits_as<double>(v); }
inline long long __double_as_longlong(double v) { return lodtensor_emulator::bits_as<long long>(v); }
// The position of the lowest set bit, from 1; 0 for none.
inline int __ffs(int x) { return x == 0 ? 0 : std::countr_zero((unsigned int)x) + 1; }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
// Arithmetic rounded to nearest even that may not be fused into an FMA (ISO C++ does not contract
// across these calls; x86-64 without -mfma has no FMA anyway).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline double __dadd_rn(double a, double b) { return a + b; }
inline double __dmul_rn(double a, double b) { return a * b; }

// CUDA's overloaded min/max of equal argument types.
#define LODTENSOR_EMULATOR_MINMAX(T)                \
  inline T min(T a, T b) { return b < a ? b : a; } \
  inline T max(T a, T b) { return a < b ? b : a; }
LODTENSOR_EMULATOR_MINMAX(int)
LODTENSOR_EMULATOR_MINMAX(unsigned int)
LODTENSOR_EMULATOR_MINMAX(long long)
LODTENSOR_EMULATOR_MINMAX(unsigned long long)
LODTENSOR_EMULATOR_MINMAX(float)
LODTENSOR_EMULATOR_MINMAX(double)
#undef LODTENSOR_EMULATOR_MINMAX

// Atomics return the old value, like CUDA's.
template <typename T>
inline T atomicAdd(T *p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <typename T>
inline T atomicExch(T *p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <typename T>
inline T atomicCAS(T *p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;
}
template <typename T>
inline T atomicMax(T *p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <typename T>
inline T atomicMin(T *p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}

// Registration of the kernels by name: LODTENSOR_EXPORT(name) after each kernel.
namespace lodtensor_emulator {
using Invoke = void (*)(void *kernel, void **params);
// `module`: the kernel module (kernel file, or variant of one) whose source defines the kernel.
// `params`: how many parameters the kernel takes, which a launch must pass.
void register_kernel(const char *module, const char *name, void *kernel, Invoke invoke, unsigned params,
                     bool cooperative);

template <typename... A, std::size_t... I>
void call(void (*f)(A...), void **params, std::index_sequence<I...>) {
  f(*static_cast<std::remove_cvref_t<A> *>(params[I])...);
}

template <typename... A>
struct Registrar {
  Registrar(const char *module, const char *name, void (*f)(A...), bool cooperative) {
    register_kernel(
        module, name, reinterpret_cast<void *>(f),
        [](void *kernel, void **params) {
          call(reinterpret_cast<void (*)(A...)>(kernel), params, std::index_sequence_for<A...>{});
        },
        unsigned(sizeof...(A)), cooperative);
  }
};
}  // namespace lodtensor_emulator

#define LODTENSOR_UNROLL
#define LODTENSOR_ROLLED
// `lodtensor_module` is the module's name, which build.rs defines in each kernel file's namespace.
#define LODTENSOR_EXPORT(name) \
  static ::lodtensor_emulator::Registrar lodtensor_registrar_##name(lodtensor_module, #name, &name, false);
#define LODTENSOR_EXPORT_SYNC(name) \
  static ::lodtensor_emulator::Registrar lodtensor_registrar_##name(lodtensor_module, #name, &name, true);
