/* The CUDA paths of sequence_pad/unpad, sequence_pool, sequence_first_step/last_step,
 * sequence_softmax, lodtensor_log_softmax and lodtensor_cast through the C API: each op runs on
 * cuda:0 (inputs moved with lodtensor_to_place) and its result, moved back to the host, is
 * compared with the same op on the host: bytes equal for the data-moving ops, pooling and cast;
 * softmax to 1e-5 relative (float32: the device sums in another order, and a GPU's expf/logf
 * differ from the host's by an ulp or two). Also: inputs on different places are
 * LODTENSOR_INVALID_ARGUMENT. Without a usable CUDA device it prints "skipped: no CUDA device"
 * and passes. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "fixtures.h"

static double dabs(double v) { return v < 0 ? -v : v; }

static lodtensor_place_t gpu(void) { return fx_place(LODTENSOR_DEVICE_CUDA, 0); }

/* A host copy of a device tensor, after checking that it is on cuda:0. */
static lodtensor_t *to_host(const lodtensor_t *t) {
    lodtensor_t *h = NULL;
    lodtensor_place_t p;
    if (!CHECK_OK(lodtensor_place(t, &p))) return NULL;
    CHECK(p.device_type == LODTENSOR_DEVICE_CUDA && p.device_id == 0);
    if (!CHECK_OK(lodtensor_to_place(t, fx_cpu(), &h))) return NULL;
    return h;
}

static lodtensor_t *to_gpu(const lodtensor_t *t) {
    lodtensor_t *d = NULL;
    if (!CHECK_OK(lodtensor_to_place(t, gpu(), &d))) return NULL;
    return d;
}

/* `got` (on cuda:0) and `want` (host) have equal dims, dtype, LoD and bytes; with tol > 0 the
 * elements (float32) may differ by tol relative to max(|want|, 1). Destroys `got`. */
static void check_same(lodtensor_t *got, const lodtensor_t *want, double tol) {
    lodtensor_t *h = to_host(got);
    size_t nw = 0, nh = 0, i;
    lodtensor_destroy(got);
    if (h == NULL) return;
    CHECK_OK(lodtensor_nbytes(want, &nw));
    CHECK_OK(lodtensor_nbytes(h, &nh));
    fx_same_layout(h, want);
    if (CHECK_EQ_SIZE(nh, nw) && nw > 0) {
        const void *a = fx_data(want), *b = fx_data(h);
        if (tol == 0) {
            CHECK(memcmp(a, b, nw) == 0);
        } else {
            const float *fa = (const float *)a, *fb = (const float *)b;
            for (i = 0; i < nw / sizeof(float); ++i) {
                double w = fa[i], g = fb[i], scale = dabs(w) > 1 ? dabs(w) : 1;
                if (!CHECK(dabs(w - g) <= tol * scale)) {
                    fprintf(stderr, "element %zu: host %g, device %g\n", i, w, g);
                    break;
                }
            }
        }
    }
    lodtensor_destroy(h);
}

/* x: float32 [12, 3] with the LoD [0, 4, 4, 9, 12] (an empty sequence), values fx_value with
 * some negatives so that max and min differ from first and last. */
static lodtensor_t *make_x(void) {
    static const size_t offsets[] = {0, 4, 4, 9, 12};
    float data[36];
    int64_t dims[2] = {12, 3};
    size_t i;
    for (i = 0; i < 36; ++i) data[i] = (float)((int)(i * 7 % 11) - 5) * 0.5f;
    return fx_make_lod1(fx_f32(), dims, 2, data, sizeof data, offsets, 5);
}

static void test_pad_unpad(const lodtensor_t *x, const lodtensor_t *xd) {
    float pv = -1.0f;
    int64_t one = 1;
    lodtensor_t *pad = fx_make_lod1(fx_f32(), &one, 1, &pv, sizeof pv, NULL, 0), *padd = NULL;
    lodtensor_t *want = NULL, *want_len = NULL, *got = NULL, *got_len = NULL, *want_x = NULL, *got_x = NULL;
    if (pad == NULL || (padd = to_gpu(pad)) == NULL) goto done;
    if (!CHECK_OK(sequence_pad(x, pad, 7, &want, &want_len))) goto done;
    if (!CHECK_OK(sequence_pad(xd, padd, 7, &got, &got_len))) goto done;
    if (CHECK_OK(sequence_unpad(want, want_len, &want_x)) && CHECK_OK(sequence_unpad(got, got_len, &got_x))) {
        check_same(got_x, want_x, 0);
        got_x = NULL;
    }
    check_same(got, want, 0);
    check_same(got_len, want_len, 0);
    got = got_len = NULL;
    /* Mixed places: x on cuda:0, pad_value on the host. */
    CHECK_STATUS_MSG(sequence_pad(xd, pad, -1, &got, &got_len), LODTENSOR_INVALID_ARGUMENT, "pad_value");
done:
    lodtensor_destroy(pad);
    lodtensor_destroy(padd);
    lodtensor_destroy(want);
    lodtensor_destroy(want_len);
    lodtensor_destroy(want_x);
    lodtensor_destroy(got_x);
}

