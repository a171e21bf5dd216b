/* test_lod: the LoD of a handle: building it from offsets and from lengths (spec §1.2), every
 * validity rule (spec §1.3, through lodtensor_create and lodtensor_set_lod), the LoD accessors
 * (lod_num_levels, lod_offsets, lod_lengths, sequence_rows), set_lod and clear_lod, with every
 * documented failure and "outputs are written only on success". */
#include <stdint.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define SENTINEL_SIZE ((size_t)0x5EED5EED)
#define N(a) (sizeof(a) / sizeof((a)[0]))

/* ---- lengths <-> offsets ---------------------------------------------------------------------- */

/* Reads every level's offsets and lengths and compares them with the expected offsets; the
 * expected lengths are the adjacent differences, computed here. */
static void check_whole_lod(const lodtensor_t *t, const size_t *sizes, size_t num_levels, const size_t *offsets) {
    size_t levels = SENTINEL_SIZE, k, i, at = 0;
    CHECK_OK(lodtensor_lod_num_levels(t, &levels));
    CHECK_EQ_SIZE(levels, num_levels);
    for (k = 0; k < num_levels; ++k) {
        size_t lengths[32], want[32], count = SENTINEL_SIZE;
        CHECK_OFFSETS(t, k, offsets + at, sizes[k]);
        for (i = 0; i + 1 < sizes[k]; ++i) {
            want[i] = offsets[at + i + 1] - offsets[at + i];
        }
        CHECK_OK(lodtensor_lod_lengths(t, k, NULL, 0, &count));
        CHECK_EQ_SIZE(count, sizes[k] - 1);
        count = SENTINEL_SIZE;
        if (CHECK_OK(lodtensor_lod_lengths(t, k, lengths, N(lengths), &count)) && CHECK_EQ_SIZE(count, sizes[k] - 1)) {
            for (i = 0; i < count; ++i) {
                CHECK_EQ_SIZE(lengths[i], want[i]);
            }
        }
        at += sizes[k];
    }
}

static void test_from_lengths_and_offsets(void) {
    /* Spec §1.2 (pybind docstring): lengths [[2,1],[2,2,3]] <=> offsets [[0,2,3],[0,2,4,7]], shape [7,2]. */
    static const size_t len_sizes[2] = {2, 3}, lengths[5] = {2, 1, 2, 2, 3};
    static const size_t off_sizes[2] = {3, 4}, offsets[7] = {0, 2, 3, 0, 2, 4, 7};
    /* Spec §1.2 (lod_tensor_test.cc): offsets [[0,2],[0,1,3],[0,2,4,5]] <=> lengths [[2],[1,2],[2,2,1]]. */
    static const size_t len_sizes3[3] = {1, 2, 3}, lengths3[6] = {2, 1, 2, 2, 2, 1};
    static const size_t off_sizes3[3] = {2, 3, 4}, offsets3[9] = {0, 2, 0, 1, 3, 0, 2, 4, 5};
    lodtensor_t *a = NULL, *b = NULL;
    size_t running[16], k, i, at_len = 0, at_off = 0;

    /* Independently: the offsets are the running sums of the lengths, level by level. */
    for (k = 0; k < 3; ++k) {
        running[at_off] = 0;
        for (i = 0; i < len_sizes3[k]; ++i) {
            running[at_off + i + 1] = running[at_off + i] + lengths3[at_len + i];
        }
        at_len += len_sizes3[k];
        at_off += len_sizes3[k] + 1;
    }
    CHECK_EQ_SIZE(at_off, N(offsets3));
    CHECK(memcmp(running, offsets3, sizeof offsets3) == 0);

    if (CHECK_OK(fx_make_f32(7, 2, LODTENSOR_LOD_LENGTHS, len_sizes, 2, lengths, 5, &a))) {
        check_whole_lod(a, off_sizes, 2, offsets);
        CHECK_ROWS(a, 0, 7, 2);
    }
    if (CHECK_OK(fx_make_f32(7, 2, LODTENSOR_LOD_OFFSETS, off_sizes, 2, offsets, 7, &b))) {
        check_whole_lod(b, off_sizes, 2, offsets);
    }
    lodtensor_destroy(a);
    lodtensor_destroy(b);
    a = b = NULL;
    if (CHECK_OK(fx_make_f32(5, 1, LODTENSOR_LOD_LENGTHS, len_sizes3, 3, lengths3, 6, &a))) {
        check_whole_lod(a, off_sizes3, 3, offsets3);
    }
    if (CHECK_OK(fx_make_f32(5, 1, LODTENSOR_LOD_OFFSETS, off_sizes3, 3, offsets3, 9, &b))) {
        size_t got[2], count = 0;
        check_whole_lod(b, off_sizes3, 3, offsets3);
        /* lengths of level 1 are [1, 2] */
        CHECK_OK(lodtensor_lod_lengths(b, 1, got, 2, &count));
        CHECK_EQ_SIZE(count, 2);
        CHECK_EQ_SIZE(got[0], 1);
        CHECK_EQ_SIZE(got[1], 2);
    }
    lodtensor_destroy(a);
    lodtensor_destroy(b);
}

