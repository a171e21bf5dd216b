/* test_tensor_array: the TensorArray family of the C API (spec §5): the array container, the rank
 * table, unpack/pack by rank (Paddle's lod_tensor_to_array / array_to_lod_tensor), shrink and
 * reorder, concat/stack/unstack, and the dynamic-RNN driver with a C step function, including
 * every documented failure, "outputs are written only on success" and the ownership rules
 * (valgrind runs this program too, so a leaked or double-freed handle fails it). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define SENTINEL_SIZE ((size_t)0x5EED5EED)

static tensor_array_t *array_sentinel(void) { return (tensor_array_t *)(void *)fx_sentinel(); }
static rank_table_t *table_sentinel(void) { return (rank_table_t *)(void *)fx_sentinel(); }

/* t is float32 [n, width] whose row i holds fixture row rows[i]. */
static int check_row_list(const lodtensor_t *t, const size_t *rows, size_t n, size_t width, const char *file,
                          int line) {
    const void *data = NULL;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0, i, c;
    int ok = lodtensor_data(t, &data) == LODTENSOR_OK && lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim) == 0;
    ok = ok && ndim == 2 && dims[0] == (int64_t)n && dims[1] == (int64_t)width;
    if (!ok) {
        fprintf(stderr, "%s:%d: expected a [%zu, %zu] tensor\n", file, line, n, width);
        return check_record(0);
    }
    for (i = 0; i < n; ++i) {
        for (c = 0; c < width; ++c) {
            if (((const float *)data)[i * width + c] != fx_value(rows[i], c)) {
                fprintf(stderr, "%s:%d: row %zu is not fixture row %zu\n", file, line, i, rows[i]);
                return check_record(0);
            }
        }
    }
    return check_record(1);
}
#define CHECK_ROW_LIST(t, rows, n, width) check_row_list((t), (rows), (n), (width), __FILE__, __LINE__)

static size_t size_of(const tensor_array_t *a) {
    size_t n = SENTINEL_SIZE;
    CHECK_OK(tensor_array_size(a, &n));
    return n;
}

/* level_1 of test_lod_tensor_array_ops.py: lengths [[2,3],[3,6,2,6,3]], 20 rows. */
static const size_t l1_sizes[2] = {2, 5}, l1_lengths[7] = {2, 3, 3, 6, 2, 6, 3};

static int32_t make_level_1(size_t width, lodtensor_t **out) {
    return fx_make_f32(20, width, LODTENSOR_LOD_LENGTHS, l1_sizes, 2, l1_lengths, 7, out);
}

/* A float32 [rows, width] fixture tensor without LoD. */
static int32_t make_dense(size_t rows, size_t width, lodtensor_t **out) {
    return fx_make_f32(rows, width, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, out);
}

/* A tensor of `dtype` with the given dims, zero-filled, no LoD. */
static int32_t make_zeros(lodtensor_dtype_t dtype, const int64_t *dims, size_t ndim, lodtensor_t **out) {
    size_t n = 1, i;
    void *data;
    int32_t status;
    for (i = 0; i < ndim; ++i) {
        n *= (size_t)dims[i];
    }
    n *= dtype.bits / 8;
    data = n ? calloc(n, 1) : NULL;
    status = lodtensor_create(dtype, dims, ndim, data, n, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, out);
    free(data);
    return status;
}

