/* test_beam_search: the beam-search family of the C API (spec §4): lodtensor_topk, beam_search_step
 * (a case of Paddle's test), the fused step, the state gather, beam_search_decode (the worked
 * trace), beam_search_gather_tree (the docstring example) and the decoder handle with C callbacks,
 * with every documented failure, "outputs are written only on success", and (under valgrind) the
 * ownership rules, including a callback failure in the middle of decoding. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static const lodtensor_dtype_t F32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
static const lodtensor_dtype_t F64 = {LODTENSOR_DTYPE_CODE_FLOAT, 64, 1};
static const lodtensor_dtype_t I64 = {LODTENSOR_DTYPE_CODE_INT, 64, 1};
static const lodtensor_dtype_t I32 = {LODTENSOR_DTYPE_CODE_INT, 32, 1};
static const lodtensor_dtype_t I8 = {LODTENSOR_DTYPE_CODE_INT, 8, 1};
static const lodtensor_dtype_t BOOL = {LODTENSOR_DTYPE_CODE_BOOL, 8, 1};

static size_t numel_of(const lodtensor_t *t) {
    size_t n = 0;
    CHECK_OK(lodtensor_numel(t, &n));
    return n;
}

static int same_i64(const lodtensor_t *t, const int64_t *want, size_t n) {
    return CHECK_EQ_SIZE(numel_of(t), n) && CHECK(n == 0 || memcmp(fx_data(t), want, n * sizeof(int64_t)) == 0);
}

static int near_f32(const lodtensor_t *t, const float *want, size_t n) {
    size_t i;
    const float *got;
    if (!CHECK_EQ_SIZE(numel_of(t), n)) return 0;
    got = (const float *)fx_data(t);
    for (i = 0; i < n; ++i) {
        float diff = got[i] - want[i];
        if (!CHECK(diff < 1e-5f && diff > -1e-5f)) return 0;
    }
    return 1;
}

static void test_topk(void) {
    const float x[8] = {1, 4, 5, 7, 2, 6, 2, 5};
    const int64_t dims[2] = {2, 4}, want_idx[4] = {3, 2, 1, 3};
    const float want_val[4] = {7, 5, 6, 5}, want_small[4] = {1, 4, 2, 2};
    const int64_t want_small_idx[4] = {0, 1, 0, 2};
    const size_t l0[2] = {0, 2};
    const uint8_t b[8] = {0};
    lodtensor_t *t = fx_make(F32, dims, 2, x, l0, 2, NULL, 0), *bt = fx_make(BOOL, dims, 2, b, NULL, 0, NULL, 0);
    lodtensor_t *v = fx_sentinel(), *i = fx_sentinel();
    if (CHECK_OK(lodtensor_topk(t, 2, true, &v, &i))) {
        near_f32(v, want_val, 4);
        same_i64(i, want_idx, 4);
        CHECK_OFFSETS(v, 0, l0, 2);
        CHECK_OFFSETS(i, 0, l0, 2);
        lodtensor_destroy(v);
        lodtensor_destroy(i);
    }
    if (CHECK_OK(lodtensor_topk(t, 2, false, &v, &i))) {
        near_f32(v, want_small, 4);
        same_i64(i, want_small_idx, 4);
        lodtensor_destroy(v);
        lodtensor_destroy(i);
    }
    v = i = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_topk(NULL, 2, true, &v, &i), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(lodtensor_topk(t, 2, true, NULL, &i), LODTENSOR_NULL_ARGUMENT, "out_values");
    CHECK_STATUS_MSG(lodtensor_topk(t, 2, true, &v, NULL), LODTENSOR_NULL_ARGUMENT, "out_indices");
    CHECK_STATUS_MSG(lodtensor_topk(t, 0, true, &v, &i), LODTENSOR_INVALID_ARGUMENT, "k");
    CHECK_STATUS_MSG(lodtensor_topk(t, 5, true, &v, &i), LODTENSOR_INVALID_ARGUMENT, "k");
    CHECK_STATUS_MSG(lodtensor_topk(bt, 1, true, &v, &i), LODTENSOR_UNSUPPORTED, "x");
    {
        lodtensor_t *scalar = fx_make(F32, NULL, 0, x, NULL, 0, NULL, 0);
        CHECK_STATUS_MSG(lodtensor_topk(scalar, 1, true, &v, &i), LODTENSOR_INVALID_ARGUMENT, "0-d");
        lodtensor_destroy(scalar);
    }
    {
        /* 1-D with a LoD: the last axis is the rows the LoD describes. */
        const int64_t n[1] = {8};
        const size_t seqs[3] = {0, 3, 8};
        lodtensor_t *row = fx_make(F32, n, 1, x, seqs, 3, NULL, 0);
        CHECK_STATUS_MSG(lodtensor_topk(row, 2, true, &v, &i), LODTENSOR_INVALID_ARGUMENT, "1-D with a LoD");
        lodtensor_destroy(row);
    }
    CHECK(v == fx_sentinel() && i == fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(bt);
}

