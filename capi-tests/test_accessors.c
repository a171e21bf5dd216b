/* test_accessors: the read accessors of a handle (dtype, place, ndim, dims, numel, nbytes, data,
 * data_mut): their values, the copy-out convention of lodtensor_dims (NULL buffer = length query,
 * BUFFER_TOO_SMALL), NULL_ARGUMENT for every pointer argument, and outputs left untouched on
 * failure. */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define SENTINEL_SIZE ((size_t)0x5EED5EED)

static void test_values(void) {
    /* int16 [2, 3, 4] made from 24 known values. */
    const int64_t dims[3] = {2, 3, 4};
    int16_t values[24];
    lodtensor_t *t = NULL;
    lodtensor_dtype_t dt;
    lodtensor_place_t place;
    size_t n = 0, i;
    int64_t got[LODTENSOR_MAX_DIMS];
    const void *ro = NULL;
    void *rw = NULL;
    for (i = 0; i < 24; ++i) {
        values[i] = (int16_t)(1000 - 37 * (int)i);
    }
    if (!CHECK_OK(lodtensor_create(fx_dtype(LODTENSOR_DTYPE_CODE_INT, 16), dims, 3, values, sizeof values,
                                   LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        return;
    }
    CHECK_OK(lodtensor_dtype(t, &dt));
    CHECK_EQ_INT(dt.code, LODTENSOR_DTYPE_CODE_INT);
    CHECK_EQ_INT(dt.bits, 16);
    CHECK_EQ_INT(dt.lanes, 1);
    CHECK_OK(lodtensor_place(t, &place));
    CHECK_EQ_INT(place.device_type, LODTENSOR_DEVICE_CPU);
    CHECK_EQ_INT(place.device_id, 0);
    CHECK_OK(lodtensor_ndim(t, &n));
    CHECK_EQ_SIZE(n, 3);
    CHECK_OK(lodtensor_numel(t, &n));
    CHECK_EQ_SIZE(n, 24);
    CHECK_OK(lodtensor_nbytes(t, &n));
    CHECK_EQ_SIZE(n, 48);

    /* dims: a NULL buffer asks for the length only (whatever buf_len says). */
    n = 0;
    CHECK_OK(lodtensor_dims(t, NULL, 0, &n));
    CHECK_EQ_SIZE(n, 3);
    n = 0;
    CHECK_OK(lodtensor_dims(t, NULL, 100, &n));
    CHECK_EQ_SIZE(n, 3);
    /* Exactly big enough, and bigger: only ndim values are written. */
    for (i = 0; i < LODTENSOR_MAX_DIMS; ++i) {
        got[i] = -7;
    }
    n = 0;
    CHECK_OK(lodtensor_dims(t, got, 3, &n));
    CHECK_EQ_SIZE(n, 3);
    CHECK_EQ_INT(got[0], 2);
    CHECK_EQ_INT(got[1], 3);
    CHECK_EQ_INT(got[2], 4);
    CHECK_EQ_INT(got[3], -7);
    n = 0;
    CHECK_OK(lodtensor_dims(t, got, LODTENSOR_MAX_DIMS, &n));
    CHECK_EQ_SIZE(n, 3);
    CHECK_EQ_INT(got[3], -7);
    /* Too small: BUFFER_TOO_SMALL, and neither the buffer nor *out_ndim is written. */
    for (i = 0; i < LODTENSOR_MAX_DIMS; ++i) {
        got[i] = -7;
    }
    n = SENTINEL_SIZE;
    CHECK_STATUS_MSG(lodtensor_dims(t, got, 2, &n), LODTENSOR_BUFFER_TOO_SMALL, "buf");
    CHECK_EQ_SIZE(n, SENTINEL_SIZE);
    CHECK_EQ_INT(got[0], -7);
    CHECK_EQ_INT(got[1], -7);
    CHECK_STATUS_MSG(lodtensor_dims(t, got, 0, &n), LODTENSOR_BUFFER_TOO_SMALL, "buf");
    CHECK_EQ_SIZE(n, SENTINEL_SIZE);

    /* data and data_mut: the same address; the elements are the input values. */
    CHECK_OK(lodtensor_data(t, &ro));
    CHECK_OK(lodtensor_data_mut(t, &rw));
    CHECK(ro != NULL);
    CHECK_EQ_PTR(ro, rw);
    CHECK(ro != NULL && memcmp(ro, values, sizeof values) == 0);
    CHECK((uintptr_t)ro % sizeof(int16_t) == 0);
    /* A write through data_mut is read back through data. */
    ((int16_t *)rw)[23] = 12345;
    CHECK_EQ_INT(((const int16_t *)ro)[23], 12345);
    CHECK_EQ_INT(values[23], 1000 - 37 * 23); /* the caller's input was copied, not used */
    lodtensor_destroy(t);
}

static void test_zero_d_and_empty(void) {
    lodtensor_t *t = NULL;
    double x = 2.5;
    size_t n = SENTINEL_SIZE;
    int64_t got[1] = {-7};
    const int64_t empty_dims[3] = {0, 5, 2};
    const void *ro = NULL;
    /* A 0-d tensor: ndim 0, a NULL or 0-length dims buffer is enough. */
    if (CHECK_OK(lodtensor_create(fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 64), NULL, 0, &x, sizeof x,
                                  LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        CHECK_OK(lodtensor_dims(t, NULL, 0, &n));
        CHECK_EQ_SIZE(n, 0);
        n = SENTINEL_SIZE;
        CHECK_OK(lodtensor_dims(t, got, 0, &n));
        CHECK_EQ_SIZE(n, 0);
        CHECK_EQ_INT(got[0], -7);
        CHECK_OK(lodtensor_numel(t, &n));
        CHECK_EQ_SIZE(n, 1);
        CHECK_OK(lodtensor_nbytes(t, &n));
        CHECK_EQ_SIZE(n, 8);
        CHECK_OK(lodtensor_data(t, &ro));
        CHECK(ro != NULL && *(const double *)ro == 2.5);
        lodtensor_destroy(t);
    }
    /* No elements. */
    t = NULL;
    if (CHECK_OK(lodtensor_create(fx_f32(), empty_dims, 3, NULL, 0, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        int64_t d[3] = {-1, -1, -1};
        CHECK_OK(lodtensor_dims(t, d, 3, &n));
        CHECK_EQ_SIZE(n, 3);
        CHECK_EQ_INT(d[0], 0);
        CHECK_EQ_INT(d[1], 5);
        CHECK_EQ_INT(d[2], 2);
        CHECK_OK(lodtensor_numel(t, &n));
        CHECK_EQ_SIZE(n, 0);
        CHECK_OK(lodtensor_nbytes(t, &n));
        CHECK_EQ_SIZE(n, 0);
        lodtensor_destroy(t);
    }
}

static void test_null_arguments(void) {
    lodtensor_t *t = NULL;
    lodtensor_dtype_t dt;
    lodtensor_place_t place;
    size_t n = SENTINEL_SIZE;
    int64_t buf[LODTENSOR_MAX_DIMS];
    const void *ro = (const void *)fx_sentinel();
    void *rw = (void *)fx_sentinel();
    if (!CHECK_OK(fx_make_f32(3, 2, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        return;
    }
    dt.code = 99;
    dt.bits = 99;
    dt.lanes = 99;
    place.device_type = 99;
    place.device_id = 99;

    CHECK_STATUS_MSG(lodtensor_dtype(NULL, &dt), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_dtype(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_INT(dt.code, 99);
    CHECK_EQ_INT(dt.bits, 99);
    CHECK_EQ_INT(dt.lanes, 99);

    CHECK_STATUS_MSG(lodtensor_place(NULL, &place), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_place(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_INT(place.device_type, 99);
    CHECK_EQ_INT(place.device_id, 99);

    CHECK_STATUS_MSG(lodtensor_ndim(NULL, &n), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_ndim(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_SIZE(n, SENTINEL_SIZE);

    CHECK_STATUS_MSG(lodtensor_dims(NULL, buf, LODTENSOR_MAX_DIMS, &n), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_dims(t, buf, LODTENSOR_MAX_DIMS, NULL), LODTENSOR_NULL_ARGUMENT, "out_ndim");
    CHECK_STATUS_MSG(lodtensor_dims(t, NULL, 0, NULL), LODTENSOR_NULL_ARGUMENT, "out_ndim");
    CHECK_EQ_SIZE(n, SENTINEL_SIZE);

    CHECK_STATUS_MSG(lodtensor_numel(NULL, &n), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_numel(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_SIZE(n, SENTINEL_SIZE);

    CHECK_STATUS_MSG(lodtensor_nbytes(NULL, &n), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_nbytes(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_SIZE(n, SENTINEL_SIZE);

    CHECK_STATUS_MSG(lodtensor_data(NULL, &ro), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_data(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_PTR(ro, fx_sentinel());

    CHECK_STATUS_MSG(lodtensor_data_mut(NULL, &rw), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_data_mut(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_PTR(rw, fx_sentinel());

    lodtensor_destroy(t);
}

int main(void) {
    test_values();
    test_zero_d_and_empty();
    test_null_arguments();
    return CHECK_RETURN();
}
