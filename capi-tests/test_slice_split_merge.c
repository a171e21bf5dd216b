/* test_slice_split_merge: lodtensor_slice, lodtensor_split and lodtensor_merge: the worked examples
 * of spec §1.5 and §1.8, every other valid argument checked against simple reference
 * implementations written here, zero-copy sharing (data pointers), every documented failure and
 * "outputs are written only on success". */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define SENTINEL_SIZE ((size_t)0x5EED5EED)
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_LEVELS 4
#define MAX_OFFSETS 32

/* A LoD as the tests see it: levels of offsets. */
typedef struct {
    size_t num_levels;
    size_t len[MAX_LEVELS];
    size_t v[MAX_LEVELS][MAX_OFFSETS];
} lod_t;

/* The flat encoding lodtensor_create takes. */
static void flatten(const lod_t *lod, size_t *sizes, size_t *flat, size_t *flat_len) {
    size_t k, i, n = 0;
    for (k = 0; k < lod->num_levels; ++k) {
        sizes[k] = lod->len[k];
        for (i = 0; i < lod->len[k]; ++i) {
            flat[n++] = lod->v[k][i];
        }
    }
    *flat_len = n;
}

static int32_t make(size_t rows, size_t width, const lod_t *lod, lodtensor_t **out) {
    size_t sizes[MAX_LEVELS], flat[MAX_LEVELS * MAX_OFFSETS], n = 0;
    flatten(lod, sizes, flat, &n);
    return fx_make_f32(rows, width, LODTENSOR_LOD_OFFSETS, sizes, lod->num_levels, flat, n, out);
}

static int check_lod(const lodtensor_t *t, const lod_t *want, const char *file, int line) {
    size_t levels = SENTINEL_SIZE, k;
    int ok = lodtensor_lod_num_levels(t, &levels) == LODTENSOR_OK && levels == want->num_levels;
    if (!ok) {
        fprintf(stderr, "%s:%d: expected %zu LoD levels, got %zu\n", file, line, want->num_levels, levels);
        return check_record(0);
    }
    for (k = 0; k < want->num_levels; ++k) {
        ok = fx_check_offsets(t, k, want->v[k], want->len[k], file, line) && ok;
    }
    return ok;
}
#define CHECK_LOD(t, want) check_lod((t), (want), __FILE__, __LINE__)

/* The address of row `row` of a float32 tensor of `width` columns. */
static const float *row_address(const lodtensor_t *t, size_t row, size_t width) {
    const void *data = NULL;
    if (lodtensor_data(t, &data) != LODTENSOR_OK || data == NULL) {
        return NULL;
    }
    return (const float *)data + row * width;
}

/* ---- references --------------------------------------------------------------------------------- */

/* Rows of sequence `index` at `level`: walk down the levels (spec §1.1). */
static void ref_rows(const lod_t *lod, size_t level, size_t index, size_t *begin, size_t *end) {
    size_t k;
    *begin = lod->v[level][index];
    *end = lod->v[level][index + 1];
    for (k = level + 1; k < lod->num_levels; ++k) {
        *begin = lod->v[k][*begin];
        *end = lod->v[k][*end];
    }
}

/* SliceInLevel (spec §1.5): levels level.., each the part between the bounds found above, re-based. */
static void ref_slice(const lod_t *lod, size_t level, size_t begin, size_t end, lod_t *out) {
    size_t first = begin, last = end, k, i;
    out->num_levels = 0;
    for (k = level; k < lod->num_levels; ++k) {
        size_t base = lod->v[k][first], new_first = lod->v[k][first], new_last = lod->v[k][last];
        size_t *dst = out->v[out->num_levels];
        out->len[out->num_levels] = last - first + 1;
        for (i = first; i <= last; ++i) {
            dst[i - first] = lod->v[k][i] - base;
        }
        out->num_levels++;
        first = new_first;
        last = new_last;
    }
}

/* Merge (spec §1.8): each level is the concatenation of the parts' levels, each part shifted by the
 * current end of that level. */
static void ref_merge(const lod_t *const *parts, size_t count, lod_t *out) {
    size_t p, k, i;
    out->num_levels = count ? parts[0]->num_levels : 0;
    for (k = 0; k < out->num_levels; ++k) {
        out->len[k] = 1;
        out->v[k][0] = 0;
        for (p = 0; p < count; ++p) {
            size_t base = out->v[k][out->len[k] - 1];
            for (i = 1; i < parts[p]->len[k]; ++i) {
                out->v[k][out->len[k]++] = parts[p]->v[k][i] + base;
            }
        }
    }
}