static void test_array_container(void) {
    tensor_array_t *a = NULL, *untouched = array_sentinel();
    lodtensor_t *x = NULL, *y = NULL, *r = NULL, *keep = fx_sentinel();
    const void *px = NULL, *pr = NULL;
    void *w = NULL;
    size_t n = SENTINEL_SIZE;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0;

    CHECK_STATUS_MSG(tensor_array_create(NULL), LODTENSOR_NULL_ARGUMENT, "out");
    if (!CHECK_OK(tensor_array_create(&a))) {
        return;
    }
    tensor_array_destroy(NULL);
    CHECK_EQ_SIZE(size_of(a), 0);
    CHECK_STATUS_MSG(tensor_array_size(NULL, &n), LODTENSOR_NULL_ARGUMENT, "a");
    CHECK_STATUS_MSG(tensor_array_size(a, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_OK(make_dense(3, 2, &x));
    CHECK_OK(make_level_1(1, &y));

    /* write: share or copy; grows with 0-row gap slots. */
    CHECK_STATUS_MSG(tensor_array_write(NULL, 0, x, false), LODTENSOR_NULL_ARGUMENT, "a");
    CHECK_STATUS_MSG(tensor_array_write(a, 0, NULL, false), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(tensor_array_write(a, SIZE_MAX, x, false), LODTENSOR_OUT_OF_MEMORY, "index");
    CHECK_EQ_SIZE(size_of(a), 0);
    CHECK_OK(tensor_array_write(a, 0, x, false));
    CHECK_OK(tensor_array_write(a, 1, x, true));
    CHECK_OK(tensor_array_write(a, 4, y, false));
    CHECK_EQ_SIZE(size_of(a), 5);

    /* read: out of range, NULLs, then shared vs copied. */
    CHECK_STATUS_MSG(tensor_array_read(a, 5, false, &keep), LODTENSOR_OUT_OF_RANGE, "index");
    CHECK_EQ_PTR(keep, fx_sentinel());
    CHECK_STATUS_MSG(tensor_array_read(NULL, 0, false, &r), LODTENSOR_NULL_ARGUMENT, "a");
    CHECK_STATUS_MSG(tensor_array_read(a, 0, false, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_OK(lodtensor_data(x, &px));
    if (CHECK_OK(tensor_array_read(a, 0, false, &r))) {
        CHECK_OK(lodtensor_data(r, &pr));
        CHECK_EQ_PTR(pr, px);
        lodtensor_destroy(r);
    }
    if (CHECK_OK(tensor_array_read(a, 1, false, &r))) {
        CHECK_OK(lodtensor_data(r, &pr));
        CHECK(pr != px);
        CHECK_ROWS(r, 0, 3, 2);
        lodtensor_destroy(r);
    }
    if (CHECK_OK(tensor_array_read(a, 0, true, &r))) {
        CHECK_OK(lodtensor_data_mut(r, &w));
        CHECK(w != px);
        ((float *)w)[0] = -1.0f;
        CHECK_ROWS(x, 0, 3, 2);
        lodtensor_destroy(r);
    }
    if (CHECK_OK(tensor_array_read(a, 2, false, &r))) { /* a gap slot: [0, 1] like y, no LoD */
        CHECK_OK(lodtensor_dims(r, dims, LODTENSOR_MAX_DIMS, &ndim));
        CHECK_EQ_SIZE(ndim, 2);
        CHECK_EQ_INT(dims[0], 0);
        CHECK_EQ_INT(dims[1], 1);
        CHECK_EQ_SIZE(fx_levels(r), 0);
        lodtensor_destroy(r);
    }
    if (CHECK_OK(tensor_array_read(a, 4, false, &r))) {
        CHECK_EQ_SIZE(fx_levels(r), 2);
        CHECK_ROWS(r, 0, 20, 1);
        lodtensor_destroy(r);
    }
    /* The array keeps its elements alive after the caller destroys its own handles. */
    lodtensor_destroy(x);
    lodtensor_destroy(y);
    if (CHECK_OK(tensor_array_read(a, 0, false, &r))) {
        CHECK_ROWS(r, 0, 3, 2);
        lodtensor_destroy(r);
    }

    CHECK_STATUS_MSG(tensor_array_clear(NULL), LODTENSOR_NULL_ARGUMENT, "a");
    CHECK_OK(tensor_array_clear(a));
    CHECK_EQ_SIZE(size_of(a), 0);
    CHECK_STATUS(tensor_array_read(a, 0, false, &keep), LODTENSOR_OUT_OF_RANGE);
    CHECK_EQ_PTR(untouched, array_sentinel());
    tensor_array_destroy(a);
}

/* Doc case 1 of tensor_array_to_tensor (concat along axis 1) and doc case 2 (stack), unstack. */
static void test_to_tensor_and_unstack(void) {
    static const float a0[6] = {0.6f, 0.1f, 0.3f, 0.5f, 0.3f, 0.2f}, a1[2] = {1.3f, 1.8f},
                       a2[4] = {2.3f, 2.1f, 2.5f, 2.4f};
    static const float want[12] = {0.6f, 0.1f, 0.3f, 1.3f, 2.3f, 2.1f, 0.5f, 0.3f, 0.2f, 1.8f, 2.5f, 2.4f};
    const float *parts[3] = {a0, a1, a2};
    const int64_t widths[3] = {3, 1, 2};
    tensor_array_t *a = NULL, *u = NULL, *keep_a = array_sentinel();
    lodtensor_t *t = NULL, *out = NULL, *keep = fx_sentinel(), *scalar = NULL, *i32 = NULL, *big = NULL;
    size_t sizes[3] = {0, 0, 0}, small[2], i, ndim = 0, n;
    int64_t dims[LODTENSOR_MAX_DIMS];
    const void *data = NULL;
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, huge[2] = {0, (int64_t)1 << 62};

    if (!CHECK_OK(tensor_array_create(&a))) {
        return;
    }
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 0, false, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "empty");
    for (i = 0; i < 3; ++i) {
        int64_t d[2];
        d[0] = 2;
        d[1] = widths[i];
        CHECK_OK(lodtensor_create(fx_f32(), d, 2, parts[i], (size_t)(2 * widths[i]) * sizeof(float),
                                  LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t));
        CHECK_OK(tensor_array_write(a, i, t, false));
        lodtensor_destroy(t);
    }
    CHECK_STATUS_MSG(tensor_array_to_tensor(NULL, 1, false, &out, NULL, 0), LODTENSOR_NULL_ARGUMENT, "a");
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 1, false, NULL, NULL, 0), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 1, false, &keep, small, 2), LODTENSOR_BUFFER_TOO_SMALL, "sizes");
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 2, false, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "axis");
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, -3, false, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "axis");
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 0, false, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "array[1]");
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 1, true, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "array[1]");
    CHECK_EQ_PTR(keep, fx_sentinel());
    if (CHECK_OK(tensor_array_to_tensor(a, -1, false, &out, sizes, 3))) {
        CHECK_OK(lodtensor_dims(out, dims, LODTENSOR_MAX_DIMS, &ndim));
        CHECK_EQ_SIZE(ndim, 2);
        CHECK_EQ_INT(dims[0], 2);
        CHECK_EQ_INT(dims[1], 6);
        CHECK_OK(lodtensor_data(out, &data));
        CHECK(memcmp(data, want, sizeof want) == 0);
        CHECK_EQ_SIZE(sizes[0], 3);
        CHECK_EQ_SIZE(sizes[1], 1);
        CHECK_EQ_SIZE(sizes[2], 2);
        CHECK_EQ_SIZE(fx_levels(out), 0);
        lodtensor_destroy(out);
    }
    CHECK_OK(tensor_array_to_tensor(a, 1, false, &out, NULL, 0)); /* sizes are optional */
    lodtensor_destroy(out);

    /* Stack three [2, 2] along axis 1 -> [2, 3, 2]; unstack along axis 1 gives them back. */
    CHECK_OK(tensor_array_clear(a));
    for (i = 0; i < 3; ++i) {
        CHECK_OK(fx_make_f32(2, 2, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t));
        CHECK_OK(tensor_array_write(a, i, t, true));
        lodtensor_destroy(t);
    }
    if (CHECK_OK(tensor_array_to_tensor(a, 1, true, &out, sizes, 3))) {
        CHECK_OK(lodtensor_dims(out, dims, LODTENSOR_MAX_DIMS, &ndim));
        CHECK_EQ_SIZE(ndim, 3);
        CHECK_EQ_INT(dims[1], 3);
        CHECK_EQ_SIZE(sizes[0], 2);
        CHECK_STATUS_MSG(tensor_array_unstack(NULL, 1, &keep_a), LODTENSOR_NULL_ARGUMENT, "x");
        CHECK_STATUS_MSG(tensor_array_unstack(out, 1, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(tensor_array_unstack(out, 3, &keep_a), LODTENSOR_INVALID_ARGUMENT, "axis");
        CHECK_STATUS_MSG(tensor_array_unstack(out, -4, &keep_a), LODTENSOR_INVALID_ARGUMENT, "axis");
        CHECK_EQ_PTR(keep_a, array_sentinel());
        if (CHECK_OK(tensor_array_unstack(out, -2, &u))) {
            CHECK_EQ_SIZE(size_of(u), 3);
            for (i = 0; i < 3; ++i) {
                CHECK_OK(tensor_array_read(u, i, false, &t));
                CHECK_ROWS(t, 0, 2, 2);
                lodtensor_destroy(t);
            }
            tensor_array_destroy(u);
        }
        lodtensor_destroy(out);
    }
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 3, true, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "axis");

    /* Another dtype; 0-d tensors (stack yes, concat and unstack no); more than 9 dims. */
    CHECK_OK(make_zeros(fx_i32(), nine, 2, &i32));
    CHECK_OK(tensor_array_write(a, 3, i32, false));
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 0, false, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "array[3]");
    lodtensor_destroy(i32);
    CHECK_OK(tensor_array_clear(a));
    CHECK_OK(make_zeros(fx_f32(), NULL, 0, &scalar));
    CHECK_OK(tensor_array_write(a, 1, scalar, false)); /* slot 0 becomes a [0] gap: stack fails */
    CHECK_STATUS(tensor_array_to_tensor(a, 0, true, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT);
    CHECK_OK(tensor_array_write(a, 0, scalar, false));
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 0, false, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "0-d");
    if (CHECK_OK(tensor_array_to_tensor(a, 0, true, &out, sizes, 3))) {
        CHECK_OK(lodtensor_dims(out, dims, LODTENSOR_MAX_DIMS, &ndim));
        CHECK_EQ_SIZE(ndim, 1);
        CHECK_EQ_INT(dims[0], 2);
        CHECK_EQ_SIZE(sizes[0], 1);
        lodtensor_destroy(out);
    }
    CHECK_STATUS_MSG(tensor_array_unstack(scalar, 0, &keep_a), LODTENSOR_INVALID_ARGUMENT, "0-d");
    lodtensor_destroy(scalar);
    CHECK_OK(tensor_array_clear(a));
    CHECK_OK(make_zeros(fx_f32(), nine, 9, &t));
    CHECK_OK(tensor_array_write(a, 0, t, false));
    lodtensor_destroy(t);
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 0, true, &keep, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "dims");
    /* [0, 2^62] tensors of bytes: two concatenated pass INT64_MAX columns (dims are int64_t),
     * five overflow the size. */
    CHECK_OK(tensor_array_clear(a));
    CHECK_OK(make_zeros(fx_u8(), huge, 2, &big));
    for (n = 0; n < 5; ++n) {
        CHECK_OK(tensor_array_write(a, n, big, false));
    }
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 1, false, &keep, NULL, 0), LODTENSOR_OUT_OF_MEMORY, "overflow");
    CHECK_OK(tensor_array_clear(a));
    for (n = 0; n < 2; ++n) {
        CHECK_OK(tensor_array_write(a, n, big, false));
    }
    CHECK_STATUS_MSG(tensor_array_to_tensor(a, 1, false, &keep, NULL, 0), LODTENSOR_OUT_OF_MEMORY, "dims");
    lodtensor_destroy(big);
    CHECK_EQ_PTR(keep, fx_sentinel());
    tensor_array_destroy(a);
}

