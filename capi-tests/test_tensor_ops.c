/* test_tensor_ops: lodtensor_fill, lodtensor_cast, lodtensor_gather_rows, lodtensor_log_softmax:
 * values, LoD handling, and every documented failure with outputs left untouched. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* |v| without libm (the tests link only the library and threads). */
static double absd(double v) { return v < 0 ? -v : v; }

static lodtensor_dtype_t fx_f64(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 64); }
static lodtensor_dtype_t fx_f16(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 16); }

static void test_fill(void) {
    static const int64_t dims[2] = {2, 3}, bad_dims[2] = {2, -1}, huge[2] = {INT64_MAX, 4}, ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    lodtensor_t *out = NULL;
    lodtensor_dtype_t dt = fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 32);
    size_t i, n = 0, levels = 9;
    if (CHECK_OK(lodtensor_fill(fx_f32(), dims, 2, 1.5, &out))) {
        const float *v = (const float *)fx_data(out);
        CHECK_OK(lodtensor_numel(out, &n));
        CHECK_EQ_SIZE(n, 6);
        for (i = 0; i < 6; ++i) {
            CHECK(v[i] == 1.5f);
        }
        CHECK_OK(lodtensor_lod_num_levels(out, &levels));
        CHECK_EQ_SIZE(levels, 0);
        CHECK_OK(lodtensor_dtype(out, &dt));
        CHECK(dt.code == LODTENSOR_DTYPE_CODE_FLOAT && dt.bits == 32);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (CHECK_OK(lodtensor_fill(fx_i64(), dims, 2, -7.0, &out))) {
        CHECK(((const int64_t *)fx_data(out))[5] == -7);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (CHECK_OK(lodtensor_fill(fx_bool(), dims, 1, 1.0, &out))) {
        CHECK(((const uint8_t *)fx_data(out))[1] == 1);
        lodtensor_destroy(out);
        out = NULL;
    }
    if (CHECK_OK(lodtensor_fill(fx_u8(), NULL, 0, 255.0, &out))) { /* 0-d: one element */
        CHECK(((const uint8_t *)fx_data(out))[0] == 255);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_fill(fx_f32(), dims, 2, 1.0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_fill(fx_f32(), NULL, 2, 1.0, &out), LODTENSOR_NULL_ARGUMENT, "dims");
    CHECK_STATUS_MSG(lodtensor_fill(fx_f32(), ten, 10, 1.0, &out), LODTENSOR_INVALID_ARGUMENT, "dims");
    CHECK_STATUS_MSG(lodtensor_fill(fx_f32(), bad_dims, 2, 1.0, &out), LODTENSOR_INVALID_ARGUMENT, "dims[1]");
    CHECK_STATUS_MSG(lodtensor_fill(fx_i32(), dims, 2, 2.5, &out), LODTENSOR_INVALID_ARGUMENT, "value");
    CHECK_STATUS_MSG(lodtensor_fill(fx_u8(), dims, 2, 256.0, &out), LODTENSOR_INVALID_ARGUMENT, "value");
    CHECK_STATUS_MSG(lodtensor_fill(fx_i64(), dims, 2, 9223372036854775808.0, &out), LODTENSOR_INVALID_ARGUMENT,
                     "value");
    CHECK_STATUS_MSG(lodtensor_fill(fx_i32(), dims, 2, NAN, &out), LODTENSOR_INVALID_ARGUMENT, "value");
    CHECK_STATUS_MSG(lodtensor_fill(fx_bool(), dims, 2, 2.0, &out), LODTENSOR_INVALID_ARGUMENT, "bool");
    CHECK_STATUS_MSG(lodtensor_fill(fx_f16(), dims, 2, 1e6, &out), LODTENSOR_INVALID_ARGUMENT, "overflows");
    CHECK_STATUS_MSG(lodtensor_fill(fx_f32(), huge, 2, 1.0, &out), LODTENSOR_OUT_OF_MEMORY, "dims");
    CHECK_STATUS_MSG(lodtensor_fill(fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 8), dims, 2, 1.0, &out),
                     LODTENSOR_UNSUPPORTED, "dtype");
    CHECK_EQ_PTR(out, fx_sentinel());
}

static void test_cast(void) {
    static const float x[6] = {2.9f, -2.9f, 300.0f, -1.0f, 0.0f, 1e10f};
    static const int64_t dims[2] = {3, 2};
    static const size_t lod[3] = {0, 1, 3};
    lodtensor_t *t = fx_make_lod1(fx_f32(), dims, 2, x, sizeof x, lod, 3);
    lodtensor_t *out = NULL, *back = NULL, *u8 = NULL;
    if (t && CHECK_OK(lodtensor_cast(t, fx_i32(), &out))) {
        static const int32_t want[6] = {2, -2, 300, -1, 0, INT32_MAX};
        CHECK(memcmp(fx_data(out), want, sizeof want) == 0);
        CHECK_OFFSETS(out, 0, lod, 3);
        /* int32 -> uint8 wraps: 300 -> 44, -1 -> 255. */
        if (CHECK_OK(lodtensor_cast(out, fx_u8(), &u8))) {
            static const uint8_t want8[6] = {2, 254, 44, 255, 0, 255};
            CHECK(memcmp(fx_data(u8), want8, sizeof want8) == 0);
            lodtensor_destroy(u8);
        }
        lodtensor_destroy(out);
        out = NULL;
    }
    if (t && CHECK_OK(lodtensor_cast(t, fx_bool(), &out))) {
        static const uint8_t want[6] = {1, 1, 1, 1, 0, 1};
        CHECK(memcmp(fx_data(out), want, sizeof want) == 0);
        if (CHECK_OK(lodtensor_cast(out, fx_f64(), &back))) {
            static const double wantd[6] = {1, 1, 1, 1, 0, 1};
            CHECK(memcmp(fx_data(back), wantd, sizeof wantd) == 0);
            lodtensor_destroy(back);
            back = NULL;
        }
        lodtensor_destroy(out);
        out = NULL;
    }
    /* float32 -> float16 -> float32: 2.9 becomes the nearest half, 300 and 0 stay, 1e10 overflows. */
    if (t && CHECK_OK(lodtensor_cast(t, fx_f16(), &out)) && CHECK_OK(lodtensor_cast(out, fx_f32(), &back))) {
        const float *v = (const float *)fx_data(back);
        CHECK(v[0] == 2.900390625f && v[2] == 300.0f && v[4] == 0.0f && isinf(v[5]));
    }
    lodtensor_destroy(out);
    lodtensor_destroy(back);
    out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_cast(NULL, fx_i32(), &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(lodtensor_cast(t, fx_i32(), NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_cast(t, fx_dtype(LODTENSOR_DTYPE_CODE_UINT, 16), &out), LODTENSOR_UNSUPPORTED, "dtype");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
}

static void test_gather_rows(void) {
    static const float x[8] = {0, 1, 10, 11, 20, 21, 30, 31};
    static const int64_t dims[2] = {4, 2}, di[1] = {5}, d12[2] = {1, 2}, d1[1] = {1};
    static const size_t lod[3] = {0, 1, 4};
    static const int64_t idx[5] = {3, 0, 1, 2, 2}, bad[2] = {0, 4}, neg[1] = {-1};
    static const int32_t idx32[2] = {1, 1};
    static const float fidx[1] = {0};
    lodtensor_t *t = fx_make_lod1(fx_f32(), dims, 2, x, sizeof x, lod, 3);
    lodtensor_t *scalar = fx_make_lod1(fx_f32(), NULL, 0, x, sizeof(float), NULL, 0);
    lodtensor_t *i = fx_make_lod1(fx_i64(), di, 1, idx, sizeof idx, NULL, 0);
    lodtensor_t *i32 = fx_make_lod1(fx_i32(), d12, 2, idx32, sizeof idx32, NULL, 0);
    lodtensor_t *b = fx_make_lod1(fx_i64(), d12 + 1, 1, bad, sizeof bad, NULL, 0);
    lodtensor_t *n = fx_make_lod1(fx_i64(), d1, 1, neg, sizeof neg, NULL, 0);
    lodtensor_t *f = fx_make_lod1(fx_f32(), d1, 1, fidx, sizeof fidx, NULL, 0);
    lodtensor_t *out = NULL;
    size_t levels = 9;
    if (t && i && CHECK_OK(lodtensor_gather_rows(t, i, &out))) {
        static const float want[10] = {30, 31, 0, 1, 10, 11, 20, 21, 20, 21};
        CHECK(memcmp(fx_data(out), want, sizeof want) == 0);
        CHECK_OK(lodtensor_lod_num_levels(out, &levels));
        CHECK_EQ_SIZE(levels, 0);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_gather_rows(NULL, i, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(lodtensor_gather_rows(t, NULL, &out), LODTENSOR_NULL_ARGUMENT, "index");
    CHECK_STATUS_MSG(lodtensor_gather_rows(t, i, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_gather_rows(scalar, i, &out), LODTENSOR_INVALID_ARGUMENT, "0-d");
    CHECK_STATUS_MSG(lodtensor_gather_rows(t, i32, &out), LODTENSOR_INVALID_ARGUMENT, "index");
    CHECK_STATUS_MSG(lodtensor_gather_rows(t, b, &out), LODTENSOR_OUT_OF_RANGE, "index[1] = 4");
    CHECK_STATUS_MSG(lodtensor_gather_rows(t, n, &out), LODTENSOR_OUT_OF_RANGE, "index[0] = -1");
    CHECK_STATUS_MSG(lodtensor_gather_rows(t, f, &out), LODTENSOR_UNSUPPORTED, "index");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(scalar);
    lodtensor_destroy(i);
    lodtensor_destroy(i32);
    lodtensor_destroy(b);
    lodtensor_destroy(n);
    lodtensor_destroy(f);
}

static void test_log_softmax(void) {
    static const double x[6] = {1, 2, 3, 1000, 1000, -1000};
    static const int64_t dims[2] = {2, 3};
    static const size_t lod[2] = {0, 2};
    static const int32_t ints[2] = {1, 2};
    lodtensor_t *t = fx_make_lod1(fx_f64(), dims, 2, x, sizeof x, lod, 2);
    lodtensor_t *scalar = fx_make_lod1(fx_f64(), NULL, 0, x, sizeof(double), NULL, 0);
    lodtensor_t *it = fx_make_lod1(fx_i32(), dims, 1, ints, sizeof ints, NULL, 0);
    lodtensor_t *out = NULL;
    if (t && CHECK_OK(lodtensor_log_softmax(t, &out))) {
        const double *v = (const double *)fx_data(out);
        const double lse = 3.4076059644443806, ln2 = 0.6931471805599453; /* log(e + e^2 + e^3), log(2) */
        CHECK(absd(v[0] - (1 - lse)) < 1e-12 && absd(v[2] - (3 - lse)) < 1e-12);
        CHECK(absd(v[3] + ln2) < 1e-12 && absd(v[5] - (-2000 - ln2)) < 1e-9);
        CHECK_OFFSETS(out, 0, lod, 2);
        lodtensor_destroy(out);
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_log_softmax(NULL, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(lodtensor_log_softmax(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_log_softmax(scalar, &out), LODTENSOR_INVALID_ARGUMENT, "0-d");
    CHECK_STATUS_MSG(lodtensor_log_softmax(it, &out), LODTENSOR_UNSUPPORTED, "int32");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(scalar);
    lodtensor_destroy(it);
}

int main(void) {
    test_fill();
    test_cast();
    test_gather_rows();
    test_log_softmax();
    return CHECK_RETURN();
}