/* Case 3 of Paddle's test_beam_search_op.py (finished branches). */
static void test_step(void) {
    const int64_t pre[4] = {1, 0, 0, 4}, ids[8] = {4, 2, 7, 3, 3, 5, 8, 1};
    const float pre_s[4] = {0.1f, 1.2f, 0.5f, 0.4f}, sc[8] = {0.6f, 0.9f, 0.5f, 0.3f, 0.9f, 0.5f, 0.6f, 0.7f};
    const int64_t d4[1] = {4}, d42[2] = {4, 2}, d3[1] = {3}, want_ids[4] = {2, 0, 1, 8};
    const size_t l0[3] = {0, 2, 4}, l1[5] = {0, 1, 2, 3, 4}, want_l1[5] = {0, 1, 2, 2, 4};
    const float want_sc[4] = {0.9f, 1.2f, 0.7f, 0.6f};
    const int32_t want_parent[4] = {0, 1, 3, 3};
    const int32_t pre32[4] = {1, 0, 0, 4};
    lodtensor_t *p = fx_make(I64, d4, 1, pre, NULL, 0, NULL, 0), *ps = fx_make(F32, d4, 1, pre_s, NULL, 0, NULL, 0);
    lodtensor_t *ci = fx_make(I64, d42, 2, ids, l0, 3, l1, 5), *cs = fx_make(F32, d42, 2, sc, l0, 3, l1, 5);
    lodtensor_t *one = fx_make(F32, d42, 2, sc, l0, 3, NULL, 0), *p3 = fx_make(I64, d3, 1, pre, NULL, 0, NULL, 0);
    lodtensor_t *p32 = fx_make(I32, d4, 1, pre32, NULL, 0, NULL, 0);
    lodtensor_t *si = fx_sentinel(), *ss = fx_sentinel(), *pi = fx_sentinel();
    if (CHECK_OK(beam_search_step(p, ps, ci, cs, 0, 2, 0, true, &si, &ss, &pi))) {
        same_i64(si, want_ids, 4);
        near_f32(ss, want_sc, 4);
        CHECK_OFFSETS(si, 0, l0, 3);
        CHECK_OFFSETS(si, 1, want_l1, 5);
        CHECK_OFFSETS(ss, 1, want_l1, 5);
        CHECK(memcmp(fx_data(pi), want_parent, sizeof want_parent) == 0);
        lodtensor_destroy(si);
        lodtensor_destroy(ss);
        lodtensor_destroy(pi);
    }
    /* Without ids (column index = token) and without parent_idx. */
    if (CHECK_OK(beam_search_step(p, ps, NULL, cs, 0, 2, 0, true, &si, &ss, NULL))) {
        const int64_t cols[4] = {1, 0, 1, 0};
        same_i64(si, cols, 4);
        lodtensor_destroy(si);
        lodtensor_destroy(ss);
    }
    si = ss = pi = fx_sentinel();
    CHECK_STATUS_MSG(beam_search_step(NULL, ps, ci, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_NULL_ARGUMENT, "pre_ids");
    CHECK_STATUS_MSG(beam_search_step(p, NULL, ci, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_NULL_ARGUMENT, "pre_scores");
    CHECK_STATUS_MSG(beam_search_step(p, ps, ci, NULL, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_NULL_ARGUMENT, "scores");
    CHECK_STATUS_MSG(beam_search_step(p, ps, ci, cs, 0, 2, 0, true, NULL, &ss, &pi), LODTENSOR_NULL_ARGUMENT,
                     "out_selected_ids");
    CHECK_STATUS_MSG(beam_search_step(p, ps, ci, cs, 0, 2, 0, true, &si, NULL, &pi), LODTENSOR_NULL_ARGUMENT,
                     "out_selected_scores");
    CHECK_STATUS_MSG(beam_search_step(p, ps, ci, cs, 0, 0, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "beam_size");
    CHECK_STATUS_MSG(beam_search_step(p, ps, ci, cs, 2, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "level");
    CHECK_STATUS_MSG(beam_search_step(p, ps, NULL, one, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "scores");
    CHECK_STATUS_MSG(beam_search_step(p3, ps, ci, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "pre_ids");
    CHECK_STATUS_MSG(beam_search_step(p, p3, ci, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "pre_scores");
    CHECK_STATUS_MSG(beam_search_step(p, ps, p, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "ids");
    CHECK_STATUS_MSG(beam_search_step(p32, ps, ci, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_UNSUPPORTED, "pre_ids");
    {
        const double ps64[4] = {0.1, 1.2, 0.5, 0.4};
        const float sc0 = 0.5f;
        lodtensor_t *pd = fx_make(F64, d4, 1, ps64, NULL, 0, NULL, 0), *ics = fx_make(I64, d42, 2, ids, l0, 3, l1, 5);
        lodtensor_t *ip = fx_make(I64, d4, 1, pre, NULL, 0, NULL, 0), *s0 = fx_make(F32, NULL, 0, &sc0, NULL, 0, NULL, 0);
        CHECK_STATUS_MSG(beam_search_step(p, pd, ci, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT,
                         "pre_scores");
        CHECK_STATUS_MSG(beam_search_step(p, ip, NULL, ics, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_UNSUPPORTED,
                         "scores");
        CHECK_STATUS_MSG(beam_search_step(p, ps, NULL, s0, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT,
                         "0-d");
        lodtensor_destroy(pd);
        lodtensor_destroy(ics);
        lodtensor_destroy(ip);
        lodtensor_destroy(s0);
    }
    CHECK_STATUS_MSG(beam_search_step(p, ps, ps, cs, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_UNSUPPORTED, "ids");
    {
        /* 2^31 prefix rows (no elements): parent_idx is int32, so they cannot be numbered. */
        const int64_t huge[2] = {(int64_t)1 << 31, 0};
        const size_t h0[2] = {0, 1}, h1[2] = {0, (size_t)1 << 31};
        lodtensor_t *many = fx_make(F32, huge, 2, NULL, h0, 2, h1, 2);
        CHECK_STATUS_MSG(beam_search_step(p, ps, NULL, many, 0, 2, 0, true, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT,
                         "scores: 2147483648 prefix rows");
        lodtensor_destroy(many);
    }
    CHECK(si == fx_sentinel() && ss == fx_sentinel() && pi == fx_sentinel());
    lodtensor_destroy(p);
    lodtensor_destroy(ps);
    lodtensor_destroy(ci);
    lodtensor_destroy(cs);
    lodtensor_destroy(one);
    lodtensor_destroy(p3);
    lodtensor_destroy(p32);
}

/* beam_search_gather_states of `st` (int16 [4, 2]) and `x` (float32 [4, 3]) by `pi` (parents 0, 1,
 * 3, 3): each as beam_search_gather_state gives it; then each documented error, with nothing
 * written to `out`. `one` is a float32 [1] (one row; also a parent_idx of the wrong dtype),
 * `scalar` a 0-d tensor. */
static void check_gather_states(lodtensor_t *st, lodtensor_t *x, lodtensor_t *pi, lodtensor_t *one,
                                lodtensor_t *scalar) {
    const lodtensor_t *states[2] = {st, x};
    lodtensor_t *outs[2] = {fx_sentinel(), fx_sentinel()}, *want = NULL;
    size_t i;
    if (CHECK_OK(beam_search_gather_states(states, 2, pi, outs))) {
        for (i = 0; i < 2; ++i) {
            if (CHECK_OK(beam_search_gather_state(states[i], pi, &want))) {
                fx_same(outs[i], want);
                lodtensor_destroy(want);
            }
            lodtensor_destroy(outs[i]);
            outs[i] = fx_sentinel();
        }
    }
    CHECK_OK(beam_search_gather_states(NULL, 0, pi, NULL));
    CHECK_STATUS_MSG(beam_search_gather_states(NULL, 2, pi, outs), LODTENSOR_NULL_ARGUMENT, "states");
    {
        const lodtensor_t *with_null[2] = {st, NULL};
        CHECK_STATUS_MSG(beam_search_gather_states(with_null, 2, pi, outs), LODTENSOR_NULL_ARGUMENT, "states[1]");
    }
    CHECK_STATUS_MSG(beam_search_gather_states(states, 2, NULL, outs), LODTENSOR_NULL_ARGUMENT, "parent_idx");
    CHECK_STATUS_MSG(beam_search_gather_states(states, 2, pi, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    {
        /* Room for deliberately misaligned arrays. */
        union {
            void *align;
            unsigned char bytes[3 * sizeof(void *)];
        } storage;
        memcpy(storage.bytes + 1, states, sizeof states);
        CHECK_STATUS_MSG(beam_search_gather_states((const lodtensor_t *const *)(void *)(storage.bytes + 1), 2, pi, outs),
                         LODTENSOR_INVALID_ARGUMENT, "states");
        memset(&storage, 7, sizeof storage);
        CHECK_STATUS_MSG(beam_search_gather_states(states, 2, pi, (lodtensor_t **)(void *)(storage.bytes + 1)),
                         LODTENSOR_INVALID_ARGUMENT, "out");
        CHECK(storage.bytes[1] == 7 && storage.bytes[2 * sizeof(void *)] == 7);
    }
    {
        /* Parent 1 is a row of st, not of `one`: states[1] is named. */
        const lodtensor_t *short_second[2] = {st, one}, *with_scalar[2] = {st, scalar};
        CHECK_STATUS_MSG(beam_search_gather_states(short_second, 2, pi, outs), LODTENSOR_OUT_OF_RANGE, "states[1]");
        CHECK_STATUS_MSG(beam_search_gather_states(with_scalar, 2, pi, outs), LODTENSOR_INVALID_ARGUMENT, "states[1]");
    }
    CHECK_STATUS_MSG(beam_search_gather_states(states, 2, one, outs), LODTENSOR_UNSUPPORTED, "parent_idx");
    CHECK(outs[0] == fx_sentinel() && outs[1] == fx_sentinel());
}

static void test_fused_and_gather_state(void) {
    /* 2 sources of 2 prefixes; row 1 has finished (end_id 0). */
    const int64_t pre[4] = {5, 0, 3, 4}, d41[2] = {4, 1}, d43[2] = {4, 3}, d4[1] = {4}, d12[1] = {12};
    const float ps[4] = {-1.0f, -0.5f, -2.0f, -0.1f};
    const float lp[12] = {-0.1f, -2.0f, -3.0f, -9.f, -9.f, -9.f, -0.3f, -0.2f, -5.0f, -4.0f, -0.05f, -1.0f};
    const double lp64[12] = {0};
    const size_t l0[3] = {0, 2, 4}, l1[5] = {0, 1, 2, 3, 4}, want_l1[5] = {0, 1, 2, 2, 4};
    /* source 0: row1 finished (0, -0.5) beats row0 (0, -1.1); source 1: row3 token 1 (-0.15), token 2 (-1.1). */
    const int64_t want_ids[4] = {0, 0, 1, 2};
    const float want_sc[4] = {-1.1f, -0.5f, -0.15f, -1.1f};
    const int32_t want_parent[4] = {0, 1, 3, 3};
    const int64_t state_dims[2] = {4, 2};
    const int16_t state[8] = {10, 11, 20, 21, 30, 31, 40, 41}, want_state[8] = {10, 11, 20, 21, 40, 41, 40, 41};
    const int64_t bad_parent[1] = {4};
    const float fparent[1] = {0};
    const lodtensor_dtype_t I16 = {LODTENSOR_DTYPE_CODE_INT, 16, 1};
    lodtensor_t *p = fx_make(I64, d41, 2, pre, l0, 3, l1, 5), *s = fx_make(F32, d4, 1, ps, NULL, 0, NULL, 0);
    lodtensor_t *x = fx_make(F32, d43, 2, lp, NULL, 0, NULL, 0), *flat = fx_make(F32, d12, 1, lp, NULL, 0, NULL, 0);
    lodtensor_t *x64 = fx_make(F64, d43, 2, lp64, NULL, 0, NULL, 0), *nolod = fx_make(I64, d41, 2, pre, NULL, 0, NULL, 0);
    lodtensor_t *st = fx_make(I16, state_dims, 2, state, NULL, 0, NULL, 0);
    const int64_t d1[1] = {1};
    lodtensor_t *bp = fx_make(I64, d1, 1, bad_parent, NULL, 0, NULL, 0), *fp = fx_make(F32, d1, 1, fparent, NULL, 0, NULL, 0);
    lodtensor_t *scalar = fx_make(F32, NULL, 0, fparent, NULL, 0, NULL, 0);
    lodtensor_t *si = fx_sentinel(), *ss = fx_sentinel(), *pi = fx_sentinel(), *g = fx_sentinel();
    if (CHECK_OK(beam_search_fused_step(p, s, x, 2, 0, &si, &ss, &pi))) {
        same_i64(si, want_ids, 4);
        near_f32(ss, want_sc, 4);
        CHECK_OFFSETS(si, 0, l0, 3);
        CHECK_OFFSETS(si, 1, want_l1, 5);
        CHECK(memcmp(fx_data(pi), want_parent, sizeof want_parent) == 0);
        if (CHECK_OK(beam_search_gather_state(st, pi, &g))) {
            CHECK(memcmp(fx_data(g), want_state, sizeof want_state) == 0);
            lodtensor_destroy(g);
        }
        g = fx_sentinel();
        CHECK_STATUS_MSG(beam_search_gather_state(NULL, pi, &g), LODTENSOR_NULL_ARGUMENT, "state");
        CHECK_STATUS_MSG(beam_search_gather_state(st, NULL, &g), LODTENSOR_NULL_ARGUMENT, "parent_idx");
        CHECK_STATUS_MSG(beam_search_gather_state(st, pi, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(beam_search_gather_state(st, bp, &g), LODTENSOR_OUT_OF_RANGE, "parent_idx[0]");
        CHECK_STATUS_MSG(beam_search_gather_state(st, fp, &g), LODTENSOR_UNSUPPORTED, "parent_idx");
        CHECK_STATUS_MSG(beam_search_gather_state(scalar, pi, &g), LODTENSOR_INVALID_ARGUMENT, "state");
        CHECK(g == fx_sentinel());
        check_gather_states(st, x, pi, fp, scalar);
        lodtensor_destroy(si);
        lodtensor_destroy(ss);
        lodtensor_destroy(pi);
    }
    if (CHECK_OK(beam_search_fused_step(p, s, x, 2, 0, &si, &ss, NULL))) {
        lodtensor_destroy(si);
        lodtensor_destroy(ss);
    }
    si = ss = pi = fx_sentinel();
    CHECK_STATUS_MSG(beam_search_fused_step(NULL, s, x, 2, 0, &si, &ss, &pi), LODTENSOR_NULL_ARGUMENT, "pre_ids");
    CHECK_STATUS_MSG(beam_search_fused_step(p, NULL, x, 2, 0, &si, &ss, &pi), LODTENSOR_NULL_ARGUMENT, "pre_scores");
    CHECK_STATUS_MSG(beam_search_fused_step(p, s, NULL, 2, 0, &si, &ss, &pi), LODTENSOR_NULL_ARGUMENT, "log_probs");
    CHECK_STATUS_MSG(beam_search_fused_step(p, s, x, 2, 0, NULL, &ss, &pi), LODTENSOR_NULL_ARGUMENT, "out_selected_ids");
    CHECK_STATUS_MSG(beam_search_fused_step(p, s, x, 2, 0, &si, NULL, &pi), LODTENSOR_NULL_ARGUMENT,
                     "out_selected_scores");
    CHECK_STATUS_MSG(beam_search_fused_step(p, s, x, 0, 0, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "beam_size");
    CHECK_STATUS_MSG(beam_search_fused_step(nolod, s, x, 2, 0, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "pre_ids");
    CHECK_STATUS_MSG(beam_search_fused_step(p, s, flat, 2, 0, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT, "log_probs");
    {
        const int64_t d26[2] = {2, 6};
        lodtensor_t *x2 = fx_make(F32, d26, 2, lp, NULL, 0, NULL, 0);
        CHECK_STATUS_MSG(beam_search_fused_step(p, s, x2, 2, 0, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT,
                         "log_probs");
        CHECK_STATUS_MSG(beam_search_fused_step(p, bp, x, 2, 0, &si, &ss, &pi), LODTENSOR_UNSUPPORTED, "pre_scores");
        CHECK_STATUS_MSG(beam_search_fused_step(p, flat, x, 2, 0, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT,
                         "pre_scores");
        lodtensor_destroy(x2);
    }
    CHECK_STATUS_MSG(beam_search_fused_step(p, bp, x, 2, 0, &si, &ss, &pi), LODTENSOR_UNSUPPORTED, "pre_scores");
    CHECK_STATUS_MSG(beam_search_fused_step(p, s, x64, 2, 0, &si, &ss, &pi), LODTENSOR_UNSUPPORTED, "log_probs");
    {
        /* pre_ids with a LoD of 2 prefix rows but 4 elements (pre_scores and log_probs fit 2
         * rows); then 2^31 prefix rows (no elements), more than the int32 parent_idx numbers. */
        const int64_t d22[2] = {2, 2}, d2[1] = {2}, d23[2] = {2, 3}, huge[2] = {(int64_t)1 << 31, 0};
        const size_t two[2] = {0, 2}, h0[2] = {0, (size_t)1 << 31};
        lodtensor_t *wide = fx_make(I64, d22, 2, pre, two, 2, NULL, 0), *s2 = fx_make(F32, d2, 1, ps, NULL, 0, NULL, 0);
        lodtensor_t *x23 = fx_make(F32, d23, 2, lp, NULL, 0, NULL, 0), *many = fx_make(I64, huge, 2, NULL, h0, 2, NULL, 0);
        CHECK_STATUS_MSG(beam_search_fused_step(wide, s2, x23, 2, 0, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT,
                         "pre_ids: has 4 element(s)");
        CHECK_STATUS_MSG(beam_search_fused_step(many, s, x, 2, 0, &si, &ss, &pi), LODTENSOR_INVALID_ARGUMENT,
                         "pre_ids: 2147483648 prefix rows");
        lodtensor_destroy(wide);
        lodtensor_destroy(s2);
        lodtensor_destroy(x23);
        lodtensor_destroy(many);
    }
    CHECK(si == fx_sentinel() && ss == fx_sentinel() && pi == fx_sentinel());
    lodtensor_destroy(p);
    lodtensor_destroy(s);
    lodtensor_destroy(x);
    lodtensor_destroy(flat);
    lodtensor_destroy(x64);
    lodtensor_destroy(nolod);
    lodtensor_destroy(st);
    lodtensor_destroy(bp);
    lodtensor_destroy(fp);
    lodtensor_destroy(scalar);
}

/* The worked trace of spec §4.3 (beam 2, end_id 1; scores hold the same numbers as the ids). */
static void test_decode(void) {
    static const size_t lods[5][2][5] = {
        {{0, 1, 2}, {0, 1, 2}},       {{0, 1, 2}, {0, 2, 4}},       {{0, 2, 4}, {0, 2, 2, 4, 4}},
        {{0, 2, 4}, {0, 1, 2, 3, 4}}, {{0, 2, 4}, {0, 0, 0, 2, 2}},
    };
    static const size_t l1_len[5] = {3, 3, 5, 5, 5};
    static const int64_t step_ids[5][4] = {{0, 0}, {2, 3, 4, 5}, {3, 1, 5, 4}, {1, 1, 3, 5}, {5, 1}};
    static const int64_t n[5] = {2, 4, 4, 4, 2};
    const int64_t want[17] = {0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1};
    const size_t want_l0[3] = {0, 2, 4}, want_l1[5] = {0, 4, 7, 12, 17};
    tensor_array_t *ids = NULL, *scores = NULL, *empty = NULL, *i8s = NULL;
    lodtensor_t *si = fx_sentinel(), *ss = fx_sentinel();
    size_t t, k;
    CHECK_OK(tensor_array_create(&ids));
    CHECK_OK(tensor_array_create(&scores));
    CHECK_OK(tensor_array_create(&empty));
    CHECK_OK(tensor_array_create(&i8s));
    for (t = 0; t < 5; ++t) {
        float f[4];
        int8_t b[4];
        lodtensor_t *a, *s, *c;
        for (k = 0; k < 4; ++k) {
            f[k] = (float)step_ids[t][k];
            b[k] = (int8_t)step_ids[t][k];
        }
        a = fx_make(I64, &n[t], 1, step_ids[t], lods[t][0], 3, lods[t][1], l1_len[t]);
        s = fx_make(F32, &n[t], 1, f, lods[t][0], 3, lods[t][1], l1_len[t]);
        c = fx_make(I8, &n[t], 1, b, lods[t][0], 3, lods[t][1], l1_len[t]);
        CHECK_OK(tensor_array_write(ids, t, a, false));
        CHECK_OK(tensor_array_write(scores, t, s, false));
        CHECK_OK(tensor_array_write(i8s, t, c, false));
        lodtensor_destroy(a);
        lodtensor_destroy(s);
        lodtensor_destroy(c);
    }
    if (CHECK_OK(beam_search_decode(ids, scores, 2, 1, &si, &ss))) {
        const float *f = (const float *)fx_data(ss);
        same_i64(si, want, 17);
        for (k = 0; k < 17; ++k) CHECK(f[k] == (float)want[k]);
        CHECK_OFFSETS(si, 0, want_l0, 3);
        CHECK_OFFSETS(si, 1, want_l1, 5);
        CHECK_OFFSETS(ss, 1, want_l1, 5);
        lodtensor_destroy(si);
        lodtensor_destroy(ss);
    }
    si = ss = fx_sentinel();
    CHECK_STATUS_MSG(beam_search_decode(NULL, scores, 2, 1, &si, &ss), LODTENSOR_NULL_ARGUMENT, "ids");
    CHECK_STATUS_MSG(beam_search_decode(ids, NULL, 2, 1, &si, &ss), LODTENSOR_NULL_ARGUMENT, "scores");
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, 2, 1, NULL, &ss), LODTENSOR_NULL_ARGUMENT, "out_sentence_ids");
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, 2, 1, &si, NULL), LODTENSOR_NULL_ARGUMENT, "out_sentence_scores");
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, 0, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "beam_size");
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, 1, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "beam_size");
    /* beam_size sentences for every source: SIZE_MAX of them cannot be held. */
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, SIZE_MAX, 1, &si, &ss), LODTENSOR_OUT_OF_MEMORY, "beam_size");
    CHECK_STATUS_MSG(beam_search_decode(empty, empty, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "ids");
    CHECK_STATUS_MSG(beam_search_decode(ids, empty, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "scores");
    CHECK_STATUS_MSG(beam_search_decode(ids, i8s, 2, 1, &si, &ss), LODTENSOR_UNSUPPORTED, "scores");
    CHECK_STATUS_MSG(beam_search_decode(scores, scores, 2, 1, &si, &ss), LODTENSOR_UNSUPPORTED, "ids");
    {
        /* One step: bool scores; ids with one LoD level; scores with another LoD. */
        const int64_t one[1] = {1}, tok[1] = {7};
        const uint8_t flag[1] = {1};
        const float f1[1] = {0.5f};
        const size_t a0[2] = {0, 1}, a1[2] = {0, 1};
        tensor_array_t *ai = NULL, *ab = NULL, *a_one = NULL, *af = NULL;
        lodtensor_t *ti = fx_make(I64, one, 1, tok, a0, 2, a1, 2), *tb = fx_make(BOOL, one, 1, flag, a0, 2, a1, 2);
        lodtensor_t *t1 = fx_make(I64, one, 1, tok, a0, 2, NULL, 0), *tf = fx_make(F32, one, 1, f1, a0, 2, NULL, 0);
        CHECK_OK(tensor_array_create(&ai));
        CHECK_OK(tensor_array_create(&ab));
        CHECK_OK(tensor_array_create(&a_one));
        CHECK_OK(tensor_array_create(&af));
        CHECK_OK(tensor_array_write(ai, 0, ti, false));
        CHECK_OK(tensor_array_write(ab, 0, tb, false));
        CHECK_OK(tensor_array_write(a_one, 0, t1, false));
        CHECK_OK(tensor_array_write(af, 0, tf, false));
        CHECK_STATUS_MSG(beam_search_decode(ai, ab, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "bool");
        CHECK_STATUS_MSG(beam_search_decode(a_one, af, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "exactly 2");
        CHECK_STATUS_MSG(beam_search_decode(ai, af, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "scores");
        tensor_array_destroy(ai);
        tensor_array_destroy(ab);
        tensor_array_destroy(a_one);
        tensor_array_destroy(af);
        lodtensor_destroy(ti);
        lodtensor_destroy(tb);
        lodtensor_destroy(t1);
        lodtensor_destroy(tf);
    }
    CHECK(si == fx_sentinel() && ss == fx_sentinel());
    tensor_array_destroy(ids);
    tensor_array_destroy(scores);
    tensor_array_destroy(empty);
    tensor_array_destroy(i8s);
}

/* Writes a new tensor of `dtype` (dims, data, a 2-level LoD) at `index` of `a`. */
static void write_step(tensor_array_t *a, size_t index, lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim,
                       const void *data, const size_t *l0, size_t n0, const size_t *l1, size_t n1) {
    lodtensor_t *t = fx_make(dtype, dims, ndim, data, l0, n0, l1, n1);
    CHECK_OK(tensor_array_write(a, index, t, false));
    lodtensor_destroy(t);
}

/* Two steps of 2 sources that decode (1 prefix and 1 candidate per source at each step), then
 * the same with one thing broken at step 1: scores with the ids' LoD but another element count,
 * float64 scores after float32 ones, and a step 1 whose level 0 points past step 0's candidates. */
static void test_decode_broken_steps(void) {
    static const size_t l0[3] = {0, 1, 2}, l1[3] = {0, 1, 2};
    /* Source 1 extends prefix rows 1 and 2 of step 0, which has only candidates 0 and 1. */
    static const size_t past0[3] = {0, 1, 3}, past1[4] = {0, 1, 2, 3};
    static const int64_t n2[1] = {2}, n22[2] = {2, 2}, n3[1] = {3};
    static const int64_t ids0[2] = {4, 5}, ids1[3] = {6, 7, 8};
    static const float sc0[2] = {-0.5f, -0.25f}, sc1[4] = {-1.0f, -0.75f, -2.0f, -3.0f};
    static const double sc1_64[2] = {-1.0, -0.75};
    tensor_array_t *ids = NULL, *scores = NULL;
    lodtensor_t *si = fx_sentinel(), *ss = fx_sentinel();
    if (!CHECK_OK(tensor_array_create(&ids)) || !CHECK_OK(tensor_array_create(&scores))) {
        tensor_array_destroy(ids);
        return;
    }
    write_step(ids, 0, I64, n2, 1, ids0, l0, 3, l1, 3);
    write_step(scores, 0, F32, n2, 1, sc0, l0, 3, l1, 3);
    write_step(ids, 1, I64, n2, 1, ids1, l0, 3, l1, 3);
    write_step(scores, 1, F32, n2, 1, sc1, l0, 3, l1, 3);
    if (CHECK_OK(beam_search_decode(ids, scores, 2, 1, &si, &ss))) {
        lodtensor_destroy(si);
        lodtensor_destroy(ss);
    }
    si = ss = fx_sentinel();
    write_step(scores, 1, F32, n22, 2, sc1, l0, 3, l1, 3);
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "element count");
    write_step(scores, 1, F64, n2, 1, sc1_64, l0, 3, l1, 3);
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT,
                     "element 1 has dtype float64");
    write_step(ids, 1, I64, n3, 1, ids1, past0, 3, past1, 4);
    write_step(scores, 1, F32, n3, 1, sc1, past0, 3, past1, 4);
    CHECK_STATUS_MSG(beam_search_decode(ids, scores, 2, 1, &si, &ss), LODTENSOR_INVALID_ARGUMENT, "do not chain");
    CHECK(si == fx_sentinel() && ss == fx_sentinel());
    tensor_array_destroy(ids);
    tensor_array_destroy(scores);
}

static void test_gather_tree(void) {
    const int64_t ids[12] = {2, 2, 6, 1, 3, 9, 6, 1, 0, 1, 9, 0}, parents[12] = {0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1};
    const int64_t want[12] = {2, 2, 1, 6, 3, 3, 6, 1, 0, 1, 9, 0}, bad[12] = {0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 2, 1};
    const int64_t d[3] = {3, 2, 2}, d2[2] = {3, 4};
    const float f[12] = {0};
    lodtensor_t *i = fx_make(I64, d, 3, ids, NULL, 0, NULL, 0), *p = fx_make(I64, d, 3, parents, NULL, 0, NULL, 0);
    lodtensor_t *b = fx_make(I64, d, 3, bad, NULL, 0, NULL, 0), *flat = fx_make(I64, d2, 2, ids, NULL, 0, NULL, 0);
    lodtensor_t *fl = fx_make(F32, d, 3, f, NULL, 0, NULL, 0), *out = fx_sentinel();
    if (CHECK_OK(beam_search_gather_tree(i, p, &out))) {
        same_i64(out, want, 12);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(beam_search_gather_tree(NULL, p, &out), LODTENSOR_NULL_ARGUMENT, "ids");
    CHECK_STATUS_MSG(beam_search_gather_tree(i, NULL, &out), LODTENSOR_NULL_ARGUMENT, "parents");
    CHECK_STATUS_MSG(beam_search_gather_tree(i, p, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(beam_search_gather_tree(i, b, &out), LODTENSOR_OUT_OF_RANGE, "parents");
    CHECK_STATUS_MSG(beam_search_gather_tree(flat, flat, &out), LODTENSOR_INVALID_ARGUMENT, "ids");
    CHECK_STATUS_MSG(beam_search_gather_tree(i, flat, &out), LODTENSOR_INVALID_ARGUMENT, "parents");
    CHECK_STATUS_MSG(beam_search_gather_tree(fl, fl, &out), LODTENSOR_UNSUPPORTED, "ids");
    CHECK(out == fx_sentinel());
    lodtensor_destroy(i);
    lodtensor_destroy(p);
    lodtensor_destroy(b);
    lodtensor_destroy(flat);
    lodtensor_destroy(fl);
}

/* A toy model: the scores of token v after a prefix depend on its last token and parent only
 * (not normalized: the decoder only adds and compares them, and the test needs no libm). */
typedef struct {
    size_t vocab;
    size_t fail_at; /* the step at which the callback fails, or SIZE_MAX */
    int64_t banned; /* the edit callback's banned token */
    size_t calls;
} toy_t;

static int32_t toy_step(const beam_search_step_info_t *info, float *log_probs, void *user_data) {
    toy_t *m = (toy_t *)user_data;
    size_t r, v;
    m->calls++;
    if (info->step == m->fail_at) return 42;
    if (info->source_offsets[info->num_sources] != info->num_prefixes) return 7;
    for (r = 0; r < info->num_prefixes; ++r) {
        for (v = 0; v < info->vocab_size; ++v) {
            uint64_t h = (uint64_t)info->ids[r] * 31u + v * 17u + (uint64_t)info->parent_idx[r] * 7u;
            log_probs[r * info->vocab_size + v] = -0.25f * (float)(h % 13u) - 0.01f * (float)v;
        }
    }
    return 0;
}

static int32_t toy_edit(const beam_search_step_info_t *info, float *log_probs, void *user_data) {
    toy_t *m = (toy_t *)user_data;
    size_t r;
    if (m->fail_at == SIZE_MAX - 1) return 5;
    for (r = 0; r < info->num_prefixes; ++r) log_probs[r * info->vocab_size + (size_t)m->banned] = -INFINITY;
    return 0;
}

static void test_decoder(void) {
    beam_search_decoder_options_t o, bad;
    beam_search_decoder_t *d = NULL, *dsent = (beam_search_decoder_t *)(void *)fx_sentinel();
    toy_t m = {7, SIZE_MAX, 3, 0};
    lodtensor_t *ids = fx_sentinel(), *scores = fx_sentinel();
    CHECK_STATUS_MSG(beam_search_decoder_options_init(NULL), LODTENSOR_NULL_ARGUMENT, "options");
    CHECK_OK(beam_search_decoder_options_init(&o));
    CHECK_EQ_INT(o.version, LODTENSOR_BEAM_SEARCH_DECODER_OPTIONS_VERSION);
    CHECK_EQ_SIZE(o.vocab_size, 0);
    CHECK_STATUS_MSG(beam_search_decoder_create(&o, &dsent), LODTENSOR_INVALID_ARGUMENT, "vocab_size");
    o.vocab_size = 7;
    o.beam_size = 3;
    o.num_hypotheses = 3;
    o.max_length = 5;
    o.start_id = 0;
    o.end_id = 1;
    bad = o;
    bad.version = 99;
    CHECK_STATUS_MSG(beam_search_decoder_create(&bad, &dsent), LODTENSOR_INVALID_ARGUMENT, "version");
    bad = o;
    bad.num_hypotheses = 4;
    CHECK_STATUS_MSG(beam_search_decoder_create(&bad, &dsent), LODTENSOR_INVALID_ARGUMENT, "num_hypotheses");
    bad = o;
    bad.end_id = 7;
    CHECK_STATUS_MSG(beam_search_decoder_create(&bad, &dsent), LODTENSOR_INVALID_ARGUMENT, "end_id");
    bad = o;
    bad.length_penalty = -1.0;
    CHECK_STATUS_MSG(beam_search_decoder_create(&bad, &dsent), LODTENSOR_INVALID_ARGUMENT, "length_penalty");
    CHECK_STATUS_MSG(beam_search_decoder_create(NULL, &dsent), LODTENSOR_NULL_ARGUMENT, "options");
    CHECK_STATUS_MSG(beam_search_decoder_create(&o, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK(dsent == (beam_search_decoder_t *)(void *)fx_sentinel());
    if (!CHECK_OK(beam_search_decoder_create(&o, &d))) return;

    if (CHECK_OK(beam_search_decoder_run(d, 2, toy_step, toy_edit, &m, &ids, &scores))) {
        const int64_t *tok = (const int64_t *)fx_data(ids);
        const float *sc = (const float *)fx_data(scores);
        size_t i, n = numel_of(ids), hyps = numel_of(scores);
        CHECK_EQ_SIZE(hyps, 6);
        for (i = 0; i < n; ++i) CHECK(tok[i] != 3 && tok[i] >= 0 && tok[i] < 7);
        for (i = 0; i + 1 < 3; ++i) CHECK(sc[i] >= sc[i + 1] && sc[3 + i] >= sc[3 + i + 1]);
        lodtensor_destroy(ids);
        lodtensor_destroy(scores);
    }
    ids = scores = fx_sentinel();
    m.fail_at = 2;
    m.calls = 0;
    CHECK_STATUS_MSG(beam_search_decoder_run(d, 2, toy_step, NULL, &m, &ids, &scores), LODTENSOR_CALLBACK_FAILED,
                     "step_fn: returned status 42 at step 2");
    CHECK_EQ_SIZE(m.calls, 3);
    m.fail_at = SIZE_MAX - 1;
    CHECK_STATUS_MSG(beam_search_decoder_run(d, 2, toy_step, toy_edit, &m, &ids, &scores), LODTENSOR_CALLBACK_FAILED,
                     "edit_fn: returned status 5");
    m.fail_at = SIZE_MAX;
    CHECK_STATUS_MSG(beam_search_decoder_run(NULL, 2, toy_step, NULL, &m, &ids, &scores), LODTENSOR_NULL_ARGUMENT,
                     "decoder");
    CHECK_STATUS_MSG(beam_search_decoder_run(d, 2, NULL, NULL, &m, &ids, &scores), LODTENSOR_NULL_ARGUMENT, "step_fn");
    CHECK_STATUS_MSG(beam_search_decoder_run(d, 2, toy_step, NULL, &m, NULL, &scores), LODTENSOR_NULL_ARGUMENT,
                     "out_ids");
    CHECK_STATUS_MSG(beam_search_decoder_run(d, 2, toy_step, NULL, &m, &ids, NULL), LODTENSOR_NULL_ARGUMENT,
                     "out_scores");
    CHECK_STATUS_MSG(beam_search_decoder_run(d, 0, toy_step, NULL, &m, &ids, &scores), LODTENSOR_INVALID_ARGUMENT,
                     "num_sources");
    CHECK(ids == fx_sentinel() && scores == fx_sentinel());
    beam_search_decoder_destroy(d);
    beam_search_decoder_destroy(NULL);
}

int main(void) {
    test_topk();
    test_step();
    test_fused_and_gather_state();
    test_decode();
    test_decode_broken_steps();
    test_gather_tree();
    test_decoder();
    return CHECK_RETURN();
}