/* ---- validity rules ----------------------------------------------------------------------------- */

struct lod_case {
    const char *name;
    size_t rows;
    int32_t kind;
    size_t num_levels;
    size_t sizes[4];
    size_t values[24];
    int32_t expected; /* LODTENSOR_OK or LODTENSOR_INVALID_LOD */
    const char *substring;
};

#define OFF LODTENSOR_LOD_OFFSETS
#define LEN LODTENSOR_LOD_LENGTHS
#define VALID LODTENSOR_OK, NULL
#define INVALID(sub) LODTENSOR_INVALID_LOD, sub

static const struct lod_case lod_cases[] = {
    /* Spec §1.3, CheckLoD unit-test table (lod_tensor_test.cc). */
    {"[[0,2],[0,1,3],[0,2,4,5]], 5 rows", 5, OFF, 3, {2, 3, 4}, {0, 2, 0, 1, 3, 0, 2, 4, 5}, VALID},
    {"[[0,2],[0,1,4],[0,2,4,5]]: level 1 ends past level 2", 5, OFF, 3, {2, 3, 4}, {0, 2, 0, 1, 4, 0, 2, 4, 5},
     INVALID("level 1")},
    {"no LoD", 5, OFF, 0, {0}, {0}, VALID},
    {"[[0]]: one offset", 0, OFF, 1, {1}, {0}, INVALID("at least 2")},
    {"[[0,2],[0,1,3],[0,2,4,5]], 9 rows", 9, OFF, 3, {2, 3, 4}, {0, 2, 0, 1, 3, 0, 2, 4, 5}, INVALID("rows")},
    {"[[0,1,2,3,4,5]], 5 rows", 5, OFF, 1, {6}, {0, 1, 2, 3, 4, 5}, VALID},
    {"[[0,1,3,3,4,5]]: an empty sequence", 5, OFF, 1, {6}, {0, 1, 3, 3, 4, 5}, VALID},
    {"[[0,1,3,2,5]]: decreasing", 5, OFF, 1, {5}, {0, 1, 3, 2, 5}, INVALID("non-decreasing")},
    /* Each rule on its own. */
    {"a level with no offsets", 5, OFF, 1, {0}, {0}, INVALID("at least 2")},
    {"a lower level with no offsets", 0, OFF, 2, {2, 0}, {0, 0}, INVALID("level 1")},
    {"[[1,5]]: does not start at 0", 5, OFF, 1, {2}, {1, 5}, INVALID("start at 0")},
    {"level 1 does not start at 0", 5, OFF, 2, {2, 3}, {0, 2, 1, 3, 5}, INVALID("level 1")},
    {"[[0,3,3,2,5]]: decreasing after a repeat", 5, OFF, 1, {5}, {0, 3, 3, 2, 5}, INVALID("non-decreasing")},
    {"level 0 ends below the count of level 1", 5, OFF, 2, {2, 4}, {0, 2, 0, 1, 3, 5}, INVALID("level 0")},
    {"level 0 ends past the count of level 1", 5, OFF, 2, {2, 3}, {0, 3, 0, 1, 5}, INVALID("level 0")},
    {"the last level ends below the rows", 5, OFF, 1, {3}, {0, 2, 4}, INVALID("rows")},
    {"the last level ends past the rows", 5, OFF, 1, {3}, {0, 2, 6}, INVALID("rows")},
    /* A 0-row tensor is height-checked too (unlike Paddle): no LoD may claim rows that do not exist. */
    {"0 rows, [[0,0]]", 0, OFF, 1, {2}, {0, 0}, VALID},
    {"0 rows, [[0,1],[0,0]]", 0, OFF, 2, {2, 2}, {0, 1, 0, 0}, VALID},
    {"0 rows, [[0,1]]", 0, OFF, 1, {2}, {0, 1}, INVALID("rows")},
    {"0 rows, lengths [[0]]", 0, LEN, 1, {1}, {0}, VALID},
    {"0 rows, lengths [[2]]", 0, LEN, 1, {1}, {2}, INVALID("rows")},
    /* README, "where this library differs from Paddle": a level below the top may describe zero
     * sequences ([0]), but only under a level that ends at 0; [[0]] stays invalid. */
    {"0 rows, [[0,0],[0]]", 0, OFF, 2, {2, 1}, {0, 0, 0}, VALID},
    {"0 rows, [[0,0,0],[0],[0]]", 0, OFF, 3, {3, 1, 1}, {0, 0, 0, 0, 0}, VALID},
    {"0 rows, lengths [[0],[]]", 0, LEN, 2, {1, 0}, {0}, VALID},
    {"0 rows, [[0,1],[0]]: level 0 claims a sequence level 1 lacks", 0, OFF, 2, {2, 1}, {0, 1, 0},
     INVALID("level 0")},
    {"5 rows, [[0,0],[0]]", 5, OFF, 2, {2, 1}, {0, 0, 0}, INVALID("rows")},
    {"0 rows, [[0],[0,0]]: the top level needs 2 offsets", 0, OFF, 2, {1, 2}, {0, 0, 0}, INVALID("level 0")},
    /* Spec §1.3, Python-level enforcement (test_lod_tensor.py), in the lengths form. */
    {"lengths [[],[1],[3]]", 3, LEN, 3, {0, 1, 1}, {1, 3}, INVALID("level 0")},
    {"lengths [[0],[2],[3]]", 3, LEN, 3, {1, 1, 1}, {0, 2, 3}, INVALID("level 0")},
    {"lengths [[1,2,3]], 6 rows", 6, LEN, 1, {3}, {1, 2, 3}, VALID},
    {"lengths [[1,2,3]], 9 rows", 9, LEN, 1, {3}, {1, 2, 3}, INVALID("rows")},
    {"lengths [[2,3],[1,3,1,2,2]], 9 rows", 9, LEN, 2, {2, 5}, {2, 3, 1, 3, 1, 2, 2}, VALID},
    {"lengths [[2,3],[1,3,1,2,2]], 8 rows", 8, LEN, 2, {2, 5}, {2, 3, 1, 3, 1, 2, 2}, INVALID("rows")},
    {"lengths [[2,3],[1,3,1,2,1]], 8 rows", 8, LEN, 2, {2, 5}, {2, 3, 1, 3, 1, 2, 1}, VALID},
    {"lengths with no levels", 4, LEN, 0, {0}, {0}, VALID},
    {"lengths [[]]", 4, LEN, 1, {0}, {0}, INVALID("at least 2")},
    {"lengths [[2],[]]: level 0 claims 2 sequences of an empty level", 4, LEN, 2, {1, 0}, {2}, INVALID("level 0")},
    /* Lengths whose running sum overflows. */
    {"lengths [[SIZE_MAX, 1]]", 4, LEN, 1, {2}, {SIZE_MAX, 1}, INVALID("overflow")},
};

