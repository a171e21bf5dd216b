/* test_sequence_expand_scatter: sequence_expand, sequence_expand_as (spec §2), sequence_scatter
 * and sequence_scatter_inplace (spec §3) through the C API: the worked examples, the documented
 * failures, and "outputs are written only on success". */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* A host tensor from dims, data and an offsets LoD (num_levels 0 = none). */
/* t is float32 with exactly the n values `want`. */
static int check_f32(const lodtensor_t *t, const float *want, size_t n, int line) {
    const void *data = NULL;
    size_t numel = 0, i;
    if (lodtensor_data(t, &data) != LODTENSOR_OK || lodtensor_numel(t, &numel) != LODTENSOR_OK || numel != n) {
        fprintf(stderr, "%s:%d: expected %zu elements, got %zu\n", __FILE__, line, n, numel);
        return check_record(0);
    }
    for (i = 0; i < n; ++i) {
        float got = ((const float *)data)[i];
        float diff = got > want[i] ? got - want[i] : want[i] - got;
        if (diff > 1e-5f) {
            fprintf(stderr, "%s:%d: element %zu is %g, expected %g\n", __FILE__, line, i, (double)got,
                    (double)want[i]);
            return check_record(0);
        }
    }
    return check_record(1);
}
#define CHECK_F32(t, want, n) check_f32((t), (want), (n), __LINE__)

/* Row i of t (float32, fixture values) is row rows[i] of the fixture. */
static int check_row_ids(const lodtensor_t *t, const size_t *rows, size_t n, size_t width, int line) {
    const void *data = NULL;
    size_t numel = 0, i, c;
    if (lodtensor_data(t, &data) != LODTENSOR_OK || lodtensor_numel(t, &numel) != LODTENSOR_OK ||
        numel != n * width) {
        fprintf(stderr, "%s:%d: expected %zu x %zu elements, got %zu\n", __FILE__, line, n, width, numel);
        return check_record(0);
    }
    for (i = 0; i < n; ++i) {
        for (c = 0; c < width; ++c) {
            if (((const float *)data)[i * width + c] != fx_value(rows[i], c)) {
                fprintf(stderr, "%s:%d: row %zu is not fixture row %zu\n", __FILE__, line, i, rows[i]);
                return check_record(0);
            }
        }
    }
    return check_record(1);
}
#define CHECK_ROW_IDS(t, rows, n, width) check_row_ids((t), (rows), (n), (width), __LINE__)

static int64_t dim_of(const lodtensor_t *t, size_t i) {
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0;
    CHECK_OK(lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim));
    return i < ndim ? dims[i] : -1;
}

/* A float32 [rows, 1] tensor (data zeros) with an offsets LoD: the role of Y. */
static int32_t mk_y(size_t rows, const size_t *level_sizes, size_t num_levels, const size_t *lod, size_t lod_len,
                    lodtensor_t **out) {
    return fx_make_f32(rows, 1, LODTENSOR_LOD_OFFSETS, level_sizes, num_levels, lod, lod_len, out);
}

