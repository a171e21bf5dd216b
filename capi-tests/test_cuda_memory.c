/* test_cuda_memory: what each CUDA device's cache holds (lodtensor_cuda_memory_info), giving its
 * kept blocks back (lodtensor_cuda_empty_cache), the bound on what it keeps
 * (lodtensor_cuda_set_cache_limit, lodtensor_cuda_cache_limit), the device's free memory
 * (lodtensor_cuda_free_memory), and loading its kernels up front (lodtensor_cuda_load_kernels).
 * Every build checks the NULL and negative arguments and, where CUDA cannot be used, the
 * UNSUPPORTED statuses; with a device (a GPU, or the emulator build) the accounting, the reuse of
 * a kept block, emptying the cache, the bound, a request larger than the device, and the kernels'
 * load. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define MIB ((size_t)1 << 20)

static const lodtensor_dtype_t F32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
static const lodtensor_dtype_t U8 = {LODTENSOR_DTYPE_CODE_UINT, 8, 1};

/* A float32 tensor on cuda:0 of `rows` x 1024 (4 KiB rows), every element `value`: a copy of a
 * host tensor, which takes exactly one device block. */
static lodtensor_t *on_device(int64_t rows, double value) {
    int64_t dims[2] = {rows, 1024};
    lodtensor_t *host = NULL, *t = NULL;
    if (CHECK_OK(lodtensor_fill(F32, dims, 2, value, &host))) {
        CHECK_OK(lodtensor_to_place(host, fx_place(LODTENSOR_DEVICE_CUDA, 0), &t));
    }
    lodtensor_destroy(host);
    return t;
}

static void check_info(size_t want_in_use, size_t want_kept) {
    size_t in_use = 1, kept = 1;
    CHECK_OK(lodtensor_cuda_memory_info(0, &in_use, &kept));
    CHECK_EQ_SIZE(in_use, want_in_use);
    CHECK_EQ_SIZE(kept, want_kept);
}

static void check_limit(size_t want) {
    size_t limit = 1;
    CHECK_OK(lodtensor_cuda_cache_limit(0, &limit));
    CHECK_EQ_SIZE(limit, want);
}

/* The bound on the kept blocks: the longest-kept go first, a block over the bound is not kept,
 * lowering the bound frees at once, and SIZE_MAX lifts it. Starts and ends with nothing kept. */
static void test_cache_limit(void) {
    CHECK_OK(lodtensor_cuda_set_cache_limit(0, 5 * MIB));
    check_limit(5 * MIB);
    lodtensor_t *a = on_device(512, 1.0), *b = on_device(512, 2.0), *c = on_device(512, 3.0);
    const void *b_data = NULL, *c_data = NULL;
    CHECK_OK(lodtensor_data(b, &b_data));
    CHECK_OK(lodtensor_data(c, &c_data));
    check_info(6 * MIB, 0);
    lodtensor_destroy(a);
    lodtensor_destroy(b);
    check_info(2 * MIB, 4 * MIB);
    /* A third 2 MiB block would make 6 MiB kept: a's, kept longest, goes back to the driver. */
    lodtensor_destroy(c);
    check_info(0, 4 * MIB);
    /* The blocks kept are b's and c's: the next two tensors of their size get them (the most
     * recently kept first). */
    lodtensor_t *d = on_device(512, 4.0), *e = on_device(512, 5.0);
    const void *d_data = NULL, *e_data = NULL;
    CHECK_OK(lodtensor_data(d, &d_data));
    CHECK_OK(lodtensor_data(e, &e_data));
    CHECK_EQ_PTR(d_data, c_data);
    CHECK_EQ_PTR(e_data, b_data);
    check_info(4 * MIB, 0);
    /* A block larger than the bound is not kept. */
    lodtensor_t *big = on_device(1536, 6.0);
    lodtensor_destroy(big);
    check_info(4 * MIB, 0);
    lodtensor_destroy(d);
    lodtensor_destroy(e);
    check_info(0, 4 * MIB);
    /* Lowering the bound frees what is over it now: the longest-kept first. */
    CHECK_OK(lodtensor_cuda_set_cache_limit(0, 3 * MIB));
    check_info(0, 2 * MIB);
    CHECK_OK(lodtensor_cuda_set_cache_limit(0, 0));
    check_limit(0);
    check_info(0, 0);
    lodtensor_destroy(on_device(1, 7.0));
    check_info(0, 0);
    CHECK_OK(lodtensor_cuda_set_cache_limit(0, SIZE_MAX));
    check_limit(SIZE_MAX);
}

