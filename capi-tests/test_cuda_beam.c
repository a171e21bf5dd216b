/* test_cuda_beam: the beam-search family and the TensorArray ops through the C API on cuda:0,
 * against the same calls on the host: lodtensor_topk, beam_search_step, beam_search_fused_step,
 * beam_search_gather_state, beam_search_gather_tree, beam_search_decode, tensor_array_unpack /
 * pack / to_tensor / unstack / read / write and rank_table_shrink_rnn_memory / reorder. Results
 * come back with lodtensor_to_place and must be identical (dtype, dims, LoD, bytes). Without a
 * usable CUDA device it prints "skipped: no CUDA device" and passes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static const lodtensor_dtype_t F32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
static const lodtensor_dtype_t I64 = {LODTENSOR_DTYPE_CODE_INT, 64, 1};
static const lodtensor_dtype_t I32 = {LODTENSOR_DTYPE_CODE_INT, 32, 1};

static lodtensor_place_t gpu(void) { return fx_place(LODTENSOR_DEVICE_CUDA, 0); }

/* A copy of `t` on cuda:0. */
static lodtensor_t *on_gpu(const lodtensor_t *t) {
    lodtensor_t *d = NULL;
    if (!CHECK_OK(lodtensor_to_place(t, gpu(), &d))) exit(1);
    return d;
}

/* `got` is on cuda:0 and equals the host tensor `want`: dtype, dims, LoD and bytes. */
static int same(const lodtensor_t *got, const lodtensor_t *want) {
    lodtensor_t *h = NULL;
    lodtensor_place_t p;
    int ok;
    if (!CHECK_OK(lodtensor_place(got, &p)) || !CHECK_EQ_INT(p.device_type, LODTENSOR_DEVICE_CUDA)) return 0;
    if (!CHECK_OK(lodtensor_to_place(got, fx_cpu(), &h))) return 0;
    ok = fx_same(h, want);
    lodtensor_destroy(h);
    return ok;
}

/* Small integers with ties, NaN and -inf: a deterministic pattern. */
static float tie_value(size_t i) {
    switch ((i * 7919u) % 23u) {
    case 0: return NAN;
    case 1: return -INFINITY;
    default: return (float)((i * 31u) % 5u) - 2.0f;
    }
}

static void test_topk(void) {
    float x[6 * 37];
    const int64_t dims[2] = {6, 37};
    size_t i;
    int largest;
    lodtensor_t *t, *d;
    for (i = 0; i < 6 * 37; ++i) x[i] = tie_value(i);
    t = fx_make(F32, dims, 2, x, NULL, 0, NULL, 0);
    d = on_gpu(t);
    for (largest = 0; largest < 2; ++largest) {
        size_t k;
        for (k = 1; k <= 37; k += 12) {
            lodtensor_t *wv = NULL, *wi = NULL, *gv = NULL, *gi = NULL;
            CHECK_OK(lodtensor_topk(t, k, largest != 0, &wv, &wi));
            CHECK_OK(lodtensor_topk(d, k, largest != 0, &gv, &gi));
            same(gv, wv);
            same(gi, wi);
            lodtensor_destroy(wv);
            lodtensor_destroy(wi);
            lodtensor_destroy(gv);
            lodtensor_destroy(gi);
        }
    }
    {
        lodtensor_t *v = fx_sentinel(), *ix = fx_sentinel();
        CHECK_STATUS_MSG(lodtensor_topk(d, 38, true, &v, &ix), LODTENSOR_INVALID_ARGUMENT, "k");
        CHECK(v == fx_sentinel() && ix == fx_sentinel());
    }
    lodtensor_destroy(t);
    lodtensor_destroy(d);
}