static size_t total_values(const struct lod_case *c) {
    size_t k, n = 0;
    for (k = 0; k < c->num_levels; ++k) {
        n += c->sizes[k];
    }
    return n;
}

static void test_validity_rules(void) {
    static const size_t old_sizes[1] = {2};
    size_t i;
    for (i = 0; i < N(lod_cases); ++i) {
        const struct lod_case *c = &lod_cases[i];
        size_t n = total_values(c);
        lodtensor_t *t = fx_sentinel(), *plain = NULL;
        int32_t status;

        /* Through lodtensor_create. */
        CHECK_PRIME();
        status = fx_make_f32(c->rows, 2, c->kind, c->sizes, c->num_levels, c->values, n, &t);
        if (c->expected == LODTENSOR_OK) {
            if (!CHECK_OK(status)) {
                fprintf(stderr, "  case: %s\n", c->name);
            } else {
                size_t levels = SENTINEL_SIZE;
                CHECK_OK(lodtensor_lod_num_levels(t, &levels));
                CHECK_EQ_SIZE(levels, c->num_levels);
                lodtensor_destroy(t);
            }
        } else {
            if (!CHECK_STATUS_VALUE(status, c->expected, c->substring)) {
                fprintf(stderr, "  case: %s (create)\n", c->name);
            }
            if (!CHECK_EQ_PTR(t, fx_sentinel())) {
                fprintf(stderr, "  case: %s (create wrote *out)\n", c->name);
            }
        }

        /* Through lodtensor_set_lod on a tensor of the same rows whose LoD is [[0, rows]]. */
        {
            size_t old[2];
            old[0] = 0;
            old[1] = c->rows;
            if (!CHECK_OK(fx_make_f32(c->rows, 2, OFF, old_sizes, 1, old, 2, &plain))) {
                continue;
            }
            CHECK_PRIME();
            status = lodtensor_set_lod(plain, c->kind, c->sizes, c->num_levels, c->values, n);
            if (c->expected == LODTENSOR_OK) {
                size_t levels = SENTINEL_SIZE;
                if (!CHECK_OK(status)) {
                    fprintf(stderr, "  case: %s (set_lod)\n", c->name);
                }
                CHECK_OK(lodtensor_lod_num_levels(plain, &levels));
                CHECK_EQ_SIZE(levels, c->num_levels);
            } else {
                if (!CHECK_STATUS_VALUE(status, c->expected, c->substring)) {
                    fprintf(stderr, "  case: %s (set_lod)\n", c->name);
                }
                /* On failure the old LoD stays. */
                if (!CHECK_OFFSETS(plain, 0, old, 2)) {
                    fprintf(stderr, "  case: %s (set_lod changed the LoD)\n", c->name);
                }
            }
            lodtensor_destroy(plain);
            plain = NULL;
        }
    }
}

