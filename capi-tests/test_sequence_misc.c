/* test_sequence_misc: sequence_softmax, sequence_concat, sequence_slice, sequence_reverse,
 * sequence_mask, sequence_enumerate, sequence_erase, sequence_reshape, sequence_conv (spec §6):
 * the worked examples with value checks, and every documented failure, with outputs left
 * untouched. */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* A tensor of `dtype` and dims[0..ndim) from `data`, with a one-level offset LoD (n_offsets 0 for
 * none) or, with `level_sizes`, a multi-level one. */
static lodtensor_t *make2(lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, const void *data, size_t nbytes,
                          const size_t *sizes, const size_t *offsets, size_t n_offsets) {
    lodtensor_t *t = NULL;
    if (!CHECK_OK(lodtensor_create(dtype, dims, ndim, data, nbytes, LODTENSOR_LOD_OFFSETS, sizes, 2, offsets, n_offsets,
                                   &t))) {
        return NULL;
    }
    return t;
}

static int dims_are(const lodtensor_t *t, const int64_t *want, size_t n) {
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0;
    return CHECK_OK(lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim)) && CHECK_EQ_SIZE(ndim, n) &&
           CHECK(memcmp(dims, want, n * sizeof(int64_t)) == 0);
}

static lodtensor_dtype_t fx_f64(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 64); }