/* 3 sources with 2, 0 and 3 prefixes; the second prefix of source 0 has ended (end_id 1). */
static void test_steps(void) {
    const size_t l0[4] = {0, 2, 2, 5}, l1[6] = {0, 1, 2, 3, 4, 5};
    const int64_t pre[5] = {4, 1, 3, 0, 2}, col[2] = {5, 1}, lp_dims[2] = {5, 9}, sc_dims[2] = {5, 3};
    const float pre_s[5] = {-1, -2, 0, -1, -INFINITY};
    float lp[45], sc[15];
    int64_t cand[15];
    size_t i;
    lodtensor_t *pi, *ps, *lpt, *sct, *idt, *dpi, *dps, *dlp, *dsc, *did;
    lodtensor_t *w[3], *g[3];
    for (i = 0; i < 45; ++i) lp[i] = tie_value(i);
    for (i = 0; i < 15; ++i) {
        sc[i] = tie_value(i + 3);
        cand[i] = (int64_t)(i % 4);
    }
    pi = fx_make(I64, col, 2, pre, l0, 4, l1, 6);
    ps = fx_make(F32, col, 2, pre_s, l0, 4, l1, 6);
    lpt = fx_make(F32, lp_dims, 2, lp, NULL, 0, NULL, 0);
    sct = fx_make(F32, sc_dims, 2, sc, l0, 4, l1, 6);
    idt = fx_make(I64, sc_dims, 2, cand, l0, 4, l1, 6);
    dpi = on_gpu(pi);
    dps = on_gpu(ps);
    dlp = on_gpu(lpt);
    dsc = on_gpu(sct);
    did = on_gpu(idt);
    if (CHECK_OK(beam_search_fused_step(pi, ps, lpt, 3, 1, &w[0], &w[1], &w[2])) &&
        CHECK_OK(beam_search_fused_step(dpi, dps, dlp, 3, 1, &g[0], &g[1], &g[2]))) {
        for (i = 0; i < 3; ++i) {
            same(g[i], w[i]);
        }
        /* gather_state by the parents on the device */
        {
            lodtensor_t *ws = NULL, *gs = NULL;
            CHECK_OK(beam_search_gather_state(lpt, w[2], &ws));
            CHECK_OK(beam_search_gather_state(dlp, g[2], &gs));
            same(gs, ws);
            lodtensor_destroy(ws);
            lodtensor_destroy(gs);
        }
        /* gather_states of two device states by the parents on the device (one wait), and a host
         * state among device ones, an error naming both places */
        {
            const lodtensor_t *host_states[2] = {lpt, pi}, *dev_states[2] = {dlp, dpi}, *mixed[2] = {dlp, pi};
            lodtensor_t *ws[2] = {NULL, NULL}, *gs[2] = {fx_sentinel(), fx_sentinel()};
            CHECK_OK(beam_search_gather_states(host_states, 2, w[2], ws));
            if (CHECK_OK(beam_search_gather_states(dev_states, 2, g[2], gs))) {
                same(gs[0], ws[0]);
                same(gs[1], ws[1]);
                lodtensor_destroy(gs[0]);
                lodtensor_destroy(gs[1]);
            }
            lodtensor_destroy(ws[0]);
            lodtensor_destroy(ws[1]);
            gs[0] = gs[1] = fx_sentinel();
            CHECK_STATUS_MSG(beam_search_gather_states(mixed, 2, g[2], gs), LODTENSOR_INVALID_ARGUMENT, "states[1]");
            CHECK(gs[0] == fx_sentinel() && gs[1] == fx_sentinel());
        }
        for (i = 0; i < 3; ++i) {
            lodtensor_destroy(w[i]);
            lodtensor_destroy(g[i]);
        }
    }
    if (CHECK_OK(beam_search_step(pi, ps, idt, sct, 0, 2, 1, true, &w[0], &w[1], &w[2])) &&
        CHECK_OK(beam_search_step(dpi, dps, did, dsc, 0, 2, 1, true, &g[0], &g[1], &g[2]))) {
        for (i = 0; i < 3; ++i) {
            same(g[i], w[i]);
            lodtensor_destroy(w[i]);
            lodtensor_destroy(g[i]);
        }
    }
    {
        lodtensor_t *a = fx_sentinel(), *b = fx_sentinel();
        /* mixed places: host pre_ids, device log_probs */
        CHECK_STATUS_MSG(beam_search_fused_step(pi, ps, dlp, 3, 1, &a, &b, NULL), LODTENSOR_INVALID_ARGUMENT,
                         "cuda:0");
        CHECK(a == fx_sentinel() && b == fx_sentinel());
    }
    lodtensor_destroy(pi);
    lodtensor_destroy(ps);
    lodtensor_destroy(lpt);
    lodtensor_destroy(sct);
    lodtensor_destroy(idt);
    lodtensor_destroy(dpi);
    lodtensor_destroy(dps);
    lodtensor_destroy(dlp);
    lodtensor_destroy(dsc);
    lodtensor_destroy(did);
}