/* ---- accessors on the spec §1.1 header LoD ------------------------------------------------------ */

/* level 0: 0 2 3; level 1: 0 2 4 7; level 2: 0 2 5 7 10 12 15 20 (20 rows). */
static const size_t header_sizes[3] = {3, 4, 8};
static const size_t header_lod[15] = {0, 2, 3, 0, 2, 4, 7, 0, 2, 5, 7, 10, 12, 15, 20};

/* Rows of sequence `index` at `level`, by walking down the levels (the definition in §1.1). */
static void reference_rows(const size_t *sizes, size_t num_levels, const size_t *flat, size_t level, size_t index,
                           size_t *begin, size_t *end) {
    size_t starts[8], k, at = 0;
    for (k = 0; k < num_levels; ++k) {
        starts[k] = at;
        at += sizes[k];
    }
    *begin = flat[starts[level] + index];
    *end = flat[starts[level] + index + 1];
    for (k = level + 1; k < num_levels; ++k) {
        *begin = flat[starts[k] + *begin];
        *end = flat[starts[k] + *end];
    }
}

static void check_all_sequence_rows(const lodtensor_t *t, const size_t *sizes, size_t num_levels, const size_t *flat) {
    size_t level, index;
    for (level = 0; level < num_levels; ++level) {
        for (index = 0; index + 1 < sizes[level]; ++index) {
            size_t b = SENTINEL_SIZE, e = SENTINEL_SIZE, rb, re;
            reference_rows(sizes, num_levels, flat, level, index, &rb, &re);
            if (!CHECK_OK(lodtensor_sequence_rows(t, level, index, &b, &e)) || !CHECK_EQ_SIZE(b, rb) ||
                !CHECK_EQ_SIZE(e, re)) {
                fprintf(stderr, "  sequence_rows(level %zu, index %zu)\n", level, index);
            }
        }
    }
}

