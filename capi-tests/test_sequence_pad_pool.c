/* test_sequence_pad_pool: sequence_pad, sequence_unpad (spec §6), sequence_pool with every
 * LODTENSOR_POOL_* type, sequence_first_step and sequence_last_step through the C API: the worked
 * examples, empty sequences, 2-level inputs, the documented failures, and "outputs are written
 * only on success". */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* t is float32 (or, with is_f64, float64) holding exactly the n values `want` (to 1e-3). */
static int check_vals(const lodtensor_t *t, const double *want, size_t n, int is_f64, int line) {
    const void *data = NULL;
    size_t numel = 0, i;
    if (lodtensor_data(t, &data) != LODTENSOR_OK || lodtensor_numel(t, &numel) != LODTENSOR_OK || numel != n) {
        fprintf(stderr, "%s:%d: expected %zu elements, got %zu\n", __FILE__, line, n, numel);
        return check_record(0);
    }
    for (i = 0; i < n; ++i) {
        double got = is_f64 ? ((const double *)data)[i] : (double)((const float *)data)[i];
        double diff = got > want[i] ? got - want[i] : want[i] - got;
        if (diff > 1e-3) {
            fprintf(stderr, "%s:%d: element %zu is %g, expected %g\n", __FILE__, line, i, got, want[i]);
            return check_record(0);
        }
    }
    return check_record(1);
}
#define CHECK_VALS(t, want, n) check_vals((t), (want), (n), 0, __LINE__)
#define CHECK_VALS64(t, want, n) check_vals((t), (want), (n), 1, __LINE__)

/* t is int32 or int64 (bits) holding exactly want[0..n). */
static int check_ints(const lodtensor_t *t, const int64_t *want, size_t n, int bits, int line) {
    const void *data = NULL;
    lodtensor_dtype_t dt;
    size_t numel = 0, i;
    if (lodtensor_data(t, &data) != LODTENSOR_OK || lodtensor_numel(t, &numel) != LODTENSOR_OK || numel != n ||
        lodtensor_dtype(t, &dt) != LODTENSOR_OK || dt.code != LODTENSOR_DTYPE_CODE_INT || dt.bits != bits) {
        fprintf(stderr, "%s:%d: expected %zu int%d elements, got %zu\n", __FILE__, line, n, bits, numel);
        return check_record(0);
    }
    for (i = 0; i < n; ++i) {
        int64_t got = bits == 32 ? (int64_t)((const int32_t *)data)[i] : ((const int64_t *)data)[i];
        if (got != want[i]) {
            fprintf(stderr, "%s:%d: element %zu is %lld, expected %lld\n", __FILE__, line, i, (long long)got,
                    (long long)want[i]);
            return check_record(0);
        }
    }
    return check_record(1);
}
#define CHECK_INTS(t, want, n, bits) check_ints((t), (want), (n), (bits), __LINE__)

static size_t ndim_of(const lodtensor_t *t, int64_t *dims) {
    size_t ndim = 0;
    CHECK_OK(lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim));
    return ndim;
}

/* The §6 pool doc input: X [1,3,2,4,6,5,1] as float32 [7, 1] with an offsets LoD. */
static const float doc_x[7] = {1, 3, 2, 4, 6, 5, 1};
static const int64_t doc_dims[2] = {7, 1};

static int32_t mk_doc(const size_t *sizes, size_t levels, const size_t *lod, size_t len, lodtensor_t **out) {
    return fx_create_offsets(fx_f32(), doc_dims, 2, doc_x, sizeof doc_x, sizes, levels, lod, len, out);
}