static void test_arguments(void) {
    size_t in_use = 7, kept = 7;
    CHECK_STATUS_MSG(lodtensor_cuda_memory_info(0, NULL, &kept), LODTENSOR_NULL_ARGUMENT, "out_in_use");
    CHECK_STATUS_MSG(lodtensor_cuda_memory_info(0, &in_use, NULL), LODTENSOR_NULL_ARGUMENT, "out_kept");
    CHECK_STATUS_MSG(lodtensor_cuda_memory_info(-1, &in_use, &kept), LODTENSOR_INVALID_ARGUMENT, "device");
    CHECK_STATUS_MSG(lodtensor_cuda_empty_cache(-3), LODTENSOR_INVALID_ARGUMENT, "device");
    CHECK_STATUS_MSG(lodtensor_cuda_set_cache_limit(-1, 0), LODTENSOR_INVALID_ARGUMENT, "device");
    CHECK_STATUS_MSG(lodtensor_cuda_cache_limit(0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_cuda_cache_limit(-1, &kept), LODTENSOR_INVALID_ARGUMENT, "device");
    CHECK_EQ_SIZE(in_use, 7);
    CHECK_EQ_SIZE(kept, 7);
    size_t free_bytes = 7, total = 7;
    CHECK_STATUS_MSG(lodtensor_cuda_free_memory(0, NULL, &total), LODTENSOR_NULL_ARGUMENT, "out_free");
    CHECK_STATUS_MSG(lodtensor_cuda_free_memory(0, &free_bytes, NULL), LODTENSOR_NULL_ARGUMENT, "out_total");
    CHECK_STATUS_MSG(lodtensor_cuda_free_memory(-2, &free_bytes, &total), LODTENSOR_INVALID_ARGUMENT, "device");
    CHECK_STATUS_MSG(lodtensor_cuda_load_kernels(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    CHECK_EQ_SIZE(free_bytes, 7);
    CHECK_EQ_SIZE(total, 7);
}

static void test_without_cuda(void) {
    size_t in_use = 7, kept = 7;
    CHECK_STATUS_MSG(lodtensor_cuda_memory_info(0, &in_use, &kept), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_STATUS_MSG(lodtensor_cuda_empty_cache(0), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_STATUS_MSG(lodtensor_cuda_free_memory(0, &in_use, &kept), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_STATUS_MSG(lodtensor_cuda_set_cache_limit(0, 0), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_STATUS_MSG(lodtensor_cuda_cache_limit(0, &kept), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_STATUS_MSG(lodtensor_cuda_load_kernels(0), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_EQ_SIZE(in_use, 7);
    CHECK_EQ_SIZE(kept, 7);
}

static void test_with_cuda(size_t count) {
    size_t in_use = 7, kept = 7;
    CHECK_STATUS_MSG(lodtensor_cuda_memory_info((int32_t)count, &in_use, &kept), LODTENSOR_INVALID_ARGUMENT, "cuda:");
    CHECK_STATUS_MSG(lodtensor_cuda_empty_cache((int32_t)count), LODTENSOR_INVALID_ARGUMENT, "cuda:");
    CHECK_STATUS_MSG(lodtensor_cuda_set_cache_limit((int32_t)count, 0), LODTENSOR_INVALID_ARGUMENT, "cuda:");
    CHECK_STATUS_MSG(lodtensor_cuda_cache_limit((int32_t)count, &kept), LODTENSOR_INVALID_ARGUMENT, "cuda:");
    /* Nothing on the device yet, and no bound on its cache. */
    check_info(0, 0);
    check_limit(SIZE_MAX);

    /* A 3 MiB tensor holds a 3 MiB block; destroyed, the block is kept and serves the next one. */
    lodtensor_t *a = on_device(768, 1.0);
    const void *a_data = NULL, *b_data = NULL;
    CHECK_OK(lodtensor_data(a, &a_data));
    check_info(3 * MIB, 0);
    lodtensor_destroy(a);
    check_info(0, 3 * MIB);
    lodtensor_t *b = on_device(768, 2.0);
    CHECK_OK(lodtensor_data(b, &b_data));
    CHECK_EQ_PTR(b_data, a_data);
    check_info(3 * MIB, 0);

    /* Emptying gives back what is kept; a live tensor keeps its memory and values. */
    lodtensor_t *c = on_device(256, 3.0), *host = NULL;
    check_info(4 * MIB, 0);
    lodtensor_destroy(b);
    check_info(1 * MIB, 3 * MIB);
    CHECK_OK(lodtensor_cuda_empty_cache(0));
    check_info(1 * MIB, 0);
    if (CHECK_OK(lodtensor_to_place(c, fx_cpu(), &host))) {
        const void *data = NULL;
        size_t bad = 0;
        CHECK_OK(lodtensor_data(host, &data));
        for (size_t i = 0; data != NULL && i < 256 * 1024; i++) {
            bad += ((const float *)data)[i] != 3.0f;
        }
        CHECK_EQ_SIZE(bad, 0);
    }
    lodtensor_destroy(host);
    lodtensor_destroy(c);
    check_info(0, 1 * MIB);
    CHECK_OK(lodtensor_cuda_empty_cache(0));
    check_info(0, 0);
    test_cache_limit();

    /* The device's memory; a tensor larger than all of it is OUT_OF_MEMORY, and the device goes
     * on working. */
    size_t free_bytes = 0, total = 0;
    CHECK_STATUS_MSG(lodtensor_cuda_free_memory((int32_t)count, &free_bytes, &total), LODTENSOR_INVALID_ARGUMENT,
                     "cuda:");
    CHECK_OK(lodtensor_cuda_free_memory(0, &free_bytes, &total));
    CHECK(free_bytes > 0 && free_bytes <= total);
    int64_t too_big[2] = {(int64_t)(total / 4096 + 1), 4096};
    lodtensor_t *t = NULL;
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CUDA, 0), U8, too_big, 2, 1.0, &t),
                     LODTENSOR_OUT_OF_MEMORY, "cuda:0");
    CHECK_EQ_PTR(t, NULL);
    check_info(0, 0);
    lodtensor_t *d = on_device(1, 5.0);
    CHECK(d != NULL);
    lodtensor_destroy(d);

    /* Every kernel file loads up front (again at no cost); the device's ops still run after it. */
    CHECK_STATUS_MSG(lodtensor_cuda_load_kernels((int32_t)count), LODTENSOR_INVALID_ARGUMENT, "cuda:");
    CHECK_OK(lodtensor_cuda_load_kernels(0));
    CHECK_OK(lodtensor_cuda_load_kernels(0));
    lodtensor_t *e = on_device(4, 6.0);
    CHECK(e != NULL);
    lodtensor_destroy(e);
}

int main(void) {
    test_arguments();
    fx_with_or_without_cuda("test_cuda_memory", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
