// The emulator's launcher, called from emulator.rs: finds a registered kernel by name and runs its
// grid on the calling thread. A cooperative kernel (LODTENSOR_EXPORT_SYNC) runs each block's
// threads as fibers, each on a stack of its own: in each phase every thread runs until its next
// __syncthreads() or its return, one after another; when all wait at the barrier the next phase
// begins, and when all have returned the next block. Any other kernel runs every thread of every
// block in turn. With a non-zero seed the blocks, and the threads that run in turn (in each phase
// anew), go in an order drawn from it rather than in index order: a GPU promises no order, and a
// kernel that leans on one (a block that must finish before another, a thread that reads what
// another writes in the same phase) then fails its tests here too. A phase's threads do not
// interleave, and blocks neither, so a race of two threads' read-modify-writes on one word goes
// unseen by the tests; the race check below sees it.
//
// The race check (the emulator built with ThreadSanitizer: LODTENSOR_EMULATOR_TSAN=1 when the
// crate is built): every thread of a block is a fiber of ThreadSanitizer's, and only what orders
// the threads of a GPU orders them: the start of the launch, each __syncthreads() of their block,
// atomics, and the end of the launch. Two threads of a launch that touch one byte, one of them
// writing and not both atomically, are then a data race that ThreadSanitizer reports, whatever
// order they ran in: two threads of a block in one phase, or two threads of different blocks
// (between blocks, see race::sets). Each block's shared memory (LODTENSOR_SHARED) starts without a
// past.

#include <sys/mman.h>
#include <setjmp.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#if defined(__SANITIZE_THREAD__)
#include <link.h>
#include <sanitizer/tsan_interface.h>
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
extern "C" void __tsan_java_init(unsigned long heap_begin, unsigned long heap_size);
extern "C" void __tsan_java_alloc(unsigned long begin, unsigned long size);
extern "C" void __tsan_java_free(unsigned long begin, unsigned long size);
// The emulator's own code that fibers run: not checked (as the launcher's is not), and no frames
// on a fiber's record of calls, which then stays balanced from one launch to the next.
#define LODTENSOR_EMULATOR_UNCHECKED __attribute__((no_sanitize_thread))
#else
#define LODTENSOR_EMULATOR_UNCHECKED
#endif

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
  unsigned params;
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