static void test_gather_tree_and_decode(void) {
    /* [T=3, B=2, beam=2] */
    const int32_t ids[12] = {2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4}, par[12] = {0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0};
    const int32_t bad[12] = {0, 0, 1, 0, 1, 0, 2, 1, 1, 1, 0, 0};
    const int64_t dims[3] = {3, 2, 2};
    lodtensor_t *it = fx_make(I32, dims, 3, ids, NULL, 0, NULL, 0), *pt = fx_make(I32, dims, 3, par, NULL, 0, NULL, 0);
    lodtensor_t *bt = fx_make(I32, dims, 3, bad, NULL, 0, NULL, 0);
    lodtensor_t *dit = on_gpu(it), *dpt = on_gpu(pt), *dbt = on_gpu(bt), *w = NULL, *g = NULL;
    if (CHECK_OK(beam_search_gather_tree(it, pt, &w)) && CHECK_OK(beam_search_gather_tree(dit, dpt, &g))) same(g, w);
    lodtensor_destroy(w);
    lodtensor_destroy(g);
    g = fx_sentinel();
    CHECK_STATUS_MSG(beam_search_gather_tree(dit, dbt, &g), LODTENSOR_OUT_OF_RANGE, "parents");
    CHECK(g == fx_sentinel());
    lodtensor_destroy(it);
    lodtensor_destroy(pt);
    lodtensor_destroy(bt);
    lodtensor_destroy(dit);
    lodtensor_destroy(dpt);
    lodtensor_destroy(dbt);
    {
        /* Two steps of one source, beam 2: step 0 the start token, step 1 two candidates. */
        const size_t a0[2] = {0, 1}, a1[2] = {0, 1}, b0[2] = {0, 1}, b1[2] = {0, 2};
        const int64_t one[2] = {1, 1}, two[2] = {2, 1}, s0[1] = {0}, s1[2] = {5, 1};
        const float f0[1] = {0}, f1[2] = {-1, -2};
        tensor_array_t *hi = NULL, *hs = NULL, *di = NULL, *ds = NULL;
        lodtensor_t *t[4];
        lodtensor_t *wi = NULL, *ws = NULL, *gi = NULL, *gs = NULL;
        size_t k;
        t[0] = fx_make(I64, one, 2, s0, a0, 2, a1, 2);
        t[1] = fx_make(F32, one, 2, f0, a0, 2, a1, 2);
        t[2] = fx_make(I64, two, 2, s1, b0, 2, b1, 2);
        t[3] = fx_make(F32, two, 2, f1, b0, 2, b1, 2);
        CHECK_OK(tensor_array_create(&hi));
        CHECK_OK(tensor_array_create(&hs));
        CHECK_OK(tensor_array_create(&di));
        CHECK_OK(tensor_array_create(&ds));
        for (k = 0; k < 2; ++k) {
            lodtensor_t *x = on_gpu(t[2 * k]), *y = on_gpu(t[2 * k + 1]);
            CHECK_OK(tensor_array_write(hi, k, t[2 * k], false));
            CHECK_OK(tensor_array_write(hs, k, t[2 * k + 1], false));
            CHECK_OK(tensor_array_write(di, k, x, true));
            CHECK_OK(tensor_array_write(ds, k, y, false));
            lodtensor_destroy(x);
            lodtensor_destroy(y);
        }
        if (CHECK_OK(beam_search_decode(hi, hs, 2, 1, &wi, &ws)) && CHECK_OK(beam_search_decode(di, ds, 2, 1, &gi, &gs))) {
            same(gi, wi);
            same(gs, ws);
        }
        lodtensor_destroy(wi);
        lodtensor_destroy(ws);
        lodtensor_destroy(gi);
        lodtensor_destroy(gs);
        for (k = 0; k < 4; ++k) lodtensor_destroy(t[k]);
        tensor_array_destroy(hi);
        tensor_array_destroy(hs);
        tensor_array_destroy(di);
        tensor_array_destroy(ds);
    }
}

