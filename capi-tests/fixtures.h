/* fixtures.h: small builders and comparisons shared by the C test programs (header-only).
 *
 * The test tensors are float32 [rows, width] with element (r, c) = r * 100 + c, so a row's
 * values say which row of the original tensor it is, whatever slice or piece it is seen through.
 * Plain C11, also valid C++17. Include after check.h. */
#ifndef LODTENSOR_CAPI_TESTS_FIXTURES_H
#define LODTENSOR_CAPI_TESTS_FIXTURES_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"

static inline lodtensor_dtype_t fx_dtype(uint8_t code, uint8_t bits) {
    lodtensor_dtype_t d;
    d.code = code;
    d.bits = bits;
    d.lanes = 1;
    return d;
}

static inline lodtensor_dtype_t fx_f32(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 32); }
static inline lodtensor_dtype_t fx_i32(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_INT, 32); }
static inline lodtensor_dtype_t fx_i64(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_INT, 64); }
static inline lodtensor_dtype_t fx_bool(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_BOOL, 8); }
static inline lodtensor_dtype_t fx_u8(void) { return fx_dtype(LODTENSOR_DTYPE_CODE_UINT, 8); }

static inline lodtensor_place_t fx_place(int32_t device_type, int32_t device_id) {
    lodtensor_place_t p;
    p.device_type = device_type;
    p.device_id = device_id;
    return p;
}

static inline lodtensor_place_t fx_cpu(void) { return fx_place(LODTENSOR_DEVICE_CPU, 0); }

/* The value of element (row, col) in every fixture tensor. */
static inline float fx_value(size_t row, size_t col) { return (float)(row * 100 + col); }

/* A float32 [rows, width] host tensor with fx_value elements and the given LoD (a flat encoding as
 * in lodtensor_create). Returns the status of lodtensor_create. */
static inline int32_t fx_make_f32(size_t rows, size_t width, int32_t lod_kind, const size_t *level_sizes,
                                  size_t num_levels, const size_t *lod, size_t lod_len, lodtensor_t **out) {
    int64_t dims[2];
    size_t n = rows * width, r, c;
    float *data = n ? (float *)malloc(n * sizeof(float)) : NULL;
    int32_t status;
    if (n && data == NULL) {
        return LODTENSOR_OUT_OF_MEMORY;
    }
    for (r = 0; r < rows; ++r) {
        for (c = 0; c < width; ++c) {
            data[r * width + c] = fx_value(r, c);
        }
    }
    dims[0] = (int64_t)rows;
    dims[1] = (int64_t)width;
    status = lodtensor_create(fx_f32(), dims, 2, data, n * sizeof(float), lod_kind, level_sizes, num_levels, lod,
                              lod_len, out);
    free(data);
    return status;
}

/* Level `level` of t's LoD equals want[0..n) (offsets). */
static inline int fx_check_offsets(const lodtensor_t *t, size_t level, const size_t *want, size_t n,
                                   const char *file, int line) {
    const size_t *got = NULL;
    size_t len = 0, i;
    int32_t status = lodtensor_lod_offsets(t, level, &got, &len);
    int ok = status == LODTENSOR_OK && got != NULL && len == n;
    for (i = 0; ok && i < n; ++i) {
        ok = got[i] == want[i];
    }
    if (!ok) {
        fprintf(stderr, "%s:%d: LoD level %zu: got status %d (%s)", file, line, level, (int)status,
                lodtensor_status_str(status));
        if (status == LODTENSOR_OK) {
            fprintf(stderr, ", offsets [");
            for (i = 0; i < len; ++i) {
                fprintf(stderr, i ? ",%zu" : "%zu", got[i]);
            }
            fprintf(stderr, "]");
        } else {
            fprintf(stderr, ": %s", lodtensor_last_error_message());
        }
        fprintf(stderr, ", expected [");
        for (i = 0; i < n; ++i) {
            fprintf(stderr, i ? ",%zu" : "%zu", want[i]);
        }
        fprintf(stderr, "]\n");
    }
    return check_record(ok);
}
#define CHECK_OFFSETS(t, level, want, n) fx_check_offsets((t), (level), (want), (n), __FILE__, __LINE__)

