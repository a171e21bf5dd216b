/* test_cuda_counters: what the library has asked of a CUDA device (lodtensor_cuda_counters).
 * Every build checks the argument errors and, where CUDA cannot be used, UNSUPPORTED; with a
 * device (a GPU, or the emulator build) a copy up, a copy down, a wait and a kernel are each
 * counted once with their bytes, a shorter `len` writes only its counters, and a device beyond the
 * count is refused. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static const lodtensor_dtype_t F32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};

/* Every counter of cuda:0 now. */
static void read_all(uint64_t *out) { CHECK_OK(lodtensor_cuda_counters(0, out, LODTENSOR_CUDA_COUNTERS)); }

/* Counter `i` after `after` minus before. */
static uint64_t grew(const uint64_t *before, const uint64_t *after, size_t i) { return after[i] - before[i]; }

static void test_arguments(void) {
    uint64_t out[LODTENSOR_CUDA_COUNTERS + 1];
    for (size_t i = 0; i <= LODTENSOR_CUDA_COUNTERS; i++) {
        out[i] = 7;
    }
    CHECK_STATUS_MSG(lodtensor_cuda_counters(0, out, LODTENSOR_CUDA_COUNTERS + 1), LODTENSOR_INVALID_ARGUMENT, "len");
    CHECK_STATUS_MSG(lodtensor_cuda_counters(0, NULL, 1), LODTENSOR_NULL_ARGUMENT, "out");
    /* Room for a deliberately misaligned buffer. */
    union {
        uint64_t align;
        unsigned char bytes[2 * sizeof(uint64_t)];
    } storage;
    memset(&storage, 7, sizeof storage);
    CHECK_STATUS_MSG(lodtensor_cuda_counters(0, (uint64_t *)(void *)(storage.bytes + 1), 1), LODTENSOR_INVALID_ARGUMENT,
                     "aligned");
    CHECK(storage.bytes[1] == 7 && storage.bytes[8] == 7);
    CHECK_STATUS_MSG(lodtensor_cuda_counters(-1, out, LODTENSOR_CUDA_COUNTERS), LODTENSOR_INVALID_ARGUMENT, "device");
    for (size_t i = 0; i <= LODTENSOR_CUDA_COUNTERS; i++) {
        CHECK(out[i] == 7);
    }
}

static void test_without_cuda(void) {
    uint64_t out[LODTENSOR_CUDA_COUNTERS] = {7};
    CHECK_STATUS_MSG(lodtensor_cuda_counters(0, out, LODTENSOR_CUDA_COUNTERS), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_STATUS_MSG(lodtensor_cuda_counters(0, NULL, 0), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK(out[0] == 7);
}

static void test_with_cuda(size_t count) {
    uint64_t out[LODTENSOR_CUDA_COUNTERS];
    CHECK_STATUS_MSG(lodtensor_cuda_counters((int32_t)count, out, LODTENSOR_CUDA_COUNTERS), LODTENSOR_INVALID_ARGUMENT,
                     "cuda:");
    /* Nothing asked of the device yet; no buffer for no counters. */
    read_all(out);
    for (size_t i = 0; i < LODTENSOR_CUDA_COUNTERS; i++) {
        CHECK(out[i] == 0);
    }
    CHECK_OK(lodtensor_cuda_counters(0, NULL, 0));

    int64_t dims[2] = {3, 5};
    lodtensor_t *host = NULL, *dev = NULL, *back = NULL, *ones = NULL;
    uint64_t before[LODTENSOR_CUDA_COUNTERS], after[LODTENSOR_CUDA_COUNTERS];
    CHECK_OK(lodtensor_fill(F32, dims, 2, 2.0, &host));
    /* A copy up: one upload of its 60 bytes into one block. */
    read_all(before);
    CHECK_OK(lodtensor_to_place(host, fx_place(LODTENSOR_DEVICE_CUDA, 0), &dev));
    read_all(after);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_UPLOADS) == 1);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_UPLOAD_BYTES) == 60);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_ALLOCATIONS) == 1);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_LAUNCHES) == 0);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_WAITS) == 0);
    /* A copy down: one download of 60 bytes, which waits. */
    read_all(before);
    CHECK_OK(lodtensor_to_place(dev, fx_cpu(), &back));
    read_all(after);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_DOWNLOADS) == 1);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_DOWNLOAD_BYTES) == 60);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_WAITS) == 1);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_UPLOADS) == 0);
    /* A wait, and nothing else. */
    read_all(before);
    CHECK_OK(lodtensor_synchronize(fx_place(LODTENSOR_DEVICE_CUDA, 0)));
    read_all(after);
    for (size_t i = 0; i < LODTENSOR_CUDA_COUNTERS; i++) {
        CHECK(grew(before, after, i) == (i == LODTENSOR_CUDA_COUNTER_WAITS ? 1u : 0u));
    }
    /* A kernel: fill_on launches one. */
    read_all(before);
    CHECK_OK(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CUDA, 0), F32, dims, 2, 1.0, &ones));
    read_all(after);
    CHECK(grew(before, after, LODTENSOR_CUDA_COUNTER_LAUNCHES) == 1);
    /* The first counters only: the rest of the buffer is left as it was. */
    uint64_t some[LODTENSOR_CUDA_COUNTERS];
    for (size_t i = 0; i < LODTENSOR_CUDA_COUNTERS; i++) {
        some[i] = 12345;
    }
    CHECK_OK(lodtensor_cuda_counters(0, some, 2));
    read_all(after);
    CHECK(some[LODTENSOR_CUDA_COUNTER_LAUNCHES] == after[LODTENSOR_CUDA_COUNTER_LAUNCHES]);
    CHECK(some[LODTENSOR_CUDA_COUNTER_FILLS] == after[LODTENSOR_CUDA_COUNTER_FILLS]);
    for (size_t i = 2; i < LODTENSOR_CUDA_COUNTERS; i++) {
        CHECK(some[i] == 12345);
    }
    lodtensor_destroy(ones);
    lodtensor_destroy(back);
    lodtensor_destroy(dev);
    lodtensor_destroy(host);
}

int main(void) {
    test_arguments();
    fx_with_or_without_cuda("test_cuda_counters", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
