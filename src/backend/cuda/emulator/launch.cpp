// The emulator's launcher, called from emulator.rs: finds a registered kernel by name and runs its
// grid. A cooperative kernel (LODTENSOR_EXPORT_SYNC) runs on a team of host threads, one per
// thread of a block, the team running the blocks one after another (a barrier between blocks, so
// __shared__ statics are reused like a block's memory); any other kernel runs every thread of
// every block in turn on the calling thread. With a non-zero seed the blocks, and the threads that
// run in turn, go in an order drawn from it rather than in index order: a GPU promises no order,
// and a kernel that leans on one (a block that must finish before another, a thread that reads
// what a later one writes) then fails its tests here too.

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

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
}  // namespace

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

// 0: ran; 1: no kernel of that name; 2: a bad launch shape. `seed`: 0 runs blocks and threads in
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
  std::barrier<> barrier(static_cast<std::ptrdiff_t>(threads));
  auto run = [&](unsigned t) {
    thread_idx = thread_at(t);
    block_barrier = &barrier;
    for (unsigned long long i = 0; i < blocks; i++) {
      block_idx = block_at(i);
      kernel.invoke(kernel.function, params);
      barrier.arrive_and_wait();
    }
    block_barrier = nullptr;
  };
  std::vector<std::thread> team;
  team.reserve(threads - 1);
  for (unsigned t = 1; t < threads; t++) team.emplace_back(run, t);
  run(0);
  for (auto &t : team) t.join();
  return 0;
}