/* t is float32 [rows, width] whose row i holds row (first_row + i) of a fixture tensor. */
static inline int fx_check_rows(const lodtensor_t *t, size_t first_row, size_t rows, size_t width,
                                const char *file, int line) {
    const void *data = NULL;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0, r, c;
    int ok = lodtensor_data(t, &data) == LODTENSOR_OK && lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim) == 0;
    ok = ok && ndim == 2 && dims[0] == (int64_t)rows && dims[1] == (int64_t)width;
    if (!ok) {
        fprintf(stderr, "%s:%d: expected a [%zu, %zu] tensor, got ndim %zu dims [%lld, %lld]\n", file, line, rows,
                width, ndim, ndim > 0 ? (long long)dims[0] : -1LL, ndim > 1 ? (long long)dims[1] : -1LL);
        return check_record(0);
    }
    for (r = 0; r < rows; ++r) {
        for (c = 0; c < width; ++c) {
            float got = ((const float *)data)[r * width + c];
            if (got != fx_value(first_row + r, c)) {
                fprintf(stderr, "%s:%d: element (%zu, %zu) is %g, expected %g (row %zu of the original)\n", file,
                        line, r, c, (double)got, (double)fx_value(first_row + r, c), first_row + r);
                return check_record(0);
            }
        }
    }
    return check_record(1);
}
#define CHECK_ROWS(t, first_row, rows, width) fx_check_rows((t), (first_row), (rows), (width), __FILE__, __LINE__)

/* Whether this build and machine can use a CUDA device: the "no CUDA" error cases only hold
 * where it cannot (a host buffer handed over as device memory proves nothing on a GPU). */
static inline int fx_cuda_usable(void) {
    size_t n = 0;
    return lodtensor_cuda_device_count(&n) == LODTENSOR_OK && n > 0;
}

/* The device part of test program `name`: `with_cuda(count)` where CUDA can be used, else
 * `without_cuda()` after saying that the device part was skipped. Under LODTENSOR_REQUIRE_GPU=1
 * (scripts/test-gpu.sh, the emulator runs) a CUDA that cannot be used is a failure instead. */
static inline void fx_with_or_without_cuda(const char *name, void (*with_cuda)(size_t count),
                                           void (*without_cuda)(void)) {
    size_t count = 0;
    if (lodtensor_cuda_device_count(&count) == LODTENSOR_OK) {
        with_cuda(count);
        return;
    }
    const char *require = getenv("LODTENSOR_REQUIRE_GPU");
    CHECK(require == NULL || strcmp(require, "1") != 0);
    printf("%s: CUDA cannot be used; the device part is skipped\n", name);
    without_cuda();
}

/* A pointer that is never a valid handle: outputs are pre-filled with it to prove that a failing
 * call leaves them alone. */
static inline lodtensor_t *fx_sentinel(void) {
    static double storage[4];
    return (lodtensor_t *)(void *)storage;
}

/* lodtensor_create with the LoD given as offsets: the raw status, for tests of failing calls. */
static inline int32_t fx_create_offsets(lodtensor_dtype_t dt, const int64_t *dims, size_t ndim, const void *data,
                                        size_t nbytes, const size_t *level_sizes, size_t num_levels,
                                        const size_t *lod, size_t lod_len, lodtensor_t **out) {
    return lodtensor_create(dt, dims, ndim, data, nbytes, LODTENSOR_LOD_OFFSETS, level_sizes, num_levels, lod, lod_len,
                            out);
}

