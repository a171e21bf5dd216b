/* test_scatter_rows: lodtensor_scatter_rows through the C API: the worked examples (derived by
 * hand in the comments), every documented status, and "outputs are written only on success". */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* t has dtype `dt` and exactly the `nbytes` bytes `want`. */
static int check_bytes(const lodtensor_t *t, const void *want, size_t nbytes, int line) {
    const void *data = NULL;
    size_t got = 0;
    if (lodtensor_data(t, &data) != LODTENSOR_OK || lodtensor_nbytes(t, &got) != LODTENSOR_OK || got != nbytes) {
        fprintf(stderr, "%s:%d: expected %zu bytes, got %zu\n", __FILE__, line, nbytes, got);
        return check_record(0);
    }
    if (nbytes && memcmp(data, want, nbytes) != 0) {
        fprintf(stderr, "%s:%d: the values differ from the expected ones\n", __FILE__, line);
        return check_record(0);
    }
    return check_record(1);
}
#define CHECK_BYTES(t, want, nbytes) check_bytes((t), (want), (nbytes), __LINE__)

static lodtensor_t *make(lodtensor_dtype_t dt, const int64_t *dims, size_t ndim, const void *data, size_t nbytes) {
    return fx_make_lod1(dt, dims, ndim, data, nbytes, NULL, 0);
}

/* Paddle's scatter doc example: x = [[1,1],[2,2],[3,3]], index = [2,1,0,1],
 * updates = [[1,1],[2,2],[3,3],[4,4]].
 * OVERWRITE: out[2] = [1,1], out[1] = [2,2], out[0] = [3,3], out[1] = [4,4] (last wins)
 *   -> [[3,3],[4,4],[1,1]].
 * ADD: out[2] = 3+1 = 4, out[1] = 2+2 = 4, out[0] = 1+3 = 4, out[1] = 4+4 = 8
 *   -> [[4,4],[8,8],[4,4]].
 * x carries the LoD [[0, 1, 3]], which the result keeps; x itself is not modified. */
static void test_doc_example(void) {
    static const int64_t xd[2] = {3, 2}, id64[1] = {4}, id32[2] = {4, 1}, ud[2] = {4, 2};
    static const float xv[6] = {1, 1, 2, 2, 3, 3}, uv[8] = {1, 1, 2, 2, 3, 3, 4, 4};
    static const float want_over[6] = {3, 3, 4, 4, 1, 1}, want_add[6] = {4, 4, 8, 8, 4, 4};
    static const int64_t iv64[4] = {2, 1, 0, 1};
    static const int32_t iv32[4] = {2, 1, 0, 1};
    static const size_t xlod[3] = {0, 1, 3};
    lodtensor_t *x = fx_make_lod1(fx_f32(), xd, 2, xv, sizeof xv, xlod, 3);
    lodtensor_t *i64 = make(fx_i64(), id64, 1, iv64, sizeof iv64);
    lodtensor_t *i32 = make(fx_i32(), id32, 2, iv32, sizeof iv32);
    lodtensor_t *u = make(fx_f32(), ud, 2, uv, sizeof uv);
    lodtensor_t *out = NULL;
    lodtensor_t *indices[2];
    size_t k;
    indices[0] = i64;
    indices[1] = i32;
    if (!x || !i64 || !i32 || !u) {
        goto done;
    }
    for (k = 0; k < 2; ++k) {
        if (CHECK_OK(lodtensor_scatter_rows(x, indices[k], u, LODTENSOR_SCATTER_OVERWRITE, &out))) {
            CHECK_BYTES(out, want_over, sizeof want_over);
            CHECK_OFFSETS(out, 0, xlod, 3);
            lodtensor_destroy(out);
            out = NULL;
        }
        if (CHECK_OK(lodtensor_scatter_rows(x, indices[k], u, LODTENSOR_SCATTER_ADD, &out))) {
            CHECK_BYTES(out, want_add, sizeof want_add);
            CHECK_OFFSETS(out, 0, xlod, 3);
            lodtensor_destroy(out);
            out = NULL;
        }
    }
    CHECK_BYTES(x, xv, sizeof xv); /* x is not modified */
done:
    lodtensor_destroy(x);
    lodtensor_destroy(i64);
    lodtensor_destroy(i32);
    lodtensor_destroy(u);
}

/* Integers wrap and a 1-d x has single-element rows: x = [250, 7] (uint8), index = [0, 0, 1],
 * updates = [3, 10, 1]. ADD: out[0] = 250+3 = 253, then 253+10 = 263 - 256 = 7; out[1] = 8.
 * OVERWRITE: out[0] = 3, then 10; out[1] = 1. bool (OVERWRITE only): the same bytes moved. */