/* ---- slice -------------------------------------------------------------------------------------- */

/* Spec §1.1 header LoD, 20 rows. */
static const lod_t header_lod = {3, {3, 4, 8}, {{0, 2, 3}, {0, 2, 4, 7}, {0, 2, 5, 7, 10, 12, 15, 20}}};

static void test_slice_worked_example(void) {
    /* Spec §1.5: SliceInLevel(L, 0, 1, 2) = [[0,1],[0,3],[0,2,5,10]], rows 10..20 of the parent. */
    static const lod_t want = {3, {2, 2, 4}, {{0, 1}, {0, 3}, {0, 2, 5, 10}}};
    const size_t width = 3;
    lodtensor_t *t = NULL, *s = NULL;
    const void *data = NULL;
    void *rw = NULL;
    if (!CHECK_OK(make(20, width, &header_lod, &t))) {
        return;
    }
    if (CHECK_OK(lodtensor_slice(t, 0, 1, 2, &s))) {
        CHECK_LOD(s, &want);
        CHECK_ROWS(s, 10, 10, width);
        /* Zero copy: the slice's first element is row 10 of the parent. */
        CHECK_OK(lodtensor_data(s, &data));
        CHECK_EQ_PTR(data, row_address(t, 10, width));
        /* A write through the slice is seen by the parent. */
        CHECK_OK(lodtensor_data_mut(s, &rw));
        ((float *)rw)[1] = -1.0f;
        CHECK(row_address(t, 10, width)[1] == -1.0f);
        lodtensor_destroy(s);
    }
    lodtensor_destroy(t);
}

static void test_slice_every_range(void) {
    const size_t width = 2;
    lodtensor_t *t = NULL;
    size_t level, begin, end;
    if (!CHECK_OK(make(20, width, &header_lod, &t))) {
        return;
    }
    for (level = 0; level < header_lod.num_levels; ++level) {
        size_t count = header_lod.len[level] - 1;
        for (begin = 0; begin < count; ++begin) {
            for (end = begin + 1; end <= count; ++end) {
                lodtensor_t *s = NULL;
                lod_t want;
                size_t rb, re, tmp;
                ref_slice(&header_lod, level, begin, end, &want);
                ref_rows(&header_lod, level, begin, &rb, &tmp);
                ref_rows(&header_lod, level, end - 1, &tmp, &re);
                if (!CHECK_OK(lodtensor_slice(t, level, begin, end, &s))) {
                    continue;
                }
                if (!(CHECK_LOD(s, &want) && CHECK_ROWS(s, rb, re - rb, width) &&
                      CHECK_EQ_PTR(row_address(s, 0, width), row_address(t, rb, width)))) {
                    fprintf(stderr, "  slice(level %zu, [%zu, %zu))\n", level, begin, end);
                }
                lodtensor_destroy(s);
            }
        }
    }
    lodtensor_destroy(t);
}

static void test_slice_of_slice_and_empty_sequences(void) {
    /* Paragraphs of 2, 0, 1 sentences; sentences of 0, 3, 1 words; words of 2, 0, 0, 4 rows. */
    static const lod_t lod = {3, {4, 4, 5}, {{0, 2, 2, 3}, {0, 0, 3, 4}, {0, 2, 2, 2, 6}}};
    lodtensor_t *t = NULL, *s = NULL, *ss = NULL;
    lod_t want, want2;
    size_t rows = SENTINEL_SIZE;
    if (!CHECK_OK(make(6, 1, &lod, &t))) {
        return;
    }
    /* The empty paragraph alone: 0 rows, LoD [[0,0],[0],[0]] (lower levels of zero sequences
     * under a level that ends at 0 are valid, README "where this library differs"). */
    ref_slice(&lod, 0, 1, 2, &want);
    CHECK(want.num_levels == 3 && want.len[0] == 2 && want.len[1] == 1 && want.len[2] == 1 && want.v[1][0] == 0);
    if (CHECK_OK(lodtensor_slice(t, 0, 1, 2, &s))) {
        int64_t dims[2] = {-1, -1};
        CHECK_LOD(s, &want);
        CHECK_OK(lodtensor_dims(s, dims, 2, &rows));
        CHECK_EQ_INT(dims[0], 0);
        lodtensor_destroy(s);
        s = NULL;
    }
    /* Paragraphs 0..3, then its sentences 1..3: a slice of a slice is a slice of the parent. */
    if (CHECK_OK(lodtensor_slice(t, 0, 0, 3, &s)) && CHECK_OK(lodtensor_slice(s, 1, 1, 3, &ss))) {
        ref_slice(&lod, 1, 1, 3, &want2);
        CHECK_LOD(ss, &want2);
        CHECK_ROWS(ss, 0, 6, 1);
    }
    lodtensor_destroy(ss);
    lodtensor_destroy(s);
    lodtensor_destroy(t);
}

