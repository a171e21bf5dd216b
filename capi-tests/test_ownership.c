/* test_ownership: who owns what. lodtensor_from_buffer's release callback runs exactly once, with
 * the caller's data and user_data, only after the last handle on the buffer (shares, slices, split
 * pieces, lod_reset results) is destroyed, and never when from_buffer fails; release may be NULL;
 * lodtensor_destroy(NULL) is fine; copies (lodtensor_copy, lodtensor_merge) are independent of the
 * original, shares are not; borrowed data pointers stay valid while any sharing handle lives
 * (valgrind checks the reads). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define SENTINEL_SIZE ((size_t)0x5EED5EED)

struct release_log {
    size_t calls;
    void *data;
    void *user_data;
};

static void log_release(void *data, void *user_data) {
    struct release_log *log = (struct release_log *)user_data;
    log->calls++;
    log->data = data;
    log->user_data = user_data;
}

/* Frees the buffer: the realistic callback. user_data counts the calls. */
static void free_release(void *data, void *user_data) {
    free(data);
    ++*(size_t *)user_data;
}

/* A float32 [rows, width] tensor over `buffer` (filled with fx_value) with the given offsets LoD. */
static int32_t wrap(float *buffer, size_t rows, size_t width, const size_t *sizes, size_t num_levels,
                    const size_t *lod, size_t lod_len, lodtensor_release_fn release, void *user_data,
                    lodtensor_t **out) {
    int64_t dims[2];
    size_t r, c;
    for (r = 0; r < rows; ++r) {
        for (c = 0; c < width; ++c) {
            buffer[r * width + c] = fx_value(r, c);
        }
    }
    dims[0] = (int64_t)rows;
    dims[1] = (int64_t)width;
    return lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 2, buffer, rows * width * sizeof(float),
                                 LODTENSOR_LOD_OFFSETS, sizes, num_levels, lod, lod_len, release, user_data, out);
}

/* 2 paragraphs of 2 and 1 sentences; sentences of 2, 3, 5 rows: 10 rows. */
static const size_t sizes2[2] = {3, 4}, lod2[7] = {0, 2, 3, 0, 2, 5, 10};

static void test_release_after_last_handle(void) {
    float buffer[10 * 2];
    struct release_log log = {0, NULL, NULL};
    lodtensor_t *t = NULL, *share = NULL, *slice = NULL, *pieces[2] = {NULL, NULL}, *reset = NULL;
    size_t count = 0;
    static const int64_t target[3] = {0, 4, 10};
    const void *p = NULL;
    if (!CHECK_OK(wrap(buffer, 10, 2, sizes2, 2, lod2, 7, log_release, &log, &t))) {
        return;
    }
    CHECK_OK(lodtensor_share(t, &share));
    CHECK_OK(lodtensor_slice(t, 0, 1, 2, &slice));
    CHECK_OK(lodtensor_split(t, 2, pieces, 2, &count));
    CHECK_EQ_SIZE(count, 2);
    CHECK_OK(lodtensor_lod_reset(t, NULL, target, 3, false, &reset));
    CHECK_EQ_SIZE(log.calls, 0);

    /* The original first: the others keep the buffer. */
    lodtensor_destroy(t);
    CHECK_EQ_SIZE(log.calls, 0);
    /* The slice still reads the caller's buffer: rows 5..10. */
    CHECK_OK(lodtensor_data(slice, &p));
    CHECK_EQ_PTR(p, buffer + 5 * 2);
    CHECK_ROWS(slice, 5, 5, 2);
    lodtensor_destroy(share);
    CHECK_EQ_SIZE(log.calls, 0);
    lodtensor_destroy(pieces[0]);
    CHECK_EQ_SIZE(log.calls, 0);
    lodtensor_destroy(reset);
    CHECK_EQ_SIZE(log.calls, 0);
    lodtensor_destroy(slice);
    CHECK_EQ_SIZE(log.calls, 0);
    CHECK_ROWS(pieces[1], 5, 5, 2);
    /* The last one: release runs now, once, with the caller's pointers. */
    lodtensor_destroy(pieces[1]);
    CHECK_EQ_SIZE(log.calls, 1);
    CHECK_EQ_PTR(log.data, buffer);
    CHECK_EQ_PTR(log.user_data, &log);
}

