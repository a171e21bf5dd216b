/* test_serialize: lodtensor_serialize and lodtensor_deserialize, Paddle's tensor file format
 * (spec §1.10): the spec's worked example byte for byte (float32 [5,1], LoD [[0,2,5]]), its
 * reading back from an unaligned address, a save_combine file of two records read in a loop,
 * every documented failure with its outputs left alone, partial loads (lodtensor_deserialize_slice)
 * with theirs, and, where CUDA can be used, a device tensor's record equal to its host copy's. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define SENTINEL_SIZE ((size_t)0x5EED5EED)

static const float example_values[5] = {1.5f, -2.0f, 3.0f, 0.25f, 8.0f};
static const size_t example_offsets[3] = {0, 2, 5};

/* The worked example's record, from the spec's table; the elements' 20 bytes are appended by
 * example_record (host byte order, as the format has them). */
static const uint8_t example_head[58] = {
    0, 0, 0, 0,                   /* LoDTensor version 0 */
    1, 0, 0, 0, 0, 0, 0, 0,       /* 1 LoD level */
    24, 0, 0, 0, 0, 0, 0, 0,      /* of 24 bytes */
    0, 0, 0, 0, 0, 0, 0, 0,       /* offsets 0, */
    2, 0, 0, 0, 0, 0, 0, 0,       /* 2, */
    5, 0, 0, 0, 0, 0, 0, 0,       /* 5 */
    0, 0, 0, 0,                   /* tensor version 0 */
    6, 0, 0, 0,                   /* a desc of 6 bytes */
    0x08, 0x05, 0x10, 0x05, 0x10, 0x01 /* data_type FP32, dims 5, 1 */
};
#define EXAMPLE_LEN (sizeof example_head + sizeof example_values)

static void example_record(uint8_t *out) {
    memcpy(out, example_head, sizeof example_head);
    memcpy(out + sizeof example_head, example_values, sizeof example_values);
}

static lodtensor_t *make_example(void) {
    static const int64_t dims[2] = {5, 1};
    return fx_make(fx_f32(), dims, 2, example_values, example_offsets, 3, NULL, 0);
}

static void test_spec_example(void) {
    uint8_t want[EXAMPLE_LEN], got[EXAMPLE_LEN + 8];
    size_t len = SENTINEL_SIZE;
    lodtensor_t *x = make_example();
    example_record(want);
    /* The length alone, then the record into a buffer of exactly that length. */
    CHECK_OK(lodtensor_serialize(x, NULL, 0, &len));
    CHECK_EQ_SIZE(len, EXAMPLE_LEN);
    len = SENTINEL_SIZE;
    memset(got, 0xab, sizeof got);
    if (CHECK_OK(lodtensor_serialize(x, got, EXAMPLE_LEN, &len))) {
        CHECK_EQ_SIZE(len, EXAMPLE_LEN);
        CHECK(memcmp(got, want, EXAMPLE_LEN) == 0);
        CHECK(got[EXAMPLE_LEN] == 0xab);
    }
    lodtensor_destroy(x);
}

static void test_read_back_unaligned(void) {
    uint8_t bytes[EXAMPLE_LEN + 1];
    size_t consumed = SENTINEL_SIZE;
    lodtensor_t *want = make_example(), *got = NULL;
    example_record(bytes + 1);
    if (CHECK_OK(lodtensor_deserialize(bytes + 1, EXAMPLE_LEN, &consumed, &got))) {
        CHECK_EQ_SIZE(consumed, EXAMPLE_LEN);
        fx_same(got, want);
    }
    lodtensor_destroy(got);
    lodtensor_destroy(want);
}

