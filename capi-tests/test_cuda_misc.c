/* test_cuda_misc: the smaller sequence ops through the C API on cuda:0 (sequence_concat,
 * sequence_slice, sequence_reverse, sequence_reshape, lodtensor_gather_rows, sequence_mask,
 * sequence_enumerate, sequence_erase, sequence_conv, sequence_scatter, sequence_scatter_inplace,
 * sequence_expand, sequence_expand_as, lodtensor_scatter_rows, lodtensor_merge, lodtensor_lod_reset
 * with its target in a device tensor, tensor_array_dynamic_rnn): each result is made on the device from device inputs,
 * brought back with lodtensor_to_place and compared with the CPU result of the same call (dims,
 * LoD and bytes; sequence_conv within a float tolerance). Inputs on different places are
 * LODTENSOR_INVALID_ARGUMENT naming both. Without a usable CUDA device it says so and passes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static lodtensor_place_t gpu_place(void) { return fx_place(LODTENSOR_DEVICE_CUDA, 0); }

/* A device copy of t (NULL after a failed check). */
static lodtensor_t *to_gpu(const lodtensor_t *t) {
    lodtensor_t *d = NULL;
    if (t == NULL || !CHECK_OK(lodtensor_to_place(t, gpu_place(), &d))) {
        return NULL;
    }
    return d;
}

/* The number of differing elements between a device result and the CPU's: dims and LoD must be
 * equal, and the bytes too (tolerance 0) or, for float32 data, each element within `tolerance`
 * relative to 1 + |want|. Destroys `got_device`. */
static void check_same(lodtensor_t *got_device, const lodtensor_t *want, double tolerance, const char *what) {
    lodtensor_place_t place;
    lodtensor_t *got = NULL;
    size_t gb = 0, wb = 0;
    if (got_device == NULL || want == NULL) {
        CHECK(got_device != NULL && want != NULL);
        lodtensor_destroy(got_device);
        return;
    }
    CHECK_OK(lodtensor_place(got_device, &place));
    CHECK_EQ_INT(place.device_type, LODTENSOR_DEVICE_CUDA);
    if (!CHECK_OK(lodtensor_to_place(got_device, fx_cpu(), &got))) {
        lodtensor_destroy(got_device);
        return;
    }
    lodtensor_destroy(got_device);
    fx_same_layout(got, want);
    CHECK_OK(lodtensor_nbytes(got, &gb));
    CHECK_OK(lodtensor_nbytes(want, &wb));
    if (CHECK_EQ_SIZE(gb, wb) && wb > 0) {
        const void *g = fx_data(got), *w = fx_data(want);
        if (tolerance == 0) {
            if (!CHECK(memcmp(g, w, wb) == 0)) {
                fprintf(stderr, "  %s: the device result differs from the CPU's\n", what);
            }
        } else {
            size_t i, bad = 0;
            for (i = 0; i < wb / sizeof(float); ++i) {
                double a = ((const float *)g)[i], b = ((const float *)w)[i];
                bad += fabs(a - b) > tolerance * (1 + fabs(b));
            }
            if (!CHECK_EQ_SIZE(bad, 0)) {
                fprintf(stderr, "  %s: %zu elements differ beyond the tolerance\n", what, bad);
            }
        }
    }
    lodtensor_destroy(got);
}

/* A float32 [rows, width] fixture tensor with a one-level offsets LoD (none when n is 0). */
static lodtensor_t *f32_seq(size_t rows, size_t width, const size_t *offsets, size_t n) {
    lodtensor_t *t = NULL;
    size_t sizes[1];
    sizes[0] = n;
    if (!CHECK_OK(fx_make_f32(rows, width, LODTENSOR_LOD_OFFSETS, sizes, n ? 1 : 0, offsets, n, &t))) {
        return NULL;
    }
    return t;
}