static void test_release_frees_a_heap_buffer(void) {
    /* The library owns the buffer's lifetime on success: release frees it; valgrind reports a leak
     * if it never runs and an invalid read if it runs too early. */
    size_t calls = 0;
    float *heap = (float *)malloc(10 * 2 * sizeof(float));
    lodtensor_t *t = NULL, *slice = NULL;
    if (!CHECK(heap != NULL)) {
        return;
    }
    if (!CHECK_OK(wrap(heap, 10, 2, sizes2, 2, lod2, 7, free_release, &calls, &t))) {
        free(heap);
        return;
    }
    CHECK_OK(lodtensor_slice(t, 1, 0, 2, &slice));
    lodtensor_destroy(t);
    CHECK_ROWS(slice, 0, 5, 2);
    CHECK_EQ_SIZE(calls, 0);
    lodtensor_destroy(slice);
    CHECK_EQ_SIZE(calls, 1);
}

static void test_release_not_called_on_failure(void) {
    float buffer[10 * 2];
    struct release_log log = {0, NULL, NULL};
    static const size_t bad_lod[7] = {0, 2, 3, 0, 2, 5, 9};
    const int64_t dims[2] = {10, 2};
    lodtensor_t *out = fx_sentinel();
    /* A wrong data_len. */
    CHECK_STATUS_MSG(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 2, buffer, sizeof buffer - 4,
                                           LODTENSOR_LOD_OFFSETS, sizes2, 2, lod2, 7, log_release, &log, &out),
                     LODTENSOR_INVALID_ARGUMENT, "data_len");
    /* A LoD that does not end at the rows. */
    CHECK_STATUS_MSG(wrap(buffer, 10, 2, sizes2, 2, bad_lod, 7, log_release, &log, &out), LODTENSOR_INVALID_LOD,
                     "rows");
    /* A CUDA place where CUDA is not usable. */
    if (!fx_cuda_usable()) {
        CHECK_STATUS_MSG(lodtensor_from_buffer(fx_place(LODTENSOR_DEVICE_CUDA, 0), fx_f32(), dims, 2, buffer,
                                               sizeof buffer, LODTENSOR_LOD_OFFSETS, sizes2, 2, lod2, 7, log_release,
                                               &log, &out),
                         LODTENSOR_UNSUPPORTED, NULL);
    }
    /* No out pointer. */
    CHECK_STATUS_MSG(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 2, buffer, sizeof buffer, LODTENSOR_LOD_OFFSETS,
                                           sizes2, 2, lod2, 7, log_release, &log, NULL),
                     LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_PTR(out, fx_sentinel());
    CHECK_EQ_SIZE(log.calls, 0);
}

static void test_release_null_and_destroy_null(void) {
    float buffer[4] = {1, 2, 3, 4};
    const int64_t dims[1] = {4};
    lodtensor_t *t = NULL, *s = NULL;
    lodtensor_destroy(NULL);
    /* release NULL: the caller keeps the buffer (on the stack here) alive longer than the handles. */
    if (CHECK_OK(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 1, buffer, sizeof buffer, LODTENSOR_LOD_OFFSETS, NULL,
                                       0, NULL, 0, NULL, NULL, &t))) {
        CHECK_OK(lodtensor_share(t, &s));
        lodtensor_destroy(t);
        lodtensor_destroy(s);
    }
    CHECK(buffer[0] == 1.0f && buffer[3] == 4.0f);
    lodtensor_destroy(NULL);
}

static void test_release_of_an_empty_buffer(void) {
    /* A buffer of length 0 may be NULL; release is still the caller's callback, called once with
     * the caller's data (NULL) and user_data. */
    struct release_log log = {0, fx_sentinel(), NULL};
    const int64_t dims[2] = {0, 4};
    lodtensor_t *t = NULL;
    if (CHECK_OK(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 2, NULL, 0, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0,
                                       log_release, &log, &t))) {
        CHECK_EQ_SIZE(log.calls, 0);
        lodtensor_destroy(t);
        CHECK_EQ_SIZE(log.calls, 1);
        CHECK_EQ_PTR(log.data, NULL);
        CHECK_EQ_PTR(log.user_data, &log);
    }
}