/* Two records back to back, as save_combine writes them, read until the bytes run out. */
static void test_save_combine(void) {
    static const int64_t ids[6] = {7, -1, 9, 4, 4, 0};
    static const int64_t id_dims[1] = {6};
    static const size_t l0[3] = {0, 1, 3}, l1[4] = {0, 2, 2, 6};
    lodtensor_t *in[2], *out[2] = {NULL, NULL};
    uint8_t *file;
    size_t lens[2] = {0, 0}, at = 0, n = 0, i;
    in[0] = make_example();
    in[1] = fx_make(fx_i64(), id_dims, 1, ids, l0, 3, l1, 4);
    for (i = 0; i < 2; ++i) CHECK_OK(lodtensor_serialize(in[i], NULL, 0, &lens[i]));
    file = (uint8_t *)malloc(lens[0] + lens[1]);
    if (!CHECK(file != NULL)) exit(1);
    for (i = 0; i < 2; ++i) {
        size_t written = 0;
        CHECK_OK(lodtensor_serialize(in[i], file + at, lens[i], &written));
        CHECK_EQ_SIZE(written, lens[i]);
        at += written;
    }
    for (at = 0; at < lens[0] + lens[1] && n < 2; ++n) {
        size_t consumed = 0;
        if (!CHECK_OK(lodtensor_deserialize(file + at, lens[0] + lens[1] - at, &consumed, &out[n]))) break;
        CHECK_EQ_SIZE(consumed, lens[n]);
        fx_same(out[n], in[n]);
        at += consumed;
    }
    CHECK_EQ_SIZE(n, 2);
    CHECK_EQ_SIZE(at, lens[0] + lens[1]);
    for (i = 0; i < 2; ++i) {
        lodtensor_destroy(in[i]);
        lodtensor_destroy(out[i]);
    }
    free(file);
}

static void test_serialize_errors(void) {
    uint8_t buf[EXAMPLE_LEN];
    size_t len = SENTINEL_SIZE, i;
    lodtensor_t *x = make_example();
    CHECK_STATUS_MSG(lodtensor_serialize(NULL, buf, sizeof buf, &len), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_serialize(x, buf, sizeof buf, NULL), LODTENSOR_NULL_ARGUMENT, "out_len");
    /* One byte short: nothing written. */
    memset(buf, 0xab, sizeof buf);
    CHECK_STATUS_MSG(lodtensor_serialize(x, buf, EXAMPLE_LEN - 1, &len), LODTENSOR_BUFFER_TOO_SMALL, "buf");
    CHECK_EQ_SIZE(len, SENTINEL_SIZE);
    for (i = 0; i < sizeof buf; ++i) {
        if (!CHECK(buf[i] == 0xab)) break;
    }
    lodtensor_destroy(x);
}

/* The example's record with `len` bytes at `at` replaced by `patch`, read back: it must fail with
 * `status` and a message containing `words`, leaving both outputs alone. */
static void check_bad_record(size_t at, const uint8_t *patch, size_t len, int32_t status, const char *words) {
    uint8_t bytes[EXAMPLE_LEN];
    size_t consumed = SENTINEL_SIZE;
    lodtensor_t *out = fx_sentinel();
    example_record(bytes);
    memcpy(bytes + at, patch, len);
    CHECK_STATUS_MSG(lodtensor_deserialize(bytes, sizeof bytes, &consumed, &out), status, words);
    CHECK_EQ_SIZE(consumed, SENTINEL_SIZE);
    CHECK_EQ_PTR(out, fx_sentinel());
}