static void test_pool_doc_example(void) {
    static const size_t s[1] = {5}, l[5] = {0, 2, 5, 7, 7};
    static const double avg[4] = {2, 4, 3, 0}, sum[4] = {4, 12, 6, 0}, sqr[4] = {2.828427, 6.928203, 4.242641, 0};
    static const double max[4] = {3, 6, 5, 0}, min[4] = {1, 2, 1, 0}, last[4] = {3, 6, 1, 0};
    static const double first[4] = {1, 2, 5, 0}, max_pad[4] = {3, 6, 5, 0.5};
    static const int64_t max_idx[4] = {1, 4, 5, -1}, min_idx[4] = {0, 2, 6, -1};
    lodtensor_t *x = NULL, *out = NULL, *idx = NULL;
    int64_t dims[LODTENSOR_MAX_DIMS];
    if (!CHECK_OK(mk_doc(s, 1, l, 5, &x))) {
        return;
    }
    idx = fx_sentinel();
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_AVERAGE, 0.0, &out, &idx))) {
        CHECK_VALS(out, avg, 4);
        CHECK_EQ_PTR(idx, NULL); /* no index for AVERAGE */
        CHECK_EQ_SIZE(fx_levels(out), 0);
        CHECK_EQ_SIZE(ndim_of(out, dims), 2);
        CHECK_EQ_INT(dims[0], 4);
        CHECK_EQ_INT(dims[1], 1);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_SUM, 0.0, &out, NULL))) {
        CHECK_VALS(out, sum, 4);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_SQRT, 0.0, &out, NULL))) {
        CHECK_VALS(out, sqr, 4);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_LAST, 0.0, &out, NULL))) {
        CHECK_VALS(out, last, 4);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_FIRST, 0.0, &out, NULL))) {
        CHECK_VALS(out, first, 4);
        lodtensor_destroy(out);
    }
    idx = NULL;
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_MAX, 0.0, &out, &idx))) {
        CHECK_VALS(out, max, 4);
        if (CHECK(idx != NULL)) {
            CHECK_INTS(idx, max_idx, 4, 32);
            CHECK_EQ_SIZE(ndim_of(idx, dims), 2);
        }
        lodtensor_destroy(out);
        lodtensor_destroy(idx);
        idx = NULL;
    }
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_MIN, 0.0, &out, &idx))) {
        CHECK_VALS(out, min, 4);
        if (CHECK(idx != NULL)) {
            CHECK_INTS(idx, min_idx, 4, 32);
        }
        lodtensor_destroy(out);
        lodtensor_destroy(idx);
    }
    /* MAX without the index output; a pad value for the empty sequence. */
    if (CHECK_OK(sequence_pool(x, LODTENSOR_POOL_MAX, 0.5, &out, NULL))) {
        CHECK_VALS(out, max_pad, 4);
        lodtensor_destroy(out);
    }
    lodtensor_destroy(x);
}

static void test_pool_two_levels_and_steps(void) {
    static const size_t s2[2] = {4, 6}, l2[10] = {0, 2, 2, 5, 0, 1, 3, 4, 4, 7}, top[4] = {0, 2, 2, 5};
    static const size_t s1[1] = {4}, l1[4] = {0, 2, 5, 7};
    static const double sum2[5] = {1, 5, 4, 0, 12}, first2[5] = {1, 3, 4, 0, 6}, last2[5] = {1, 2, 4, 0, 1};
    static const double first1[3] = {1, 2, 5}, last1[3] = {3, 6, 1};
    lodtensor_t *x2 = NULL, *x1 = NULL, *out = NULL;
    if (!CHECK_OK(mk_doc(s2, 2, l2, 10, &x2)) || !CHECK_OK(mk_doc(s1, 1, l1, 4, &x1))) {
        goto done;
    }
    if (CHECK_OK(sequence_pool(x2, LODTENSOR_POOL_SUM, 0.0, &out, NULL))) {
        CHECK_VALS(out, sum2, 5);
        CHECK_EQ_SIZE(fx_levels(out), 1);
        CHECK_OFFSETS(out, 0, top, 4);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_first_step(x1, &out))) {
        CHECK_VALS(out, first1, 3);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_last_step(x1, &out))) {
        CHECK_VALS(out, last1, 3);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_first_step(x2, &out))) {
        CHECK_VALS(out, first2, 5);
        CHECK_OFFSETS(out, 0, top, 4);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_last_step(x2, &out))) {
        CHECK_VALS(out, last2, 5);
        CHECK_OFFSETS(out, 0, top, 4);
        lodtensor_destroy(out);
    }
done:
    lodtensor_destroy(x2);
    lodtensor_destroy(x1);
}