static void test_copy_is_independent(void) {
    float buffer[10 * 2];
    struct release_log log = {0, NULL, NULL};
    lodtensor_t *t = NULL, *copy = NULL, *share = NULL;
    const void *a = NULL, *b = NULL;
    void *rw = NULL;
    size_t levels = 0;
    if (!CHECK_OK(wrap(buffer, 10, 2, sizes2, 2, lod2, 7, log_release, &log, &t))) {
        return;
    }
    if (!CHECK_OK(lodtensor_copy(t, &copy)) || !CHECK_OK(lodtensor_share(t, &share))) {
        lodtensor_destroy(t);
        lodtensor_destroy(copy);
        return;
    }
    /* The copy: its own memory, the same elements and LoD. */
    CHECK_OK(lodtensor_data(copy, &a));
    CHECK_OK(lodtensor_data(t, &b));
    CHECK(a != b);
    CHECK_EQ_PTR(b, buffer);
    CHECK_ROWS(copy, 0, 10, 2);
    CHECK_OK(lodtensor_lod_num_levels(copy, &levels));
    CHECK_EQ_SIZE(levels, 2);
    CHECK_OFFSETS(copy, 1, lod2 + 3, 4);
    /* Writing the copy does not change the original... */
    CHECK_OK(lodtensor_data_mut(copy, &rw));
    ((float *)rw)[0] = 1234.0f;
    CHECK(buffer[0] == fx_value(0, 0));
    CHECK_ROWS(t, 0, 10, 2);
    /* ...writing through a share does. */
    CHECK_OK(lodtensor_data_mut(share, &rw));
    CHECK_EQ_PTR(rw, buffer);
    ((float *)rw)[1] = 4321.0f;
    CHECK_OK(lodtensor_data(t, &b));
    CHECK(((const float *)b)[1] == 4321.0f);
    CHECK(((const float *)a)[1] == fx_value(0, 1));
    /* The copy does not hold the caller's buffer: release runs when the last share goes. */
    lodtensor_destroy(t);
    lodtensor_destroy(share);
    CHECK_EQ_SIZE(log.calls, 1);
    CHECK(((const float *)a)[0] == 1234.0f);
    CHECK(((const float *)a)[19] == fx_value(9, 1));
    lodtensor_destroy(copy);
    CHECK_EQ_SIZE(log.calls, 1);
}

static void test_merge_does_not_hold_the_buffer(void) {
    float buffer[10 * 2];
    struct release_log log = {0, NULL, NULL};
    lodtensor_t *t = NULL, *merged = NULL;
    const lodtensor_t *one[1];
    if (!CHECK_OK(wrap(buffer, 10, 2, sizes2, 2, lod2, 7, log_release, &log, &t))) {
        return;
    }
    one[0] = t;
    CHECK_OK(lodtensor_merge(one, 1, &merged));
    lodtensor_destroy(t);
    CHECK_EQ_SIZE(log.calls, 1);
    CHECK_ROWS(merged, 0, 10, 2);
    lodtensor_destroy(merged);
}

static void test_owned_memory_outlives_the_original_handle(void) {
    /* lodtensor_create's memory: freed with the last handle, not the first. */
    lodtensor_t *t = NULL, *share = NULL, *slice = NULL, *pieces[3] = {NULL, NULL, NULL};
    size_t count = 0, i;
    if (!CHECK_OK(fx_make_f32(10, 2, LODTENSOR_LOD_OFFSETS, sizes2, 2, lod2, 7, &t))) {
        return;
    }
    CHECK_OK(lodtensor_share(t, &share));
    CHECK_OK(lodtensor_slice(t, 1, 2, 3, &slice));
    CHECK_OK(lodtensor_split(t, 3, pieces, 3, &count));
    CHECK_EQ_SIZE(count, 2);
    lodtensor_destroy(t);
    CHECK_ROWS(share, 0, 10, 2);
    lodtensor_destroy(share);
    CHECK_ROWS(slice, 5, 5, 2);
    lodtensor_destroy(slice);
    CHECK_ROWS(pieces[0], 0, 5, 2);
    CHECK_ROWS(pieces[1], 5, 5, 2);
    for (i = 0; i < count; ++i) {
        lodtensor_destroy(pieces[i]);
    }
}

static void test_share_and_copy_null_arguments(void) {
    lodtensor_t *t = NULL, *out = fx_sentinel();
    if (!CHECK_OK(fx_make_f32(2, 2, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        return;
    }
    CHECK_STATUS_MSG(lodtensor_share(NULL, &out), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_share(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_copy(NULL, &out), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_copy(t, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_PTR(out, fx_sentinel());
    lodtensor_destroy(t);
}

int main(void) {
    test_release_after_last_handle();
    test_release_frees_a_heap_buffer();
    test_release_not_called_on_failure();
    test_release_null_and_destroy_null();
    test_release_of_an_empty_buffer();
    test_copy_is_independent();
    test_merge_does_not_hold_the_buffer();
    test_owned_memory_outlives_the_original_handle();
    test_share_and_copy_null_arguments();
    return CHECK_RETURN();
}
