// The emulator's launcher, called from emulator.rs: finds a registered kernel by name and runs its
// grid. A cooperative kernel (LODTENSOR_EXPORT_SYNC) runs on a team of host threads, one per
// thread of a block, the team running the blocks one after another (a barrier between blocks, so
// __shared__ statics are reused like a block's memory); any other kernel runs every thread of
// every block in turn on the calling thread.

#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lodtensor_emulator {
namespace {
struct Kernel {
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
}  // namespace

void register_kernel(const char *name, void *kernel, Invoke invoke, bool cooperative) {
  registry()[name] = Kernel{kernel, invoke, cooperative};
}

void barrier_outside_team() {
  std::fprintf(stderr, "cuda emulator: kernel %s calls __syncthreads(); export it with LODTENSOR_EXPORT_SYNC\n",
               running);
  std::abort();
}
}  // namespace lodtensor_emulator

// 0: ran; 1: no kernel of that name; 2: a bad launch shape.
extern "C" int lodtensor_emulator_launch(const char *name, const unsigned grid[3], const unsigned block[3],
                                          void **params) {
  using namespace lodtensor_emulator;
  const auto it = registry().find(name);
  if (it == registry().end()) return 1;
  const Kernel kernel = it->second;
  const unsigned long long threads = 1ull * block[0] * block[1] * block[2];
  if (threads == 0 || threads > 1024 || grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return 2;
  std::lock_guard<std::mutex> guard(launch_lock);
  grid_dim = dim3{grid[0], grid[1], grid[2]};
  block_dim = dim3{block[0], block[1], block[2]};
  running = name;
  if (!kernel.cooperative) {
    for (unsigned z = 0; z < grid[2]; z++)
      for (unsigned y = 0; y < grid[1]; y++)
        for (unsigned x = 0; x < grid[0]; x++) {
          block_idx = uint3{x, y, z};
          for (unsigned t = 0; t < threads; t++) {
            thread_idx = uint3{t % block[0], t / block[0] % block[1], t / (block[0] * block[1])};
            kernel.invoke(kernel.function, params);
          }
        }
    return 0;
  }
  std::barrier<> barrier(static_cast<std::ptrdiff_t>(threads));
  auto run = [&](unsigned t) {
    thread_idx = uint3{t % block[0], t / block[0] % block[1], t / (block[0] * block[1])};
    block_barrier = &barrier;
    for (unsigned z = 0; z < grid[2]; z++)
      for (unsigned y = 0; y < grid[1]; y++)
        for (unsigned x = 0; x < grid[0]; x++) {
          block_idx = uint3{x, y, z};
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