static void test_slice_failures(void) {
    lodtensor_t *t = NULL, *plain = NULL, *out;
    if (!CHECK_OK(make(20, 2, &header_lod, &t)) ||
        !CHECK_OK(fx_make_f32(4, 2, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &plain))) {
        lodtensor_destroy(t);
        return;
    }
    out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_slice(t, 3, 0, 1, &out), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_slice(t, SIZE_MAX, 0, 1, &out), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_slice(plain, 0, 0, 1, &out), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_slice(t, 0, 1, 1, &out), LODTENSOR_OUT_OF_RANGE, "begin");
    CHECK_STATUS_MSG(lodtensor_slice(t, 0, 0, 0, &out), LODTENSOR_OUT_OF_RANGE, "begin");
    CHECK_STATUS_MSG(lodtensor_slice(t, 0, 2, 1, &out), LODTENSOR_OUT_OF_RANGE, "begin");
    CHECK_STATUS_MSG(lodtensor_slice(t, 0, 0, 3, &out), LODTENSOR_OUT_OF_RANGE, "end");
    CHECK_STATUS_MSG(lodtensor_slice(t, 2, 5, 8, &out), LODTENSOR_OUT_OF_RANGE, "end");
    CHECK_STATUS_MSG(lodtensor_slice(t, 0, 0, SIZE_MAX, &out), LODTENSOR_OUT_OF_RANGE, "end");
    CHECK_STATUS_MSG(lodtensor_slice(t, 0, SIZE_MAX - 1, SIZE_MAX, &out), LODTENSOR_OUT_OF_RANGE, "end");
    CHECK_STATUS_MSG(lodtensor_slice(NULL, 0, 0, 1, &out), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_slice(t, 0, 0, 1, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
    lodtensor_destroy(plain);
}

/* ---- split -------------------------------------------------------------------------------------- */

/* Spec §1.8 (lod_tensor_test.cc, SplitLoDTensor): 20 rows. */
static const lod_t split_lod = {2, {5, 7}, {{0, 2, 4, 5, 6}, {0, 1, 6, 8, 13, 15, 20}}};

static void test_split_worked_example(void) {
    static const lod_t want0 = {2, {3, 5}, {{0, 2, 4}, {0, 1, 6, 8, 13}}};
    static const lod_t want1 = {2, {3, 3}, {{0, 1, 2}, {0, 2, 7}}};
    const size_t width = 2;
    lodtensor_t *t = NULL, *pieces[2] = {NULL, NULL};
    size_t count = SENTINEL_SIZE;
    if (!CHECK_OK(make(20, width, &split_lod, &t))) {
        return;
    }
    if (CHECK_OK(lodtensor_split(t, 2, pieces, 2, &count)) && CHECK_EQ_SIZE(count, 2)) {
        CHECK_LOD(pieces[0], &want0);
        CHECK_ROWS(pieces[0], 0, 13, width);
        CHECK_EQ_PTR(row_address(pieces[0], 0, width), row_address(t, 0, width));
        CHECK_LOD(pieces[1], &want1);
        CHECK_ROWS(pieces[1], 13, 7, width);
        CHECK_EQ_PTR(row_address(pieces[1], 0, width), row_address(t, 13, width));
        lodtensor_destroy(pieces[0]);
        lodtensor_destroy(pieces[1]);
    }
    lodtensor_destroy(t);
}

/* Split into n pieces, against the rule: step = ceil(batch / n) top-level sequences per piece;
 * each piece's LoD is SliceInLevel of its sequences (the lengths of GetSubLoDAndAbsoluteOffset
 * turned back into offsets are the same thing). */
static void split_against_reference(const lod_t *lod, size_t rows) {
    const size_t width = 1, batch = lod->len[0] - 1;
    lodtensor_t *t = NULL;
    size_t n;
    if (!CHECK_OK(make(rows, width, lod, &t))) {
        return;
    }
    for (n = 1; n <= 6; ++n) {
        lodtensor_t *pieces[8];
        size_t count = SENTINEL_SIZE, step = (batch + n - 1) / n, expected = (batch + step - 1) / step, i;
        for (i = 0; i < 8; ++i) {
            pieces[i] = fx_sentinel();
        }
        if (!CHECK_OK(lodtensor_split(t, n, pieces, 8, &count)) || !CHECK_EQ_SIZE(count, expected)) {
            continue;
        }
        for (i = 0; i < count; ++i) {
            size_t b = i * step, e = (i + 1) * step < batch ? (i + 1) * step : batch, rb, re, tmp;
            lod_t want;
            ref_slice(lod, 0, b, e, &want);
            ref_rows(lod, 0, b, &rb, &tmp);
            ref_rows(lod, 0, e - 1, &tmp, &re);
            if (!(CHECK_LOD(pieces[i], &want) && CHECK_ROWS(pieces[i], rb, re - rb, width) &&
                  CHECK_EQ_PTR(row_address(pieces[i], 0, width), row_address(t, rb, width)))) {
                fprintf(stderr, "  split into %zu, piece %zu\n", n, i);
            }
            lodtensor_destroy(pieces[i]);
        }
        /* Only the first *out_count handles are written. */
        for (i = count; i < 8; ++i) {
            CHECK_EQ_PTR(pieces[i], fx_sentinel());
        }
    }
    lodtensor_destroy(t);
}

static void test_split_against_reference(void) {
    /* Paragraphs of 0, 2 and 1 sentences; sentences of 1, 2, 1 rows. Piece 0 of a split into 3 is
     * the empty paragraph alone: LoD [[0,0],[0]] over 0 rows (README: a lower level may be [0]
     * under a level ending at 0, so every piece of a valid tensor is valid). */
    static const lod_t empty_first = {2, {4, 4}, {{0, 0, 2, 3}, {0, 1, 3, 4}}};
    static const lod_t want0 = {2, {2, 1}, {{0, 0}, {0}}};
    lodtensor_t *t = NULL, *pieces[3] = {NULL, NULL, NULL};
    size_t count = 0, i;
    split_against_reference(&split_lod, 20);
    split_against_reference(&header_lod, 20);
    split_against_reference(&empty_first, 4);
    if (CHECK_OK(make(4, 2, &empty_first, &t)) && CHECK_OK(lodtensor_split(t, 3, pieces, 3, &count)) &&
        CHECK_EQ_SIZE(count, 3)) {
        CHECK_LOD(pieces[0], &want0);
        CHECK_ROWS(pieces[0], 0, 0, 2);
        CHECK_ROWS(pieces[1], 0, 3, 2);
        CHECK_ROWS(pieces[2], 3, 1, 2);
        for (i = 0; i < count; ++i) {
            lodtensor_destroy(pieces[i]);
        }
    }
    lodtensor_destroy(t);
}

static void test_split_dense_and_empty(void) {
    lodtensor_t *t = NULL, *empty = NULL, *empty_lod = NULL, *pieces[10];
    size_t count = 0, i, levels = SENTINEL_SIZE;
    static const size_t zero_sizes[1] = {2}, zero_lod[2] = {0, 0};
    /* 5 rows without LoD: whole rows; into 2 -> [0,3) + [3,5) (spec §1.8, the current algorithm). */
    if (CHECK_OK(fx_make_f32(5, 3, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        if (CHECK_OK(lodtensor_split(t, 2, pieces, 2, &count)) && CHECK_EQ_SIZE(count, 2)) {
            CHECK_ROWS(pieces[0], 0, 3, 3);
            CHECK_ROWS(pieces[1], 3, 2, 3);
            CHECK_OK(lodtensor_lod_num_levels(pieces[1], &levels));
            CHECK_EQ_SIZE(levels, 0);
            lodtensor_destroy(pieces[0]);
            lodtensor_destroy(pieces[1]);
        }
        /* Into 3 -> step 2: [0,2) [2,4) [4,5). */
        if (CHECK_OK(lodtensor_split(t, 3, pieces, 3, &count)) && CHECK_EQ_SIZE(count, 3)) {
            CHECK_ROWS(pieces[0], 0, 2, 3);
            CHECK_ROWS(pieces[1], 2, 2, 3);
            CHECK_ROWS(pieces[2], 4, 1, 3);
            for (i = 0; i < 3; ++i) {
                lodtensor_destroy(pieces[i]);
            }
        }
        /* More pieces than rows: one row each, *out_count = 5. */
        if (CHECK_OK(lodtensor_split(t, 10, pieces, 10, &count)) && CHECK_EQ_SIZE(count, 5)) {
            for (i = 0; i < 5; ++i) {
                CHECK_ROWS(pieces[i], i, 1, 3);
                lodtensor_destroy(pieces[i]);
            }
        }
    }
    /* An empty batch (0 rows, no LoD): num_pieces shares of t. */
    if (CHECK_OK(fx_make_f32(0, 5, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &empty))) {
        if (CHECK_OK(lodtensor_split(empty, 3, pieces, 3, &count)) && CHECK_EQ_SIZE(count, 3)) {
            for (i = 0; i < 3; ++i) {
                int64_t dims[2] = {-1, -1};
                size_t ndim = 0;
                CHECK_OK(lodtensor_dims(pieces[i], dims, 2, &ndim));
                CHECK_EQ_INT(dims[0], 0);
                CHECK_EQ_INT(dims[1], 5);
                lodtensor_destroy(pieces[i]);
            }
        }
    }
    /* 0 rows with LoD [[0,0]]: a batch of one empty sequence -> one piece. */
    if (CHECK_OK(fx_make_f32(0, 5, LODTENSOR_LOD_OFFSETS, zero_sizes, 1, zero_lod, 2, &empty_lod))) {
        if (CHECK_OK(lodtensor_split(empty_lod, 2, pieces, 2, &count)) && CHECK_EQ_SIZE(count, 1)) {
            CHECK_OFFSETS(pieces[0], 0, zero_lod, 2);
            lodtensor_destroy(pieces[0]);
        }
    }
    lodtensor_destroy(t);
    lodtensor_destroy(empty);
    lodtensor_destroy(empty_lod);
}

static void test_split_failures(void) {
    lodtensor_t *t = NULL, *zero_d = NULL, *pieces[4];
    size_t count = SENTINEL_SIZE, i;
    float x = 3.0f;
    if (!CHECK_OK(make(20, 2, &split_lod, &t)) ||
        !CHECK_OK(lodtensor_create(fx_f32(), NULL, 0, &x, sizeof x, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &zero_d))) {
        lodtensor_destroy(t);
        return;
    }
    for (i = 0; i < 4; ++i) {
        pieces[i] = fx_sentinel();
    }
    /* The message names the C argument, num_pieces. */
    CHECK_STATUS_MSG(lodtensor_split(t, 0, pieces, 4, &count), LODTENSOR_INVALID_ARGUMENT, "num_pieces");
    CHECK_STATUS_MSG(lodtensor_split(zero_d, 2, pieces, 4, &count), LODTENSOR_INVALID_ARGUMENT, "0-d");
    CHECK_STATUS_MSG(lodtensor_split(t, 3, pieces, 2, &count), LODTENSOR_BUFFER_TOO_SMALL, "out_pieces");
    /* out_pieces must hold num_pieces handles even when fewer pieces come out (4 sequences here). */
    CHECK_STATUS_MSG(lodtensor_split(t, 8, pieces, 4, &count), LODTENSOR_BUFFER_TOO_SMALL, "out_pieces");
    CHECK_STATUS_MSG(lodtensor_split(NULL, 2, pieces, 4, &count), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_split(t, 2, NULL, 4, &count), LODTENSOR_NULL_ARGUMENT, "out_pieces");
    CHECK_STATUS_MSG(lodtensor_split(t, 2, pieces, 4, NULL), LODTENSOR_NULL_ARGUMENT, "out_count");
    CHECK_EQ_SIZE(count, SENTINEL_SIZE);
    for (i = 0; i < 4; ++i) {
        CHECK_EQ_PTR(pieces[i], fx_sentinel());
    }
    /* A buffer of length 0 may be NULL (header conventions): with num_pieces 0 and
     * out_pieces_len 0 the failure is the piece count, INVALID_ARGUMENT, not a NULL argument. */
    CHECK_STATUS_MSG(lodtensor_split(t, 0, NULL, 0, &count), LODTENSOR_INVALID_ARGUMENT, "pieces");
    CHECK_EQ_SIZE(count, SENTINEL_SIZE);
    lodtensor_destroy(t);
    lodtensor_destroy(zero_d);
}

/* ---- merge -------------------------------------------------------------------------------------- */

static void test_merge_back_split(void) {
    const size_t width = 3;
    lodtensor_t *t = NULL, *pieces[2] = {NULL, NULL}, *merged = NULL;
    size_t count = 0;
    const void *a = NULL, *b = NULL;
    if (!CHECK_OK(make(20, width, &split_lod, &t))) {
        return;
    }
    if (CHECK_OK(lodtensor_split(t, 2, pieces, 2, &count)) && CHECK_EQ_SIZE(count, 2)) {
        if (CHECK_OK(lodtensor_merge((const lodtensor_t *const *)pieces, 2, &merged))) {
            /* The original LoD and data (spec §1.8, MergeLoDTensor). */
            CHECK_LOD(merged, &split_lod);
            CHECK_ROWS(merged, 0, 20, width);
            /* New memory of its own. */
            CHECK_OK(lodtensor_data(merged, &a));
            CHECK_OK(lodtensor_data(t, &b));
            CHECK(a != b);
            lodtensor_destroy(merged);
        }
        lodtensor_destroy(pieces[0]);
        lodtensor_destroy(pieces[1]);
    }
    lodtensor_destroy(t);
}

static void test_merge_independent_parts(void) {
    /* The two pieces of spec §1.8 built on their own (each part's rows start again at 0) and a
     * 0-row part with one empty sentence in one paragraph. */
    static const lod_t p0 = {2, {3, 5}, {{0, 2, 4}, {0, 1, 6, 8, 13}}};
    static const lod_t p1 = {2, {3, 3}, {{0, 1, 2}, {0, 2, 7}}};
    static const lod_t p2 = {2, {2, 2}, {{0, 1}, {0, 0}}};
    const lod_t *parts_lod[3];
    const size_t width = 2;
    lodtensor_t *parts[3] = {NULL, NULL, NULL}, *merged = NULL, *odd = NULL;
    lod_t want;
    const void *data = NULL;
    size_t r, c;
    int ok;
    parts_lod[0] = &p0;
    parts_lod[1] = &p2;
    parts_lod[2] = &p1;
    ok = CHECK_OK(make(13, width, &p0, &parts[0])) && CHECK_OK(make(0, width, &p2, &parts[1])) &&
         CHECK_OK(make(7, width, &p1, &parts[2]));
    if (ok && CHECK_OK(lodtensor_merge((const lodtensor_t *const *)parts, 3, &merged))) {
        int64_t dims[2] = {0, 0};
        size_t ndim = 0;
        ref_merge(parts_lod, 3, &want);
        CHECK_LOD(merged, &want);
        CHECK_OK(lodtensor_dims(merged, dims, 2, &ndim));
        CHECK_EQ_INT(dims[0], 20);
        CHECK_EQ_INT(dims[1], width);
        /* Rows: the 13 of part 0, then the 7 of part 2 (whose values restart at row 0). */
        CHECK_OK(lodtensor_data(merged, &data));
        for (r = 0; data != NULL && r < 20; ++r) {
            for (c = 0; c < width; ++c) {
                float want_v = r < 13 ? fx_value(r, c) : fx_value(r - 13, c);
                if (!CHECK(((const float *)data)[r * width + c] == want_v)) {
                    r = 20;
                    break;
                }
            }
        }
        lodtensor_destroy(merged);
        merged = NULL;
    }
    /* A 0-row part's dtype and row shape are not checked. */
    if (ok) {
        static const size_t sizes[2] = {2, 2}, lod[4] = {0, 1, 0, 0};
        const int64_t dims[3] = {0, 7, 7};
        if (CHECK_OK(lodtensor_create(fx_i64(), dims, 3, NULL, 0, LODTENSOR_LOD_OFFSETS, sizes, 2, lod, 4, &odd))) {
            const lodtensor_t *mixed[3];
            mixed[0] = parts[0];
            mixed[1] = odd;
            mixed[2] = parts[2];
            if (CHECK_OK(lodtensor_merge(mixed, 3, &merged))) {
                lodtensor_dtype_t dt;
                CHECK_LOD(merged, &want);
                CHECK_OK(lodtensor_dtype(merged, &dt));
                CHECK_EQ_INT(dt.code, LODTENSOR_DTYPE_CODE_FLOAT);
                CHECK_EQ_INT(dt.bits, 32);
                lodtensor_destroy(merged);
            }
        }
    }
    lodtensor_destroy(odd);
    for (r = 0; r < 3; ++r) {
        lodtensor_destroy(parts[r]);
    }
}

static void test_merge_zero_sequence_levels(void) {
    /* A 0-row part whose lower level has zero sequences ([[0,0],[0]]: one empty paragraph) merged
     * before and after a 2-row part [[0,1],[0,2]]. */
    static const lod_t empty = {2, {2, 1}, {{0, 0}, {0}}};
    static const lod_t two = {2, {2, 2}, {{0, 1}, {0, 2}}};
    const lod_t *parts_lod[3];
    lodtensor_t *parts[3] = {NULL, NULL, NULL}, *merged = NULL;
    lod_t want;
    parts_lod[0] = &empty;
    parts_lod[1] = &two;
    parts_lod[2] = &empty;
    if (CHECK_OK(make(0, 2, &empty, &parts[0])) && CHECK_OK(make(2, 2, &two, &parts[1])) &&
        CHECK_OK(lodtensor_share(parts[0], &parts[2]))) {
        ref_merge(parts_lod, 3, &want); /* [[0,0,1,1],[0,2]] */
        CHECK(want.len[0] == 4 && want.v[0][3] == 1 && want.len[1] == 2 && want.v[1][1] == 2);
        if (CHECK_OK(lodtensor_merge((const lodtensor_t *const *)parts, 3, &merged))) {
            CHECK_LOD(merged, &want);
            CHECK_ROWS(merged, 0, 2, 2);
            lodtensor_destroy(merged);
        }
    }
    lodtensor_destroy(parts[0]);
    lodtensor_destroy(parts[1]);
    lodtensor_destroy(parts[2]);
}

static void test_merge_dense_and_single(void) {
    lodtensor_t *a = NULL, *b = NULL, *m = NULL;
    const lodtensor_t *list[2];
    void *rw = NULL;
    if (!CHECK_OK(fx_make_f32(2, 3, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &a)) ||
        !CHECK_OK(fx_make_f32(3, 3, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &b))) {
        lodtensor_destroy(a);
        return;
    }
    list[0] = a;
    list[1] = b;
    if (CHECK_OK(lodtensor_merge(list, 2, &m))) {
        size_t levels = SENTINEL_SIZE;
        const float *d = row_address(m, 0, 3);
        CHECK_OK(lodtensor_lod_num_levels(m, &levels));
        CHECK_EQ_SIZE(levels, 0);
        CHECK(d != NULL && d[0] == fx_value(0, 0) && d[3] == fx_value(1, 0) && d[6] == fx_value(0, 0) &&
              d[14] == fx_value(2, 2));
        lodtensor_destroy(m);
        m = NULL;
    }
    /* One part: a copy of it, independent of later writes. */
    if (CHECK_OK(lodtensor_merge(list, 1, &m))) {
        CHECK_ROWS(m, 0, 2, 3);
        CHECK_OK(lodtensor_data_mut(a, &rw));
        ((float *)rw)[0] = 77.0f;
        CHECK_ROWS(m, 0, 2, 3);
        lodtensor_destroy(m);
    }
    lodtensor_destroy(a);
    lodtensor_destroy(b);
}

static void test_merge_failures(void) {
    static const size_t sizes1[1] = {2}, lod1[2] = {0, 2};
    const int64_t dims23[2] = {2, 3}, dims24[2] = {2, 4}, dims231[3] = {2, 3, 1};
    const int64_t huge[2] = {(int64_t)1 << 62, 0};
    float six[6] = {0}, eight[8] = {0};
    int32_t ints[6] = {0};
    float x = 0.0f;
    lodtensor_t *f = NULL, *f_lod = NULL, *i32 = NULL, *wide = NULL, *deep = NULL, *zero_d = NULL, *big = NULL, *out;
    const lodtensor_t *list[4];
    int ok = CHECK_OK(lodtensor_create(fx_f32(), dims23, 2, six, sizeof six, 0, NULL, 0, NULL, 0, &f)) &&
             CHECK_OK(lodtensor_create(fx_f32(), dims23, 2, six, sizeof six, 0, sizes1, 1, lod1, 2, &f_lod)) &&
             CHECK_OK(lodtensor_create(fx_i32(), dims23, 2, ints, sizeof ints, 0, NULL, 0, NULL, 0, &i32)) &&
             CHECK_OK(lodtensor_create(fx_f32(), dims24, 2, eight, sizeof eight, 0, NULL, 0, NULL, 0, &wide)) &&
             CHECK_OK(lodtensor_create(fx_f32(), dims231, 3, six, sizeof six, 0, NULL, 0, NULL, 0, &deep)) &&
             CHECK_OK(lodtensor_create(fx_f32(), NULL, 0, &x, sizeof x, 0, NULL, 0, NULL, 0, &zero_d)) &&
             /* 2^62 rows of nothing: no memory, but two of them pass INT64_MAX rows, and four
              * overflow the row count. */
             CHECK_OK(lodtensor_create(fx_u8(), huge, 2, NULL, 0, 0, NULL, 0, NULL, 0, &big));
    if (ok) {
        out = fx_sentinel();
        /* count 0: the list may be NULL (a buffer of length 0); nothing to merge. */
        CHECK_STATUS_MSG(lodtensor_merge(NULL, 0, &out), LODTENSOR_INVALID_ARGUMENT, "tensors");
        list[0] = f;
        CHECK_STATUS_MSG(lodtensor_merge(list, 0, &out), LODTENSOR_INVALID_ARGUMENT, "tensors");
        CHECK_STATUS_MSG(lodtensor_merge(NULL, 2, &out), LODTENSOR_NULL_ARGUMENT, "tensors");
        list[1] = NULL;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_NULL_ARGUMENT, "tensors[1]");
        list[0] = NULL;
        list[1] = f;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_NULL_ARGUMENT, "tensors[0]");
        list[0] = f;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        /* Mismatches. */
        list[1] = i32;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_INVALID_ARGUMENT, "tensors[1]");
        list[1] = wide;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_INVALID_ARGUMENT, "tensors[1]");
        /* The same row width in another shape is no mismatch: the output takes f's row shape. */
        list[1] = deep;
        if (CHECK_OK(lodtensor_merge(list, 2, &out))) {
            int64_t got[LODTENSOR_MAX_DIMS];
            size_t ndim = 0;
            CHECK_OK(lodtensor_dims(out, got, LODTENSOR_MAX_DIMS, &ndim));
            CHECK(ndim == 2 && got[0] == 4 && got[1] == 3);
            lodtensor_destroy(out);
        }
        out = fx_sentinel();
        list[1] = zero_d;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_INVALID_ARGUMENT, "0-d");
        list[0] = zero_d;
        CHECK_STATUS_MSG(lodtensor_merge(list, 1, &out), LODTENSOR_INVALID_ARGUMENT, "0-d");
        list[0] = f;
        list[1] = f_lod;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_INVALID_LOD, "tensors[1]");
        list[0] = f_lod;
        list[1] = f;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_INVALID_LOD, "tensors[1]");
        /* The total row count overflows. */
        list[0] = list[1] = list[2] = list[3] = big;
        CHECK_STATUS_MSG(lodtensor_merge(list, 2, &out), LODTENSOR_OUT_OF_MEMORY, "dims");
        CHECK_STATUS_MSG(lodtensor_merge(list, 4, &out), LODTENSOR_OUT_OF_MEMORY, "row");
        CHECK_EQ_PTR(out, fx_sentinel());
    }
    lodtensor_destroy(f);
    lodtensor_destroy(f_lod);
    lodtensor_destroy(i32);
    lodtensor_destroy(wide);
    lodtensor_destroy(deep);
    lodtensor_destroy(zero_d);
    lodtensor_destroy(big);
}

int main(void) {
    test_slice_worked_example();
    test_slice_every_range();
    test_slice_of_slice_and_empty_sequences();
    test_slice_failures();
    test_split_worked_example();
    test_split_against_reference();
    test_split_dense_and_empty();
    test_split_failures();
    test_merge_back_split();
    test_merge_independent_parts();
    test_merge_zero_sequence_levels();
    test_merge_dense_and_single();
    test_merge_failures();
    return CHECK_RETURN();
}