// What orders the threads of a launch for the race check; without ThreadSanitizer, nothing.
namespace race {
#if defined(__SANITIZE_THREAD__)
// The blocks of a launch run one after another, block i of the run on fibers of set i % sets, and
// nothing orders two sets in a launch but the kernel's atomics: each block is checked against the
// blocks of the other set. (A set's fibers run its blocks one after another, which orders them.
// Shuffled, each launch draws its blocks' order anew, so that each pair of blocks is on two sets
// in most launches. A third set would check every pair of a grid of three in every launch, but
// widens the vector clocks, whose joins take most of the check's time, by half.)
constexpr unsigned sets = 2;
// Objects whose release and acquire order the threads: the launcher releases `launch_start`
// before a launch's blocks run and acquires `launch_end`, which each thread releases when it
// returns, after all of them. A barrier ending phase p of a block of set s releases
// phase[s][p % 2] and, once all its threads are there, each acquires it (two objects, so that a
// thread that runs on in phase p + 1 releases into the other one, not into the one that the
// threads still to resume acquire; a pair a set, so that barriers order no blocks of two sets).
char launch_start, launch_end, phase[sets][2];
// The devices' stream: each launch, and each of the host's copies to, from or between device
// buffers, allocations and frees of them (emulator.rs), acquires it before and releases it after,
// as a stream runs them one after another; the host's code orders them by means that
// ThreadSanitizer does not see (the standard library of Rust is not instrumented).
char stream;
// Whether ThreadSanitizer checks the kernels. Threads of kernels without barriers then run as
// fibers too: one after another on the launcher's stack, their locals would share addresses.
constexpr bool checks = true;

void *launcher() { return __tsan_get_current_fiber(); }
// The launcher's own accesses (to the fibers' states, the indices, its stack) are not checked:
// its synchronisation with the fibers is the jumps, which ThreadSanitizer does not see.
void ignore_launcher() { __tsan_ignore_thread_begin(); }
void check_launcher() { __tsan_ignore_thread_end(); }
// Thread t of a launch's block of set s is fiber s * (threads a block) + t, kept across launches.
std::vector<void *> fibers;
void prepare(unsigned long long count) {
  while (fibers.size() < count) fibers.push_back(__tsan_create_fiber(0));
}
LODTENSOR_EMULATOR_UNCHECKED void *fiber(unsigned long long k) { return fibers[k]; }
// A fresh fiber k, for one that a launch left waiting at a barrier (in the kernel's code).
void renew(unsigned long long k) {
  __tsan_destroy_fiber(fibers[k]);
  fibers[k] = __tsan_create_fiber(0);
}
// Called just before the jump that runs `fiber`. (Unchecked, as are the others that fibers call:
// a checked function's record of its call and return would go on two fibers' records.)
LODTENSOR_EMULATOR_UNCHECKED void switch_to(void *fiber) {
  __tsan_switch_to_fiber(fiber, __tsan_switch_to_fiber_no_sync);
}
LODTENSOR_EMULATOR_UNCHECKED void release(char &object) { __tsan_release(&object); }
LODTENSOR_EMULATOR_UNCHECKED void acquire(char &object) { __tsan_acquire(&object); }
// The shared memory that the running launch's blocks used so far (LODTENSOR_SHARED notes it, on
// the fibers: so a fixed array, whose accesses in an unchecked function are neither checked nor
// ordered, where a library call would be both).
struct Range {
  unsigned long begin, end;
};
constexpr unsigned max_shared = 64;
Range shared[max_shared];
unsigned shared_count = 0;
LODTENSOR_EMULATOR_UNCHECKED void note_shared(const void *p, std::size_t bytes) {
  // Whole words of shadow, as forget_shared's calls ask.
  const Range r{reinterpret_cast<unsigned long>(p) & ~7ul, (reinterpret_cast<unsigned long>(p) + bytes + 7) & ~7ul};
  for (unsigned i = 0; i < shared_count; i++) {
    if (shared[i].begin == r.begin && shared[i].end == r.end) return;
  }
  if (shared_count == max_shared) {
    std::fprintf(stderr, "cuda emulator: kernel %s has more than %u shared variables\n", running, max_shared);
    std::abort();
  }
  shared[shared_count++] = r;
}
// The writable static data of the module that holds the kernels (and this array).
Range static_data() {
  Range found{0, 0};
  dl_iterate_phdr(
      [](dl_phdr_info *info, std::size_t, void *out) {
        const unsigned long at = reinterpret_cast<unsigned long>(&shared);
        for (int i = 0; i < info->dlpi_phnum; i++) {
          const auto &h = info->dlpi_phdr[i];
          const unsigned long begin = info->dlpi_addr + h.p_vaddr, end = begin + h.p_memsz;
          if (h.p_type == PT_LOAD && (h.p_flags & PF_W) && begin <= at && at < end) {
            *static_cast<Range *>(out) = Range{begin & ~7ul, (end + 7) & ~7ul};
            return 1;
          }
        }
        return 0;
      },
      &found);
  return found;
}
// Every block has shared memory of its own on a GPU, and here all blocks share the statics: before
// each block of a launch but the first, ThreadSanitizer forgets the past accesses to the shared
// memory noted so far, as it does for a Java heap's block that is freed and allocated again (its
// interface for Java heaps is the one that offers this; the "heap" is the static data). Launches
// are ordered anyway, so the notes start anew with each.
void forget_shared() {
  static const Range heap = [] {
    const Range r = static_data();
    if (r.begin == 0) {
      std::fprintf(stderr, "cuda emulator: the race check found no static data of its own\n");
      std::abort();
    }
    __tsan_java_init(r.begin, r.end - r.begin);
    return r;
  }();
  for (unsigned i = 0; i < shared_count; i++) {
    const Range r = shared[i];
    if (r.begin < heap.begin || r.end > heap.end) {
      std::fprintf(stderr, "cuda emulator: shared memory of kernel %s outside the static data\n", running);
      std::abort();
    }
    __tsan_java_free(r.begin, r.end - r.begin);
    __tsan_java_alloc(r.begin, r.end - r.begin);
  }
}
void new_launch() { shared_count = 0; }
#else
constexpr unsigned sets = 1;
char launch_start, launch_end, phase[sets][2], stream;
constexpr bool checks = false;
void *launcher() { return nullptr; }
void ignore_launcher() {}
void check_launcher() {}
void prepare(unsigned long long) {}
void *fiber(unsigned long long) { return nullptr; }
void renew(unsigned long long) {}
void switch_to(void *) {}
void release(char &) {}
void acquire(char &) {}
void forget_shared() {}
void new_launch() {}
#endif
}  // namespace race