static void test_tensor_array(void) {
    /* 4 sequences of lengths 2, 0, 3, 1 over [6, 3] rows */
    const size_t l0[5] = {0, 2, 2, 5, 6};
    lodtensor_t *x = NULL, *dx, *w = NULL, *g = NULL;
    rank_table_t *table = NULL;
    tensor_array_t *ha = NULL, *da = NULL;
    size_t n = 0, step, sizes[8], gsizes[8];
    int stack;
    const size_t level_sizes[1] = {5};
    CHECK_OK(fx_make_f32(6, 3, LODTENSOR_LOD_OFFSETS, level_sizes, 1, l0, 5, &x));
    dx = on_gpu(x);
    CHECK_OK(rank_table_create(x, 0, &table));
    CHECK_OK(tensor_array_unpack(x, table, &ha));
    CHECK_OK(tensor_array_unpack(dx, table, &da));
    CHECK_OK(tensor_array_size(da, &n));
    CHECK_EQ_SIZE(n, 3);
    for (step = 0; step < n; ++step) {
        lodtensor_t *a = NULL, *b = NULL;
        CHECK_OK(tensor_array_read(ha, step, false, &a));
        CHECK_OK(tensor_array_read(da, step, true, &b));
        same(b, a);
        lodtensor_destroy(a);
        lodtensor_destroy(b);
    }
    if (CHECK_OK(tensor_array_pack(ha, table, &w)) && CHECK_OK(tensor_array_pack(da, table, &g))) same(g, w);
    lodtensor_destroy(w);
    lodtensor_destroy(g);
    for (step = 0; step < 4; ++step) {
        lodtensor_t *r = NULL, *dr = NULL;
        CHECK_OK(rank_table_reorder(table, x, &r));
        CHECK_OK(rank_table_reorder(table, dx, &dr));
        same(dr, r);
        w = g = NULL;
        if (CHECK_OK(rank_table_shrink_rnn_memory(table, r, step, &w)) &&
            CHECK_OK(rank_table_shrink_rnn_memory(table, dr, step, &g)))
            same(g, w);
        lodtensor_destroy(w);
        lodtensor_destroy(g);
        lodtensor_destroy(r);
        lodtensor_destroy(dr);
    }
    for (stack = 0; stack < 2; ++stack) {
        /* the unpacked steps have 3, 2 and 1 rows: concat along 0 (stack needs equal dims) */
        tensor_array_t *src_h = ha, *src_d = da, *eq_h = NULL, *eq_d = NULL;
        if (stack) {
            lodtensor_t *e = NULL, *de = NULL;
            CHECK_OK(tensor_array_create(&eq_h));
            CHECK_OK(tensor_array_create(&eq_d));
            CHECK_OK(tensor_array_read(ha, 0, false, &e));
            de = on_gpu(e);
            CHECK_OK(tensor_array_write(eq_h, 0, e, false));
            CHECK_OK(tensor_array_write(eq_h, 1, e, true));
            CHECK_OK(tensor_array_write(eq_d, 0, de, false));
            CHECK_OK(tensor_array_write(eq_d, 1, de, true));
            lodtensor_destroy(e);
            lodtensor_destroy(de);
            src_h = eq_h;
            src_d = eq_d;
        }
        w = g = NULL;
        if (CHECK_OK(tensor_array_to_tensor(src_h, stack ? 1 : 0, stack != 0, &w, sizes, 8)) &&
            CHECK_OK(tensor_array_to_tensor(src_d, stack ? 1 : 0, stack != 0, &g, gsizes, 8))) {
            same(g, w);
            CHECK(memcmp(sizes, gsizes, (stack ? 2 : 3) * sizeof(size_t)) == 0);
        }
        if (stack) {
            tensor_array_t *uh = NULL, *ud = NULL;
            size_t i, m = 0;
            lodtensor_t *dw = on_gpu(w);
            CHECK_OK(tensor_array_unstack(w, 2, &uh));
            CHECK_OK(tensor_array_unstack(dw, 2, &ud));
            CHECK_OK(tensor_array_size(ud, &m));
            CHECK_EQ_SIZE(m, 3);
            for (i = 0; i < m; ++i) {
                lodtensor_t *a = NULL, *b = NULL;
                CHECK_OK(tensor_array_read(uh, i, false, &a));
                CHECK_OK(tensor_array_read(ud, i, false, &b));
                same(b, a);
                lodtensor_destroy(a);
                lodtensor_destroy(b);
            }
            lodtensor_destroy(dw);
            tensor_array_destroy(uh);
            tensor_array_destroy(ud);
            tensor_array_destroy(eq_h);
            tensor_array_destroy(eq_d);
        }
        lodtensor_destroy(w);
        lodtensor_destroy(g);
    }
    tensor_array_destroy(ha);
    tensor_array_destroy(da);
    rank_table_destroy(table);
    lodtensor_destroy(x);
    lodtensor_destroy(dx);
}

int main(void) {
    if (!fx_cuda_usable()) {
        printf("skipped: no CUDA device\n");
        return 0;
    }
    test_topk();
    test_steps();
    test_gather_tree_and_decode();
    test_tensor_array();
    return CHECK_RETURN();
}