static void test_pool_f64_and_half(void) {
    /* float64 and float16 (0x3C00 = 1.0, 0x4000 = 2.0, 0x4200 = 3.0): SUM over [[0,3]]. */
    static const double xd[3] = {1, 2, 3}, want[1] = {6};
    static const uint16_t xh[3] = {0x3C00, 0x4000, 0x4200};
    static const int64_t d[2] = {3, 1};
    static const size_t s[1] = {2}, l[2] = {0, 3};
    lodtensor_t *x64 = NULL, *x16 = NULL, *out = NULL;
    if (!CHECK_OK(fx_create_offsets(fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 64), d, 2, xd, sizeof xd, s, 1, l, 2, &x64)) ||
        !CHECK_OK(fx_create_offsets(fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 16), d, 2, xh, sizeof xh, s, 1, l, 2, &x16))) {
        goto done;
    }
    if (CHECK_OK(sequence_pool(x64, LODTENSOR_POOL_SUM, 0.0, &out, NULL))) {
        CHECK_VALS64(out, want, 1);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_pool(x16, LODTENSOR_POOL_SUM, 0.0, &out, NULL))) {
        const void *data = NULL;
        CHECK_OK(lodtensor_data(out, &data));
        CHECK_EQ_INT(((const uint16_t *)data)[0], 0x4600); /* 6.0 */
        lodtensor_destroy(out);
    }
done:
    lodtensor_destroy(x64);
    lodtensor_destroy(x16);
}