static void test_wrap_and_bool(void) {
    static const int64_t xd[1] = {2}, idd[1] = {3}, ud[1] = {3};
    static const uint8_t xv[2] = {250, 7}, uv[3] = {3, 10, 1}, want_add[2] = {7, 8}, want_over[2] = {10, 1};
    static const uint8_t bx[2] = {0, 0}, bu[3] = {0, 1, 1}, bwant[2] = {1, 1};
    static const int64_t iv[3] = {0, 0, 1};
    lodtensor_t *x = make(fx_u8(), xd, 1, xv, sizeof xv), *u = make(fx_u8(), ud, 1, uv, sizeof uv);
    lodtensor_t *bxt = make(fx_bool(), xd, 1, bx, sizeof bx), *but = make(fx_bool(), ud, 1, bu, sizeof bu);
    lodtensor_t *idx = make(fx_i64(), idd, 1, iv, sizeof iv);
    lodtensor_t *out = fx_sentinel();
    if (!x || !u || !bxt || !but || !idx) {
        goto done;
    }
    if (CHECK_OK(lodtensor_scatter_rows(x, idx, u, LODTENSOR_SCATTER_ADD, &out))) {
        CHECK_BYTES(out, want_add, 2);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(lodtensor_scatter_rows(x, idx, u, LODTENSOR_SCATTER_OVERWRITE, &out))) {
        CHECK_BYTES(out, want_over, 2);
        lodtensor_destroy(out);
    }
    if (CHECK_OK(lodtensor_scatter_rows(bxt, idx, but, LODTENSOR_SCATTER_OVERWRITE, &out))) {
        CHECK_BYTES(out, bwant, 2);
        lodtensor_destroy(out);
    }
    /* bool cannot be added. */
    out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_scatter_rows(bxt, idx, but, LODTENSOR_SCATTER_ADD, &out), LODTENSOR_UNSUPPORTED, "bool");
    CHECK_EQ_PTR(out, fx_sentinel());
done:
    lodtensor_destroy(x);
    lodtensor_destroy(u);
    lodtensor_destroy(bxt);
    lodtensor_destroy(but);
    lodtensor_destroy(idx);
}

