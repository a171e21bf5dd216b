// test_hpp_exceptions: the C++ layer when an allocation of its own throws std::bad_alloc. Each call
// that returns several handles (split, beam_search_gather_states, from_arrow_record_batch) is run
// with the program's n-th operator new failing, for every n until the call gets through. Whatever
// it threw, no handle may be left behind: the tensors are over a buffer (from_buffer) whose release
// callback must run exactly once when the program's own handles are gone, and the handles that
// beam_search_gather_states made (which hold no part of the buffer) must all be destroyed; this
// program stands between the C++ layer and those two C functions to count them. Skipped (77)
// where operator new is not this program's (under valgrind, whose allocator replaces it).
#include <dlfcn.h>
#include <lodtensor.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

#include "check.h"

namespace lt = lodtensor;

namespace {

// The allocation (counted from when it is armed) that throws; -1: none.
long fail_at = -1;
long allocations = 0;

void arm(long n) {
    allocations = 0;
    fail_at = n;
}

float buffer[8] = {0, 1, 2, 3, 4, 5, 6, 7};
int releases = 0;
// The handles beam_search_gather_states made in the current try, and how many are still alive.
lodtensor_t *gathered[16];
std::size_t gathered_count = 0;
long gathered_alive = 0;

// float32 [8, 1] over `buffer`, four sequences of two rows; counts its release.
lt::Tensor over_buffer() {
    static const std::size_t one[] = {4}, lengths[] = {2, 2, 2, 2};
    return lt::Tensor::from_buffer(lt::dtype_of<float>(), {8, 1}, buffer, sizeof buffer, lt::Lod::lengths(one, lengths),
                                   [](void *, void *) { ++releases; }, nullptr);
}

// Runs `call` on a tensor over the buffer with the n-th allocation failing, for n = 0, 1, ...
// until it returns; after each try the buffer must have been released once. True if some try
// threw (the failure was reached) and the last one returned.
template <typename F>
bool each_failing_allocation(F &&call, const char *what) {
    bool threw = false;
    for (long n = 0; n < 1000; ++n) {
        releases = 0;
        gathered_count = 0;
        gathered_alive = 0;
        bool returned = false;
        {
            lt::Tensor t = over_buffer();
            arm(n);
            try {
                call(t);
                returned = true;
            } catch (const std::bad_alloc &) {
                threw = true;
            }
            fail_at = -1;
        }
        if (!CHECK_EQ_INT(releases, 1) || !CHECK_EQ_INT(gathered_alive, 0)) {
            std::fprintf(stderr, "  %s, allocation %ld failing: a handle was left behind\n", what, n);
            return false;
        }
        if (returned) return CHECK(threw);
    }
    return CHECK(false);
}

void test_split() {
    each_failing_allocation([](const lt::Tensor &t) { CHECK_EQ_SIZE(t.split(4).size(), 4); }, "split");
}

void test_gather_states() {
    each_failing_allocation(
        [](const lt::Tensor &t) {
            static const std::int32_t parents[] = {3, 0, 0, 1, 7, 2, 2, 6};
            lt::Tensor idx = lt::Tensor::create<std::int32_t>(parents, {8});
            const lt::TensorRef states[] = {t.ref(), t.ref()};
            CHECK_EQ_SIZE(lt::beam_search_gather_states(states, idx).size(), 2);
        },
        "beam_search_gather_states");
}

void test_from_arrow_record_batch() {
    each_failing_allocation(
        [](const lt::Tensor &t) {
            ArrowSchema schema;
            ArrowArray array;
            const lt::ArrowColumn columns[] = {{t.ref(), "a"}, {t.ref(), "b"}};
            lt::to_arrow_record_batch(columns, &schema, &array);
            try {
                CHECK_EQ_SIZE(lt::from_arrow_record_batch(&schema, &array).size(), 2);
            } catch (...) {
                // Not taken: the structs are still the caller's to release.
                if (array.release != nullptr) array.release(&array);
                schema.release(&schema);
                throw;
            }
            schema.release(&schema);
        },
        "from_arrow_record_batch");
}

}  // namespace

void *operator new(std::size_t n) {
    if (fail_at >= 0 && allocations++ == fail_at) {
        fail_at = -1;
        throw std::bad_alloc();
    }
    if (void *p = std::malloc(n ? n : 1)) return p;
    throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

// The library's functions, called through.
template <typename F>
F next(const char *name) {
    return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

extern "C" void lodtensor_destroy(lodtensor_t *t) {
    static const auto real = next<void (*)(lodtensor_t *)>("lodtensor_destroy");
    for (std::size_t i = 0; i < gathered_count; ++i) {
        if (gathered[i] == t) {
            gathered[i] = nullptr;
            --gathered_alive;
        }
    }
    real(t);
}

extern "C" lodtensor_status_t beam_search_gather_states(const lodtensor_t *const *states, std::size_t count,
                                                        const lodtensor_t *parent_idx, lodtensor_t **out) {
    static const auto real =
        next<lodtensor_status_t (*)(const lodtensor_t *const *, std::size_t, const lodtensor_t *, lodtensor_t **)>(
            "beam_search_gather_states");
    const lodtensor_status_t s = real(states, count, parent_idx, out);
    for (std::size_t i = 0; s == LODTENSOR_OK && i < count && gathered_count < 16; ++i) {
        gathered[gathered_count++] = out[i];
        ++gathered_alive;
    }
    return s;
}

int main() {
    arm(0);
    try {
        delete new int(1);
        fail_at = -1;
        std::printf("test_hpp_exceptions: skipped: operator new is not this program's\n");
        return 77;
    } catch (const std::bad_alloc &) {
    }
    test_split();
    test_gather_states();
    test_from_arrow_record_batch();
    return CHECK_RETURN();
}