// Races that the calling thread's launches are expected to have (the emulator's own tests of the
// race check): counted, and not reported.
thread_local bool races_expected = false;
thread_local unsigned long long races_counted = 0;
// Whether the calling thread runs a launch: only then is a race ThreadSanitizer finds one of a
// kernel's. Elsewhere it sees the Rust code's accesses but not all of its synchronisation (the
// standard library's atomics are not instrumented), so what it reports there is noise.
thread_local bool launching = false;

// A thread of a cooperative block (of any block under the race check). It starts on a context of
// its own (makecontext), then goes back and forth with _setjmp and _longjmp, which save no signal
// mask: a swapcontext would make a system call at each switch, and a barrier takes two switches a
// thread. A thread that returns waits where it returned for the launch's next block of its set
// (race::sets), which it then runs on the same stack.
struct Fiber {
  ucontext_t start;
  jmp_buf resume;
  // Each run of a thread ends at a barrier (Waits) or at its return (Returned).
  enum State { Starts, Waits, Returned } state;
};

// The launch running now (launches are serialised): its kernel, its threads (those of each set
// of blocks, race::sets, one after the other), the threads a block, the set of the block running
// and its thread running, where the launcher waits for a thread to come back at a barrier or at
// its end, the phase of the block running (counting on across blocks) and the launcher's race
// fiber.
struct Team {
  const Kernel *kernel;
  void **params;
  std::vector<Fiber> threads;
  unsigned size;
  unsigned set;
  unsigned current;
  jmp_buf launcher;
  unsigned long long phase;
  void *race_launcher;

  unsigned long long running() const { return 1ull * set * size + current; }
};
Team *team = nullptr;

// The running thread waits at `self.resume` while the launcher runs the others.
LODTENSOR_EMULATOR_UNCHECKED void wait_for_launcher(Fiber &self) {
  if (_setjmp(self.resume) == 0) {
    race::switch_to(team->race_launcher);
    _longjmp(team->launcher, 1);
  }
}

LODTENSOR_EMULATOR_UNCHECKED void thread_main() {
  Fiber &self = team->threads[team->running()];
  for (;;) {
    race::acquire(race::launch_start);
    team->kernel->invoke(team->kernel->function, team->params);
    race::release(race::launch_end);
    self.state = Fiber::Returned;
    wait_for_launcher(self);
  }
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

LODTENSOR_EMULATOR_UNCHECKED void team_barrier() {
  Fiber &self = team->threads[team->running()];
  self.state = Fiber::Waits;
  race::release(race::phase[team->set][team->phase % 2]);
  wait_for_launcher(self);
  race::acquire(race::phase[team->set][(team->phase - 1) % 2]);
}

#if defined(__SANITIZE_THREAD__)
// Called only under the race check (host.h's LODTENSOR_SHARED).
LODTENSOR_EMULATOR_UNCHECKED void shared_memory(const void *p, std::size_t bytes) { race::note_shared(p, bytes); }
#endif

void register_kernel(const char *module, const char *name, void *kernel, Invoke invoke, unsigned params,
                     bool cooperative) {
  registry()[name] = Kernel{module, kernel, invoke, params, cooperative};
}

void barrier_outside_team() {
  std::fprintf(stderr, "cuda emulator: kernel %s calls __syncthreads(); export it with LODTENSOR_EXPORT_SYNC\n",
               running);
  std::abort();
}
}  // namespace lodtensor_emulator

#if defined(__SANITIZE_THREAD__)
// ThreadSanitizer checks the kernels, not the Rust code, whose synchronisation it does not see:
// it ignores the accesses of intercepted calls (the Rust code's memcpy and memset). Otherwise the
// programs behave as without it: an allocation larger than the host has returns null (the tests
// of running out of device memory ask for such), and a fault stays a SIGSEGV (the guard pages'
// tests expect one).
extern "C" const char *__tsan_default_options() {
  return "ignore_interceptors_accesses=1:allocator_may_return_null=1:handle_segv=0";
}

namespace __tsan {
struct ReportDesc;
// ThreadSanitizer calls this before it prints a report (a weak definition of its own otherwise):
// true suppresses the report.
__attribute__((no_sanitize_thread)) bool OnReport(const ReportDesc *, bool suppressed) {
  if (!lodtensor_emulator::launching) return true;
  if (!lodtensor_emulator::races_expected) return suppressed;
  lodtensor_emulator::races_counted++;
  return true;
}
}  // namespace __tsan
#endif

// Called by the host before and after each of its accesses to device memory: see race::stream.
extern "C" void lodtensor_emulator_stream_order() {
  lodtensor_emulator::race::acquire(lodtensor_emulator::race::stream);
  lodtensor_emulator::race::release(lodtensor_emulator::race::stream);
}

