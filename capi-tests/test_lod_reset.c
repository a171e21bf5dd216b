/* test_lod_reset: lodtensor_lod_reset, Paddle's lod_reset (spec §1.11): the target from
 * target_lod, from y's int32/int64 elements, or y's whole LoD; append; zero-copy sharing with x;
 * every documented failure and "outputs are written only on success". The data cases follow
 * Paddle's test_lod_reset_op.py (x of 10 rows with lengths [[3,2,5]]). */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define SENTINEL_SIZE ((size_t)0x5EED5EED)
#define WIDTH 2

static const size_t x_sizes[1] = {3}, x_lengths[3] = {3, 2, 5}; /* offsets [[0,3,5,10]] */
static const size_t x_offsets[4] = {0, 3, 5, 10};

static int32_t make_x(lodtensor_t **out) {
    return fx_make_f32(10, WIDTH, LODTENSOR_LOD_LENGTHS, x_sizes, 1, x_lengths, 3, out);
}

/* A 1-d int32 or int64 tensor holding `values` (no LoD). */
static int32_t make_ints(lodtensor_dtype_t dt, const int64_t *values, size_t n, lodtensor_t **out) {
    int64_t dims[1];
    int32_t v32[16];
    size_t i;
    dims[0] = (int64_t)n;
    if (dt.bits == 32) {
        for (i = 0; i < n; ++i) {
            v32[i] = (int32_t)values[i];
        }
        return lodtensor_create(dt, dims, 1, v32, n * 4, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, out);
    }
    return lodtensor_create(dt, dims, 1, values, n * 8, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, out);
}

/* out shares x's memory: the same first address, the same rows, and a write through out is seen
 * through x. x keeps its own LoD. */
static void check_shares_x(lodtensor_t *out, const lodtensor_t *x) {
    const void *a = NULL, *b = NULL;
    void *rw = NULL;
    CHECK_OK(lodtensor_data(out, &a));
    CHECK_OK(lodtensor_data(x, &b));
    CHECK_EQ_PTR(a, b);
    CHECK_ROWS(out, 0, 10, WIDTH);
    CHECK_OK(lodtensor_data_mut(out, &rw));
    ((float *)rw)[3] = -5.0f;
    CHECK(((const float *)b)[3] == -5.0f);
    ((float *)rw)[3] = fx_value(1, 1);
    CHECK_EQ_SIZE(fx_levels(x), 1);
    CHECK_OFFSETS(x, 0, x_offsets, 4);
}

static void test_target_lod(void) {
    /* test_lod_reset_op.py: target_offset_lod [0, 7, 10] -> Out LoD [[0, 7, 10]]. */
    static const int64_t target[3] = {0, 7, 10};
    static const size_t want[3] = {0, 7, 10};
    lodtensor_t *x = NULL, *out = NULL;
    if (!CHECK_OK(make_x(&x))) {
        return;
    }
    if (CHECK_OK(lodtensor_lod_reset(x, NULL, target, 3, false, &out))) {
        CHECK_EQ_SIZE(fx_levels(out), 1);
        CHECK_OFFSETS(out, 0, want, 3);
        check_shares_x(out, x);
        lodtensor_destroy(out);
    }
    lodtensor_destroy(x);
}