/* lod_rank_table (test_lod_rank_table.py) and its accessors. */
static void test_rank_table(void) {
    static const size_t sizes[3] = {2, 3, 7}, lengths[12] = {1, 2, 5, 1, 1, 3, 1, 5, 1, 3, 3, 1};
    lodtensor_t *x = NULL, *dense = NULL;
    rank_table_t *t = NULL, *keep = table_sentinel();
    size_t n = SENTINEL_SIZE, idx[3], len[3], small[2];
    if (!CHECK_OK(fx_make_f32(17, 1, LODTENSOR_LOD_LENGTHS, sizes, 3, lengths, 12, &x))) {
        return;
    }
    CHECK_OK(make_dense(3, 1, &dense));
    CHECK_STATUS_MSG(rank_table_create(NULL, 0, &t), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(rank_table_create(x, 0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(rank_table_create(x, 3, &keep), LODTENSOR_INVALID_ARGUMENT, "level");
    CHECK_STATUS_MSG(rank_table_create(dense, 0, &keep), LODTENSOR_INVALID_ARGUMENT, "level");
    CHECK_EQ_PTR(keep, table_sentinel());
    rank_table_destroy(NULL);
    if (CHECK_OK(rank_table_create(x, 1, &t))) {
        CHECK_OK(rank_table_size(t, &n));
        CHECK_EQ_SIZE(n, 3);
        CHECK_OK(rank_table_level(t, &n));
        CHECK_EQ_SIZE(n, 1);
        CHECK_OK(rank_table_max_sequence_len(t, &n));
        CHECK_EQ_SIZE(n, 5);
        n = SENTINEL_SIZE;
        CHECK_OK(rank_table_items(t, NULL, NULL, 0, &n));
        CHECK_EQ_SIZE(n, 3);
        CHECK_OK(rank_table_items(t, idx, len, 3, &n));
        CHECK(idx[0] == 0 && idx[1] == 1 && idx[2] == 2);
        CHECK(len[0] == 5 && len[1] == 1 && len[2] == 1);
        CHECK_OK(rank_table_items(t, NULL, len, 3, &n));
        CHECK_STATUS_MSG(rank_table_items(t, small, NULL, 2, &n), LODTENSOR_BUFFER_TOO_SMALL, "indices");
        CHECK_STATUS_MSG(rank_table_items(t, NULL, small, 2, &n), LODTENSOR_BUFFER_TOO_SMALL, "lengths");
        CHECK_STATUS_MSG(rank_table_items(NULL, idx, len, 3, &n), LODTENSOR_NULL_ARGUMENT, "table");
        CHECK_STATUS_MSG(rank_table_items(t, idx, len, 3, NULL), LODTENSOR_NULL_ARGUMENT, "out_len");
        CHECK_STATUS_MSG(rank_table_size(NULL, &n), LODTENSOR_NULL_ARGUMENT, "table");
        CHECK_STATUS_MSG(rank_table_size(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(rank_table_level(NULL, &n), LODTENSOR_NULL_ARGUMENT, "table");
        CHECK_STATUS_MSG(rank_table_level(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(rank_table_max_sequence_len(NULL, &n), LODTENSOR_NULL_ARGUMENT, "table");
        CHECK_STATUS_MSG(rank_table_max_sequence_len(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        rank_table_destroy(t);
    }
    lodtensor_destroy(dense);
    lodtensor_destroy(x);
}

/* level_1 of test_lod_tensor_array_ops.py through unpack and pack, and their failures. */
static void test_unpack_pack(void) {
    static const size_t step0[5] = {9, 10, 0, 1, 2}, step2[3] = {17, 18, 19};
    static const size_t step1[12] = {11, 12, 13, 14, 15, 16, 3, 4, 5, 6, 7, 8};
    static const size_t lod0[3] = {0, 2, 5}, lod1[3] = {0, 6, 12}, lod2[2] = {0, 3};
    static const size_t x_top[3] = {0, 2, 5}, x_rows[6] = {0, 3, 9, 11, 17, 20};
    static const size_t other_sizes[1] = {2}, other_lengths[2] = {3, 1};
    lodtensor_t *x = NULL, *t = NULL, *back = NULL, *keep = fx_sentinel(), *other = NULL, *odd = NULL;
    rank_table_t *table = NULL, *foreign = NULL;
    tensor_array_t *a = NULL, *b = NULL, *keep_a = array_sentinel();
    size_t i;
    if (!CHECK_OK(make_level_1(2, &x)) || !CHECK_OK(rank_table_create(x, 0, &table))) {
        return;
    }
    CHECK_STATUS_MSG(tensor_array_unpack(NULL, table, &a), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(tensor_array_unpack(x, NULL, &a), LODTENSOR_NULL_ARGUMENT, "table");
    CHECK_STATUS_MSG(tensor_array_unpack(x, table, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    /* A table of other lengths, and x without the ranked level. */
    CHECK_OK(fx_make_f32(4, 2, LODTENSOR_LOD_LENGTHS, other_sizes, 1, other_lengths, 2, &other));
    CHECK_OK(rank_table_create(other, 0, &foreign));
    CHECK_STATUS_MSG(tensor_array_unpack(x, foreign, &keep_a), LODTENSOR_INVALID_ARGUMENT, "rank_table");
    CHECK_OK(make_dense(20, 2, &t));
    CHECK_STATUS_MSG(tensor_array_unpack(t, table, &keep_a), LODTENSOR_INVALID_ARGUMENT, "x");
    lodtensor_destroy(t);
    CHECK_EQ_PTR(keep_a, array_sentinel());

    if (!CHECK_OK(tensor_array_unpack(x, table, &a))) {
        return;
    }
    CHECK_EQ_SIZE(size_of(a), 3);
    CHECK_OK(tensor_array_read(a, 0, false, &t));
    CHECK_ROW_LIST(t, step0, 5, 2);
    CHECK_OFFSETS(t, 0, lod0, 3);
    lodtensor_destroy(t);
    CHECK_OK(tensor_array_read(a, 1, false, &t));
    CHECK_ROW_LIST(t, step1, 12, 2);
    CHECK_OFFSETS(t, 0, lod1, 3);
    lodtensor_destroy(t);
    CHECK_OK(tensor_array_read(a, 2, true, &t));
    CHECK_ROW_LIST(t, step2, 3, 2);
    CHECK_OFFSETS(t, 0, lod2, 2);
    lodtensor_destroy(t);

    CHECK_STATUS_MSG(tensor_array_pack(NULL, table, &back), LODTENSOR_NULL_ARGUMENT, "a");
    CHECK_STATUS_MSG(tensor_array_pack(a, NULL, &back), LODTENSOR_NULL_ARGUMENT, "table");
    CHECK_STATUS_MSG(tensor_array_pack(a, table, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    if (CHECK_OK(tensor_array_pack(a, table, &back))) {
        CHECK_ROWS(back, 0, 20, 2);
        CHECK_EQ_SIZE(fx_levels(back), 2);
        CHECK_OFFSETS(back, 0, x_top, 3);
        CHECK_OFFSETS(back, 1, x_rows, 6);
        lodtensor_destroy(back);
    }
    /* The table ranks 3 steps: the other table's longest is 3 but it has 2 sequences. */
    CHECK_STATUS_MSG(tensor_array_pack(a, foreign, &keep), LODTENSOR_INVALID_ARGUMENT, "array[1]");

    /* Pack failures: empty array, too few elements, wrong dtype, wrong unit count, LoD levels. */
    CHECK_OK(tensor_array_create(&b));
    CHECK_STATUS_MSG(tensor_array_pack(b, table, &keep), LODTENSOR_INVALID_ARGUMENT, "empty");
    for (i = 0; i < 2; ++i) {
        CHECK_OK(tensor_array_read(a, i, false, &t));
        CHECK_OK(tensor_array_write(b, i, t, false));
        lodtensor_destroy(t);
    }
    CHECK_STATUS_MSG(tensor_array_pack(b, table, &keep), LODTENSOR_INVALID_ARGUMENT, "length");
    {
        int64_t d[2] = {1, 2};
        CHECK_OK(make_zeros(fx_i32(), d, 2, &odd));
        CHECK_OK(tensor_array_write(b, 2, odd, false));
        lodtensor_destroy(odd);
        CHECK_STATUS_MSG(tensor_array_pack(b, table, &keep), LODTENSOR_INVALID_ARGUMENT, "array[2]");
        CHECK_OK(make_dense(2, 2, &odd)); /* 2 rows at step 2, where 1 sequence is alive */
        CHECK_OK(tensor_array_write(b, 2, odd, false));
        lodtensor_destroy(odd);
        CHECK_STATUS_MSG(tensor_array_pack(b, table, &keep), LODTENSOR_INVALID_LOD, "array[2]");
        CHECK_OK(fx_make_f32(4, 2, LODTENSOR_LOD_LENGTHS, other_sizes, 1, other_lengths, 2, &odd));
        CHECK_OK(tensor_array_write(b, 2, odd, false));
        lodtensor_destroy(odd);
        CHECK_STATUS_MSG(tensor_array_pack(b, table, &keep), LODTENSOR_INVALID_ARGUMENT, "array[2]");
        /* A 0-d element 0: there are no rows to pack. */
        CHECK_OK(make_zeros(fx_f32(), NULL, 0, &odd));
        CHECK_OK(tensor_array_write(b, 0, odd, false));
        lodtensor_destroy(odd);
        CHECK_STATUS_MSG(tensor_array_pack(b, table, &keep), LODTENSOR_INVALID_ARGUMENT,
                         "array[0]: a 0-d tensor has no rows");
    }
    CHECK_EQ_PTR(keep, fx_sentinel());
    tensor_array_destroy(b);
    tensor_array_destroy(a);
    rank_table_destroy(foreign);
    lodtensor_destroy(other);
    rank_table_destroy(table);
    lodtensor_destroy(x);
}

/* test_shrink_rnn_memory.py and the reorder doc example. */
static void test_shrink_and_reorder(void) {
    static const size_t t_sizes[1] = {3}, t_lengths[3] = {1, 2, 3}; /* items (2,3),(1,2),(0,1) */
    static const size_t x_sizes[1] = {3}, x_lengths[3] = {2, 3, 1};
    static const size_t lod_3[4] = {0, 2, 5, 6}, lod_2[3] = {0, 2, 5};
    static const size_t p_sizes[1] = {4}, p_lengths[4] = {3, 1, 2, 4}; /* order 3, 0, 2, 1 */
    static const size_t s_sizes[2] = {4, 4}, s_lengths[8] = {1, 2, 0, 1, 2, 1, 3, 2};
    static const size_t reordered[8] = {6, 7, 0, 1, 2, 3, 4, 5}, rows_perm[4] = {3, 0, 2, 1};
    static const size_t top_want[5] = {0, 1, 2, 2, 4}, rows_want[5] = {0, 2, 4, 5, 8};
    lodtensor_t *tsrc = NULL, *x = NULL, *m1 = NULL, *m2 = NULL, *dense = NULL, *out = NULL, *keep = fx_sentinel();
    lodtensor_t *psrc = NULL, *seqs = NULL, *scalar = NULL;
    rank_table_t *table = NULL, *perm = NULL;
    CHECK_OK(fx_make_f32(6, 1, LODTENSOR_LOD_LENGTHS, t_sizes, 1, t_lengths, 3, &tsrc));
    CHECK_OK(fx_make_f32(6, 2, LODTENSOR_LOD_LENGTHS, x_sizes, 1, x_lengths, 3, &x));
    CHECK_OK(make_dense(3, 2, &dense));
    if (!CHECK_OK(rank_table_create(tsrc, 0, &table))) {
        return;
    }
    CHECK_STATUS_MSG(rank_table_shrink_rnn_memory(NULL, x, 0, &m1), LODTENSOR_NULL_ARGUMENT, "table");
    CHECK_STATUS_MSG(rank_table_shrink_rnn_memory(table, NULL, 0, &m1), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(rank_table_shrink_rnn_memory(table, x, 0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    if (CHECK_OK(rank_table_shrink_rnn_memory(table, x, 0, &m1))) {
        CHECK_ROWS(m1, 0, 6, 2);
        CHECK_OFFSETS(m1, 0, lod_3, 4);
        if (CHECK_OK(rank_table_shrink_rnn_memory(table, m1, 1, &m2))) {
            CHECK_ROWS(m2, 0, 5, 2);
            CHECK_OFFSETS(m2, 0, lod_2, 3);
            /* Fewer sequences than live ones (Our rule). */
            CHECK_STATUS_MSG(rank_table_shrink_rnn_memory(table, m2, 0, &keep), LODTENSOR_INVALID_ARGUMENT, "x");
            lodtensor_destroy(m2);
        }
        lodtensor_destroy(m1);
    }
    if (CHECK_OK(rank_table_shrink_rnn_memory(table, dense, 1, &m1))) {
        CHECK_ROWS(m1, 0, 2, 2);
        CHECK_EQ_SIZE(fx_levels(m1), 0);
        lodtensor_destroy(m1);
    }
    if (CHECK_OK(rank_table_shrink_rnn_memory(table, x, 3, &m1))) {
        CHECK_ROWS(m1, 0, 0, 2);
        CHECK_EQ_SIZE(fx_levels(m1), 0);
        lodtensor_destroy(m1);
    }
    CHECK_OK(make_zeros(fx_f32(), NULL, 0, &scalar));
    CHECK_STATUS_MSG(rank_table_shrink_rnn_memory(table, scalar, 0, &keep), LODTENSOR_INVALID_ARGUMENT, "0-d");

    /* reorder: table order 3, 0, 2, 1 over 4 two-level sequences and over 4 rows. */
    CHECK_OK(fx_make_f32(10, 1, LODTENSOR_LOD_LENGTHS, p_sizes, 1, p_lengths, 4, &psrc));
    CHECK_OK(fx_make_f32(8, 2, LODTENSOR_LOD_LENGTHS, s_sizes, 2, s_lengths, 8, &seqs));
    CHECK_OK(rank_table_create(psrc, 0, &perm));
    CHECK_STATUS_MSG(rank_table_reorder(NULL, seqs, &out), LODTENSOR_NULL_ARGUMENT, "table");
    CHECK_STATUS_MSG(rank_table_reorder(perm, NULL, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(rank_table_reorder(perm, seqs, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(rank_table_reorder(perm, dense, &keep), LODTENSOR_INVALID_ARGUMENT, "permutation");
    CHECK_STATUS_MSG(rank_table_reorder(perm, scalar, &keep), LODTENSOR_INVALID_ARGUMENT, "0-d");
    if (CHECK_OK(rank_table_reorder(perm, seqs, &out))) {
        CHECK_ROW_LIST(out, reordered, 8, 2);
        CHECK_OFFSETS(out, 0, top_want, 5);
        CHECK_OFFSETS(out, 1, rows_want, 5);
        lodtensor_destroy(out);
    }
    lodtensor_destroy(dense);
    CHECK_OK(make_dense(4, 2, &dense));
    if (CHECK_OK(rank_table_reorder(perm, dense, &out))) {
        CHECK_ROW_LIST(out, rows_perm, 4, 2);
        lodtensor_destroy(out);
    }
    CHECK_EQ_PTR(keep, fx_sentinel());
    lodtensor_destroy(scalar);
    rank_table_destroy(perm);
    lodtensor_destroy(seqs);
    lodtensor_destroy(psrc);
    rank_table_destroy(table);
    lodtensor_destroy(dense);
    lodtensor_destroy(x);
    lodtensor_destroy(tsrc);
}

/* ---- the dynamic-RNN driver ---------------------------------------------------------------- */

enum { MODE_OK, MODE_SEPARATE, MODE_FAIL, MODE_NULL_STATE, MODE_BORROWED, MODE_WRONG_ROWS, MODE_LOD_AT_1,
       MODE_INT32_AT_1 };

typedef struct {
    int mode;
    size_t calls;
} rnn_ctx;

#define W 2

/* h = 0.5 * prev + input, row-wise over W columns. */
static int32_t step_fn(size_t step, const lodtensor_t *in, const lodtensor_t *prev, lodtensor_t **out,
                       lodtensor_t **state, void *user_data) {
    static const size_t ones[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    rnn_ctx *ctx = (rnn_ctx *)user_data;
    const void *px = NULL, *ph = NULL;
    const float *x, *h;
    float *y;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0, n, i, rows, levels;
    int32_t status;
    ctx->calls++;
    if (lodtensor_data(in, &px) || lodtensor_data(prev, &ph) || lodtensor_dims(in, dims, LODTENSOR_MAX_DIMS, &ndim)) {
        return 100;
    }
    if (ctx->mode == MODE_BORROWED) {
        *out = (lodtensor_t *)in;
        *state = (lodtensor_t *)prev;
        return 0;
    }
    x = (const float *)px;
    h = (const float *)ph;
    rows = (size_t)dims[0];
    n = rows * W;
    y = (float *)malloc((n ? n : 1) * sizeof(float));
    if (y == NULL) {
        return 102;
    }
    for (i = 0; i < n; ++i) {
        y[i] = 0.5f * h[i] + x[i];
    }
    /* MODE_LOD_AT_1: the step-1 output carries a LoD of one sequence per row. */
    levels = ctx->mode == MODE_LOD_AT_1 && step == 1 ? 1 : 0;
    /* MODE_INT32_AT_1: the step-1 output (and state) is int32 (the same bytes), the others float32. */
    status = lodtensor_create(ctx->mode == MODE_INT32_AT_1 && step == 1 ? fx_i32() : fx_f32(), dims, 2, y,
                              n * sizeof(float), LODTENSOR_LOD_LENGTHS, &rows, levels, ones, levels ? rows : 0, out);
    free(y);
    if (status) {
        return status;
    }
    switch (ctx->mode) {
    case MODE_FAIL:
        if (step == 1) {
            return 42; /* *out stays set: the driver must destroy it */
        }
        *state = *out;
        return 0;
    case MODE_NULL_STATE:
        return 0;
    case MODE_WRONG_ROWS:
        return make_dense(1, W, state);
    case MODE_SEPARATE:
        return lodtensor_share(*out, state);
    default:
        *state = *out; /* the same handle for both: the driver destroys it once */
        return 0;
    }
}

static void test_dynamic_rnn(void) {
    /* 5 sequences of 3, 0, 5, 1, 2 rows; the state starts at fixture rows 100..104. */
    static const size_t sizes[1] = {5}, lengths[5] = {3, 0, 5, 1, 2}, offsets[6] = {0, 3, 3, 8, 9, 11};
    static const size_t two[1] = {2}, all_empty[2] = {0, 0};
    lodtensor_t *x = NULL, *init = NULL, *out = NULL, *keep = fx_sentinel(), *empty = NULL, *small = NULL;
    float expected[11 * W];
    const float *xd = NULL, *hd = NULL;
    const void *pd = NULL;
    rnn_ctx ctx;
    size_t s, r, c;
    static const int modes[5] = {MODE_OK, MODE_SEPARATE, MODE_OK, MODE_SEPARATE, MODE_OK};
    if (!CHECK_OK(fx_make_f32(11, W, LODTENSOR_LOD_LENGTHS, sizes, 1, lengths, 5, &x))) {
        return;
    }
    {
        /* rows 100..104 of a fixture tensor: build directly. */
        float h0[5 * W];
        int64_t d[2] = {5, W};
        for (r = 0; r < 5; ++r) {
            for (c = 0; c < W; ++c) {
                h0[r * W + c] = fx_value(100 + r, c);
            }
        }
        CHECK_OK(lodtensor_create(fx_f32(), d, 2, h0, sizeof h0, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &init));
    }
    /* The direct per-sequence loop. */
    CHECK_OK(lodtensor_data(x, &pd));
    xd = (const float *)pd;
    CHECK_OK(lodtensor_data(init, &pd));
    hd = (const float *)pd;
    for (s = 0; s < 5; ++s) {
        float h[W];
        for (c = 0; c < W; ++c) {
            h[c] = hd[s * W + c];
        }
        for (r = offsets[s]; r < offsets[s + 1]; ++r) {
            for (c = 0; c < W; ++c) {
                h[c] = 0.5f * h[c] + xd[r * W + c];
                expected[r * W + c] = h[c];
            }
        }
    }
    for (s = 0; s < 2; ++s) {
        ctx.mode = modes[s];
        ctx.calls = 0;
        if (CHECK_OK(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, &out))) {
            CHECK_EQ_SIZE(ctx.calls, 5);
            CHECK_OFFSETS(out, 0, offsets, 6);
            CHECK_OK(lodtensor_data(out, &pd));
            CHECK(memcmp(pd, expected, sizeof expected) == 0);
            lodtensor_destroy(out);
        }
    }

    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(NULL, 0, init, step_fn, &ctx, &out), LODTENSOR_NULL_ARGUMENT, "x");
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, NULL, step_fn, &ctx, &out), LODTENSOR_NULL_ARGUMENT,
                     "init_state");
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, NULL, &ctx, &out), LODTENSOR_NULL_ARGUMENT, "step_fn");
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    ctx.mode = MODE_OK;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 1, init, step_fn, &ctx, &keep), LODTENSOR_INVALID_ARGUMENT,
                     "level");
    CHECK_OK(make_dense(3, W, &small));
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, small, step_fn, &ctx, &keep), LODTENSOR_INVALID_ARGUMENT,
                     "init_state");
    lodtensor_destroy(small);
    CHECK_OK(fx_make_f32(0, W, LODTENSOR_LOD_LENGTHS, two, 1, all_empty, 2, &empty));
    CHECK_OK(make_dense(2, W, &small));
    ctx.calls = 0;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(empty, 0, small, step_fn, &ctx, &keep), LODTENSOR_INVALID_ARGUMENT,
                     "empty");
    CHECK_EQ_SIZE(ctx.calls, 0);
    lodtensor_destroy(small);
    lodtensor_destroy(empty);

    ctx.mode = MODE_FAIL;
    ctx.calls = 0;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, &keep), LODTENSOR_CALLBACK_FAILED,
                     "status 42 at step 1");
    CHECK_EQ_SIZE(ctx.calls, 2);
    ctx.mode = MODE_NULL_STATE;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, &keep), LODTENSOR_INVALID_ARGUMENT,
                     "new_state NULL");
    ctx.mode = MODE_BORROWED;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, &keep), LODTENSOR_INVALID_ARGUMENT,
                     "borrowed");
    ctx.mode = MODE_WRONG_ROWS;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, &keep), LODTENSOR_INVALID_ARGUMENT,
                     "new state");
    ctx.mode = MODE_LOD_AT_1;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, &keep), LODTENSOR_INVALID_LOD,
                     "step outputs");
    ctx.mode = MODE_INT32_AT_1;
    ctx.calls = 0;
    CHECK_STATUS_MSG(tensor_array_dynamic_rnn(x, 0, init, step_fn, &ctx, &keep), LODTENSOR_INVALID_ARGUMENT,
                     "step outputs: array[1]");
    CHECK_EQ_SIZE(ctx.calls, 5);
    CHECK_EQ_PTR(keep, fx_sentinel());
    (void)modes;
    lodtensor_destroy(init);
    lodtensor_destroy(x);
}

int main(void) {
    test_array_container();
    test_to_tensor_and_unstack();
    test_rank_table();
    test_unpack_pack();
    test_shrink_and_reorder();
    test_dynamic_rnn();
    return CHECK_RETURN();
}
