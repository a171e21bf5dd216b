/* test_fill_on: lodtensor_fill_on, a tensor of one value made directly on a place. On the CPU it
 * equals lodtensor_fill; every documented status comes back (NULL arguments, bad places, bad
 * dims, values a dtype cannot hold, unknown dtypes, a CUDA place where CUDA cannot be used). When
 * a CUDA device is usable, tensors filled on cuda:0 (and cuda:1 where there is one) come back
 * with lodtensor_to_place equal to the host fill for every dtype; otherwise that part says it
 * was skipped. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static const lodtensor_dtype_t DTYPES[10] = {
    {LODTENSOR_DTYPE_CODE_BOOL, 8, 1}, {LODTENSOR_DTYPE_CODE_UINT, 8, 1},   {LODTENSOR_DTYPE_CODE_INT, 8, 1},
    {LODTENSOR_DTYPE_CODE_INT, 16, 1}, {LODTENSOR_DTYPE_CODE_INT, 32, 1},   {LODTENSOR_DTYPE_CODE_INT, 64, 1},
    {LODTENSOR_DTYPE_CODE_FLOAT, 16, 1}, {LODTENSOR_DTYPE_CODE_BFLOAT, 16, 1}, {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1},
    {LODTENSOR_DTYPE_CODE_FLOAT, 64, 1}};

/* A value every dtype holds exactly or after rounding: 1 (bool), 5 (integers), -0.3 (floats). */
static double value_for(lodtensor_dtype_t d) {
    if (d.code == LODTENSOR_DTYPE_CODE_BOOL) return 1.0;
    if (d.code == LODTENSOR_DTYPE_CODE_FLOAT || d.code == LODTENSOR_DTYPE_CODE_BFLOAT) return -0.3;
    return 5.0;
}

/* `t` is a host tensor of `dims` whose elements are `n` copies of the one element of `one`. */
static int same_fill(const lodtensor_t *t, const lodtensor_t *one, const int64_t *dims, size_t ndim, size_t n) {
    int64_t got[LODTENSOR_MAX_DIMS];
    size_t gn = 0, nbytes = 0, elem = 0, i;
    const unsigned char *data, *e;
    int ok = CHECK_OK(lodtensor_dims(t, got, LODTENSOR_MAX_DIMS, &gn)) && CHECK_EQ_SIZE(gn, ndim) &&
             CHECK(ndim == 0 || memcmp(got, dims, ndim * sizeof(int64_t)) == 0);
    ok = ok && CHECK_OK(lodtensor_nbytes(t, &nbytes)) && CHECK_OK(lodtensor_nbytes(one, &elem)) &&
         CHECK_EQ_SIZE(nbytes, n * elem) && CHECK_EQ_SIZE(fx_levels(t), 0);
    if (!ok) return 0;
    data = (const unsigned char *)fx_data(t);
    e = (const unsigned char *)fx_data(one);
    for (i = 0; i < n; ++i) {
        if (!CHECK(memcmp(data + i * elem, e, elem) == 0)) return 0;
    }
    return 1;
}

static void test_host(void) {
    const int64_t dims[2] = {3, 7};
    size_t i;
    for (i = 0; i < 10; ++i) {
        lodtensor_t *got = NULL, *one = NULL;
        const int64_t one_dim = 1;
        lodtensor_place_t p;
        lodtensor_dtype_t d;
        double v = value_for(DTYPES[i]);
        if (!CHECK_OK(lodtensor_fill_on(fx_cpu(), DTYPES[i], dims, 2, v, &got))) continue;
        CHECK_OK(lodtensor_fill(DTYPES[i], &one_dim, 1, v, &one));
        CHECK_OK(lodtensor_place(got, &p));
        CHECK_EQ_INT(p.device_type, LODTENSOR_DEVICE_CPU);
        CHECK_OK(lodtensor_dtype(got, &d));
        CHECK(d.code == DTYPES[i].code && d.bits == DTYPES[i].bits);
        same_fill(got, one, dims, 2, 21);
        lodtensor_destroy(got);
        lodtensor_destroy(one);
    }
    {
        /* A 0-d tensor (dims NULL) and a tensor without elements. */
        lodtensor_t *t = NULL, *one = NULL;
        const int64_t empty[3] = {2, 0, 4}, one_dim = 1;
        CHECK_OK(lodtensor_fill(DTYPES[8], &one_dim, 1, 2.5, &one));
        if (CHECK_OK(lodtensor_fill_on(fx_cpu(), DTYPES[8], NULL, 0, 2.5, &t))) {
            same_fill(t, one, NULL, 0, 1);
            lodtensor_destroy(t);
        }
        if (CHECK_OK(lodtensor_fill_on(fx_cpu(), DTYPES[8], empty, 3, 2.5, &t))) {
            same_fill(t, one, empty, 3, 0);
            lodtensor_destroy(t);
        }
        lodtensor_destroy(one);
    }
}