static void test_accessors(void) {
    lodtensor_t *t = NULL;
    size_t b = 0, e = 0, levels = 0, count = 0, lengths[8];
    const size_t *offsets = NULL;
    if (!CHECK_OK(fx_make_f32(20, 3, OFF, header_sizes, 3, header_lod, 15, &t))) {
        return;
    }
    CHECK_OK(lodtensor_lod_num_levels(t, &levels));
    CHECK_EQ_SIZE(levels, 3);
    check_whole_lod(t, header_sizes, 3, header_lod);

    /* sequence_rows, from the spec's reading of the example: paragraph 1 is rows 10..20,
     * sentence 0 is rows 0..5, word 6 is rows 15..20. */
    CHECK_OK(lodtensor_sequence_rows(t, 0, 1, &b, &e));
    CHECK_EQ_SIZE(b, 10);
    CHECK_EQ_SIZE(e, 20);
    CHECK_OK(lodtensor_sequence_rows(t, 1, 0, &b, &e));
    CHECK_EQ_SIZE(b, 0);
    CHECK_EQ_SIZE(e, 5);
    CHECK_OK(lodtensor_sequence_rows(t, 2, 6, &b, &e));
    CHECK_EQ_SIZE(b, 15);
    CHECK_EQ_SIZE(e, 20);
    check_all_sequence_rows(t, header_sizes, 3, header_lod);

    /* lod_offsets: level out of range; NULL arguments; outputs untouched. */
    offsets = (const size_t *)(const void *)fx_sentinel();
    count = SENTINEL_SIZE;
    CHECK_STATUS_MSG(lodtensor_lod_offsets(t, 3, &offsets, &count), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_lod_offsets(t, SIZE_MAX, &offsets, &count), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_lod_offsets(NULL, 0, &offsets, &count), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_lod_offsets(t, 0, NULL, &count), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_lod_offsets(t, 0, &offsets, NULL), LODTENSOR_NULL_ARGUMENT, "out_len");
    CHECK_EQ_PTR(offsets, fx_sentinel());
    CHECK_EQ_SIZE(count, SENTINEL_SIZE);

    /* lod_lengths: level out of range, buffer too small, NULL arguments; outputs untouched. */
    lengths[0] = lengths[1] = SENTINEL_SIZE;
    CHECK_STATUS_MSG(lodtensor_lod_lengths(t, 3, lengths, 8, &count), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(t, 3, NULL, 0, &count), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(t, 2, lengths, 6, &count), LODTENSOR_BUFFER_TOO_SMALL, "buf");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(t, 0, lengths, 1, &count), LODTENSOR_BUFFER_TOO_SMALL, "buf");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(t, 0, lengths, 0, &count), LODTENSOR_BUFFER_TOO_SMALL, "buf");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(NULL, 0, lengths, 8, &count), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(t, 0, lengths, 8, NULL), LODTENSOR_NULL_ARGUMENT, "out_len");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(t, 0, NULL, 0, NULL), LODTENSOR_NULL_ARGUMENT, "out_len");
    CHECK_EQ_SIZE(count, SENTINEL_SIZE);
    CHECK_EQ_SIZE(lengths[0], SENTINEL_SIZE);
    CHECK_EQ_SIZE(lengths[1], SENTINEL_SIZE);
    /* Exactly big enough. */
    CHECK_OK(lodtensor_lod_lengths(t, 2, lengths, 7, &count));
    CHECK_EQ_SIZE(count, 7);
    CHECK_EQ_SIZE(lengths[6], 5);

    /* lod_num_levels: NULL arguments. */
    levels = SENTINEL_SIZE;
    CHECK_STATUS_MSG(lodtensor_lod_num_levels(NULL, &levels), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_lod_num_levels(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_SIZE(levels, SENTINEL_SIZE);

    /* sequence_rows: out of range (level, index), NULL arguments; outputs untouched. */
    b = e = SENTINEL_SIZE;
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 3, 0, &b, &e), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, SIZE_MAX, 0, &b, &e), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 0, 2, &b, &e), LODTENSOR_OUT_OF_RANGE, "index");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 1, 3, &b, &e), LODTENSOR_OUT_OF_RANGE, "index");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 2, 7, &b, &e), LODTENSOR_OUT_OF_RANGE, "index");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 2, 1000, &b, &e), LODTENSOR_OUT_OF_RANGE, "index");
    /* The largest index: must be OUT_OF_RANGE, not an overflow inside the library. */
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 0, SIZE_MAX, &b, &e), LODTENSOR_OUT_OF_RANGE, "index");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(NULL, 0, 0, &b, &e), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 0, 0, NULL, &e), LODTENSOR_NULL_ARGUMENT, "out_begin");
    CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 0, 0, &b, NULL), LODTENSOR_NULL_ARGUMENT, "out_end");
    CHECK_EQ_SIZE(b, SENTINEL_SIZE);
    CHECK_EQ_SIZE(e, SENTINEL_SIZE);
    lodtensor_destroy(t);
}

