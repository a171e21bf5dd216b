// The emulator's launcher, called from emulator.rs: finds a registered kernel by name and runs its
// grid on the calling thread. A cooperative kernel (LODTENSOR_EXPORT_SYNC) runs each block's
// threads as fibers, each on a stack of its own: in each phase every thread runs until its next
// __syncthreads() or its return, one after another; when all wait at the barrier the next phase
// begins, and when all have returned the next block. Any other kernel runs every thread of every
// block in turn. With a non-zero seed the blocks, and the threads that run in turn (in each phase
// anew), go in an order drawn from it rather than in index order: a GPU promises no order, and a
// kernel that leans on one (a block that must finish before another, a thread that reads what
// another writes in the same phase) then fails its tests here too. A phase's threads do not
// interleave, so a race of two threads' read-modify-writes on one word goes unseen.

#include <sys/mman.h>
#include <setjmp.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define VALGRIND_STACK_REGISTER(start, end) 0
#endif

namespace lodtensor_emulator {
namespace {
struct Kernel {
  const char *module;
  void *function;
  Invoke invoke;
  bool cooperative;
};

std::map<std::string, Kernel> &registry() {
  static std::map<std::string, Kernel> kernels;
  return kernels;
}

std::mutex launch_lock;
const char *running = "";

// The order in which to run n blocks or threads: empty for index order (seed 0, or too many to
// list), else 0..n-1 shuffled (Fisher-Yates over splitmix64 draws, advancing the seed).
std::vector<unsigned> order_of(unsigned long long n, unsigned long long &seed) {
  if (seed == 0 || n > 1u << 24) return {};
  std::vector<unsigned> order(n);
  std::iota(order.begin(), order.end(), 0u);
  for (unsigned i = n; i > 1; i--) {
    seed += 0x9e3779b97f4a7c15ull;
    unsigned long long z = seed;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    std::swap(order[i - 1], order[z % i]);
  }
  return order;
}

// A thread of a cooperative block. It starts on a context of its own (makecontext), then goes
// back and forth with _setjmp and _longjmp, which save no signal mask: a swapcontext would make a
// system call at each switch, and a barrier takes two switches a thread.
struct Fiber {
  ucontext_t start;
  jmp_buf at_barrier;
  // Each run of a thread ends at a barrier (Waits) or at its return (Returned).
  enum State { Starts, Waits, Returned } state;
};

// The block running now (launches are serialised): its kernel, its threads, the one running, and
// where the launcher waits for a thread to come back at a barrier or at its end.
struct Team {
  const Kernel *kernel;
  void **params;
  std::vector<Fiber> threads;
  unsigned current;
  jmp_buf launcher;
};
Team *team = nullptr;

void thread_main() {
  team->kernel->invoke(team->kernel->function, team->params);
  team->threads[team->current].state = Fiber::Returned;
  _longjmp(team->launcher, 1);
}

// Each fiber's stack, mapped at first need and kept for later launches, with a page below it that
// faults: a kernel that overflows its stack stops there rather than writing over another's.
constexpr std::size_t stack_bytes = 256 << 10;
const std::vector<char *> &stacks(std::size_t n) {
  static std::vector<char *> mapped;
  static const std::size_t page = sysconf(_SC_PAGESIZE);
  while (mapped.size() < n) {
    void *p = mmap(nullptr, page + stack_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED || mprotect(p, page, PROT_NONE) != 0) {
      std::perror("cuda emulator: mapping a thread's stack");
      std::abort();
    }
    char *stack = static_cast<char *>(p) + page;
    // So that valgrind takes a jump to this stack for a switch of stacks, not a deep call.
    (void)VALGRIND_STACK_REGISTER(stack, stack + stack_bytes);
    mapped.push_back(stack);
  }
  return mapped;
}
}  // namespace

void team_barrier() {
  Fiber &self = team->threads[team->current];
  self.state = Fiber::Waits;
  if (_setjmp(self.at_barrier) == 0) _longjmp(team->launcher, 1);
}

void register_kernel(const char *module, const char *name, void *kernel, Invoke invoke, bool cooperative) {
  registry()[name] = Kernel{module, kernel, invoke, cooperative};
}

void barrier_outside_team() {
  std::fprintf(stderr, "cuda emulator: kernel %s calls __syncthreads(); export it with LODTENSOR_EXPORT_SYNC\n",
               running);
  std::abort();
}
}  // namespace lodtensor_emulator