static void test_pool_failures(void) {
    static const size_t s[1] = {5}, l[5] = {0, 2, 5, 7, 7};
    static const size_t s3[3] = {2, 2, 3}, l3[7] = {0, 1, 0, 2, 0, 3, 7};
    static const int32_t xi[7] = {1, 3, 2, 4, 6, 5, 1};
    lodtensor_t *x = NULL, *dense = NULL, *three = NULL, *xint = NULL, *out = fx_sentinel(), *idx = fx_sentinel();
    if (!CHECK_OK(mk_doc(s, 1, l, 5, &x)) || !CHECK_OK(mk_doc(NULL, 0, NULL, 0, &dense)) ||
        !CHECK_OK(mk_doc(s3, 3, l3, 7, &three)) ||
        !CHECK_OK(fx_create_offsets(fx_i32(), doc_dims, 2, xi, sizeof xi, s, 1, l, 5, &xint))) {
        goto done;
    }
    CHECK_STATUS_MSG(sequence_pool(NULL, LODTENSOR_POOL_SUM, 0.0, &out, &idx), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_pool(x, LODTENSOR_POOL_SUM, 0.0, NULL, &idx), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_pool(x, 7, 0.0, &out, &idx), LODTENSOR_INVALID_ARGUMENT, "pool_type");
    CHECK_STATUS_MSG(sequence_pool(x, -1, 0.0, &out, &idx), LODTENSOR_INVALID_ARGUMENT, "pool_type");
    /* A pad that float32 would round to infinity (infinity itself is a value). */
    CHECK_STATUS_MSG(sequence_pool(x, LODTENSOR_POOL_SUM, 1e39, &out, &idx), LODTENSOR_INVALID_ARGUMENT, "pad_value");
    CHECK_STATUS_MSG(sequence_pool(dense, LODTENSOR_POOL_MAX, 0.0, &out, &idx), LODTENSOR_INVALID_LOD, "no LoD");
    CHECK_STATUS_MSG(sequence_pool(three, LODTENSOR_POOL_MAX, 0.0, &out, &idx), LODTENSOR_INVALID_LOD, "3 LoD");
    CHECK_STATUS_MSG(sequence_pool(xint, LODTENSOR_POOL_MAX, 0.0, &out, &idx), LODTENSOR_UNSUPPORTED, "int32");
    {
        /* 2^31 rows (no elements): MAX and MIN report int32 row indices. SUM has no index. */
        static const int64_t huge[2] = {(int64_t)1 << 31, 0};
        static const size_t hs[1] = {2}, hl[2] = {0, (size_t)1 << 31};
        lodtensor_t *many = NULL, *sum = NULL;
        if (CHECK_OK(fx_create_offsets(fx_f32(), huge, 2, NULL, 0, hs, 1, hl, 2, &many))) {
            CHECK_STATUS_MSG(sequence_pool(many, LODTENSOR_POOL_MAX, 0.0, &out, &idx), LODTENSOR_OUT_OF_RANGE,
                             "2147483648 rows");
            CHECK_STATUS_MSG(sequence_pool(many, LODTENSOR_POOL_MIN, 0.0, &out, NULL), LODTENSOR_OUT_OF_RANGE,
                             "2147483648 rows");
            if (CHECK_OK(sequence_pool(many, LODTENSOR_POOL_SUM, 0.0, &sum, NULL))) {
                lodtensor_destroy(sum);
            }
        }
        lodtensor_destroy(many);
    }
    CHECK_STATUS_MSG(sequence_first_step(NULL, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_first_step(x, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_first_step(dense, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_first_step(three, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_first_step(xint, &out), LODTENSOR_UNSUPPORTED, "int32");
    CHECK_STATUS_MSG(sequence_last_step(NULL, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_last_step(x, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_last_step(dense, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_last_step(three, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_last_step(xint, &out), LODTENSOR_UNSUPPORTED, "int32");
    CHECK_EQ_PTR(out, fx_sentinel());
    CHECK_EQ_PTR(idx, fx_sentinel());
done:
    lodtensor_destroy(x);
    lodtensor_destroy(dense);
    lodtensor_destroy(three);
    lodtensor_destroy(xint);
}

static void test_pad_doc_examples(void) {
    /* lod [[0,2,5]], X [a..e] = 1..5, pad 0, padded_length 4 -> [[1,2,0,0],[3,4,5,0]], Length [2,3]. */
    static const float x1[5] = {1, 2, 3, 4, 5}, zero = 0;
    static const int64_t d1[2] = {5, 1}, dp1[1] = {1};
    static const size_t s[1] = {3}, l[3] = {0, 2, 5};
    static const double want1[8] = {1, 2, 0, 0, 3, 4, 5, 0};
    static const int64_t want_len[2] = {2, 3};
    /* Width-2 rows, PadValue [p1,p2] = [-1,-2], padded_length -1. */
    static const float x2[10] = {11, 12, 21, 22, 31, 32, 41, 42, 51, 52}, p2[2] = {-1, -2};
    static const int64_t d2[2] = {5, 2}, dp2[1] = {2};
    static const double want2[12] = {11, 12, 21, 22, -1, -2, 31, 32, 41, 42, 51, 52};
    lodtensor_t *x = NULL, *pad = NULL, *xw = NULL, *padw = NULL, *out = NULL, *len = NULL;
    int64_t dims[LODTENSOR_MAX_DIMS];
    if (!CHECK_OK(fx_create_offsets(fx_f32(), d1, 2, x1, sizeof x1, s, 1, l, 3, &x)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), dp1, 1, &zero, 4, NULL, 0, NULL, 0, &pad)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), d2, 2, x2, sizeof x2, s, 1, l, 3, &xw)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), dp2, 1, p2, sizeof p2, NULL, 0, NULL, 0, &padw))) {
        goto done;
    }
    if (CHECK_OK(sequence_pad(x, pad, 4, &out, &len))) {
        CHECK_VALS(out, want1, 8);
        CHECK_EQ_SIZE(ndim_of(out, dims), 3);
        CHECK_EQ_INT(dims[0], 2);
        CHECK_EQ_INT(dims[1], 4);
        CHECK_EQ_INT(dims[2], 1);
        CHECK_EQ_SIZE(fx_levels(out), 0);
        CHECK_INTS(len, want_len, 2, 64);
        lodtensor_destroy(out);
        lodtensor_destroy(len);
    }
    /* The Length output is optional. */
    if (CHECK_OK(sequence_pad(xw, padw, -1, &out, NULL))) {
        CHECK_VALS(out, want2, 12);
        CHECK_EQ_SIZE(ndim_of(out, dims), 3);
        CHECK_EQ_INT(dims[1], 3);
        CHECK_EQ_INT(dims[2], 2);
        lodtensor_destroy(out);
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(pad);
    lodtensor_destroy(xw);
    lodtensor_destroy(padw);
}

static void test_pad_failures(void) {
    static const float x1[5] = {1, 2, 3, 4, 5}, two[2] = {0, 0};
    static const double zero64 = 0;
    static const int64_t d1[2] = {5, 1}, dr1[1] = {5}, dp1[1] = {1}, dp2[1] = {2};
    static const size_t s[1] = {3}, l[3] = {0, 2, 5}, s2[2] = {2, 3}, l2[5] = {0, 2, 0, 2, 5};
    lodtensor_t *x = NULL, *x2lev = NULL, *dense = NULL, *rank1 = NULL, *pad = NULL, *pad64 = NULL, *pad2 = NULL;
    lodtensor_t *out = fx_sentinel(), *len = fx_sentinel();
    if (!CHECK_OK(fx_create_offsets(fx_f32(), d1, 2, x1, sizeof x1, s, 1, l, 3, &x)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), d1, 2, x1, sizeof x1, s2, 2, l2, 5, &x2lev)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), d1, 2, x1, sizeof x1, NULL, 0, NULL, 0, &dense)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), dr1, 1, x1, sizeof x1, s, 1, l, 3, &rank1)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), dp1, 1, two, 4, NULL, 0, NULL, 0, &pad)) ||
        !CHECK_OK(fx_create_offsets(fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 64), dp1, 1, &zero64, 8, NULL, 0, NULL, 0, &pad64)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), dp2, 1, two, 8, NULL, 0, NULL, 0, &pad2))) {
        goto done;
    }
    CHECK_STATUS_MSG(sequence_pad(NULL, pad, -1, &out, &len), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_pad(x, NULL, -1, &out, &len), LODTENSOR_NULL_ARGUMENT, "pad_value");
    CHECK_STATUS_MSG(sequence_pad(x, pad, -1, NULL, &len), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_pad(rank1, pad, -1, &out, &len), LODTENSOR_INVALID_ARGUMENT, "rank");
    CHECK_STATUS_MSG(sequence_pad(x, pad64, -1, &out, &len), LODTENSOR_INVALID_ARGUMENT, "pad_value");
    CHECK_STATUS_MSG(sequence_pad(x, pad2, -1, &out, &len), LODTENSOR_INVALID_ARGUMENT, "pad_value");
    CHECK_STATUS_MSG(sequence_pad(x, pad, -2, &out, &len), LODTENSOR_INVALID_ARGUMENT, "padded_length");
    CHECK_STATUS_MSG(sequence_pad(x, pad, 2, &out, &len), LODTENSOR_INVALID_ARGUMENT, "longest");
    CHECK_STATUS_MSG(sequence_pad(x2lev, pad, -1, &out, &len), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_pad(dense, pad, -1, &out, &len), LODTENSOR_INVALID_LOD, "x");
    {
        /* x of 9 dims: the padded output would have 10. */
        static const int64_t d9[9] = {2, 1, 1, 1, 1, 1, 1, 1, 1};
        static const size_t s9[1] = {2}, l9[2] = {0, 2};
        lodtensor_t *x9 = NULL;
        if (CHECK_OK(fx_create_offsets(fx_f32(), d9, 9, two, sizeof two, s9, 1, l9, 2, &x9))) {
            CHECK_STATUS_MSG(sequence_pad(x9, pad, -1, &out, &len), LODTENSOR_INVALID_ARGUMENT, "x: has 9 dims");
        }
        lodtensor_destroy(x9);
    }
    CHECK_EQ_PTR(out, fx_sentinel());
    CHECK_EQ_PTR(len, fx_sentinel());