static void test_statuses(void) {
    const int64_t dims[2] = {2, 3}, negative[2] = {2, -1}, ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const lodtensor_dtype_t f32 = fx_f32(), unknown = fx_dtype(9, 32), f16 = fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 16);
    lodtensor_t *out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), f32, dims, 2, 1.0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), f32, NULL, 2, 1.0, &out), LODTENSOR_NULL_ARGUMENT, "dims");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_place(3, 0), f32, dims, 2, 1.0, &out), LODTENSOR_INVALID_ARGUMENT,
                     "device_type");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CPU, 1), f32, dims, 2, 1.0, &out),
                     LODTENSOR_INVALID_ARGUMENT, "device_id");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CUDA, -1), f32, dims, 2, 1.0, &out),
                     LODTENSOR_INVALID_ARGUMENT, "device_id");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), f32, negative, 2, 1.0, &out), LODTENSOR_INVALID_ARGUMENT,
                     "dims[1]");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), f32, ten, 10, 1.0, &out), LODTENSOR_INVALID_ARGUMENT, "dim");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), fx_i32(), dims, 2, 0.5, &out), LODTENSOR_INVALID_ARGUMENT, "value");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), fx_u8(), dims, 2, 256.0, &out), LODTENSOR_INVALID_ARGUMENT, "value");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), fx_bool(), dims, 2, 2.0, &out), LODTENSOR_INVALID_ARGUMENT, "value");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), f16, dims, 2, 1e5, &out), LODTENSOR_INVALID_ARGUMENT, "value");
    CHECK_STATUS_MSG(lodtensor_fill_on(fx_cpu(), unknown, dims, 2, 1.0, &out), LODTENSOR_UNSUPPORTED, "dtype");
    if (fx_cuda_usable()) {
        size_t n = 0;
        CHECK_OK(lodtensor_cuda_device_count(&n));
        CHECK_STATUS_MSG(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CUDA, (int32_t)n), f32, dims, 2, 1.0, &out),
                         LODTENSOR_INVALID_ARGUMENT, "cuda:");
        CHECK_STATUS_MSG(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CUDA, 0), fx_i32(), dims, 2, 0.5, &out),
                         LODTENSOR_INVALID_ARGUMENT, "value");
    } else {
        CHECK_STATUS_MSG(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CUDA, 0), f32, dims, 2, 1.0, &out),
                         LODTENSOR_UNSUPPORTED, "cuda:0");
    }
    CHECK(out == fx_sentinel());
}

static void test_on_cuda(void) {
    /* Element counts whose byte sizes are multiples of 8, 4, 2 or only 1, and none. */
    static const int64_t shapes[5][2] = {{1, 1}, {3, 1}, {5, 7}, {0, 9}, {64, 33}};
    size_t devices = 0, dev, i, s;
    if (!fx_cuda_usable()) {
        printf("test_fill_on: CUDA part skipped: no CUDA device\n");
        return;
    }
    CHECK_OK(lodtensor_cuda_device_count(&devices));
    if (devices > 2) devices = 2;
    for (dev = 0; dev < devices; ++dev) {
        for (i = 0; i < 10; ++i) {
            for (s = 0; s < 5; ++s) {
                lodtensor_t *got = NULL, *host = NULL, *one = NULL;
                const int64_t one_dim = 1;
                lodtensor_place_t p;
                double v = value_for(DTYPES[i]);
                if (!CHECK_OK(lodtensor_fill_on(fx_place(LODTENSOR_DEVICE_CUDA, (int32_t)dev), DTYPES[i], shapes[s], 2,
                                                v, &got)))
                    continue;
                CHECK_OK(lodtensor_place(got, &p));
                CHECK(p.device_type == LODTENSOR_DEVICE_CUDA && p.device_id == (int32_t)dev);
                CHECK_OK(lodtensor_fill(DTYPES[i], &one_dim, 1, v, &one));
                if (CHECK_OK(lodtensor_to_place(got, fx_cpu(), &host))) {
                    same_fill(host, one, shapes[s], 2, (size_t)(shapes[s][0] * shapes[s][1]));
                }
                lodtensor_destroy(host);
                lodtensor_destroy(one);
                lodtensor_destroy(got);
            }
        }
    }
}

int main(void) {
    test_host();
    test_statuses();
    test_on_cuda();
    return CHECK_RETURN();
}