/* A tensor with a one-level offsets LoD (none when n_offsets is 0), or NULL after a failed check. */
static inline lodtensor_t *fx_make_lod1(lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, const void *data,
                                        size_t nbytes, const size_t *offsets, size_t n_offsets) {
    lodtensor_t *t = NULL;
    size_t sizes[1];
    sizes[0] = n_offsets;
    if (!CHECK_OK(lodtensor_create(dtype, dims, ndim, data, nbytes, LODTENSOR_LOD_OFFSETS, sizes, n_offsets ? 1 : 0,
                                   offsets, n_offsets, &t))) {
        return NULL;
    }
    return t;
}

/* The number of LoD levels of t. */
static inline size_t fx_levels(const lodtensor_t *t) {
    size_t n = 99;
    CHECK_OK(lodtensor_lod_num_levels(t, &n));
    return n;
}

/* The read address of t's elements. */
static inline const void *fx_data(const lodtensor_t *t) {
    const void *p = NULL;
    CHECK_OK(lodtensor_data(t, &p));
    return p;
}

/* Host tensors `got` and `want` have equal dims and LoD. */
static inline int fx_same_layout(const lodtensor_t *got, const lodtensor_t *want) {
    int64_t gd[LODTENSOR_MAX_DIMS], wd[LODTENSOR_MAX_DIMS];
    size_t gn = 0, wn = 0, levels, l;
    int ok = CHECK_OK(lodtensor_dims(got, gd, LODTENSOR_MAX_DIMS, &gn)) &&
             CHECK_OK(lodtensor_dims(want, wd, LODTENSOR_MAX_DIMS, &wn)) && CHECK_EQ_SIZE(gn, wn) &&
             CHECK(memcmp(gd, wd, gn * sizeof(int64_t)) == 0);
    levels = fx_levels(want);
    ok = ok && CHECK_EQ_SIZE(fx_levels(got), levels);
    for (l = 0; ok && l < levels; ++l) {
        const size_t *o = NULL;
        size_t n = 0;
        ok = CHECK_OK(lodtensor_lod_offsets(want, l, &o, &n)) && CHECK_OFFSETS(got, l, o, n);
    }
    return ok;
}

/* Host tensors `got` and `want` are identical: dtype, dims, LoD and bytes. */
static inline int fx_same(const lodtensor_t *got, const lodtensor_t *want) {
    lodtensor_dtype_t dg, dw;
    size_t gb = 0, wb = 0;
    int ok = CHECK_OK(lodtensor_dtype(got, &dg)) && CHECK_OK(lodtensor_dtype(want, &dw)) &&
             CHECK(dg.code == dw.code && dg.bits == dw.bits) && fx_same_layout(got, want);
    return ok && CHECK_OK(lodtensor_nbytes(got, &gb)) && CHECK_OK(lodtensor_nbytes(want, &wb)) &&
           CHECK_EQ_SIZE(gb, wb) && CHECK(gb == 0 || memcmp(fx_data(got), fx_data(want), gb) == 0);
}

/* A host tensor of `ndim` dims holding a copy of `data`, with up to 2 LoD levels given as offsets
 * (l0 may be NULL for no LoD; l1 NULL for one level). Aborts the test on failure. */
static inline lodtensor_t *fx_make(lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, const void *data,
                                   const size_t *l0, size_t n0, const size_t *l1, size_t n1) {
    size_t numel = 1, i, sizes[2], lod[64], levels = 0;
    lodtensor_t *t = NULL;
    for (i = 0; i < ndim; ++i) numel *= (size_t)dims[i];
    if (l0 != NULL) {
        sizes[levels++] = n0;
        memcpy(lod, l0, n0 * sizeof(size_t));
    }
    if (l1 != NULL) {
        sizes[levels++] = n1;
        memcpy(lod + n0, l1, n1 * sizeof(size_t));
    }
    if (!CHECK_OK(lodtensor_create(dtype, dims, ndim, data, numel * dtype.bits / 8, LODTENSOR_LOD_OFFSETS, sizes,
                                   levels, lod, n0 + n1, &t))) {
        exit(1);
    }
    return t;
}

#endif /* LODTENSOR_CAPI_TESTS_FIXTURES_H */
