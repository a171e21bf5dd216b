/* test_host_cache: the bound on freed host memory kept for reuse (lodtensor_set_host_cache_limit,
 * lodtensor_host_cache_info): outputs of 4 KiB or more are kept up to the bound and reused with
 * correct contents, the bound is respected, and the documented errors. */
#include <lodtensor.h>

#include "check.h"

#define MIB ((size_t)1 << 20)

static const lodtensor_dtype_t F32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};

/* A float32 tensor of `rows` x 1024 (4 KiB rows), every element `value`. */
static lodtensor_t *filled(int64_t rows, double value) {
    int64_t dims[2] = {rows, 1024};
    lodtensor_t *t = NULL;
    CHECK_OK(lodtensor_fill(F32, dims, 2, value, &t));
    return t;
}

static void check_all(const lodtensor_t *t, size_t n, float want) {
    const void *data = NULL;
    CHECK_OK(lodtensor_data(t, &data));
    const float *v = (const float *)data;
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        bad += v[i] != want;
    }
    CHECK_EQ_SIZE(bad, 0);
}

static void test_default_bound(void) {
    size_t kept = 1, limit = 0;
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(limit, 256 * MIB);
}

static void test_kept_reused_and_bounded(void) {
    size_t kept = 1, limit = 0;
    CHECK_OK(lodtensor_set_host_cache_limit(8 * MIB));
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(limit, 8 * MIB);
    CHECK_EQ_SIZE(kept, 0);

    /* A 3 MiB tensor is kept when destroyed, and its memory serves the next one of that size. */
    lodtensor_t *a = filled(768, 1.0);
    const void *a_data = NULL;
    CHECK_OK(lodtensor_data(a, &a_data));
    lodtensor_destroy(a);
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(kept, 3 * MIB);
    lodtensor_t *b = filled(768, 2.0);
    const void *b_data = NULL;
    CHECK_OK(lodtensor_data(b, &b_data));
    CHECK_EQ_PTR(b_data, a_data);
    check_all(b, 768 * 1024, 2.0f);
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(kept, 0);

    /* Three kept 3 MiB blocks would pass the 8 MiB bound: the first one kept goes. */
    lodtensor_t *c = filled(768, 3.0);
    lodtensor_t *d = filled(768, 4.0);
    lodtensor_destroy(b);
    lodtensor_destroy(c);
    lodtensor_destroy(d);
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(kept, 6 * MIB);

    /* A block over the bound is never kept. */
    lodtensor_destroy(filled(2304, 0.0)); /* 9 MiB */
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(kept, 6 * MIB);

    /* Lowering the bound frees what is over it; 0 frees everything and keeps nothing more. */
    CHECK_OK(lodtensor_set_host_cache_limit(4 * MIB));
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(kept, 3 * MIB);
    CHECK_OK(lodtensor_set_host_cache_limit(0));
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(kept, 0);
    lodtensor_destroy(filled(768, 0.0));
    CHECK_OK(lodtensor_host_cache_info(&kept, &limit));
    CHECK_EQ_SIZE(kept, 0);
    CHECK_OK(lodtensor_set_host_cache_limit(256 * MIB));
}

static void test_errors(void) {
    size_t n = 0;
    CHECK_STATUS_MSG(lodtensor_host_cache_info(NULL, &n), LODTENSOR_NULL_ARGUMENT, "out_kept");
    CHECK_STATUS_MSG(lodtensor_host_cache_info(&n, NULL), LODTENSOR_NULL_ARGUMENT, "out_limit");
}

int main(void) {
    test_default_bound();
    test_kept_reused_and_bounded();
    test_errors();
    return CHECK_RETURN();
}