static void test_pool(const lodtensor_t *x, const lodtensor_t *xd) {
    int32_t pool;
    lodtensor_t *want = NULL, *got = NULL, *want_idx = NULL, *got_idx = NULL;
    for (pool = LODTENSOR_POOL_SUM; pool <= LODTENSOR_POOL_LAST; ++pool) {
        if (!CHECK_OK(sequence_pool(x, pool, 2.5, &want, &want_idx))) continue;
        if (CHECK_OK(sequence_pool(xd, pool, 2.5, &got, &got_idx))) {
            check_same(got, want, 0);
            CHECK((want_idx == NULL) == (got_idx == NULL));
            if (got_idx != NULL && want_idx != NULL) check_same(got_idx, want_idx, 0);
            else lodtensor_destroy(got_idx);
        }
        lodtensor_destroy(want);
        lodtensor_destroy(want_idx);
        want = got = want_idx = got_idx = NULL;
    }
    if (CHECK_OK(sequence_first_step(x, &want)) && CHECK_OK(sequence_first_step(xd, &got))) check_same(got, want, 0);
    lodtensor_destroy(want);
    want = NULL;
    if (CHECK_OK(sequence_last_step(x, &want)) && CHECK_OK(sequence_last_step(xd, &got))) check_same(got, want, 0);
    lodtensor_destroy(want);
}

static void test_softmax(void) {
    static const size_t offsets[] = {0, 3, 3, 40, 41};
    float data[41];
    int64_t dims[2] = {41, 1};
    size_t i;
    lodtensor_t *x, *xd = NULL, *want = NULL, *got = NULL;
    for (i = 0; i < 41; ++i) data[i] = (float)((int)(i * 13 % 17) - 8) * 0.75f;
    x = fx_make_lod1(fx_f32(), dims, 2, data, sizeof data, offsets, 5);
    if (x == NULL || (xd = to_gpu(x)) == NULL) goto done;
    if (CHECK_OK(sequence_softmax(x, &want)) && CHECK_OK(sequence_softmax(xd, &got))) check_same(got, want, 1e-5);
    lodtensor_destroy(want);
    want = NULL;
    if (CHECK_OK(lodtensor_log_softmax(x, &want)) && CHECK_OK(lodtensor_log_softmax(xd, &got))) {
        check_same(got, want, 1e-5);
    }
done:
    lodtensor_destroy(want);
    lodtensor_destroy(x);
    lodtensor_destroy(xd);
}

static void test_cast(const lodtensor_t *x, const lodtensor_t *xd) {
    static const uint8_t to[][2] = {
        {LODTENSOR_DTYPE_CODE_BOOL, 8}, {LODTENSOR_DTYPE_CODE_UINT, 8}, {LODTENSOR_DTYPE_CODE_INT, 8},
        {LODTENSOR_DTYPE_CODE_INT, 16}, {LODTENSOR_DTYPE_CODE_INT, 32}, {LODTENSOR_DTYPE_CODE_INT, 64},
        {LODTENSOR_DTYPE_CODE_FLOAT, 16}, {LODTENSOR_DTYPE_CODE_BFLOAT, 16}, {LODTENSOR_DTYPE_CODE_FLOAT, 32},
        {LODTENSOR_DTYPE_CODE_FLOAT, 64},
    };
    size_t i;
    for (i = 0; i < sizeof to / sizeof to[0]; ++i) {
        lodtensor_t *want = NULL, *got = NULL;
        lodtensor_dtype_t dt = fx_dtype(to[i][0], to[i][1]);
        if (CHECK_OK(lodtensor_cast(x, dt, &want)) && CHECK_OK(lodtensor_cast(xd, dt, &got))) check_same(got, want, 0);
        lodtensor_destroy(want);
    }
}

int main(void) {
    lodtensor_t *x, *xd;
    if (!fx_cuda_usable()) {
        printf("skipped: no CUDA device\n");
        return CHECK_RETURN();
    }
    x = make_x();
    xd = x ? to_gpu(x) : NULL;
    if (xd != NULL) {
        test_pad_unpad(x, xd);
        test_pool(x, xd);
        test_cast(x, xd);
    }
    test_softmax();
    lodtensor_destroy(x);
    lodtensor_destroy(xd);
    return CHECK_RETURN();
}