static void test_to_abs_offset_example(void) {
    /* Spec §1.4: ToAbsOffset([[0,2],[0,1,3],[0,2,4,5]]) = [[0,5],[0,2,5],[0,2,4,5]], read back as the
     * rows of each sequence. */
    static const size_t sizes[3] = {2, 3, 4}, lod[9] = {0, 2, 0, 1, 3, 0, 2, 4, 5};
    static const size_t abs_sizes[3] = {2, 3, 4}, abs_lod[9] = {0, 5, 0, 2, 5, 0, 2, 4, 5};
    lodtensor_t *t = NULL;
    size_t level, i, at = 0;
    if (!CHECK_OK(fx_make_f32(5, 1, OFF, sizes, 3, lod, 9, &t))) {
        return;
    }
    for (level = 0; level < 3; ++level) {
        for (i = 0; i + 1 < abs_sizes[level]; ++i) {
            size_t b = 0, e = 0;
            CHECK_OK(lodtensor_sequence_rows(t, level, i, &b, &e));
            CHECK_EQ_SIZE(b, abs_lod[at + i]);
            CHECK_EQ_SIZE(e, abs_lod[at + i + 1]);
        }
        at += abs_sizes[level];
    }
    lodtensor_destroy(t);
}

static void test_empty_sequences_everywhere(void) {
    /* 3 paragraphs of 2, 0, 1 sentences; 3 sentences of 0, 3, 1 words; 4 words of 2, 0, 0, 4 rows. */
    static const size_t len_sizes[3] = {3, 3, 4}, lengths[10] = {2, 0, 1, 0, 3, 1, 2, 0, 0, 4};
    static const size_t off_sizes[3] = {4, 4, 5}, offsets[13] = {0, 2, 2, 3, 0, 0, 3, 4, 0, 2, 2, 2, 6};
    lodtensor_t *t = NULL;
    size_t b = 0, e = 0;
    if (!CHECK_OK(fx_make_f32(6, 2, LEN, len_sizes, 3, lengths, 10, &t))) {
        return;
    }
    check_whole_lod(t, off_sizes, 3, offsets);
    check_all_sequence_rows(t, off_sizes, 3, offsets);
    /* The empty paragraph 1 has no rows, at the row where paragraph 2 starts: paragraph 0 is
     * sentences 0..2 = words 0..3 = rows 0..2 (2 + 0 + 0 rows), paragraph 2 is word 3 = rows 2..6. */
    CHECK_OK(lodtensor_sequence_rows(t, 0, 1, &b, &e));
    CHECK_EQ_SIZE(b, 2);
    CHECK_EQ_SIZE(e, 2);
    CHECK_OK(lodtensor_sequence_rows(t, 0, 2, &b, &e));
    CHECK_EQ_SIZE(b, 2);
    CHECK_EQ_SIZE(e, 6);
    lodtensor_destroy(t);
}

/* ---- set_lod / clear_lod ------------------------------------------------------------------------ */