done:
    lodtensor_destroy(x);
    lodtensor_destroy(x2lev);
    lodtensor_destroy(dense);
    lodtensor_destroy(rank1);
    lodtensor_destroy(pad);
    lodtensor_destroy(pad64);
    lodtensor_destroy(pad2);
}

static void test_unpad(void) {
    /* Doc: X [[1..5],[6..10],[11..15]], Length [2,3,4] -> [1,2,6,7,8,11,12,13,14] [9,1], lod [[0,2,5,9]]. */
    static const int64_t d[2] = {3, 5}, dl[1] = {3}, dl2[1] = {2}, dr1[1] = {15};
    static const int64_t lens[3] = {2, 3, 4}, too_long[3] = {2, 6, 1}, negative[3] = {2, -1, 1};
    static const int32_t lens32[3] = {2, 3, 4};
    static const float flens[3] = {2, 3, 4};
    static const double want[9] = {1, 2, 6, 7, 8, 11, 12, 13, 14};
    static const size_t want_lod[4] = {0, 2, 5, 9};
    float xv[15];
    size_t i;
    lodtensor_t *x = NULL, *rank1 = NULL, *len = NULL, *len32 = NULL, *lenf = NULL, *len_long = NULL;
    lodtensor_t *len_neg = NULL, *len2 = NULL, *out = NULL;
    int64_t dims[LODTENSOR_MAX_DIMS];
    for (i = 0; i < 15; ++i) {
        xv[i] = (float)(i + 1);
    }
    if (!CHECK_OK(fx_create_offsets(fx_f32(), d, 2, xv, sizeof xv, NULL, 0, NULL, 0, &x)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), dr1, 1, xv, sizeof xv, NULL, 0, NULL, 0, &rank1)) ||
        !CHECK_OK(fx_create_offsets(fx_i64(), dl, 1, lens, sizeof lens, NULL, 0, NULL, 0, &len)) ||
        !CHECK_OK(fx_create_offsets(fx_i32(), dl, 1, lens32, sizeof lens32, NULL, 0, NULL, 0, &len32)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), dl, 1, flens, sizeof flens, NULL, 0, NULL, 0, &lenf)) ||
        !CHECK_OK(fx_create_offsets(fx_i64(), dl, 1, too_long, sizeof too_long, NULL, 0, NULL, 0, &len_long)) ||
        !CHECK_OK(fx_create_offsets(fx_i64(), dl, 1, negative, sizeof negative, NULL, 0, NULL, 0, &len_neg)) ||
        !CHECK_OK(fx_create_offsets(fx_i64(), dl2, 1, lens, 16, NULL, 0, NULL, 0, &len2))) {
        goto done;
    }
    if (CHECK_OK(sequence_unpad(x, len, &out))) {
        CHECK_VALS(out, want, 9);
        CHECK_EQ_SIZE(ndim_of(out, dims), 2);
        CHECK_EQ_INT(dims[0], 9);
        CHECK_EQ_INT(dims[1], 1);
        CHECK_OFFSETS(out, 0, want_lod, 4);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(sequence_unpad(x, len32, &out))) {
        CHECK_VALS(out, want, 9);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_unpad(NULL, len, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_unpad(x, NULL, &out), LODTENSOR_NULL_ARGUMENT, "length");
    CHECK_STATUS_MSG(sequence_unpad(x, len, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_unpad(rank1, len, &out), LODTENSOR_INVALID_ARGUMENT, "rank");
    CHECK_STATUS_MSG(sequence_unpad(x, len2, &out), LODTENSOR_INVALID_ARGUMENT, "length");
    CHECK_STATUS_MSG(sequence_unpad(x, len_long, &out), LODTENSOR_INVALID_ARGUMENT, "length[1] = 6");
    CHECK_STATUS_MSG(sequence_unpad(x, len_neg, &out), LODTENSOR_INVALID_ARGUMENT, "length[1] = -1");
    CHECK_STATUS_MSG(sequence_unpad(x, lenf, &out), LODTENSOR_UNSUPPORTED, "length");
    CHECK_EQ_PTR(out, fx_sentinel());
done:
    lodtensor_destroy(x);
    lodtensor_destroy(rank1);
    lodtensor_destroy(len);
    lodtensor_destroy(len32);
    lodtensor_destroy(lenf);
    lodtensor_destroy(len_long);
    lodtensor_destroy(len_neg);
    lodtensor_destroy(len2);
}

int main(void) {
    test_pool_doc_example();
    test_pool_two_levels_and_steps();
    test_pool_f64_and_half();
    test_pool_failures();
    test_pad_doc_examples();
    test_pad_failures();
    test_unpad();
    return CHECK_RETURN();
}