static void test_target_from_y_elements(void) {
    /* test_lod_reset_op.py (TestLodResetOpByInput): y's data [0, 4, 7, 10] -> [[0, 4, 7, 10]]. */
    static const int64_t target[4] = {0, 4, 7, 10};
    static const size_t want[4] = {0, 4, 7, 10};
    static const int64_t ignored[2] = {0, 10};
    lodtensor_t *x = NULL, *y32 = NULL, *y64 = NULL, *out = NULL;
    if (!CHECK_OK(make_x(&x)) || !CHECK_OK(make_ints(fx_i32(), target, 4, &y32)) ||
        !CHECK_OK(make_ints(fx_i64(), target, 4, &y64))) {
        goto done;
    }
    if (CHECK_OK(lodtensor_lod_reset(x, y32, NULL, 0, false, &out))) {
        CHECK_EQ_SIZE(fx_levels(out), 1);
        CHECK_OFFSETS(out, 0, want, 4);
        check_shares_x(out, x);
        lodtensor_destroy(out);
        out = NULL;
    }
    /* int64 too; and target_lod is ignored when y is given. */
    if (CHECK_OK(lodtensor_lod_reset(x, y64, ignored, 2, false, &out))) {
        CHECK_EQ_SIZE(fx_levels(out), 1);
        CHECK_OFFSETS(out, 0, want, 4);
        lodtensor_destroy(out);
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(y32);
    lodtensor_destroy(y64);
}

static void test_target_is_y_lod(void) {
    /* test_lod_reset_op.py (TestLodResetOpByInputWithLod): y has LoD lengths [[2,3,5]] -> Out gets
     * y's LoD [[0,2,5,10]], whatever y's dtype and elements; a 2-level LoD is taken whole. */
    static const size_t y_sizes[1] = {3}, y_lengths[3] = {2, 3, 5}, want[4] = {0, 2, 5, 10};
    static const size_t y2_sizes[2] = {3, 3}, y2_offsets[6] = {0, 1, 2, 0, 4, 10};
    static const int64_t ignored[3] = {0, 1, 10};
    lodtensor_t *x = NULL, *y = NULL, *y2 = NULL, *out = NULL;
    if (!CHECK_OK(make_x(&x)) || !CHECK_OK(fx_make_f32(10, 1, LODTENSOR_LOD_LENGTHS, y_sizes, 1, y_lengths, 3, &y)) ||
        !CHECK_OK(fx_make_f32(10, 3, LODTENSOR_LOD_OFFSETS, y2_sizes, 2, y2_offsets, 6, &y2))) {
        goto done;
    }
    if (CHECK_OK(lodtensor_lod_reset(x, y, ignored, 3, false, &out))) {
        CHECK_EQ_SIZE(fx_levels(out), 1);
        CHECK_OFFSETS(out, 0, want, 4);
        check_shares_x(out, x);
        lodtensor_destroy(out);
        out = NULL;
    }
    /* With append the result is still exactly y's LoD. */
    if (CHECK_OK(lodtensor_lod_reset(x, y2, NULL, 0, true, &out))) {
        CHECK_EQ_SIZE(fx_levels(out), 2);
        CHECK_OFFSETS(out, 0, y2_offsets, 3);
        CHECK_OFFSETS(out, 1, y2_offsets + 3, 3);
        lodtensor_destroy(out);
    }
done:
    lodtensor_destroy(x);
    lodtensor_destroy(y);
    lodtensor_destroy(y2);
}

static void test_append(void) {
    /* x's LoD [[0,3,5,10]] ends at 10, so an appended level must hold 10 sequences: the rows of
     * words of 1 row each. The result [[0,3,5,10],[0,1,...,10]] passes every rule. */
    int64_t every_row[11];
    size_t want1[11], i;
    static const int64_t two_level[3] = {0, 7, 10};
    lodtensor_t *x = NULL, *plain = NULL, *y = NULL, *out = NULL;
    for (i = 0; i <= 10; ++i) {
        every_row[i] = (int64_t)i;
        want1[i] = i;
    }
    if (!CHECK_OK(make_x(&x)) || !CHECK_OK(fx_make_f32(10, WIDTH, 0, NULL, 0, NULL, 0, &plain)) ||
        !CHECK_OK(make_ints(fx_i32(), every_row, 11, &y))) {
        goto done;
    }
    if (CHECK_OK(lodtensor_lod_reset(x, NULL, every_row, 11, true, &out))) {
        CHECK_EQ_SIZE(fx_levels(out), 2);
        CHECK_OFFSETS(out, 0, x_offsets, 4);
        CHECK_OFFSETS(out, 1, want1, 11);
        check_shares_x(out, x);
        lodtensor_destroy(out);
        out = NULL;
    }
    /* The same from y's elements. */
    if (CHECK_OK(lodtensor_lod_reset(x, y, NULL, 0, true, &out))) {
        CHECK_EQ_SIZE(fx_levels(out), 2);
        CHECK_OFFSETS(out, 1, want1, 11);
        lodtensor_destroy(out);
        out = NULL;
    }
    /* Appending to a tensor without LoD gives just the target. */
    if (CHECK_OK(lodtensor_lod_reset(plain, NULL, two_level, 3, true, &out))) {
        static const size_t want[3] = {0, 7, 10};
        CHECK_EQ_SIZE(fx_levels(out), 1);
        CHECK_OFFSETS(out, 0, want, 3);
        lodtensor_destroy(out);
        out = NULL;
    }
    /* Paddle does not re-validate an appended LoD; we do: [[0,3,5,10],[0,7,10]] breaks rule 4
     * (level 0 ends at 10, level 1 has 2 sequences). */
    out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, two_level, 3, true, &out), LODTENSOR_INVALID_LOD,
                     "target_lod: appended to x's LoD: LoD level 0");
    CHECK_EQ_PTR(out, fx_sentinel());
done:
    lodtensor_destroy(x);
    lodtensor_destroy(plain);
    lodtensor_destroy(y);
}

static void test_zero_rows(void) {
    static const int64_t target[2] = {0, 0};
    static const size_t want[2] = {0, 0};
    lodtensor_t *x = NULL, *out = NULL;
    if (!CHECK_OK(fx_make_f32(0, WIDTH, 0, NULL, 0, NULL, 0, &x))) {
        return;
    }
    if (CHECK_OK(lodtensor_lod_reset(x, NULL, target, 2, false, &out))) {
        CHECK_OFFSETS(out, 0, want, 2);
        lodtensor_destroy(out);
    }
    lodtensor_destroy(x);
}