// The module (kernel file, or variant of one) that defines kernel `name`; null for no such kernel.
extern "C" const char *lodtensor_emulator_module_of(const char *name) {
  const auto it = lodtensor_emulator::registry().find(name);
  return it == lodtensor_emulator::registry().end() ? nullptr : it->second.module;
}

// 0: ran; 1: no kernel of that name; 2: a bad launch shape; 3: threads of a block that disagree
// about a barrier (some returned while others wait at it). `seed`: 0 runs blocks and threads in
// index order, any other value in an order drawn from it.
extern "C" int lodtensor_emulator_launch(const char *name, const unsigned grid[3], const unsigned block[3],
                                          void **params, unsigned long long seed) {
  using namespace lodtensor_emulator;
  const auto it = registry().find(name);
  if (it == registry().end()) return 1;
  const Kernel kernel = it->second;
  const unsigned long long threads = 1ull * block[0] * block[1] * block[2];
  const unsigned long long blocks = 1ull * grid[0] * grid[1] * grid[2];
  if (threads == 0 || threads > 1024 || grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return 2;
  std::lock_guard<std::mutex> guard(launch_lock);
  grid_dim = dim3{grid[0], grid[1], grid[2]};
  block_dim = dim3{block[0], block[1], block[2]};
  running = name;
  const std::vector<unsigned> block_order = order_of(blocks, seed);
  // Block i of the run: its x, y and z.
  const auto block_at = [&](unsigned long long i) {
    const unsigned long long b = block_order.empty() ? i : block_order[i];
    return uint3{unsigned(b % grid[0]), unsigned(b / grid[0] % grid[1]), unsigned(b / (1ull * grid[0] * grid[1]))};
  };
  const auto thread_at = [&](unsigned t) {
    return uint3{t % block[0], t / block[0] % block[1], t / (block[0] * block[1])};
  };
  if (!kernel.cooperative) {
    const std::vector<unsigned> thread_order = order_of(threads, seed);
    for (unsigned long long i = 0; i < blocks; i++) {
      block_idx = block_at(i);
      for (unsigned t = 0; t < threads; t++) {
        thread_idx = thread_at(thread_order.empty() ? t : thread_order[t]);
        kernel.invoke(kernel.function, params);
      }
    }
    return 0;
  }
  const std::vector<char *> &stack = stacks(threads);
  Team running_block{&kernel, params, std::vector<Fiber>(threads), 0, {}};
  for (unsigned t = 0; t < threads; t++) {
    Fiber &f = running_block.threads[t];
    getcontext(&f.start);
    f.start.uc_stack.ss_sp = stack[t];
    f.start.uc_stack.ss_size = stack_bytes;
    f.start.uc_link = nullptr;  // thread_main never returns
  }
  team = &running_block;
  in_team = true;
  // 3: a thread returned while others wait at a barrier (common.cuh: every thread of a block
  // reaches each barrier); the waiting fibers are left as they are.
  int rc = 0;
  for (unsigned long long i = 0; i < blocks && rc == 0; i++) {
    block_idx = block_at(i);
    for (Fiber &f : running_block.threads) {
      makecontext(&f.start, thread_main, 0);
      f.state = Fiber::Starts;
    }
    for (;;) {
      const std::vector<unsigned> order = order_of(threads, seed);
      for (unsigned k = 0; k < threads; k++) {
        running_block.current = order.empty() ? k : order[k];
        thread_idx = thread_at(running_block.current);
        Fiber &f = running_block.threads[running_block.current];
        if (_setjmp(running_block.launcher) == 0) {
          if (f.state == Fiber::Starts) setcontext(&f.start);
          _longjmp(f.at_barrier, 1);
        }
      }
      unsigned waiting = 0;
      for (Fiber &f : running_block.threads) waiting += f.state == Fiber::Waits;
      if (waiting == 0) break;
      if (waiting < threads) {
        rc = 3;
        break;
      }
    }
  }
  in_team = false;
  team = nullptr;
  return rc;
}