// Whether the emulator was built with the race check.
extern "C" int lodtensor_emulator_race_check() {
#if defined(__SANITIZE_THREAD__)
  return 1;
#else
  return 0;
#endif
}

// Whether the races of the calling thread's launches from now on are expected (counted rather than
// reported); returns how many expected races were counted on this thread since the last call.
extern "C" unsigned long long lodtensor_emulator_expect_races(int expected) {
  lodtensor_emulator::races_expected = expected != 0;
  return std::exchange(lodtensor_emulator::races_counted, 0);
}

// The module (kernel file, or variant of one) that defines kernel `name`; null for no such kernel.
extern "C" const char *lodtensor_emulator_module_of(const char *name) {
  const auto it = lodtensor_emulator::registry().find(name);
  return it == lodtensor_emulator::registry().end() ? nullptr : it->second.module;
}

// 0: ran; 1: no kernel of that name; 2: a bad launch shape; 3: threads of a block that disagree
// about a barrier (some returned while others wait at it); 4: `param_count` is not the number of
// the kernel's parameters, which `*takes` is then set to. `seed`: 0 runs blocks and threads in
// index order, any other value in an order drawn from it.
extern "C" int lodtensor_emulator_launch(const char *name, const unsigned grid[3], const unsigned block[3],
                                          void **params, unsigned param_count, unsigned *takes,
                                          unsigned long long seed) {
  using namespace lodtensor_emulator;
  const auto it = registry().find(name);
  if (it == registry().end()) return 1;
  const Kernel kernel = it->second;
  if (param_count != kernel.params) {
    *takes = kernel.params;
    return 4;
  }
  const unsigned long long threads = 1ull * block[0] * block[1] * block[2];
  const unsigned long long blocks = 1ull * grid[0] * grid[1] * grid[2];
  if (threads == 0 || threads > 1024 || grid[0] == 0 || grid[1] == 0 || grid[2] == 0) return 2;
  std::lock_guard<std::mutex> guard(launch_lock);
  launching = true;
  race::ignore_launcher();
  race::acquire(race::stream);
  struct Done {
    ~Done() {
      race::release(race::stream);
      race::check_launcher();
      launching = false;
    }
  } done;
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
  if (!kernel.cooperative && !race::checks) {
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
  // The threads of each set of blocks that the launch uses, each on a stack of its own.
  const unsigned long long fibers = std::min<unsigned long long>(blocks, race::sets) * threads;
  const std::vector<char *> &stack = stacks(fibers);
  Team running_block{&kernel, params, std::vector<Fiber>(fibers), unsigned(threads), 0, 0, {}, 0, race::launcher()};
  for (unsigned long long k = 0; k < fibers; k++) {
    Fiber &f = running_block.threads[k];
    getcontext(&f.start);
    f.start.uc_stack.ss_sp = stack[k];
    f.start.uc_stack.ss_size = stack_bytes;
    f.start.uc_link = nullptr;  // thread_main never returns
    makecontext(&f.start, thread_main, 0);
    f.state = Fiber::Starts;
  }
  race::prepare(fibers);
  team = &running_block;
  in_team = kernel.cooperative;
  // 3: a thread returned while others wait at a barrier (common.cuh: every thread of a block
  // reaches each barrier); the waiting fibers are left as they are.
  int rc = 0;
  race::new_launch();
  race::release(race::launch_start);
  for (unsigned long long i = 0; i < blocks && rc == 0; i++) {
    block_idx = block_at(i);
    running_block.set = unsigned(i % race::sets);
    if (i > 0) race::forget_shared();
    Fiber *const block_threads = &running_block.threads[running_block.set * threads];
    for (;; running_block.phase++) {
      const std::vector<unsigned> order = order_of(threads, seed);
      for (unsigned k = 0; k < threads; k++) {
        running_block.current = order.empty() ? k : order[k];
        thread_idx = thread_at(running_block.current);
        Fiber &f = block_threads[running_block.current];
        if (_setjmp(running_block.launcher) == 0) {
          race::switch_to(race::fiber(running_block.running()));
          if (f.state == Fiber::Starts) setcontext(&f.start);
          _longjmp(f.resume, 1);
        }
      }
      unsigned waiting = 0;
      for (unsigned t = 0; t < threads; t++) waiting += block_threads[t].state == Fiber::Waits;
      if (waiting == 0) break;
      if (waiting < threads) {
        rc = 3;
        break;
      }
    }
  }
  race::acquire(race::launch_end);
  for (unsigned long long k = 0; k < fibers; k++) {
    if (running_block.threads[k].state == Fiber::Waits) race::renew(k);
  }
  in_team = false;
  team = nullptr;
  return rc;
}
