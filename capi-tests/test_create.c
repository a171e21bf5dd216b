/* test_create: lodtensor_create and lodtensor_from_buffer: every dtype, every shape rule, every
 * documented failure (NULL_ARGUMENT, UNSUPPORTED, INVALID_ARGUMENT, INVALID_LOD, OUT_OF_MEMORY,
 * and for from_buffer the place and alignment rules), and "on failure *out is untouched and the
 * release callback is not called". The LoD rules themselves are covered in test_lod.c. */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* ---- every dtype round-trips, data is copied -------------------------------------------------- */

static void test_every_dtype(void) {
    static const struct {
        uint8_t code, bits;
    } dtypes[] = {
        {LODTENSOR_DTYPE_CODE_BOOL, 8},   {LODTENSOR_DTYPE_CODE_UINT, 8},  {LODTENSOR_DTYPE_CODE_INT, 8},
        {LODTENSOR_DTYPE_CODE_INT, 16},   {LODTENSOR_DTYPE_CODE_INT, 32},  {LODTENSOR_DTYPE_CODE_INT, 64},
        {LODTENSOR_DTYPE_CODE_FLOAT, 16}, {LODTENSOR_DTYPE_CODE_BFLOAT, 16}, {LODTENSOR_DTYPE_CODE_FLOAT, 32},
        {LODTENSOR_DTYPE_CODE_FLOAT, 64},
    };
    const int64_t dims[2] = {3, 2};
    unsigned char bytes[6 * 8];
    size_t i, k;
    for (i = 0; i < sizeof dtypes / sizeof dtypes[0]; ++i) {
        lodtensor_dtype_t dt = fx_dtype(dtypes[i].code, dtypes[i].bits), got;
        size_t nbytes = 6 * (size_t)dtypes[i].bits / 8, n = 0;
        lodtensor_t *t = NULL;
        const void *data = NULL;
        for (k = 0; k < nbytes; ++k) {
            /* bool elements must be 0 or 1; any byte pattern is fine for the others. */
            bytes[k] = dtypes[i].code == LODTENSOR_DTYPE_CODE_BOOL ? (unsigned char)(k % 2)
                                                                   : (unsigned char)(k * 7 + 1);
        }
        if (!CHECK_OK(lodtensor_create(dt, dims, 2, bytes, nbytes, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
            fprintf(stderr, "  dtype (%d, %d)\n", dtypes[i].code, dtypes[i].bits);
            continue;
        }
        CHECK_OK(lodtensor_dtype(t, &got));
        CHECK_EQ_INT(got.code, dtypes[i].code);
        CHECK_EQ_INT(got.bits, dtypes[i].bits);
        CHECK_EQ_INT(got.lanes, 1);
        CHECK_OK(lodtensor_nbytes(t, &n));
        CHECK_EQ_SIZE(n, nbytes);
        CHECK_OK(lodtensor_numel(t, &n));
        CHECK_EQ_SIZE(n, 6);
        CHECK_OK(lodtensor_data(t, &data));
        /* A copy: another address, the same bytes, and later changes to the input do not show. */
        CHECK(data != (const void *)bytes);
        CHECK(data != NULL && memcmp(data, bytes, nbytes) == 0);
        bytes[0] ^= 1;
        CHECK(data != NULL && memcmp(data, bytes, nbytes) != 0);
        lodtensor_destroy(t);
    }
}

/* ---- shapes --------------------------------------------------------------------------------- */

static void test_shapes(void) {
    lodtensor_t *t = NULL;
    size_t n = 99, ndim = 99;
    float one = 1.5f;
    int64_t dims9[9] = {1, 1, 2, 1, 1, 1, 1, 1, 3}, got[LODTENSOR_MAX_DIMS];
    float six[6] = {0, 1, 2, 3, 4, 5};
    const int64_t empty_rows[2] = {0, 3}, empty_cols[2] = {2, 0};
    size_t i;

    /* A 0-d tensor: dims may be NULL when ndim is 0; it has one element. */
    if (CHECK_OK(lodtensor_create(fx_f32(), NULL, 0, &one, sizeof one, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        CHECK_OK(lodtensor_ndim(t, &ndim));
        CHECK_EQ_SIZE(ndim, 0);
        CHECK_OK(lodtensor_numel(t, &n));
        CHECK_EQ_SIZE(n, 1);
        CHECK_OK(lodtensor_nbytes(t, &n));
        CHECK_EQ_SIZE(n, 4);
        lodtensor_destroy(t);
    }
    /* The most dims a tensor may have. */
    t = NULL;
    if (CHECK_OK(lodtensor_create(fx_f32(), dims9, 9, six, sizeof six, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        CHECK_OK(lodtensor_dims(t, got, LODTENSOR_MAX_DIMS, &ndim));
        CHECK_EQ_SIZE(ndim, 9);
        for (i = 0; i < 9; ++i) {
            CHECK_EQ_INT(got[i], dims9[i]);
        }
        lodtensor_destroy(t);
    }
    /* Zero-sized dims: no elements, so data may be NULL with data_len 0. */
    t = NULL;
    if (CHECK_OK(lodtensor_create(fx_f32(), empty_rows, 2, NULL, 0, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        CHECK_OK(lodtensor_numel(t, &n));
        CHECK_EQ_SIZE(n, 0);
        CHECK_OK(lodtensor_nbytes(t, &n));
        CHECK_EQ_SIZE(n, 0);
        lodtensor_destroy(t);
    }
    t = NULL;
    if (CHECK_OK(lodtensor_create(fx_f32(), empty_cols, 2, NULL, 0, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        CHECK_OK(lodtensor_numel(t, &n));
        CHECK_EQ_SIZE(n, 0);
        lodtensor_destroy(t);
    }
}

/* ---- the failure table, applied to create and to from_buffer -------------------------------- */

struct bad_case {
    const char *name;
    lodtensor_dtype_t dtype;
    const int64_t *dims;
    size_t ndim;
    int data_null; /* pass NULL instead of the buffer */
    size_t data_len;
    int32_t lod_kind;
    const size_t *level_sizes;
    size_t num_levels;
    const size_t *lod;
    size_t lod_len;
    int32_t expected;
    const char *substring;
};

static size_t release_calls;
static void count_release(void *data, void *user_data) {
    (void)data;
    (void)user_data;
    ++release_calls;
}

static void test_failures(void) {
    /* The valid baseline: float32 [4, 2] (32 bytes) with LoD offsets [[0, 1, 4]]. */
    static const int64_t dims[2] = {4, 2}, neg0[2] = {-1, 2}, neg1[2] = {4, -2}, ten[10] = {1, 1, 1, 1, 1, 4, 1, 1, 1, 2};
    static const int64_t huge_numel[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    static const int64_t huge_max[2] = {INT64_MAX, 2};
    static const int64_t huge_bytes[1] = {(int64_t)1 << 62}; /* numel fits, numel * 4 does not */
    /* No elements, but a step along an axis past INT64_MAX elements, or bytes. */
    static const int64_t empty_wide[3] = {0, (int64_t)1 << 40, (int64_t)1 << 40};
    static const int64_t empty_wide_last[3] = {(int64_t)1 << 40, (int64_t)1 << 40, 0};
    static const int64_t empty_wide_bytes[2] = {0, (int64_t)1 << 62};
    static const size_t sizes[1] = {3}, lod[3] = {0, 1, 4}, sizes2[2] = {2, 2}, lod4[4] = {0, 1, 0, 4};
    static const size_t bad_lod[3] = {0, 1, 5};
    struct bad_case cases[40];
    size_t n = 0, i;
    float buffer[8] = {0};
    const lodtensor_dtype_t f32 = fx_f32();

#define BASE(nm, exp, sub)                                                                                      \
    (cases[n].name = (nm), cases[n].dtype = f32, cases[n].dims = dims, cases[n].ndim = 2, cases[n].data_null = 0, \
     cases[n].data_len = 32, cases[n].lod_kind = LODTENSOR_LOD_OFFSETS, cases[n].level_sizes = sizes,             \
     cases[n].num_levels = 1, cases[n].lod = lod, cases[n].lod_len = 3, cases[n].expected = (exp),               \
     cases[n].substring = (sub))
    /* Unsupported dtypes (code, bits or lanes). */
    BASE("dtype code 3", LODTENSOR_UNSUPPORTED, "dtype"), cases[n++].dtype = fx_dtype(3, 32);
    BASE("dtype code 200", LODTENSOR_UNSUPPORTED, "dtype"), cases[n++].dtype = fx_dtype(200, 32);
    BASE("float bits 8", LODTENSOR_UNSUPPORTED, "dtype"), cases[n++].dtype = fx_dtype(LODTENSOR_DTYPE_CODE_FLOAT, 8);
    BASE("int bits 128", LODTENSOR_UNSUPPORTED, "dtype"), cases[n++].dtype = fx_dtype(LODTENSOR_DTYPE_CODE_INT, 128);
    BASE("int bits 0", LODTENSOR_UNSUPPORTED, "dtype"), cases[n++].dtype = fx_dtype(LODTENSOR_DTYPE_CODE_INT, 0);
    BASE("uint bits 32", LODTENSOR_UNSUPPORTED, "dtype"), cases[n++].dtype = fx_dtype(LODTENSOR_DTYPE_CODE_UINT, 32);
    BASE("bool bits 1", LODTENSOR_UNSUPPORTED, "dtype"), cases[n++].dtype = fx_dtype(LODTENSOR_DTYPE_CODE_BOOL, 1);
    BASE("bfloat bits 32", LODTENSOR_UNSUPPORTED, "dtype"),
        cases[n++].dtype = fx_dtype(LODTENSOR_DTYPE_CODE_BFLOAT, 32);
    BASE("lanes 0", LODTENSOR_UNSUPPORTED, "lanes"), cases[n].dtype = f32, cases[n++].dtype.lanes = 0;
    BASE("lanes 4", LODTENSOR_UNSUPPORTED, "lanes"), cases[n].dtype = f32, cases[n++].dtype.lanes = 4;
    /* Shape rules. */
    BASE("10 dims", LODTENSOR_INVALID_ARGUMENT, "ndim"), cases[n].dims = ten, cases[n].ndim = 10, cases[n].num_levels = 0,
        cases[n++].lod_len = 0;
    BASE("10 dims, dims NULL", LODTENSOR_INVALID_ARGUMENT, "ndim"), cases[n].dims = NULL, cases[n].ndim = 10,
        cases[n].num_levels = 0, cases[n++].lod_len = 0;
    BASE("negative dims[0]", LODTENSOR_INVALID_ARGUMENT, "dims"), cases[n].dims = neg0, cases[n].num_levels = 0,
        cases[n++].lod_len = 0;
    BASE("negative dims[1]", LODTENSOR_INVALID_ARGUMENT, "dims"), cases[n++].dims = neg1;
    BASE("dims NULL, ndim 2", LODTENSOR_NULL_ARGUMENT, "dims"), cases[n++].dims = NULL;
    /* Data length. */
    BASE("data_len 31", LODTENSOR_INVALID_ARGUMENT, "data"), cases[n++].data_len = 31;
    BASE("data_len 33", LODTENSOR_INVALID_ARGUMENT, "data"), cases[n++].data_len = 33;
    BASE("data_len 0", LODTENSOR_INVALID_ARGUMENT, "data"), cases[n++].data_len = 0;
    BASE("data NULL, data_len 0, 8 elements", LODTENSOR_INVALID_ARGUMENT, "data"), cases[n].data_null = 1,
        cases[n++].data_len = 0;
    BASE("data NULL, data_len 32", LODTENSOR_NULL_ARGUMENT, "data"), cases[n++].data_null = 1;
    /* The flat LoD encoding. */
    BASE("lod_kind 2", LODTENSOR_INVALID_ARGUMENT, "lod_kind"), cases[n++].lod_kind = 2;
    BASE("lod_kind -1", LODTENSOR_INVALID_ARGUMENT, "lod_kind"), cases[n++].lod_kind = -1;
    BASE("lod_len 2 < level sizes 3", LODTENSOR_INVALID_ARGUMENT, "lod_len"), cases[n++].lod_len = 2;
    BASE("level sizes 2+2 > lod_len 3", LODTENSOR_INVALID_ARGUMENT, "lod_len"), cases[n].level_sizes = sizes2,
        cases[n].num_levels = 2, cases[n].lod = lod4, cases[n++].lod_len = 3;
    BASE("level_sizes NULL, num_levels 1", LODTENSOR_NULL_ARGUMENT, "level_sizes"), cases[n++].level_sizes = NULL;
    BASE("lod NULL, lod_len 3", LODTENSOR_NULL_ARGUMENT, "lod"), cases[n++].lod = NULL;
    /* The LoD against the tensor. */
    BASE("LoD ends at 5, 4 rows", LODTENSOR_INVALID_LOD, "lod: "), cases[n++].lod = bad_lod;
    BASE("LoD on a 0-d tensor", LODTENSOR_INVALID_LOD, "lod"), cases[n].dims = NULL, cases[n].ndim = 0,
        cases[n++].data_len = 4;
    /* Sizes that overflow. */
    BASE("numel overflows", LODTENSOR_OUT_OF_MEMORY, "dims"), cases[n].dims = huge_numel, cases[n].num_levels = 0,
        cases[n++].lod_len = 0;
    BASE("numel overflows (INT64_MAX)", LODTENSOR_OUT_OF_MEMORY, "dims"), cases[n].dims = huge_max,
        cases[n].num_levels = 0, cases[n++].lod_len = 0;
    BASE("bytes overflow", LODTENSOR_OUT_OF_MEMORY, "bytes"), cases[n].dims = huge_bytes, cases[n].ndim = 1,
        cases[n].num_levels = 0, cases[n++].lod_len = 0;
    BASE("no elements, rows of 2^80", LODTENSOR_OUT_OF_MEMORY, "dims"), cases[n].dims = empty_wide, cases[n].ndim = 3,
        cases[n].data_len = 0, cases[n].num_levels = 0, cases[n++].lod_len = 0;
    BASE("no elements, 2^80 rows", LODTENSOR_OUT_OF_MEMORY, "dims"), cases[n].dims = empty_wide_last,
        cases[n].ndim = 3, cases[n].data_len = 0, cases[n].num_levels = 0, cases[n++].lod_len = 0;
    BASE("no elements, rows of 2^64 bytes", LODTENSOR_OUT_OF_MEMORY, "bytes"), cases[n].dims = empty_wide_bytes,
        cases[n].data_len = 0, cases[n].num_levels = 0, cases[n++].lod_len = 0;
#undef BASE

    for (i = 0; i < n; ++i) {
        const struct bad_case *c = &cases[i];
        lodtensor_t *out = fx_sentinel();
        void *data = c->data_null ? NULL : buffer;
        if (!CHECK_STATUS_MSG(lodtensor_create(c->dtype, c->dims, c->ndim, data, c->data_len, c->lod_kind,
                                               c->level_sizes, c->num_levels, c->lod, c->lod_len, &out),
                              c->expected, c->substring)) {
            fprintf(stderr, "  create case: %s\n", c->name);
        }
        if (!CHECK_EQ_PTR(out, fx_sentinel())) {
            fprintf(stderr, "  create case: %s\n", c->name);
            if (out != NULL) {
                lodtensor_destroy(out);
            }
        }

        out = fx_sentinel();
        release_calls = 0;
        if (!CHECK_STATUS_MSG(lodtensor_from_buffer(fx_cpu(), c->dtype, c->dims, c->ndim, data, c->data_len,
                                                    c->lod_kind, c->level_sizes, c->num_levels, c->lod,
                                                    c->lod_len, count_release, &release_calls, &out),
                              c->expected, c->substring)) {
            fprintf(stderr, "  from_buffer case: %s\n", c->name);
        }
        if (!CHECK_EQ_PTR(out, fx_sentinel())) {
            fprintf(stderr, "  from_buffer case: %s\n", c->name);
            if (out != NULL) {
                lodtensor_destroy(out);
            }
        }
        /* On failure nothing is taken: the release callback never runs. */
        if (!CHECK_EQ_SIZE(release_calls, 0)) {
            fprintf(stderr, "  from_buffer case: %s\n", c->name);
        }
    }

    /* out itself NULL. */
    CHECK_STATUS_MSG(lodtensor_create(f32, dims, 2, buffer, 32, LODTENSOR_LOD_OFFSETS, sizes, 1, lod, 3, NULL),
                     LODTENSOR_NULL_ARGUMENT, "out");
    release_calls = 0;
    CHECK_STATUS_MSG(lodtensor_from_buffer(fx_cpu(), f32, dims, 2, buffer, 32, LODTENSOR_LOD_OFFSETS, sizes, 1, lod,
                                           3, count_release, NULL, NULL),
                     LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_SIZE(release_calls, 0);

    /* The baseline itself is valid for both (so each case above failed for its own reason). */
    {
        lodtensor_t *a = NULL, *b = NULL;
        CHECK_OK(lodtensor_create(f32, dims, 2, buffer, 32, LODTENSOR_LOD_OFFSETS, sizes, 1, lod, 3, &a));
        CHECK_OK(lodtensor_from_buffer(fx_cpu(), f32, dims, 2, buffer, 32, LODTENSOR_LOD_OFFSETS, sizes, 1, lod, 3,
                                       NULL, NULL, &b));
        lodtensor_destroy(a);
        lodtensor_destroy(b);
    }
}

/* ---- from_buffer only: place and alignment -------------------------------------------------- */

static void test_from_buffer_place_and_alignment(void) {
    static const struct {
        int32_t type, id, expected;
        const char *substring;
    } places[] = {
        {7, 0, LODTENSOR_INVALID_ARGUMENT, "device_type"},
        {0, 0, LODTENSOR_INVALID_ARGUMENT, "device_type"},
        {-1, 0, LODTENSOR_INVALID_ARGUMENT, "device_type"},
        {LODTENSOR_DEVICE_CPU, 1, LODTENSOR_INVALID_ARGUMENT, "device_id"},
        {LODTENSOR_DEVICE_CPU, -1, LODTENSOR_INVALID_ARGUMENT, "device_id"},
        {LODTENSOR_DEVICE_CUDA, -1, LODTENSOR_INVALID_ARGUMENT, "device_id"},
        /* A valid CUDA place, where CUDA is not usable (checked below). */
        {LODTENSOR_DEVICE_CUDA, 0, LODTENSOR_UNSUPPORTED, "CUDA"},
        {LODTENSOR_DEVICE_CUDA, 3, LODTENSOR_UNSUPPORTED, "CUDA"},
    };
    const int64_t dims[2] = {4, 2};
    /* Room for a deliberately misaligned float32 view. */
    union {
        double align;
        unsigned char bytes[40];
    } storage;
    float buffer[8];
    size_t i;
    lodtensor_t *out;
    lodtensor_place_t place;
    const void *data = NULL;
    memset(&storage, 0, sizeof storage);
    memset(buffer, 0, sizeof buffer);

    for (i = 0; i < sizeof places / sizeof places[0]; ++i) {
        if (places[i].expected == LODTENSOR_UNSUPPORTED && fx_cuda_usable()) {
            continue;
        }
        out = fx_sentinel();
        release_calls = 0;
        if (!CHECK_STATUS_MSG(lodtensor_from_buffer(fx_place(places[i].type, places[i].id), fx_f32(), dims, 2, buffer,
                                                    sizeof buffer, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0,
                                                    count_release, NULL, &out),
                              places[i].expected, places[i].substring)) {
            fprintf(stderr, "  place (%d, %d)\n", places[i].type, places[i].id);
        }
        CHECK_EQ_PTR(out, fx_sentinel());
        CHECK_EQ_SIZE(release_calls, 0);
    }

    /* A float32 buffer at an odd address. */
    out = fx_sentinel();
    release_calls = 0;
    CHECK_STATUS_MSG(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 2, storage.bytes + 1, 32, LODTENSOR_LOD_OFFSETS,
                                           NULL, 0, NULL, 0, count_release, NULL, &out),
                     LODTENSOR_INVALID_ARGUMENT, "align");
    CHECK_EQ_PTR(out, fx_sentinel());
    CHECK_EQ_SIZE(release_calls, 0);
    /* The same address is fine for a 1-byte dtype. */
    out = NULL;
    if (CHECK_OK(lodtensor_from_buffer(fx_cpu(), fx_dtype(LODTENSOR_DTYPE_CODE_UINT, 8), dims, 2, storage.bytes + 1, 8,
                                       LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, NULL, NULL, &out))) {
        CHECK_OK(lodtensor_data(out, &data));
        CHECK_EQ_PTR(data, storage.bytes + 1);
        lodtensor_destroy(out);
    }

    /* A CPU tensor over the caller's buffer reports the CPU place and that very address. */
    out = NULL;
    if (CHECK_OK(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 2, buffer, sizeof buffer, LODTENSOR_LOD_OFFSETS, NULL,
                                       0, NULL, 0, NULL, NULL, &out))) {
        CHECK_OK(lodtensor_place(out, &place));
        CHECK_EQ_INT(place.device_type, LODTENSOR_DEVICE_CPU);
        CHECK_EQ_INT(place.device_id, 0);
        CHECK_OK(lodtensor_data(out, &data));
        CHECK_EQ_PTR(data, buffer);
        /* Zero copy: the caller's writes are the tensor's elements. */
        buffer[5] = 42.0f;
        CHECK(((const float *)data)[5] == 42.0f);
        lodtensor_destroy(out);
    }
}

int main(void) {
    test_every_dtype();
    test_shapes();
    test_failures();
    test_from_buffer_place_and_alignment();
    return CHECK_RETURN();
}