static void test_failures(void) {
    static const int64_t ok_target[3] = {0, 7, 10};
    static const int64_t one[1] = {0};
    static const int64_t not_zero[3] = {1, 7, 10};
    static const int64_t decreasing[4] = {0, 7, 5, 10};
    static const int64_t negative[3] = {0, -1, 10};
    static const int64_t short_end[3] = {0, 7, 9};
    static const int64_t long_end[3] = {0, 7, 12};
    static const size_t y_sizes[1] = {3}, y_bad_end[3] = {0, 2, 9};
    lodtensor_t *x = NULL, *zero_d = NULL, *y_lod = NULL, *y_float = NULL, *y_bool = NULL, *y_i16 = NULL;
    lodtensor_t *y_bad = NULL, *y_one = NULL, *y_empty = NULL, *out;
    float v = 1.0f;
    unsigned char bools[3] = {0, 1, 1};
    int16_t i16[3] = {0, 5, 10};
    const int64_t dims3[1] = {3};
    int ok;
    ok = CHECK_OK(make_x(&x)) &&
         CHECK_OK(lodtensor_create(fx_f32(), NULL, 0, &v, sizeof v, 0, NULL, 0, NULL, 0, &zero_d)) &&
         CHECK_OK(fx_make_f32(9, 1, LODTENSOR_LOD_OFFSETS, y_sizes, 1, y_bad_end, 3, &y_lod)) &&
         CHECK_OK(fx_make_f32(3, 1, 0, NULL, 0, NULL, 0, &y_float)) &&
         CHECK_OK(lodtensor_create(fx_dtype(LODTENSOR_DTYPE_CODE_BOOL, 8), dims3, 1, bools, 3, 0, NULL, 0, NULL, 0,
                                   &y_bool)) &&
         CHECK_OK(lodtensor_create(fx_dtype(LODTENSOR_DTYPE_CODE_INT, 16), dims3, 1, i16, sizeof i16, 0, NULL, 0,
                                   NULL, 0, &y_i16)) &&
         CHECK_OK(make_ints(fx_i32(), decreasing, 4, &y_bad)) && CHECK_OK(make_ints(fx_i64(), one, 1, &y_one)) &&
         CHECK_OK(make_ints(fx_i32(), one, 0, &y_empty));
    if (ok) {
        out = fx_sentinel();
        /* NULL arguments; NULL target_lod is fine with length 0 (then the target is empty). */
        CHECK_STATUS_MSG(lodtensor_lod_reset(NULL, NULL, ok_target, 3, false, &out), LODTENSOR_NULL_ARGUMENT, "x");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, ok_target, 3, false, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, NULL, 3, false, &out), LODTENSOR_NULL_ARGUMENT, "target_lod");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, NULL, 0, false, &out), LODTENSOR_INVALID_LOD, "target_lod");
        /* 0-d x. */
        CHECK_STATUS_MSG(lodtensor_lod_reset(zero_d, NULL, ok_target, 3, false, &out), LODTENSOR_INVALID_ARGUMENT,
                         "0-d");
        /* Every rule of the target level, from target_lod. */
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, one, 1, false, &out), LODTENSOR_INVALID_LOD, "at least 2");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, not_zero, 3, false, &out), LODTENSOR_INVALID_LOD, "start");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, decreasing, 4, false, &out), LODTENSOR_INVALID_LOD,
                         "non-decreasing");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, negative, 3, false, &out), LODTENSOR_INVALID_LOD,
                         "non-decreasing");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, short_end, 3, false, &out), LODTENSOR_INVALID_LOD, "rows");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, long_end, 3, false, &out), LODTENSOR_INVALID_LOD, "rows");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, NULL, short_end, 3, true, &out), LODTENSOR_INVALID_LOD, "rows");
        /* ... and from y. */
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, y_bad, NULL, 0, false, &out), LODTENSOR_INVALID_LOD, "y");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, y_one, NULL, 0, false, &out), LODTENSOR_INVALID_LOD, "y");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, y_empty, NULL, 0, false, &out), LODTENSOR_INVALID_LOD, "y");
        /* y's LoD must end at x's rows (9 != 10). */
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, y_lod, NULL, 0, false, &out), LODTENSOR_INVALID_LOD, "y");
        /* y without LoD must be int32 or int64. */
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, y_float, NULL, 0, false, &out), LODTENSOR_UNSUPPORTED, "y");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, y_bool, NULL, 0, false, &out), LODTENSOR_UNSUPPORTED, "y");
        CHECK_STATUS_MSG(lodtensor_lod_reset(x, y_i16, NULL, 0, false, &out), LODTENSOR_UNSUPPORTED, "y");
        CHECK_EQ_PTR(out, fx_sentinel());
        /* x is unchanged by all of this. */
        CHECK_OFFSETS(x, 0, x_offsets, 4);
        CHECK_ROWS(x, 0, 10, WIDTH);
    }
    lodtensor_destroy(x);
    lodtensor_destroy(zero_d);
    lodtensor_destroy(y_lod);
    lodtensor_destroy(y_float);
    lodtensor_destroy(y_bool);
    lodtensor_destroy(y_i16);
    lodtensor_destroy(y_bad);
    lodtensor_destroy(y_one);
    lodtensor_destroy(y_empty);
}

int main(void) {
    test_target_lod();
    test_target_from_y_elements();
    test_target_is_y_lod();
    test_append();
    test_zero_rows();
    test_failures();
    return CHECK_RETURN();
}