static void test_deserialize_errors(void) {
    static const uint8_t one[1] = {1}, twenty[1] = {20}, minus_one[4] = {0xff, 0xff, 0xff, 0xff};
    static const uint8_t no_data_type[6] = {0x10, 0x05, 0x10, 0x01, 0x18, 0x00};
    static const uint8_t size_t_type[2] = {0x08, 19}, complex_type[2] = {0x08, 23};
    static const uint8_t ten_dims[6] = {0x08, 0x05, 0x12, 0x0a, 0x01, 0x01}; /* 10 packed dims, cut short */
    static const uint8_t offsets_down[1] = {6}, short_lod[1] = {4};
    static const uint8_t cut_dim[2] = {0x10, 0xff}; /* the second dim's varint runs past the desc's end */
    uint8_t bytes[EXAMPLE_LEN];
    size_t consumed = SENTINEL_SIZE, len;
    lodtensor_t *out = fx_sentinel();
    example_record(bytes);

    CHECK_STATUS_MSG(lodtensor_deserialize(bytes, sizeof bytes, &consumed, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_deserialize(bytes, sizeof bytes, NULL, &out), LODTENSOR_NULL_ARGUMENT,
                     "out_consumed");
    CHECK_STATUS_MSG(lodtensor_deserialize(NULL, 5, &consumed, &out), LODTENSOR_NULL_ARGUMENT, "buf");
    /* Every cut of the record ends inside it (NULL with length 0 included). */
    CHECK_STATUS_MSG(lodtensor_deserialize(NULL, 0, &consumed, &out), LODTENSOR_INVALID_ARGUMENT, "version");
    for (len = 1; len < EXAMPLE_LEN; ++len) {
        CHECK_STATUS_MSG(lodtensor_deserialize(bytes, len, &consumed, &out), LODTENSOR_INVALID_ARGUMENT,
                         "the bytes end inside the record");
    }
    CHECK_EQ_SIZE(consumed, SENTINEL_SIZE);
    CHECK_EQ_PTR(out, fx_sentinel());

    check_bad_record(0, one, 1, LODTENSOR_INVALID_ARGUMENT, "LoDTensor version 1");
    check_bad_record(44, one, 1, LODTENSOR_INVALID_ARGUMENT, "tensor version 1");
    check_bad_record(12, twenty, 1, LODTENSOR_INVALID_ARGUMENT, "byte size of 20");
    check_bad_record(48, minus_one, 4, LODTENSOR_INVALID_ARGUMENT, "desc size -1");
    check_bad_record(52, no_data_type, 6, LODTENSOR_INVALID_ARGUMENT, "no data_type");
    check_bad_record(56, cut_dim, 2, LODTENSOR_INVALID_ARGUMENT, "the bytes end inside the record's dims");
    check_bad_record(52, size_t_type, 2, LODTENSOR_UNSUPPORTED, "SIZE_T");
    check_bad_record(52, complex_type, 2, LODTENSOR_UNSUPPORTED, "COMPLEX64");
    check_bad_record(52, ten_dims, 6, LODTENSOR_INVALID_ARGUMENT, "packed dims");
    check_bad_record(28, offsets_down, 1, LODTENSOR_INVALID_LOD, "LoD level 0");
    check_bad_record(36, short_lod, 1, LODTENSOR_INVALID_LOD, "5 rows");
}

/* Records whose desc is not the example's 6 bytes: a negative dim, more dims than a tensor
 * holds, and an element count that overflows. Each is built whole: head, desc, no elements. */
static void check_bad_desc(const uint8_t *desc, size_t desc_len, int32_t status, const char *words) {
    uint8_t bytes[128];
    size_t consumed = SENTINEL_SIZE;
    lodtensor_t *out = fx_sentinel();
    int32_t size = (int32_t)desc_len;
    memset(bytes, 0, 16); /* versions 0, no LoD */
    memcpy(bytes + 16, &size, 4);
    memcpy(bytes + 20, desc, desc_len);
    CHECK_STATUS_MSG(lodtensor_deserialize(bytes, 20 + desc_len, &consumed, &out), status, words);
    CHECK_EQ_SIZE(consumed, SENTINEL_SIZE);
    CHECK_EQ_PTR(out, fx_sentinel());
}

static void test_bad_descs(void) {
    /* dims -1 (int64 as a 10-byte varint) */
    static const uint8_t negative[13] = {0x08, 0x05, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
    /* ten dims of 1 */
    static const uint8_t ten[22] = {0x08, 0x05, 0x10, 1, 0x10, 1, 0x10, 1, 0x10, 1, 0x10, 1,
                                    0x10, 1,    0x10, 1, 0x10, 1, 0x10, 1, 0x10, 1};
    /* dims 2^40 and 2^40: more elements than a size_t counts */
    static const uint8_t overflow[16] = {0x08, 0x05, 0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20,
                                         0x10, 0x80, 0x80, 0x80, 0x80, 0x80, 0x20};
    check_bad_desc(negative, sizeof negative, LODTENSOR_INVALID_ARGUMENT, "negative");
    check_bad_desc(ten, sizeof ten, LODTENSOR_UNSUPPORTED, "more than 9 dims");
    check_bad_desc(overflow, sizeof overflow, LODTENSOR_OUT_OF_MEMORY, "overflows");
}

/* The record of int32 [4, 3] holding 0..11, without LoD, followed by the example's record, as a
 * save_combine file holds them; `*first` is the first record's length. */
static uint8_t *counting_file(size_t *first, size_t *len) {
    static const int64_t dims[2] = {4, 3};
    int32_t values[12];
    size_t i;
    uint8_t *file;
    lodtensor_t *x;
    for (i = 0; i < 12; ++i) values[i] = (int32_t)i;
    x = fx_make(fx_i32(), dims, 2, values, NULL, 0, NULL, 0);
    CHECK_OK(lodtensor_serialize(x, NULL, 0, first));
    *len = *first + EXAMPLE_LEN;
    file = (uint8_t *)malloc(*len);
    if (!CHECK(file != NULL)) exit(1);
    CHECK_OK(lodtensor_serialize(x, file, *first, first));
    example_record(file + *first);
    lodtensor_destroy(x);
    return file;
}

static void test_partial_load(void) {
    static const int64_t slice_dims[2] = {2, 2}, scalar_dims[1] = {0};
    size_t first = 0, len = 0, consumed = SENTINEL_SIZE, rest = SENTINEL_SIZE, ndim = 0;
    uint8_t *file = counting_file(&first, &len);
    lodtensor_t *got = NULL, *next = NULL, *want = make_example();
    /* Elements 5..8 as [2, 2], read from an unaligned copy; the next record starts where it says. */
    uint8_t *moved = (uint8_t *)malloc(len + 1);
    if (!CHECK(moved != NULL)) exit(1);
    memcpy(moved + 1, file, len);
    if (CHECK_OK(lodtensor_deserialize_slice(moved + 1, len, 5, slice_dims, 2, &consumed, &got))) {
        const int32_t *v = (const int32_t *)fx_data(got);
        int64_t dims[2] = {0, 0};
        CHECK_EQ_SIZE(consumed, first);
        CHECK_EQ_SIZE(fx_levels(got), 0);
        CHECK_OK(lodtensor_dims(got, dims, 2, &ndim));
        CHECK_EQ_SIZE(ndim, 2);
        CHECK(dims[0] == 2 && dims[1] == 2);
        CHECK(v[0] == 5 && v[1] == 6 && v[2] == 7 && v[3] == 8);
        if (CHECK_OK(lodtensor_deserialize(moved + 1 + consumed, len - consumed, &rest, &next))) {
            CHECK_EQ_SIZE(rest, EXAMPLE_LEN);
            fx_same(next, want);
        }
    }
    lodtensor_destroy(got);
    /* The last element as a 0-d tensor, and an empty slice at the end. */
    got = NULL;
    if (CHECK_OK(lodtensor_deserialize_slice(file, first, 11, NULL, 0, &consumed, &got))) {
        CHECK_OK(lodtensor_ndim(got, &ndim));
        CHECK_EQ_SIZE(ndim, 0);
        CHECK(*(const int32_t *)fx_data(got) == 11);
    }
    lodtensor_destroy(got);
    got = NULL;
    if (CHECK_OK(lodtensor_deserialize_slice(file, first, 12, scalar_dims, 1, &consumed, &got))) {
        size_t numel = SENTINEL_SIZE;
        CHECK_OK(lodtensor_numel(got, &numel));
        CHECK_EQ_SIZE(numel, 0);
    }
    lodtensor_destroy(got);
    lodtensor_destroy(next);
    lodtensor_destroy(want);
    free(moved);
    free(file);
}

/* A partial load that must fail with `status` and a message containing `words`, leaving both
 * outputs alone. */
static void check_bad_slice(const uint8_t *bytes, size_t len, int64_t seek, const int64_t *dims, size_t ndim,
                            int32_t status, const char *words) {
    size_t consumed = SENTINEL_SIZE;
    lodtensor_t *out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_deserialize_slice(bytes, len, seek, dims, ndim, &consumed, &out), status, words);
    CHECK_EQ_SIZE(consumed, SENTINEL_SIZE);
    CHECK_EQ_PTR(out, fx_sentinel());
}

static void test_partial_load_errors(void) {
    static const int64_t one[1] = {1}, twelve[1] = {12}, negative[2] = {2, -1};
    static const int64_t ten[10] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    static const int64_t overflow[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    static const uint8_t size_t_head[22] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0x08, 19};
    size_t first = 0, len = 0, consumed = SENTINEL_SIZE;
    uint8_t *file = counting_file(&first, &len), bad[EXAMPLE_LEN];
    lodtensor_t *out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_deserialize_slice(file, len, 0, one, 1, &consumed, NULL), LODTENSOR_NULL_ARGUMENT,
                     "out");
    CHECK_STATUS_MSG(lodtensor_deserialize_slice(file, len, 0, one, 1, NULL, &out), LODTENSOR_NULL_ARGUMENT,
                     "out_consumed");
    CHECK_EQ_PTR(out, fx_sentinel());
    check_bad_slice(NULL, 5, 0, one, 1, LODTENSOR_NULL_ARGUMENT, "buf");
    check_bad_slice(file, len, 0, NULL, 1, LODTENSOR_NULL_ARGUMENT, "dims");
    check_bad_slice(file, len, -1, one, 1, LODTENSOR_INVALID_ARGUMENT, "seek: -1 is negative");
    check_bad_slice(file, len, 0, ten, 10, LODTENSOR_INVALID_ARGUMENT, "ndim");
    check_bad_slice(file, len, 0, negative, 2, LODTENSOR_INVALID_ARGUMENT, "negative");
    check_bad_slice(file, len, 0, overflow, 2, LODTENSOR_OUT_OF_MEMORY, "overflows");
    check_bad_slice(file, len, 1, twelve, 1, LODTENSOR_INVALID_ARGUMENT, "ends past the record's 12");
    check_bad_slice(file, len, 13, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "ends past the record's 12");
    /* The record as a whole read checks it: cut short, a bad version, an element type without a
     * dtype; and one with LoD. */
    check_bad_slice(file, first - 1, 0, one, 1, LODTENSOR_INVALID_ARGUMENT, "the bytes end inside the record");
    example_record(bad);
    bad[0] = 1;
    check_bad_slice(bad, sizeof bad, 0, one, 1, LODTENSOR_INVALID_ARGUMENT, "LoDTensor version 1");
    check_bad_slice(size_t_head, sizeof size_t_head, 0, one, 1, LODTENSOR_UNSUPPORTED, "SIZE_T");
    check_bad_slice(file + first, EXAMPLE_LEN, 0, one, 1, LODTENSOR_INVALID_ARGUMENT, "without LoD");
    free(file);
}

static void test_with_cuda(size_t count) {
    uint8_t want[EXAMPLE_LEN], got[EXAMPLE_LEN];
    size_t len = 0;
    lodtensor_t *x = make_example(), *on_device = NULL;
    (void)count;
    example_record(want);
    if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &on_device))) {
        CHECK_OK(lodtensor_serialize(on_device, NULL, 0, &len));
        CHECK_EQ_SIZE(len, EXAMPLE_LEN);
        memset(got, 0, sizeof got);
        if (CHECK_OK(lodtensor_serialize(on_device, got, sizeof got, &len))) {
            CHECK(memcmp(got, want, EXAMPLE_LEN) == 0);
        }
    }
    lodtensor_destroy(on_device);
    lodtensor_destroy(x);
}

static void test_without_cuda(void) {}

int main(void) {
    test_spec_example();
    test_read_back_unaligned();
    test_save_combine();
    test_serialize_errors();
    test_deserialize_errors();
    test_bad_descs();
    test_partial_load();
    test_partial_load_errors();
    fx_with_or_without_cuda("test_serialize", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