static void test_softmax(void) {
    static const float x[15] = {0.7f, 1, 0.6f, 1.5f, 1.1f, 1.2f, 0.2f, 0.6f, 1.9f, 3.1f, 2.5f, 0.8f, 0.1f, 2.4f, 1.3f};
    static const double want[15] = {0.30724832, 0.41474187, 0.2780098, 0.59868765, 0.40131235,
                                    0.2544242,  0.09359743, 0.13963096, 0.5123474, 1.0,
                                    0.84553474, 0.15446526, 0.06995796, 0.69777346, 0.23226859};
    static const size_t lod[7] = {0, 3, 5, 9, 10, 12, 15};
    static const int64_t dims[2] = {15, 1}, wide_dims[2] = {3, 2}, int_dims[1] = {3};
    static const size_t lod3[2] = {0, 3};
    static const int32_t ints[3] = {1, 2, 3};
    lodtensor_t *t = fx_make_lod1(fx_f32(), dims, 2, x, sizeof x, lod, 7);
    lodtensor_t *plain = fx_make_lod1(fx_f32(), dims, 2, x, sizeof x, NULL, 0);
    lodtensor_t *wide = fx_make_lod1(fx_f32(), wide_dims, 2, x, 6 * sizeof(float), lod3, 2);
    lodtensor_t *it = fx_make_lod1(fx_i32(), int_dims, 1, ints, sizeof ints, lod3, 2);
    lodtensor_t *out = NULL;
    size_t i;
    if (t && CHECK_OK(sequence_softmax(t, &out))) {
        const float *o = (const float *)fx_data(out);
        for (i = 0; i < 15; ++i) {
            CHECK((o[i] > want[i] ? o[i] - want[i] : want[i] - o[i]) < 1e-6);
        }
        dims_are(out, dims, 2);
        CHECK_OFFSETS(out, 0, lod, 7);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_softmax(NULL, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_softmax(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_softmax(plain, &out), LODTENSOR_INVALID_LOD, "LoD");
    CHECK_STATUS_MSG(sequence_softmax(wide, &out), LODTENSOR_INVALID_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_softmax(it, &out), LODTENSOR_UNSUPPORTED, "int32");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(plain);
    lodtensor_destroy(wide);
    lodtensor_destroy(it);
}

static void test_concat(void) {
    /* Op doc offsets [0,3,7] and [0,7,9] -> [0,10,16]; int64 rows that say where they came from. */
    int64_t a[7], b[9];
    static const int64_t da[1] = {7}, db[2] = {9, 1}, dw[2] = {4, 2}, want_dims[1] = {16};
    static const size_t la[3] = {0, 3, 7}, lb[3] = {0, 7, 9}, want[3] = {0, 10, 16}, l1[2] = {0, 7}, lw[3] = {0, 2, 4};
    const lodtensor_t *xs[3];
    lodtensor_t *ta, *tb, *tf, *tw, *tplain, *tone, *out = NULL;
    size_t i;
    for (i = 0; i < 7; ++i) {
        a[i] = (int64_t)i;
    }
    for (i = 0; i < 9; ++i) {
        b[i] = 100 + (int64_t)i;
    }
    ta = fx_make_lod1(fx_i64(), da, 1, a, sizeof a, la, 3);
    tb = fx_make_lod1(fx_i64(), db, 2, b, sizeof b, lb, 3);
    tf = fx_make_lod1(fx_f64(), da, 1, a, sizeof a, la, 3);
    tw = fx_make_lod1(fx_i64(), dw, 2, b, 8 * sizeof(int64_t), lw, 3);
    tplain = fx_make_lod1(fx_i64(), da, 1, a, sizeof a, NULL, 0);
    tone = fx_make_lod1(fx_i64(), da, 1, a, sizeof a, l1, 2);
    xs[0] = ta;
    xs[1] = tb;
    xs[2] = ta;
    if (ta && tb && CHECK_OK(sequence_concat(xs, 2, &out))) {
        static const int64_t rows[16] = {0, 1, 2, 100, 101, 102, 103, 104, 105, 106, 3, 4, 5, 6, 107, 108};
        CHECK(memcmp(fx_data(out), rows, sizeof rows) == 0);
        CHECK_OFFSETS(out, 0, want, 3);
        dims_are(out, want_dims, 1);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (ta && tb && CHECK_OK(sequence_concat(xs, 3, &out))) {
        static const size_t want3[3] = {0, 13, 23};
        CHECK_OFFSETS(out, 0, want3, 3);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_concat(NULL, 2, &out), LODTENSOR_NULL_ARGUMENT, "xs");
    CHECK_STATUS_MSG(sequence_concat(xs, 2, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    xs[1] = NULL;
    CHECK_STATUS_MSG(sequence_concat(xs, 2, &out), LODTENSOR_NULL_ARGUMENT, "xs[1]");
    CHECK_STATUS_MSG(sequence_concat(xs, 1, &out), LODTENSOR_INVALID_ARGUMENT, "at least 2");
    CHECK_STATUS_MSG(sequence_concat(xs, 0, &out), LODTENSOR_INVALID_ARGUMENT, "at least 2");
    /* A list of length 0 may be NULL: the count is what is wrong. */
    CHECK_STATUS_MSG(sequence_concat(NULL, 0, &out), LODTENSOR_INVALID_ARGUMENT, "at least 2");
    xs[1] = tf;
    CHECK_STATUS_MSG(sequence_concat(xs, 2, &out), LODTENSOR_INVALID_ARGUMENT, "dtype");
    xs[1] = tw;
    CHECK_STATUS_MSG(sequence_concat(xs, 2, &out), LODTENSOR_INVALID_ARGUMENT, "width");
    xs[1] = tplain;
    CHECK_STATUS_MSG(sequence_concat(xs, 2, &out), LODTENSOR_INVALID_LOD, "xs[1]");
    xs[1] = tone;
    CHECK_STATUS_MSG(sequence_concat(xs, 2, &out), LODTENSOR_INVALID_LOD, "sequences");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(ta);
    lodtensor_destroy(tb);
    lodtensor_destroy(tf);
    lodtensor_destroy(tw);
    lodtensor_destroy(tplain);
    lodtensor_destroy(tone);
}

static void test_slice(void) {
    /* Doc: rows a..e (1..5), lod [[0,3,5]], offset [[0],[1]], length [[2],[1]] -> [a,b,e], [[0,2,3]]. */
    static const float x[5] = {1, 2, 3, 4, 5};
    static const int64_t dx[2] = {5, 1}, d21[2] = {2, 1}, d2[1] = {2}, d3[1] = {3}, d12[2] = {1, 2};
    static const size_t lod[3] = {0, 3, 5}, want_lod[3] = {0, 2, 3};
    static const size_t sizes2[2] = {2, 3}, lod2[5] = {0, 2, 0, 3, 5};
    static const int64_t off[2] = {0, 1}, len[2] = {2, 1}, neg[2] = {0, -1}, past[2] = {3, 2}, three[3] = {0, 0, 0};
    static const float foff[2] = {0, 1};
    lodtensor_t *t = fx_make_lod1(fx_f32(), dx, 2, x, sizeof x, lod, 3);
    lodtensor_t *plain = fx_make_lod1(fx_f32(), dx, 2, x, sizeof x, NULL, 0);
    lodtensor_t *two = make2(fx_f32(), dx, 2, x, sizeof x, sizes2, lod2, 5);
    lodtensor_t *o = fx_make_lod1(fx_i64(), d21, 2, off, sizeof off, NULL, 0);
    lodtensor_t *l = fx_make_lod1(fx_i64(), d2, 1, len, sizeof len, NULL, 0);
    lodtensor_t *n = fx_make_lod1(fx_i64(), d2, 1, neg, sizeof neg, NULL, 0);
    lodtensor_t *p = fx_make_lod1(fx_i64(), d2, 1, past, sizeof past, NULL, 0);
    lodtensor_t *t3 = fx_make_lod1(fx_i64(), d3, 1, three, sizeof three, NULL, 0);
    lodtensor_t *t12 = fx_make_lod1(fx_i64(), d12, 2, off, sizeof off, NULL, 0);
    lodtensor_t *f = fx_make_lod1(fx_f32(), d2, 1, foff, sizeof foff, NULL, 0);
    lodtensor_t *out = NULL;
    if (t && o && l && CHECK_OK(sequence_slice(t, o, l, &out))) {
        const float *v = (const float *)fx_data(out);
        static const int64_t want_dims[2] = {3, 1};
        CHECK(v[0] == 1 && v[1] == 2 && v[2] == 5);
        CHECK_OFFSETS(out, 0, want_lod, 3);
        dims_are(out, want_dims, 2);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_slice(NULL, o, l, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_slice(t, NULL, l, &out), LODTENSOR_NULL_ARGUMENT, "offset");
    CHECK_STATUS_MSG(sequence_slice(t, o, NULL, &out), LODTENSOR_NULL_ARGUMENT, "length");
    CHECK_STATUS_MSG(sequence_slice(t, o, l, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_slice(plain, o, l, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_slice(two, o, l, &out), LODTENSOR_INVALID_LOD, "exactly 1");
    CHECK_STATUS_MSG(sequence_slice(t, t3, l, &out), LODTENSOR_INVALID_ARGUMENT, "offset");
    CHECK_STATUS_MSG(sequence_slice(t, o, t12, &out), LODTENSOR_INVALID_ARGUMENT, "length");
    CHECK_STATUS_MSG(sequence_slice(t, n, l, &out), LODTENSOR_INVALID_ARGUMENT, "offset[1] = -1 is negative (sequence 1)");
    CHECK_STATUS_MSG(sequence_slice(t, o, n, &out), LODTENSOR_INVALID_ARGUMENT, "length[1] = -1 is negative (sequence 1)");
    CHECK_STATUS_MSG(sequence_slice(t, o, p, &out), LODTENSOR_OUT_OF_RANGE, "sequence 1");
    CHECK_STATUS_MSG(sequence_slice(t, p, l, &out), LODTENSOR_OUT_OF_RANGE, "sequence 0");
    CHECK_STATUS_MSG(sequence_slice(t, f, l, &out), LODTENSOR_UNSUPPORTED, "offset");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(plain);
    lodtensor_destroy(two);
    lodtensor_destroy(o);
    lodtensor_destroy(l);
    lodtensor_destroy(n);
    lodtensor_destroy(p);
    lodtensor_destroy(t3);
    lodtensor_destroy(t12);
    lodtensor_destroy(f);
}

static void test_reverse(void) {
    /* Doc: lod [[0,2,5]], rows r0..r4 -> r1,r0,r4,r3,r2 (uint8 rows of 2). */
    static const uint8_t x[10] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4}, want[10] = {1, 1, 0, 0, 4, 4, 3, 3, 2, 2};
    static const int64_t dx[2] = {5, 2}, d1[1] = {10};
    static const size_t lod[3] = {0, 2, 5}, sizes2[2] = {2, 3}, lod2[5] = {0, 2, 0, 2, 5}, lod10[2] = {0, 10};
    lodtensor_t *t = fx_make_lod1(fx_u8(), dx, 2, x, sizeof x, lod, 3);
    lodtensor_t *two = make2(fx_u8(), dx, 2, x, sizeof x, sizes2, lod2, 5);
    lodtensor_t *flat = fx_make_lod1(fx_u8(), d1, 1, x, sizeof x, lod10, 2);
    lodtensor_t *out = NULL;
    if (t && CHECK_OK(sequence_reverse(t, &out))) {
        CHECK(memcmp(fx_data(out), want, sizeof want) == 0);
        CHECK_OFFSETS(out, 0, lod, 3);
        dims_are(out, dx, 2);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_reverse(NULL, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_reverse(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_reverse(two, &out), LODTENSOR_INVALID_LOD, "exactly 1");
    CHECK_STATUS_MSG(sequence_reverse(flat, &out), LODTENSOR_INVALID_ARGUMENT, "rank");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(two);
    lodtensor_destroy(flat);
}

static void test_mask(void) {
    /* Doc: x = [3,1,1,0], maxlen 4; maxlen -1 = max(x) = 3; bool output; empty x -> maxlen 0. */
    static const int64_t x[4] = {3, 1, 1, 0};
    static const int64_t want4[16] = {1, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t want3[12] = {1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0};
    static const int64_t dx[1] = {4}, d44[2] = {4, 4}, d43[2] = {4, 3}, d0[1] = {0}, d00[2] = {0, 0};
    static const int64_t d9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 4};
    static const uint8_t bools[4] = {1, 0, 1, 1};
    lodtensor_t *t = fx_make_lod1(fx_i64(), dx, 1, x, sizeof x, NULL, 0);
    lodtensor_t *empty = fx_make_lod1(fx_f32(), d0, 1, NULL, 0, NULL, 0);
    lodtensor_t *nine = fx_make_lod1(fx_i64(), d9, 9, x, sizeof x, NULL, 0);
    lodtensor_t *b = fx_make_lod1(fx_bool(), dx, 1, bools, sizeof bools, NULL, 0);
    lodtensor_t *out = NULL;
    size_t levels = 99;
    if (t && CHECK_OK(sequence_mask(t, 4, fx_i64(), &out))) {
        CHECK(memcmp(fx_data(out), want4, sizeof want4) == 0);
        dims_are(out, d44, 2);
        CHECK_OK(lodtensor_lod_num_levels(out, &levels));
        CHECK_EQ_SIZE(levels, 0);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (t && CHECK_OK(sequence_mask(t, -1, fx_bool(), &out))) {
        CHECK(memcmp(fx_data(out), want3, sizeof want3) == 0);
        dims_are(out, d43, 2);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (empty && CHECK_OK(sequence_mask(empty, -1, fx_f32(), &out))) {
        dims_are(out, d00, 2);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_mask(NULL, 4, fx_i64(), &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_mask(t, 4, fx_i64(), NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_mask(t, 0, fx_i64(), &out), LODTENSOR_INVALID_ARGUMENT, "maxlen");
    CHECK_STATUS_MSG(sequence_mask(nine, 4, fx_i64(), &out), LODTENSOR_INVALID_ARGUMENT, "dims");
    CHECK_STATUS_MSG(sequence_mask(b, 4, fx_i64(), &out), LODTENSOR_UNSUPPORTED, "bool");
    CHECK_STATUS_MSG(sequence_mask(t, 4, fx_dtype(3, 32), &out), LODTENSOR_UNSUPPORTED, "out_dtype");
    CHECK_STATUS_MSG(sequence_mask(t, INT64_MAX, fx_i64(), &out), LODTENSOR_OUT_OF_MEMORY, NULL);
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(empty);
    lodtensor_destroy(nine);
    lodtensor_destroy(b);
}

static void test_enumerate(void) {
    /* Doc: lod [[0,3,5]], x [1,2,3,4,5], win 2 -> [[1,2],[2,3],[3,0],[4,5],[5,0]]; int32, pad 9. */
    static const int32_t x[5] = {1, 2, 3, 4, 5};
    static const int32_t want[10] = {1, 2, 2, 3, 3, 0, 4, 5, 5, 0}, want9[10] = {1, 2, 2, 3, 3, 9, 4, 5, 5, 9};
    static const float fx[5] = {1, 2, 3, 4, 5};
    static const int64_t dx[2] = {5, 1}, dw[2] = {5, 2}, d2w[2] = {2, 2};
    static const size_t lod[3] = {0, 3, 5}, lod2[2] = {0, 2};
    lodtensor_t *t = fx_make_lod1(fx_i32(), dx, 2, x, sizeof x, lod, 3);
    lodtensor_t *plain = fx_make_lod1(fx_i32(), dx, 2, x, sizeof x, NULL, 0);
    lodtensor_t *wide = fx_make_lod1(fx_i32(), d2w, 2, x, 4 * sizeof(int32_t), lod2, 2);
    lodtensor_t *f = fx_make_lod1(fx_f32(), dx, 2, fx, sizeof fx, lod, 3);
    lodtensor_t *out = NULL;
    if (t && CHECK_OK(sequence_enumerate(t, 2, 0, &out))) {
        CHECK(memcmp(fx_data(out), want, sizeof want) == 0);
        CHECK_OFFSETS(out, 0, lod, 3);
        dims_are(out, dw, 2);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (t && CHECK_OK(sequence_enumerate(t, 2, 9, &out))) {
        CHECK(memcmp(fx_data(out), want9, sizeof want9) == 0);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_enumerate(NULL, 2, 0, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_enumerate(t, 2, 0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_enumerate(plain, 2, 0, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_enumerate(wide, 2, 0, &out), LODTENSOR_INVALID_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_enumerate(t, 1, 0, &out), LODTENSOR_INVALID_ARGUMENT, "win_size");
    CHECK_STATUS_MSG(sequence_enumerate(t, 2, (int64_t)1 << 40, &out), LODTENSOR_INVALID_ARGUMENT, "pad_value");
    CHECK_STATUS_MSG(sequence_enumerate(f, 2, 0, &out), LODTENSOR_UNSUPPORTED, "float32");
    CHECK_STATUS_MSG(sequence_enumerate(t, INT64_MAX, 0, &out), LODTENSOR_OUT_OF_MEMORY, NULL);
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(plain);
    lodtensor_destroy(wide);
    lodtensor_destroy(f);
}

static void test_erase(void) {
    /* Doc: x [2,2,6,1,3,9,6,1,0,1], lod [[0,3,6,10]], tokens [2,3,5] -> [6,1,9,6,1,0,1], [[0,1,3,7]];
     * a 2-level LoD keeps its upper level. */
    static const int64_t x[10] = {2, 2, 6, 1, 3, 9, 6, 1, 0, 1}, want[7] = {6, 1, 9, 6, 1, 0, 1};
    static const int64_t tokens[3] = {2, 3, 5};
    static const int64_t dx[2] = {10, 1}, dwant[2] = {7, 1}, dw[2] = {5, 2};
    static const float fx[10] = {0};
    static const size_t lod[4] = {0, 3, 6, 10}, want_lod[4] = {0, 1, 3, 7}, lod5[2] = {0, 5};
    static const size_t sizes2[2] = {2, 4}, lod2[6] = {0, 3, 0, 3, 6, 10}, top[2] = {0, 3};
    lodtensor_t *t = fx_make_lod1(fx_i64(), dx, 2, x, sizeof x, lod, 4);
    lodtensor_t *two = make2(fx_i64(), dx, 1, x, sizeof x, sizes2, lod2, 6);
    lodtensor_t *plain = fx_make_lod1(fx_i64(), dx, 2, x, sizeof x, NULL, 0);
    lodtensor_t *wide = fx_make_lod1(fx_i64(), dw, 2, x, sizeof x, lod5, 2);
    lodtensor_t *f = fx_make_lod1(fx_f32(), dx, 2, fx, sizeof fx, lod, 4);
    lodtensor_t *out = NULL;
    if (t && CHECK_OK(sequence_erase(t, tokens, 3, &out))) {
        CHECK(memcmp(fx_data(out), want, sizeof want) == 0);
        CHECK_OFFSETS(out, 0, want_lod, 4);
        dims_are(out, dwant, 2);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (two && CHECK_OK(sequence_erase(two, tokens, 3, &out))) {
        CHECK_OFFSETS(out, 0, top, 2);
        CHECK_OFFSETS(out, 1, want_lod, 4);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (t && CHECK_OK(sequence_erase(t, NULL, 0, &out))) {
        CHECK(memcmp(fx_data(out), x, sizeof x) == 0);
        CHECK_OFFSETS(out, 0, lod, 4);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_erase(NULL, tokens, 3, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_erase(t, NULL, 3, &out), LODTENSOR_NULL_ARGUMENT, "tokens");
    CHECK_STATUS_MSG(sequence_erase(t, tokens, 3, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_erase(plain, tokens, 3, &out), LODTENSOR_INVALID_LOD, "x");
    CHECK_STATUS_MSG(sequence_erase(wide, tokens, 3, &out), LODTENSOR_INVALID_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_erase(f, tokens, 3, &out), LODTENSOR_UNSUPPORTED, "float32");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(two);
    lodtensor_destroy(plain);
    lodtensor_destroy(wide);
    lodtensor_destroy(f);
}

static void test_reshape(void) {
    /* Doc: lod [[0,2,6]], 6x2 of 1..12, new_dim 4 -> 3x4 with lod [[0,1,3]]. */
    float x[12];
    static const int64_t dx[2] = {6, 2}, dout[2] = {3, 4}, d1[1] = {12};
    static const size_t lod[3] = {0, 2, 6}, want_lod[3] = {0, 1, 3}, sizes2[2] = {2, 3}, lod2[5] = {0, 2, 0, 2, 6};
    static const size_t lod12[2] = {0, 12};
    lodtensor_t *t, *two, *flat, *out = NULL;
    size_t i;
    for (i = 0; i < 12; ++i) {
        x[i] = (float)(i + 1);
    }
    t = fx_make_lod1(fx_f32(), dx, 2, x, sizeof x, lod, 3);
    two = make2(fx_f32(), dx, 2, x, sizeof x, sizes2, lod2, 5);
    flat = fx_make_lod1(fx_f32(), d1, 1, x, sizeof x, lod12, 2);
    if (t && CHECK_OK(sequence_reshape(t, 4, &out))) {
        CHECK(memcmp(fx_data(out), x, sizeof x) == 0);
        CHECK_OFFSETS(out, 0, want_lod, 3);
        dims_are(out, dout, 2);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_reshape(NULL, 4, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_reshape(t, 4, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_reshape(two, 4, &out), LODTENSOR_INVALID_LOD, "exactly 1");
    CHECK_STATUS_MSG(sequence_reshape(flat, 4, &out), LODTENSOR_INVALID_ARGUMENT, "rank 2");
    CHECK_STATUS_MSG(sequence_reshape(t, 0, &out), LODTENSOR_INVALID_ARGUMENT, "new_dim");
    CHECK_STATUS_MSG(sequence_reshape(t, 3, &out), LODTENSOR_INVALID_ARGUMENT, "sequence 0");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(two);
    lodtensor_destroy(flat);
}

static void test_conv(void) {
    /* Doc: rows [1,1],[2,2],[3,3],[4,4], lod [[0,3,4]], start -1, length 3; identity filter gives the
     * context rows. Trainable padding fills the rows outside each sequence. */
    static const float x[8] = {1, 1, 2, 2, 3, 3, 4, 4}, pad[4] = {-1, -2, -3, -4};
    static const float want[24] = {0, 0, 1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3, 0, 0, 0, 0, 4, 4, 0, 0};
    static const float want_pad[24] = {-1, -2, 1, 1, 2, 2, 1, 1, 2, 2, 3, 3,
                                       2,  2,  3, 3, -3, -4, -1, -2, 4, 4, -3, -4};
    static const int64_t dx[2] = {4, 2}, df[2] = {6, 6}, dp[2] = {2, 2}, dout[2] = {4, 6}, dflat[1] = {8};
    static const int64_t d3[2] = {3, 2};
    static const double dbl[36] = {0};
    static const int32_t ints[12] = {0};
    static const size_t lod[3] = {0, 3, 4}, lod8[2] = {0, 8}, sizes2[2] = {2, 3}, lod2[5] = {0, 2, 0, 3, 4};
    float identity[36];
    lodtensor_t *t, *f, *p, *fd, *ti, *fi, *two, *flat, *p3, *p64, *out = NULL;
    size_t i;
    for (i = 0; i < 36; ++i) {
        identity[i] = i / 6 == i % 6 ? 1.0f : 0.0f;
    }
    t = fx_make_lod1(fx_f32(), dx, 2, x, sizeof x, lod, 3);
    f = fx_make_lod1(fx_f32(), df, 2, identity, sizeof identity, NULL, 0);
    p = fx_make_lod1(fx_f32(), dp, 2, pad, sizeof pad, NULL, 0);
    p3 = fx_make_lod1(fx_f32(), d3, 2, identity, 6 * sizeof(float), NULL, 0);
    fd = fx_make_lod1(fx_f64(), df, 2, dbl, sizeof dbl, NULL, 0);
    p64 = fx_make_lod1(fx_f64(), dp, 2, dbl, 4 * sizeof(double), NULL, 0);
    ti = fx_make_lod1(fx_i32(), dx, 2, ints, 8 * sizeof(int32_t), lod, 3);
    fi = fx_make_lod1(fx_i32(), df, 2, dbl, 36 * sizeof(int32_t), NULL, 0);
    two = make2(fx_f32(), dx, 2, x, sizeof x, sizes2, lod2, 5);
    flat = fx_make_lod1(fx_f32(), dflat, 1, x, sizeof x, lod8, 2);
    if (t && f && CHECK_OK(sequence_conv(t, f, NULL, 3, -1, 1, false, &out))) {
        CHECK(memcmp(fx_data(out), want, sizeof want) == 0);
        CHECK_OFFSETS(out, 0, lod, 3);
        dims_are(out, dout, 2);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (t && f && p && CHECK_OK(sequence_conv(t, f, p, 3, -1, 1, true, &out))) {
        CHECK(memcmp(fx_data(out), want_pad, sizeof want_pad) == 0);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(sequence_conv(NULL, f, NULL, 3, -1, 1, false, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(sequence_conv(t, NULL, NULL, 3, -1, 1, false, &out), LODTENSOR_NULL_ARGUMENT, "filter");
    CHECK_STATUS_MSG(sequence_conv(t, f, NULL, 3, -1, 1, false, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(sequence_conv(t, f, NULL, 3, -1, 1, true, &out), LODTENSOR_NULL_ARGUMENT, "padding_data");
    CHECK_STATUS_MSG(sequence_conv(two, f, NULL, 3, -1, 1, false, &out), LODTENSOR_INVALID_LOD, "exactly 1");
    CHECK_STATUS_MSG(sequence_conv(flat, f, NULL, 3, -1, 1, false, &out), LODTENSOR_INVALID_ARGUMENT, "rank 2");
    CHECK_STATUS_MSG(sequence_conv(t, f, NULL, 0, -1, 1, false, &out), LODTENSOR_INVALID_ARGUMENT,
                     "context_length");
    CHECK_STATUS_MSG(sequence_conv(t, f, NULL, 3, -1, 2, false, &out), LODTENSOR_INVALID_ARGUMENT,
                     "context_stride");
    CHECK_STATUS_MSG(sequence_conv(t, p, p, 1, 0, 1, true, &out), LODTENSOR_INVALID_ARGUMENT, "padding_trainable");
    CHECK_STATUS_MSG(sequence_conv(t, f, NULL, 3, INT64_MIN, 1, false, &out), LODTENSOR_INVALID_ARGUMENT,
                     "context_start");
    CHECK_STATUS_MSG(sequence_conv(t, f, NULL, 2, -1, 1, false, &out), LODTENSOR_INVALID_ARGUMENT, "filter");
    CHECK_STATUS_MSG(sequence_conv(t, fd, NULL, 3, -1, 1, false, &out), LODTENSOR_INVALID_ARGUMENT, "dtype");
    CHECK_STATUS_MSG(sequence_conv(t, f, p3, 3, -1, 1, true, &out), LODTENSOR_INVALID_ARGUMENT, "padding_data");
    /* float64 padding of the right dims for float32 x and filter. */
    CHECK_STATUS_MSG(sequence_conv(t, f, p64, 3, -1, 1, true, &out), LODTENSOR_INVALID_ARGUMENT,
                     "padding_data: dtype float64");
    /* context_length 2^62 (context_start -1 is fine): the message gives the length's value. */
    CHECK_STATUS_MSG(sequence_conv(t, f, NULL, (int64_t)1 << 62, -1, 1, false, &out), LODTENSOR_INVALID_ARGUMENT,
                     "4611686018427387904 must be less than 2^62");
    CHECK_STATUS_MSG(sequence_conv(ti, fi, NULL, 3, -1, 1, false, &out), LODTENSOR_UNSUPPORTED, "int32");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(f);
    lodtensor_destroy(p);
    lodtensor_destroy(p3);
    lodtensor_destroy(fd);
    lodtensor_destroy(p64);
    lodtensor_destroy(ti);
    lodtensor_destroy(fi);
    lodtensor_destroy(two);
    lodtensor_destroy(flat);
}

int main(void) {
    test_softmax();
    test_concat();
    test_slice();
    test_reverse();
    test_mask();
    test_enumerate();
    test_erase();
    test_reshape();
    test_conv();
    return CHECK_RETURN();
}