/* An empty index (M = 0) leaves x as it is; N = 0 with M = 0 gives an empty [0, 2] tensor. */
static void test_empty(void) {
    static const int64_t xd[2] = {2, 2}, x0d[2] = {0, 2}, idd[1] = {0}, ud[2] = {0, 2};
    static const float xv[4] = {1, 2, 3, 4};
    lodtensor_t *x = make(fx_f32(), xd, 2, xv, sizeof xv), *x0 = make(fx_f32(), x0d, 2, NULL, 0);
    lodtensor_t *idx = make(fx_i64(), idd, 1, NULL, 0), *u = make(fx_f32(), ud, 2, NULL, 0);
    lodtensor_t *out = NULL;
    int32_t modes[2];
    size_t k, numel = 99;
    modes[0] = LODTENSOR_SCATTER_OVERWRITE;
    modes[1] = LODTENSOR_SCATTER_ADD;
    if (!x || !x0 || !idx || !u) {
        goto done;
    }
    for (k = 0; k < 2; ++k) {
        if (CHECK_OK(lodtensor_scatter_rows(x, idx, u, modes[k], &out))) {
            CHECK_BYTES(out, xv, sizeof xv);
            lodtensor_destroy(out);
        }
        if (CHECK_OK(lodtensor_scatter_rows(x0, idx, u, modes[k], &out))) {
            CHECK_OK(lodtensor_numel(out, &numel));
            CHECK_EQ_SIZE(numel, 0);
            lodtensor_destroy(out);
        }
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(x0);
    lodtensor_destroy(idx);
    lodtensor_destroy(u);
}

/* Every documented failure; *out stays as it was. */
static void test_failures(void) {
    static const int64_t xd[2] = {3, 2}, idd[1] = {2}, idw[2] = {1, 2}, ud[2] = {2, 2}, ud3[2] = {3, 2};
    static const int64_t udw[2] = {2, 3}, ud1[1] = {4};
    static const float xv[6] = {0}, uv[6] = {1, 1, 1, 1, 1, 1}, fidx[2] = {0, 1};
    static const double dv[4] = {1, 1, 1, 1};
    static const int64_t good[2] = {0, 2}, big[2] = {0, 3}, neg[2] = {-1, 0};
    float scalar = 0;
    lodtensor_t *x = make(fx_f32(), xd, 2, xv, sizeof xv), *x0d = make(fx_f32(), NULL, 0, &scalar, 4);
    lodtensor_t *idx = make(fx_i64(), idd, 1, good, sizeof good), *idx_big = make(fx_i64(), idd, 1, big, sizeof big);
    lodtensor_t *idx_neg = make(fx_i64(), idd, 1, neg, sizeof neg), *idx_f = make(fx_f32(), idd, 1, fidx, sizeof fidx);
    lodtensor_t *idx_wide = make(fx_i64(), idw, 2, good, sizeof good);
    lodtensor_t *u = make(fx_f32(), ud, 2, uv, 16), *u_rows = make(fx_f32(), ud3, 2, uv, 24);
    lodtensor_t *u_wide = make(fx_f32(), udw, 2, uv, 24), *u_flat = make(fx_f32(), ud1, 1, uv, 16);
    lodtensor_t *u_f64 = make(fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 64), ud, 2, dv, sizeof dv);
    lodtensor_t *out = fx_sentinel();
    int32_t modes[2];
    size_t k;
    modes[0] = LODTENSOR_SCATTER_OVERWRITE;
    modes[1] = LODTENSOR_SCATTER_ADD;
    if (!x || !x0d || !idx || !idx_big || !idx_neg || !idx_f || !idx_wide || !u || !u_rows || !u_wide || !u_flat ||
        !u_f64) {
        goto done;
    }
    for (k = 0; k < 2; ++k) {
        int32_t m = modes[k];
        /* NULL, per pointer argument. */
        CHECK_STATUS_MSG(lodtensor_scatter_rows(NULL, idx, u, m, &out), LODTENSOR_NULL_ARGUMENT, "x");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, NULL, u, m, &out), LODTENSOR_NULL_ARGUMENT, "index");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, NULL, m, &out), LODTENSOR_NULL_ARGUMENT, "updates");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, u, m, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        /* Out of range, naming the position and the value; negative indices are errors. */
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx_big, u, m, &out), LODTENSOR_OUT_OF_RANGE, "index[1] = 3");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx_neg, u, m, &out), LODTENSOR_OUT_OF_RANGE, "index[0] = -1");
        /* 0-d x; index not [M] / [M, 1]; index not int32/int64. */
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x0d, idx, u, m, &out), LODTENSOR_INVALID_ARGUMENT, "x");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx_wide, u, m, &out), LODTENSOR_INVALID_ARGUMENT, "index");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx_f, u, m, &out), LODTENSOR_UNSUPPORTED, "index");
        /* updates: not one row per index, another row shape or rank, another dtype. */
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, u_rows, m, &out), LODTENSOR_INVALID_ARGUMENT, "updates");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, u_wide, m, &out), LODTENSOR_INVALID_ARGUMENT, "updates");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, u_flat, m, &out), LODTENSOR_INVALID_ARGUMENT, "updates");
        CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, u_f64, m, &out), LODTENSOR_INVALID_ARGUMENT, "float64");
    }
    /* A mode that is not a LODTENSOR_SCATTER_* value. */
    CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, u, 2, &out), LODTENSOR_INVALID_ARGUMENT, "mode");
    CHECK_STATUS_MSG(lodtensor_scatter_rows(x, idx, u, -1, &out), LODTENSOR_INVALID_ARGUMENT, "mode");
    CHECK_EQ_PTR(out, fx_sentinel());
    CHECK_BYTES(x, xv, sizeof xv);
    /* The good call works (and the constants have their documented values). */
    CHECK_EQ_INT(LODTENSOR_SCATTER_OVERWRITE, 0);
    CHECK_EQ_INT(LODTENSOR_SCATTER_ADD, 1);
    if (CHECK_OK(lodtensor_scatter_rows(x, idx, u, LODTENSOR_SCATTER_ADD, &out))) {
        static const float want[6] = {1, 1, 0, 0, 1, 1};
        CHECK_BYTES(out, want, sizeof want);
        lodtensor_destroy(out);
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(x0d);
    lodtensor_destroy(idx);
    lodtensor_destroy(idx_big);
    lodtensor_destroy(idx_neg);
    lodtensor_destroy(idx_f);
    lodtensor_destroy(idx_wide);
    lodtensor_destroy(u);
    lodtensor_destroy(u_rows);
    lodtensor_destroy(u_wide);
    lodtensor_destroy(u_flat);
    lodtensor_destroy(u_f64);
}

int main(void) {
    test_doc_example();
    test_wrap_and_bool();
    test_empty();
    test_failures();
    return CHECK_RETURN();
}