static void test_set_and_clear(void) {
    static const size_t sizes1[1] = {3}, lod1[3] = {0, 2, 5};
    static const size_t len_sizes[2] = {2, 3}, lengths[5] = {1, 2, 1, 1, 3};
    static const size_t off_sizes[2] = {3, 4}, offsets[7] = {0, 1, 3, 0, 1, 2, 5};
    static const size_t bad_sizes[1] = {2};
    lodtensor_t *t = NULL, *share = NULL;
    size_t levels = 0;
    const size_t *before = NULL, *p = NULL;
    size_t n = 0;
    if (!CHECK_OK(fx_make_f32(5, 2, OFF, sizes1, 1, lod1, 3, &t))) {
        return;
    }
    CHECK_OK(lodtensor_share(t, &share));

    /* Replace with a 2-level LoD given as lengths. */
    CHECK_OK(lodtensor_set_lod(t, LEN, len_sizes, 2, lengths, 5));
    check_whole_lod(t, off_sizes, 2, offsets);
    /* The LoD belongs to the handle: the share keeps its own. */
    CHECK_OFFSETS(share, 0, lod1, 3);
    CHECK_OK(lodtensor_lod_num_levels(share, &levels));
    CHECK_EQ_SIZE(levels, 1);
    /* Elements are not touched by a LoD change. */
    CHECK_ROWS(t, 0, 5, 2);

    /* Failures keep the old LoD (and the old offsets pointer stays valid). */
    CHECK_OK(lodtensor_lod_offsets(t, 1, &before, &n));
    CHECK_STATUS_MSG(lodtensor_set_lod(t, 2, sizes1, 1, lod1, 3), LODTENSOR_INVALID_ARGUMENT, "lod_kind");
    CHECK_STATUS_MSG(lodtensor_set_lod(t, -5, NULL, 0, NULL, 0), LODTENSOR_INVALID_ARGUMENT, "lod_kind");
    CHECK_STATUS_MSG(lodtensor_set_lod(t, OFF, sizes1, 1, lod1, 2), LODTENSOR_INVALID_ARGUMENT, "lod_len");
    CHECK_STATUS_MSG(lodtensor_set_lod(t, OFF, bad_sizes, 1, lod1, 3), LODTENSOR_INVALID_ARGUMENT, "lod_len");
    CHECK_STATUS_MSG(lodtensor_set_lod(t, OFF, NULL, 1, lod1, 3), LODTENSOR_NULL_ARGUMENT, "level_sizes");
    CHECK_STATUS_MSG(lodtensor_set_lod(t, OFF, sizes1, 1, NULL, 3), LODTENSOR_NULL_ARGUMENT, "lod");
    CHECK_STATUS_MSG(lodtensor_set_lod(NULL, OFF, sizes1, 1, lod1, 3), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_set_lod(t, OFF, bad_sizes, 1, lod1, 2), LODTENSOR_INVALID_LOD, "lod: ");
    check_whole_lod(t, off_sizes, 2, offsets);
    CHECK_OK(lodtensor_lod_offsets(t, 1, &p, &n));
    CHECK_EQ_PTR(p, before);

    /* num_levels 0 removes the LoD (the NULL buffers of length 0 are fine). */
    CHECK_OK(lodtensor_set_lod(t, OFF, NULL, 0, NULL, 0));
    CHECK_OK(lodtensor_lod_num_levels(t, &levels));
    CHECK_EQ_SIZE(levels, 0);
    CHECK_STATUS_MSG(lodtensor_lod_offsets(t, 0, &p, &n), LODTENSOR_OUT_OF_RANGE, "level");

    /* clear_lod on a LoD tensor and on a plain one. */
    CHECK_OK(lodtensor_clear_lod(share));
    CHECK_OK(lodtensor_lod_num_levels(share, &levels));
    CHECK_EQ_SIZE(levels, 0);
    CHECK_OK(lodtensor_clear_lod(share));
    CHECK_STATUS_MSG(lodtensor_sequence_rows(share, 0, 0, &n, &n), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_lod_lengths(share, 0, NULL, 0, &n), LODTENSOR_OUT_OF_RANGE, "level");
    CHECK_STATUS_MSG(lodtensor_clear_lod(NULL), LODTENSOR_NULL_ARGUMENT, "t");
    /* ... and set again after clearing. */
    CHECK_OK(lodtensor_set_lod(share, OFF, sizes1, 1, lod1, 3));
    CHECK_OFFSETS(share, 0, lod1, 3);

    lodtensor_destroy(t);
    lodtensor_destroy(share);
}

static void test_zero_d_cannot_carry_a_lod(void) {
    static const size_t sizes[1] = {2}, lod[2] = {0, 1};
    float x = 1.0f;
    lodtensor_t *t = NULL;
    size_t levels = SENTINEL_SIZE;
    if (!CHECK_OK(lodtensor_create(fx_f32(), NULL, 0, &x, sizeof x, OFF, NULL, 0, NULL, 0, &t))) {
        return;
    }
    CHECK_STATUS_MSG(lodtensor_set_lod(t, OFF, sizes, 1, lod, 2), LODTENSOR_INVALID_LOD, "0-d");
    CHECK_OK(lodtensor_lod_num_levels(t, &levels));
    CHECK_EQ_SIZE(levels, 0);
    /* Removing a LoD that is not there is fine. */
    CHECK_OK(lodtensor_set_lod(t, LEN, NULL, 0, NULL, 0));
    CHECK_OK(lodtensor_clear_lod(t));
    lodtensor_destroy(t);
}

int main(void) {
    test_from_lengths_and_offsets();
    test_validity_rules();
    test_accessors();
    test_to_abs_offset_example();
    test_empty_sequences_everywhere();
    test_set_and_clear();
    test_zero_d_cannot_carry_a_lod();
    return CHECK_RETURN();
}