static void test_expand_doc_cases(void) {
    /* Op doc case 1: X lod [[0,2,4]] [a,b,c,d]; Y lod [[0,2,4],[0,3,6,7,8]], ref_level 0. */
    static const float xv[4] = {1, 2, 3, 4};
    static const int64_t xd[2] = {4, 1};
    static const size_t xs[1] = {3}, xl1[3] = {0, 2, 4}, xl2[3] = {0, 1, 4};
    static const size_t ys[2] = {3, 5}, yl1[8] = {0, 2, 4, 0, 3, 6, 7, 8}, yl2[8] = {0, 2, 4, 0, 3, 6, 6, 8};
    static const float want1[8] = {1, 2, 1, 2, 3, 4, 3, 4}, want2[8] = {1, 1, 2, 3, 4, 2, 3, 4};
    static const size_t lod1[5] = {0, 2, 4, 6, 8}, lod2[5] = {0, 1, 2, 5, 8};
    /* Op doc case 3: dense X [[a],[b],[c]], Y lod [[0,2,3,6]], ref_level -1: no LoD out. */
    static const int64_t x3d[2] = {3, 1};
    static const size_t y3s[1] = {4}, y3l[4] = {0, 2, 3, 6};
    static const float want3[6] = {1, 1, 2, 3, 3, 3};
    lodtensor_t *x1 = NULL, *x2 = NULL, *x3 = NULL, *y1 = NULL, *y2 = NULL, *y3 = NULL, *out = NULL;
    if (!CHECK_OK(fx_create_offsets(fx_f32(), xd, 2, xv, sizeof xv, xs, 1, xl1, 3, &x1)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), xd, 2, xv, sizeof xv, xs, 1, xl2, 3, &x2)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), x3d, 2, xv, 12, NULL, 0, NULL, 0, &x3)) || !CHECK_OK(mk_y(8, ys, 2, yl1, 8, &y1)) ||
        !CHECK_OK(mk_y(8, ys, 2, yl2, 8, &y2)) || !CHECK_OK(mk_y(6, y3s, 1, y3l, 4, &y3))) {
        goto done;
    }
    if (CHECK_OK(sequence_expand(x1, y1, 0, &out))) {
        CHECK_F32(out, want1, 8);
        CHECK_EQ_SIZE(fx_levels(out), 1);
        CHECK_OFFSETS(out, 0, lod1, 5);
        CHECK_EQ_INT(dim_of(out, 0), 8);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (CHECK_OK(sequence_expand(x2, y2, 0, &out))) {
        CHECK_F32(out, want2, 8);
        CHECK_OFFSETS(out, 0, lod2, 5);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (CHECK_OK(sequence_expand(x3, y3, -1, &out))) {
        CHECK_F32(out, want3, 6);
        CHECK_EQ_SIZE(fx_levels(out), 0);
        lodtensor_destroy(out);
        out = NULL;
    }
done:
    lodtensor_destroy(x1);
    lodtensor_destroy(x2);
    lodtensor_destroy(x3);
    lodtensor_destroy(y1);
    lodtensor_destroy(y2);
    lodtensor_destroy(y3);
}

static void test_expand_as(void) {
    /* Op doc case 1: X [[a],[b],[c],[d]], Y lod [[0,3,6,7,8]] -> [a,a,a,b,b,b,c,d] with Y's LoD;
     * and TestSequenceExpandAsCase1 (row 2 dropped) on fixture rows of width 3. */
    static const size_t ys[1] = {5}, yl[5] = {0, 3, 6, 7, 8}, y2l[6] = {0, 2, 4, 4, 7, 10};
    static const float want[8] = {0, 0, 0, 100, 100, 100, 200, 300};
    lodtensor_t *x = NULL, *x5 = NULL, *y = NULL, *y2 = NULL, *out = NULL;
    static const size_t y2s[1] = {6};
    if (!CHECK_OK(fx_make_f32(4, 1, 0, NULL, 0, NULL, 0, &x)) || !CHECK_OK(mk_y(8, ys, 1, yl, 5, &y)) ||
        !CHECK_OK(fx_make_f32(5, 3, 0, NULL, 0, NULL, 0, &x5)) || !CHECK_OK(mk_y(10, y2s, 1, y2l, 6, &y2))) {
        goto done;
    }
    if (CHECK_OK(sequence_expand_as(x, y, &out))) {
        CHECK_F32(out, want, 8);
        CHECK_OFFSETS(out, 0, yl, 5);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (CHECK_OK(sequence_expand_as(x5, y2, &out))) {
        static const size_t rows[10] = {0, 0, 1, 1, 3, 3, 3, 4, 4, 4};
        CHECK_EQ_INT(dim_of(out, 0), 10);
        CHECK_EQ_INT(dim_of(out, 1), 3);
        CHECK_ROW_IDS(out, rows, 10, 3);
        CHECK_OFFSETS(out, 0, y2l, 6);
        lodtensor_destroy(out);
        out = NULL;
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(x5);
    lodtensor_destroy(y);
    lodtensor_destroy(y2);
}

static void test_expand_dense_ref_level_and_empty(void) {
    /* TestSequenceExpandCase5: dense X [6, 4], Y lengths [[2,4],[2,2,3,0,3,3]], ref_level 1. */
    static const size_t ys[2] = {3, 7}, yl[10] = {0, 2, 6, 0, 2, 4, 7, 7, 10, 13};
    static const size_t rows5[13] = {0, 0, 1, 1, 2, 2, 2, 4, 4, 4, 5, 5, 5};
    /* TestSequenceExpandCase6: X lengths [[1,1,0,1,1]], Y lengths [[0,2,4,2,0]]. */
    static const size_t xs[1] = {6}, xl[6] = {0, 1, 2, 2, 3, 4};
    static const size_t y6s[1] = {6}, y6l[6] = {0, 0, 2, 6, 8, 8};
    static const size_t rows6[4] = {1, 1, 2, 2}, lod6[9] = {0, 1, 2, 2, 2, 2, 2, 3, 4};
    lodtensor_t *x = NULL, *y = NULL, *x6 = NULL, *y6 = NULL, *out = NULL;
    if (!CHECK_OK(fx_make_f32(6, 4, 0, NULL, 0, NULL, 0, &x)) || !CHECK_OK(mk_y(13, ys, 2, yl, 10, &y)) ||
        !CHECK_OK(fx_make_f32(4, 5, LODTENSOR_LOD_OFFSETS, xs, 1, xl, 6, &x6)) ||
        !CHECK_OK(mk_y(8, y6s, 1, y6l, 6, &y6))) {
        goto done;
    }
    if (CHECK_OK(sequence_expand(x, y, 1, &out))) {
        CHECK_ROW_IDS(out, rows5, 13, 4);
        CHECK_EQ_SIZE(fx_levels(out), 0);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (CHECK_OK(sequence_expand(x6, y6, -1, &out))) {
        CHECK_ROW_IDS(out, rows6, 4, 5);
        CHECK_OFFSETS(out, 0, lod6, 9);
        lodtensor_destroy(out);
        out = NULL;
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(y);
    lodtensor_destroy(x6);
    lodtensor_destroy(y6);
}

static void test_expand_failures(void) {
    static const size_t s1[1] = {3}, l1[3] = {0, 1, 2};
    static const size_t s2[2] = {2, 3}, l2[5] = {0, 2, 0, 1, 2};
    static const size_t s3[1] = {4}, l3[4] = {0, 1, 2, 3};
    static const int64_t d1[1] = {2};
    static const float v[2] = {1, 2};
    lodtensor_t *x = NULL, *x2lev = NULL, *dense3 = NULL, *rank1 = NULL, *y = NULL, *y3 = NULL, *ynolod = NULL;
    lodtensor_t *out = fx_sentinel();
    if (!CHECK_OK(fx_make_f32(2, 1, LODTENSOR_LOD_OFFSETS, s1, 1, l1, 3, &x)) ||
        !CHECK_OK(fx_make_f32(2, 1, LODTENSOR_LOD_OFFSETS, s2, 2, l2, 5, &x2lev)) ||
        !CHECK_OK(fx_make_f32(3, 1, 0, NULL, 0, NULL, 0, &dense3)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), d1, 1, v, sizeof v, s1, 1, l1, 3, &rank1)) || !CHECK_OK(mk_y(2, s1, 1, l1, 3, &y)) ||
        !CHECK_OK(mk_y(3, s3, 1, l3, 4, &y3)) || !CHECK_OK(fx_make_f32(2, 1, 0, NULL, 0, NULL, 0, &ynolod))) {
        goto done;
    }
    CHECK_STATUS_MSG(sequence_expand(NULL, y, 0, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_expand(x, NULL, 0, &out), LODTENSOR_NULL_ARGUMENT, "y");
    CHECK_STATUS_MSG(sequence_expand(x, y, 0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_expand(rank1, y, 0, &out), LODTENSOR_INVALID_ARGUMENT, "rank");
    CHECK_STATUS_MSG(sequence_expand(dense3, y, 0, &out), LODTENSOR_INVALID_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_expand(x2lev, y, 0, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_expand(x, ynolod, 0, &out), LODTENSOR_INVALID_LOD, "y");
    CHECK_STATUS_MSG(sequence_expand(x, y3, 0, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_expand(x, y, 1, &out), LODTENSOR_OUT_OF_RANGE, "ref_level");
    CHECK_STATUS_MSG(sequence_expand(x, y, -2, &out), LODTENSOR_OUT_OF_RANGE, "ref_level");
    CHECK_STATUS_MSG(sequence_expand_as(NULL, y, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_expand_as(x, NULL, &out), LODTENSOR_NULL_ARGUMENT, "y");
    CHECK_STATUS_MSG(sequence_expand_as(x, y, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_expand_as(rank1, y, &out), LODTENSOR_INVALID_ARGUMENT, "rank");
    CHECK_STATUS_MSG(sequence_expand_as(x, y3, &out), LODTENSOR_INVALID_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_expand_as(x, ynolod, &out), LODTENSOR_INVALID_LOD, "y");
    CHECK_STATUS_MSG(sequence_expand_as(x, x2lev, &out), LODTENSOR_INVALID_LOD, "y");
    CHECK_EQ_PTR(out, fx_sentinel());
done:
    lodtensor_destroy(x);
    lodtensor_destroy(x2lev);
    lodtensor_destroy(dense3);
    lodtensor_destroy(rank1);
    lodtensor_destroy(y);
    lodtensor_destroy(y3);
    lodtensor_destroy(ynolod);
}

/* The §3 doc example: X 3x6 ones, ids with lod [[0,3,8,12]], updates alike. */
static const int64_t doc_ids[12] = {0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4};
static const float doc_upd[12] = {0.3f, 0.3f, 0.4f, 0.1f, 0.2f, 0.3f, 0.4f, 0.0f, 0.2f, 0.3f, 0.1f, 0.4f};
static const float doc_want[18] = {1.3f, 1.3f, 1.4f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.4f,
                                   1.3f, 1.2f, 1.1f, 1.0f, 1.0f, 1.3f, 1.2f, 1.4f, 1.1f};
static const size_t doc_sizes[1] = {4}, doc_lod[4] = {0, 3, 8, 12};

static int32_t mk_ones(lodtensor_t **out) {
    static const float ones[18] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const int64_t d[2] = {3, 6};
    return fx_create_offsets(fx_f32(), d, 2, ones, sizeof ones, NULL, 0, NULL, 0, out);
}

static void test_scatter_doc_example(void) {
    static const int64_t idd[2] = {12, 1}, ud[2] = {12, 1};
    static const float ones[18] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    int32_t ids32[12];
    size_t i;
    lodtensor_t *x = NULL, *ids = NULL, *ids32t = NULL, *upd = NULL, *out = NULL, *share = NULL;
    for (i = 0; i < 12; ++i) {
        ids32[i] = (int32_t)doc_ids[i];
    }
    if (!CHECK_OK(mk_ones(&x)) || !CHECK_OK(fx_create_offsets(fx_i64(), idd, 2, doc_ids, sizeof doc_ids, doc_sizes, 1, doc_lod, 4, &ids)) ||
        !CHECK_OK(fx_create_offsets(fx_i32(), idd, 2, ids32, sizeof ids32, doc_sizes, 1, doc_lod, 4, &ids32t)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), ud, 2, doc_upd, sizeof doc_upd, doc_sizes, 1, doc_lod, 4, &upd))) {
        goto done;
    }
    if (CHECK_OK(sequence_scatter(x, ids, upd, &out))) {
        CHECK_F32(out, doc_want, 18);
        CHECK_EQ_SIZE(fx_levels(out), 0);
        lodtensor_destroy(out);
        out = NULL;
    }
    CHECK_F32(x, ones, 18); /* x is not modified */
    /* In place, with int32 ids: the writes are seen through a share of x. */
    if (CHECK_OK(lodtensor_share(x, &share)) && CHECK_OK(sequence_scatter_inplace(x, ids32t, upd))) {
        CHECK_F32(share, doc_want, 18);
        CHECK_F32(x, doc_want, 18);
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(share);
    lodtensor_destroy(ids);
    lodtensor_destroy(ids32t);
    lodtensor_destroy(upd);
}

static void test_scatter_empty_sequences(void) {
    /* §3's test LoDs with empty sequences: [[60,0,60]] on X 3x6 (row 1 unchanged). */
    static const size_t sizes[1] = {4}, l[4] = {0, 60, 60, 120};
    static const int64_t d[2] = {120, 1};
    int64_t ids[120];
    float upd[120], want[18];
    size_t i;
    lodtensor_t *x = NULL, *idt = NULL, *ut = NULL, *out = NULL;
    for (i = 0; i < 18; ++i) {
        want[i] = 1.0f;
    }
    for (i = 0; i < 120; ++i) {
        ids[i] = (int64_t)((i * 7) % 6);
        upd[i] = (float)(i % 4);
        want[(i < 60 ? 0 : 2) * 6 + (size_t)ids[i]] += upd[i];
    }
    if (!CHECK_OK(mk_ones(&x)) || !CHECK_OK(fx_create_offsets(fx_i64(), d, 2, ids, sizeof ids, sizes, 1, l, 4, &idt)) ||
        !CHECK_OK(fx_create_offsets(fx_f32(), d, 2, upd, sizeof upd, sizes, 1, l, 4, &ut))) {
        goto done;
    }
    if (CHECK_OK(sequence_scatter(x, idt, ut, &out))) {
        CHECK_F32(out, want, 18);
        lodtensor_destroy(out);
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(idt);
    lodtensor_destroy(ut);
}

static void test_scatter_failures(void) {
    static const int64_t d3[2] = {3, 1}, d3x2[2] = {3, 2}, d2[2] = {2, 1};
    static const size_t s[1] = {3}, l[3] = {0, 2, 3}, s4[1] = {4}, l4[4] = {0, 1, 2, 3}, s2[1] = {2}, l2[2] = {0, 2};
    static const int64_t good[3] = {0, 5, 2}, big[3] = {0, 6, 2}, neg[3] = {0, -1, 2}, wide[6] = {0, 0, 0, 0, 0, 0};
    static const float u[3] = {1, 1, 1}, fids[3] = {0, 1, 2};
    static const double u64[3] = {1, 1, 1};
    static const unsigned char bools[18] = {0};
    static const float x1v[12] = {0};
    static const int64_t x1d[2] = {2, 6}, bd[2] = {3, 6};
    float scalar = 0;
    lodtensor_t *x = NULL, *x2 = NULL, *x0d = NULL, *bx = NULL, *bu = NULL, *ids = NULL, *ids_big = NULL;
    lodtensor_t *ids_neg = NULL, *ids_wide = NULL, *ids_f = NULL, *ids_nolod = NULL, *ids4 = NULL, *upd = NULL;
    lodtensor_t *upd_short = NULL, *upd_f64 = NULL, *upd_nolod = NULL, *upd4 = NULL, *x_share = NULL;
    lodtensor_t *out = fx_sentinel();
    int ok = CHECK_OK(mk_ones(&x)) && CHECK_OK(fx_create_offsets(fx_f32(), x1d, 2, x1v, sizeof x1v, NULL, 0, NULL, 0, &x2)) &&
             CHECK_OK(fx_create_offsets(fx_f32(), NULL, 0, &scalar, 4, NULL, 0, NULL, 0, &x0d)) &&
             CHECK_OK(fx_create_offsets(fx_dtype(LODTENSOR_DTYPE_CODE_BOOL, 8), bd, 2, bools, 18, NULL, 0, NULL, 0, &bx)) &&
             CHECK_OK(fx_create_offsets(fx_dtype(LODTENSOR_DTYPE_CODE_BOOL, 8), d3, 2, bools, 3, s, 1, l, 3, &bu)) &&
             CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, good, sizeof good, s, 1, l, 3, &ids)) &&
             CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, big, sizeof big, s, 1, l, 3, &ids_big)) &&
             CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, neg, sizeof neg, s, 1, l, 3, &ids_neg)) &&
             CHECK_OK(fx_create_offsets(fx_i64(), d3x2, 2, wide, sizeof wide, s, 1, l, 3, &ids_wide)) &&
             CHECK_OK(fx_create_offsets(fx_f32(), d3, 2, fids, sizeof fids, s, 1, l, 3, &ids_f)) &&
             CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, good, sizeof good, NULL, 0, NULL, 0, &ids_nolod)) &&
             CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, wide, 24, s4, 1, l4, 4, &ids4)) &&
             CHECK_OK(fx_create_offsets(fx_f32(), d3, 2, u, sizeof u, s, 1, l, 3, &upd)) &&
             CHECK_OK(fx_create_offsets(fx_f32(), d2, 2, u, 8, s2, 1, l2, 2, &upd_short)) &&
             CHECK_OK(fx_create_offsets(fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 64), d3, 2, u64, sizeof u64, s, 1, l, 3, &upd_f64)) &&
             CHECK_OK(fx_create_offsets(fx_f32(), d3, 2, u, sizeof u, NULL, 0, NULL, 0, &upd_nolod)) &&
             CHECK_OK(fx_create_offsets(fx_f32(), d3, 2, u, sizeof u, s4, 1, l4, 4, &upd4)) && CHECK_OK(lodtensor_share(x, &x_share));
    if (ok) {
        CHECK_STATUS_MSG(sequence_scatter(NULL, ids, upd, &out), LODTENSOR_NULL_ARGUMENT, "x");
        CHECK_STATUS_MSG(sequence_scatter(x, NULL, upd, &out), LODTENSOR_NULL_ARGUMENT, "ids");
        CHECK_STATUS_MSG(sequence_scatter(x, ids, NULL, &out), LODTENSOR_NULL_ARGUMENT, "updates");
        CHECK_STATUS_MSG(sequence_scatter(x, ids, upd, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(sequence_scatter(x0d, ids, upd, &out), LODTENSOR_INVALID_ARGUMENT, "0-d");
        CHECK_STATUS_MSG(sequence_scatter(x, ids_wide, upd, &out), LODTENSOR_INVALID_ARGUMENT, "ids");
        CHECK_STATUS_MSG(sequence_scatter(x, ids, upd_f64, &out), LODTENSOR_INVALID_ARGUMENT, "updates");
        CHECK_STATUS_MSG(sequence_scatter(x, ids, upd_short, &out), LODTENSOR_INVALID_ARGUMENT, "updates");
        CHECK_STATUS_MSG(sequence_scatter(x, ids_nolod, upd, &out), LODTENSOR_INVALID_LOD, "ids");
        CHECK_STATUS_MSG(sequence_scatter(x, ids, upd_nolod, &out), LODTENSOR_INVALID_LOD, "updates");
        CHECK_STATUS_MSG(sequence_scatter(x, ids_big, upd, &out), LODTENSOR_OUT_OF_RANGE, "ids[1] = 6");
        CHECK_STATUS_MSG(sequence_scatter(x, ids_neg, upd, &out), LODTENSOR_OUT_OF_RANGE, "ids[1] = -1");
        CHECK_STATUS_MSG(sequence_scatter(x2, ids4, upd4, &out), LODTENSOR_OUT_OF_RANGE, "3 sequences");
        CHECK_STATUS_MSG(sequence_scatter(x, ids_f, upd, &out), LODTENSOR_UNSUPPORTED, "ids");
        CHECK_STATUS_MSG(sequence_scatter(bx, ids, bu, &out), LODTENSOR_UNSUPPORTED, "bool");
        CHECK_EQ_PTR(out, fx_sentinel());
        /* In place: the same rules, and x is untouched on failure. */
        CHECK_STATUS_MSG(sequence_scatter_inplace(NULL, ids, upd), LODTENSOR_NULL_ARGUMENT, "x");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, NULL, upd), LODTENSOR_NULL_ARGUMENT, "ids");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids, NULL), LODTENSOR_NULL_ARGUMENT, "updates");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x0d, ids, upd), LODTENSOR_INVALID_ARGUMENT, "0-d");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids_wide, upd), LODTENSOR_INVALID_ARGUMENT, "ids");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids, upd_f64), LODTENSOR_INVALID_ARGUMENT, "updates");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids, upd_short), LODTENSOR_INVALID_ARGUMENT, "one value per id");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids_nolod, upd), LODTENSOR_INVALID_LOD, "ids");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids, upd_nolod), LODTENSOR_INVALID_LOD, "updates");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids_big, upd), LODTENSOR_OUT_OF_RANGE, "ids[1] = 6");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x2, ids4, upd4), LODTENSOR_OUT_OF_RANGE, "3 sequences");
        CHECK_STATUS_MSG(sequence_scatter_inplace(x, ids_f, upd), LODTENSOR_UNSUPPORTED, "ids");
        CHECK_STATUS_MSG(sequence_scatter_inplace(bx, ids, bu), LODTENSOR_UNSUPPORTED, "bool");
        /* ids and updates may not use x's memory (here updates is a share of x). */
        {
            static const float ones[18] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
            static const int64_t zeros3[3] = {0, 0, 0};
            lodtensor_t *ids0 = NULL, *col = NULL, *col_share = NULL;
            if (CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, zeros3, sizeof zeros3, s, 1, l, 3, &ids0)) &&
                CHECK_OK(fx_create_offsets(fx_f32(), d3, 2, u, sizeof u, s, 1, l, 3, &col)) &&
                CHECK_OK(lodtensor_share(col, &col_share))) {
                CHECK_STATUS_MSG(sequence_scatter_inplace(col, ids0, col_share), LODTENSOR_INVALID_ARGUMENT,
                                 "updates");
                CHECK_STATUS_MSG(sequence_scatter_inplace(col, col_share, ids0), LODTENSOR_UNSUPPORTED, "ids");
                CHECK_F32(col, u, 3);
            }
            lodtensor_destroy(ids0);
            lodtensor_destroy(col);
            lodtensor_destroy(col_share);
            CHECK_F32(x, ones, 18);
            CHECK_F32(x_share, ones, 18);
        }
        /* ids a share of x: an int64 x [3, 1] with a LoD of ids in range, so only the shared
         * memory is wrong (a float x is refused as ids' dtype first). */
        {
            static const int64_t zeros3[3] = {0, 0, 0}, ones3[3] = {1, 1, 1};
            lodtensor_t *xi = NULL, *xi_share = NULL, *upd_i = NULL;
            if (CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, zeros3, sizeof zeros3, s, 1, l, 3, &xi)) &&
                CHECK_OK(fx_create_offsets(fx_i64(), d3, 2, ones3, sizeof ones3, s, 1, l, 3, &upd_i)) &&
                CHECK_OK(lodtensor_share(xi, &xi_share))) {
                CHECK_STATUS_MSG(sequence_scatter_inplace(xi, xi_share, upd_i), LODTENSOR_INVALID_ARGUMENT,
                                 "ids: uses x's memory");
                CHECK(memcmp(fx_data(xi), zeros3, sizeof zeros3) == 0);
            }
            lodtensor_destroy(xi);
            lodtensor_destroy(xi_share);
            lodtensor_destroy(upd_i);
        }
    }
    lodtensor_destroy(x);
    lodtensor_destroy(x2);
    lodtensor_destroy(x0d);
    lodtensor_destroy(bx);
    lodtensor_destroy(bu);
    lodtensor_destroy(ids);
    lodtensor_destroy(ids_big);
    lodtensor_destroy(ids_neg);
    lodtensor_destroy(ids_wide);
    lodtensor_destroy(ids_f);
    lodtensor_destroy(ids_nolod);
    lodtensor_destroy(ids4);
    lodtensor_destroy(upd);
    lodtensor_destroy(upd_short);
    lodtensor_destroy(upd_f64);
    lodtensor_destroy(upd_nolod);
    lodtensor_destroy(upd4);
    lodtensor_destroy(x_share);
}

int main(void) {
    test_expand_doc_cases();
    test_expand_as();
    test_expand_dense_ref_level_and_empty();
    test_expand_failures();
    test_scatter_doc_example();
    test_scatter_empty_sequences();
    test_scatter_failures();
    return CHECK_RETURN();
}