static void test_movement(void) {
    static const size_t lod_a[4] = {0, 3, 3, 7}, lod_b[4] = {0, 1, 5, 6};
    static const int64_t offs[3] = {1, 0, 2}, lens[3] = {2, 0, 1}, col[2] = {3, 1};
    static const int32_t index[6] = {4, 5, 6, 0, 0, 2};
    static const int64_t index_dims[1] = {6};
    lodtensor_t *a = f32_seq(7, 5, lod_a, 4), *b = f32_seq(6, 5, lod_b, 4);
    lodtensor_t *o = fx_make_lod1(fx_i64(), col, 2, offs, sizeof offs, NULL, 0);
    lodtensor_t *l = fx_make_lod1(fx_i64(), col, 2, lens, sizeof lens, NULL, 0);
    lodtensor_t *idx = fx_make_lod1(fx_i32(), index_dims, 1, index, sizeof index, NULL, 0);
    lodtensor_t *ad = to_gpu(a), *bd = to_gpu(b), *od = to_gpu(o), *ld = to_gpu(l), *idxd = to_gpu(idx);
    lodtensor_t *want = NULL, *got = NULL;
    const lodtensor_t *pair[2], *mixed[2];
    pair[0] = ad;
    pair[1] = bd;
    mixed[0] = ad;
    mixed[1] = b;
    {
        const lodtensor_t *host_pair[2];
        host_pair[0] = a;
        host_pair[1] = b;
        if (CHECK_OK(sequence_concat(host_pair, 2, &want)) && CHECK_OK(sequence_concat(pair, 2, &got))) {
            check_same(got, want, 0, "sequence_concat");
        }
        lodtensor_destroy(want);
    }
    got = fx_sentinel();
    CHECK_STATUS_MSG(sequence_concat(mixed, 2, &got), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
    CHECK(got == fx_sentinel());
    want = NULL;
    if (CHECK_OK(sequence_slice(a, o, l, &want)) && CHECK_OK(sequence_slice(ad, od, ld, &got))) {
        check_same(got, want, 0, "sequence_slice");
    }
    lodtensor_destroy(want);
    CHECK_STATUS_MSG(sequence_slice(ad, o, ld, &got), LODTENSOR_INVALID_ARGUMENT, "cpu");
    if (CHECK_OK(sequence_reverse(a, &want)) && CHECK_OK(sequence_reverse(ad, &got))) {
        check_same(got, want, 0, "sequence_reverse");
    }
    lodtensor_destroy(want);
    /* Sequence 0 of a holds 3 rows x 5 = 15 elements: not a multiple of 2. */
    CHECK_STATUS_MSG(sequence_reshape(ad, 2, &got), LODTENSOR_INVALID_ARGUMENT, "sequence 0");
    if (CHECK_OK(sequence_reshape(b, 5, &want)) && CHECK_OK(sequence_reshape(bd, 5, &got))) {
        check_same(got, want, 0, "sequence_reshape");
    }
    lodtensor_destroy(want);
    if (CHECK_OK(sequence_reshape(a, 1, &want)) && CHECK_OK(sequence_reshape(ad, 1, &got))) {
        check_same(got, want, 0, "sequence_reshape to 1 column");
    }
    lodtensor_destroy(want);
    if (CHECK_OK(lodtensor_gather_rows(a, idx, &want)) && CHECK_OK(lodtensor_gather_rows(ad, idxd, &got))) {
        check_same(got, want, 0, "lodtensor_gather_rows");
    }
    lodtensor_destroy(want);
    CHECK_STATUS_MSG(lodtensor_gather_rows(ad, idx, &got), LODTENSOR_INVALID_ARGUMENT, "index");
    lodtensor_destroy(a);
    lodtensor_destroy(b);
    lodtensor_destroy(o);
    lodtensor_destroy(l);
    lodtensor_destroy(idx);
    lodtensor_destroy(ad);
    lodtensor_destroy(bd);
    lodtensor_destroy(od);
    lodtensor_destroy(ld);
    lodtensor_destroy(idxd);
}

static void test_int_ops(void) {
    static const int64_t ids[10] = {2, 2, 6, 1, 3, 9, 6, 1, 0, 1};
    static const size_t lod[4] = {0, 3, 6, 10};
    static const int64_t dims[2] = {10, 1};
    static const int64_t erase_tokens[3] = {2, 3, 5};
    static const float lengths[4] = {3, 1, 1.5f, 0};
    static const int64_t ldims[1] = {4};
    lodtensor_t *x = fx_make_lod1(fx_i64(), dims, 2, ids, sizeof ids, lod, 4);
    lodtensor_t *len = fx_make_lod1(fx_f32(), ldims, 1, lengths, sizeof lengths, NULL, 0);
    lodtensor_t *xd = to_gpu(x), *lend = to_gpu(len);
    lodtensor_t *want = NULL, *got = NULL;
    if (CHECK_OK(sequence_enumerate(x, 3, -1, &want)) && CHECK_OK(sequence_enumerate(xd, 3, -1, &got))) {
        check_same(got, want, 0, "sequence_enumerate");
    }
    lodtensor_destroy(want);
    if (CHECK_OK(sequence_erase(x, erase_tokens, 3, &want)) && CHECK_OK(sequence_erase(xd, erase_tokens, 3, &got))) {
        check_same(got, want, 0, "sequence_erase");
    }
    lodtensor_destroy(want);
    if (CHECK_OK(sequence_mask(len, -1, fx_f32(), &want)) && CHECK_OK(sequence_mask(lend, -1, fx_f32(), &got))) {
        check_same(got, want, 0, "sequence_mask, maxlen from x");
    }
    lodtensor_destroy(want);
    if (CHECK_OK(sequence_mask(len, 5, fx_bool(), &want)) && CHECK_OK(sequence_mask(lend, 5, fx_bool(), &got))) {
        check_same(got, want, 0, "sequence_mask to bool");
    }
    lodtensor_destroy(want);
    CHECK_STATUS_MSG(sequence_mask(lend, 0, fx_i64(), &got), LODTENSOR_INVALID_ARGUMENT, "maxlen");
    lodtensor_destroy(x);
    lodtensor_destroy(len);
    lodtensor_destroy(xd);
    lodtensor_destroy(lend);
}

static void test_conv(void) {
    static const size_t lod[3] = {0, 3, 4};
    static const int64_t fdims[2] = {6, 3}, pdims[2] = {2, 2};
    float filter[18], pad[4];
    size_t i;
    lodtensor_t *x = f32_seq(4, 2, lod, 3), *f = NULL, *p = NULL, *xd, *fd, *pd, *want = NULL, *got = NULL;
    for (i = 0; i < 18; ++i) {
        filter[i] = (float)i / 7.0f - 1.0f;
    }
    for (i = 0; i < 4; ++i) {
        pad[i] = 0.5f * (float)i;
    }
    f = fx_make_lod1(fx_f32(), fdims, 2, filter, sizeof filter, NULL, 0);
    p = fx_make_lod1(fx_f32(), pdims, 2, pad, sizeof pad, NULL, 0);
    xd = to_gpu(x), fd = to_gpu(f), pd = to_gpu(p);
    /* The kernel sums as the CPU does, without fused multiply-adds; 1e-6 allows for a GPU
     * that would still round differently. */
    if (CHECK_OK(sequence_conv(x, f, p, 3, -1, 1, true, &want)) &&
        CHECK_OK(sequence_conv(xd, fd, pd, 3, -1, 1, true, &got))) {
        check_same(got, want, 1e-6, "sequence_conv");
    }
    lodtensor_destroy(want);
    CHECK_STATUS_MSG(sequence_conv(xd, f, NULL, 3, -1, 1, false, &got), LODTENSOR_INVALID_ARGUMENT, "filter");
    lodtensor_destroy(x);
    lodtensor_destroy(f);
    lodtensor_destroy(p);
    lodtensor_destroy(xd);
    lodtensor_destroy(fd);
    lodtensor_destroy(pd);
}

static void test_scatter_and_expand(void) {
    static const int64_t ids[12] = {0, 1, 2, 5, 4, 3, 2, 1, 3, 2, 5, 4};
    static const float upd[12] = {0.3f, 0.3f, 0.4f, 0.1f, 0.2f, 0.3f, 0.4f, 0.0f, 0.2f, 0.3f, 0.1f, 0.4f};
    static const size_t lod[4] = {0, 3, 8, 12}, ylod[4] = {0, 2, 2, 5};
    static const int64_t dims[2] = {12, 1};
    lodtensor_t *x = f32_seq(3, 6, NULL, 0), *i = fx_make_lod1(fx_i64(), dims, 2, ids, sizeof ids, lod, 4);
    lodtensor_t *u = fx_make_lod1(fx_f32(), dims, 2, upd, sizeof upd, lod, 4);
    lodtensor_t *y = f32_seq(5, 1, ylod, 4);
    lodtensor_t *xd = to_gpu(x), *id = to_gpu(i), *ud = to_gpu(u), *yd = to_gpu(y), *want = NULL, *got = NULL;
    lodtensor_t *in_place = to_gpu(x);
    if (CHECK_OK(sequence_scatter(x, i, u, &want)) && CHECK_OK(sequence_scatter(xd, id, ud, &got))) {
        check_same(got, want, 0, "sequence_scatter");
        if (in_place && CHECK_OK(sequence_scatter_inplace(in_place, id, ud))) {
            check_same(in_place, want, 0, "sequence_scatter_inplace");
            in_place = NULL;
        }
    }
    lodtensor_destroy(want);
    lodtensor_destroy(in_place);
    CHECK_STATUS_MSG(sequence_scatter(xd, i, ud, &got), LODTENSOR_INVALID_ARGUMENT, "ids");
    if (CHECK_OK(sequence_expand(x, y, 0, &want)) && CHECK_OK(sequence_expand(xd, yd, 0, &got))) {
        check_same(got, want, 0, "sequence_expand");
    }
    lodtensor_destroy(want);
    if (CHECK_OK(sequence_expand_as(x, y, &want)) && CHECK_OK(sequence_expand_as(xd, yd, &got))) {
        check_same(got, want, 0, "sequence_expand_as");
    }
    lodtensor_destroy(want);
    got = fx_sentinel();
    CHECK_STATUS_MSG(sequence_expand(xd, y, 0, &got), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
    CHECK_STATUS_MSG(sequence_expand_as(x, yd, &got), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
    CHECK(got == fx_sentinel());
    lodtensor_destroy(x);
    lodtensor_destroy(i);
    lodtensor_destroy(u);
    lodtensor_destroy(y);
    lodtensor_destroy(xd);
    lodtensor_destroy(id);
    lodtensor_destroy(ud);
    lodtensor_destroy(yd);
}

/* lodtensor_scatter_rows, both modes, a repeated index (rows 1 and 3) and an empty one. */
static void test_scatter_rows(void) {
    static const int64_t xdims[2] = {4, 3}, udims[2] = {5, 3}, idims[1] = {5}, edims[1] = {0}, e2dims[2] = {0, 3};
    static const size_t lod[3] = {0, 1, 4};
    static const int64_t index[5] = {3, 1, 3, 0, 1};
    float xv[12], uv[15];
    size_t k;
    int32_t mode;
    lodtensor_t *x, *i, *u, *e, *eu, *xd, *id, *ud, *ed, *eud, *want = NULL, *got = NULL;
    for (k = 0; k < 12; ++k) xv[k] = 0.1f * (float)k - 0.35f;
    for (k = 0; k < 15; ++k) uv[k] = 1.0f / (float)(k + 3);
    x = fx_make_lod1(fx_f32(), xdims, 2, xv, sizeof xv, lod, 3);
    i = fx_make_lod1(fx_i64(), idims, 1, index, sizeof index, NULL, 0);
    u = fx_make_lod1(fx_f32(), udims, 2, uv, sizeof uv, NULL, 0);
    e = fx_make_lod1(fx_i64(), edims, 1, index, 0, NULL, 0);
    eu = fx_make_lod1(fx_f32(), e2dims, 2, uv, 0, NULL, 0);
    xd = to_gpu(x);
    id = to_gpu(i);
    ud = to_gpu(u);
    ed = to_gpu(e);
    eud = to_gpu(eu);
    for (mode = LODTENSOR_SCATTER_OVERWRITE; mode <= LODTENSOR_SCATTER_ADD; ++mode) {
        if (CHECK_OK(lodtensor_scatter_rows(x, i, u, mode, &want)) &&
            CHECK_OK(lodtensor_scatter_rows(xd, id, ud, mode, &got))) {
            check_same(got, want, 0, "lodtensor_scatter_rows");
        }
        lodtensor_destroy(want);
        if (CHECK_OK(lodtensor_scatter_rows(x, e, eu, mode, &want)) &&
            CHECK_OK(lodtensor_scatter_rows(xd, ed, eud, mode, &got))) {
            check_same(got, want, 0, "lodtensor_scatter_rows, empty index");
        }
        lodtensor_destroy(want);
        got = fx_sentinel();
        CHECK_STATUS_MSG(lodtensor_scatter_rows(xd, i, ud, mode, &got), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, id, ud, mode, &got), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(xd, id, ud, 2, &got), LODTENSOR_INVALID_ARGUMENT, "mode");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(xd, ud, ud, mode, &got), LODTENSOR_INVALID_ARGUMENT, "index");
        CHECK(got == fx_sentinel());
        got = NULL;
    }
    lodtensor_destroy(x);
    lodtensor_destroy(i);
    lodtensor_destroy(u);
    lodtensor_destroy(e);
    lodtensor_destroy(eu);
    lodtensor_destroy(xd);
    lodtensor_destroy(id);
    lodtensor_destroy(ud);
    lodtensor_destroy(ed);
    lodtensor_destroy(eud);
}

/* lodtensor_merge of device tensors (one with no rows) is a device tensor equal to the host merge;
 * lodtensor_lod_reset reads its target from a device `y`; `y` on another place than `x` is
 * LODTENSOR_INVALID_ARGUMENT naming both places. */
static void test_merge_and_lod_reset(void) {
    static const size_t lod_a[4] = {0, 3, 3, 7}, lod_b[3] = {0, 0, 2}, lod_e[2] = {0, 0};
    static const int64_t ydims[1] = {3};
    static const int64_t target[3] = {0, 5, 9}, bad[3] = {0, 10, 9};
    lodtensor_t *a = f32_seq(7, 5, lod_a, 4), *b = f32_seq(2, 5, lod_b, 3), *e = f32_seq(0, 5, lod_e, 2);
    lodtensor_t *y = fx_make_lod1(fx_i64(), ydims, 1, target, sizeof target, NULL, 0);
    lodtensor_t *ybad = fx_make_lod1(fx_i64(), ydims, 1, bad, sizeof bad, NULL, 0);
    lodtensor_t *ad = to_gpu(a), *bd = to_gpu(b), *ed = to_gpu(e), *yd = to_gpu(y), *ybadd = to_gpu(ybad);
    lodtensor_t *want = NULL, *got = NULL, *merged = NULL, *merged_d = NULL;
    const lodtensor_t *host[3], *dev[3], *mixed[2];
    host[0] = a;
    host[1] = e;
    host[2] = b;
    dev[0] = ad;
    dev[1] = ed;
    dev[2] = bd;
    mixed[0] = ad;
    mixed[1] = b;
    if (CHECK_OK(lodtensor_merge(host, 3, &merged)) && CHECK_OK(lodtensor_merge(dev, 3, &merged_d))) {
        CHECK_OK(lodtensor_merge(dev, 3, &got));
        check_same(got, merged, 0, "lodtensor_merge");
        if (CHECK_OK(lodtensor_lod_reset(merged, y, NULL, 0, false, &want)) &&
            CHECK_OK(lodtensor_lod_reset(merged_d, yd, NULL, 0, false, &got))) {
            check_same(got, want, 0, "lodtensor_lod_reset, y on the device");
        }
        lodtensor_destroy(want);
        got = fx_sentinel();
        CHECK_STATUS_MSG(lodtensor_lod_reset(merged_d, ybadd, NULL, 0, false, &got), LODTENSOR_INVALID_LOD, "y");
        CHECK_STATUS_MSG(lodtensor_lod_reset(merged_d, y, NULL, 0, false, &got), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
        CHECK_STATUS_MSG(lodtensor_lod_reset(merged, yd, NULL, 0, false, &got), LODTENSOR_INVALID_ARGUMENT, "cpu");
        CHECK(got == fx_sentinel());
    }
    got = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_merge(mixed, 2, &got), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
    CHECK(got == fx_sentinel());
    lodtensor_destroy(merged);
    lodtensor_destroy(merged_d);
    lodtensor_destroy(a);
    lodtensor_destroy(b);
    lodtensor_destroy(e);
    lodtensor_destroy(y);
    lodtensor_destroy(ybad);
    lodtensor_destroy(ad);
    lodtensor_destroy(bd);
    lodtensor_destroy(ed);
    lodtensor_destroy(yd);
    lodtensor_destroy(ybadd);
}

/* The dynamic-RNN step of test_dynamic_rnn: checks that its inputs are on the device, returns
 * its input as the output (on the host at step `host_at`) and its state reversed. */
typedef struct {
    size_t calls, off_device, host_at;
} rnn_device_ctx;

static int32_t rnn_device_step(size_t step, const lodtensor_t *in, const lodtensor_t *prev, lodtensor_t **out,
                               lodtensor_t **state, void *user_data) {
    rnn_device_ctx *ctx = (rnn_device_ctx *)user_data;
    lodtensor_place_t pi, pp;
    int64_t dims[2] = {0, 0}, rows, k, reversed[8];
    size_t ndim = 0;
    lodtensor_t *index = NULL, *index_d = NULL;
    int32_t status;
    ++ctx->calls;
    if (lodtensor_place(in, &pi) != LODTENSOR_OK || lodtensor_place(prev, &pp) != LODTENSOR_OK ||
        lodtensor_dims(prev, dims, 2, &ndim) != LODTENSOR_OK || ndim != 2 || dims[0] > 8) {
        return 1;
    }
    rows = dims[0];
    ctx->off_device += pi.device_type != LODTENSOR_DEVICE_CUDA || pp.device_type != LODTENSOR_DEVICE_CUDA;
    for (k = 0; k < rows; ++k) reversed[k] = rows - 1 - k;
    index = fx_make_lod1(fx_i64(), &rows, 1, reversed, (size_t)rows * sizeof(int64_t), NULL, 0);
    status = index == NULL ? 1 : lodtensor_to_place(index, pp, &index_d);
    if (status == LODTENSOR_OK) status = lodtensor_gather_rows(prev, index_d, state);
    if (status == LODTENSOR_OK) status = step == ctx->host_at ? lodtensor_to_place(in, fx_cpu(), out) : lodtensor_share(in, out);
    lodtensor_destroy(index);
    lodtensor_destroy(index_d);
    return status;
}

/* tensor_array_dynamic_rnn over device tensors equals the host run, every step's inputs on the
 * device; init_state on another place than x, and step outputs on two places, are
 * LODTENSOR_INVALID_ARGUMENT naming both places. */
static void test_dynamic_rnn(void) {
    static const size_t lod_a[4] = {0, 3, 3, 7};
    lodtensor_t *x = f32_seq(7, 5, lod_a, 4), *init = f32_seq(3, 2, NULL, 0);
    lodtensor_t *xd = to_gpu(x), *initd = to_gpu(init), *want = NULL, *got = NULL;
    rnn_device_ctx ctx = {0, 0, (size_t)-1};
    if (CHECK_OK(tensor_array_dynamic_rnn(x, 0, init, rnn_device_step, &ctx, &want))) {
        CHECK_EQ_SIZE(ctx.off_device, 4);
        ctx.calls = ctx.off_device = 0;
        if (CHECK_OK(tensor_array_dynamic_rnn(xd, 0, initd, rnn_device_step, &ctx, &got))) {
            check_same(got, want, 0, "tensor_array_dynamic_rnn");
        }
        CHECK_EQ_SIZE(ctx.calls, 4);
        CHECK_EQ_SIZE(ctx.off_device, 0);
    }
    lodtensor_destroy(want);
    ctx.calls = 0;
    got = fx_sentinel();
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(xd, 0, init, rnn_device_step, &ctx, &got), LODTENSOR_INVALID_ARGUMENT,
                     "init_state");
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, initd, rnn_device_step, &ctx, &got), LODTENSOR_INVALID_ARGUMENT,
                     "cuda:0");
    CHECK_EQ_SIZE(ctx.calls, 0);
    ctx.host_at = 1;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(xd, 0, initd, rnn_device_step, &ctx, &got), LODTENSOR_INVALID_ARGUMENT,
                     "cpu");
    CHECK_EQ_SIZE(ctx.calls, 4);
    CHECK(got == fx_sentinel());
    lodtensor_destroy(x);
    lodtensor_destroy(init);
    lodtensor_destroy(xd);
    lodtensor_destroy(initd);
}

int main(void) {
    if (!fx_cuda_usable()) {
        printf("skipped: no CUDA device\n");
        return 0;
    }
    test_movement();
    test_int_ops();
    test_conv();
    test_scatter_and_expand();
    test_scatter_rows();
    test_merge_and_lod_reset();
    test_dynamic_rnn();
    return CHECK_RETURN();
}
