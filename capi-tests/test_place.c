/* test_place: lodtensor_cuda_device_count, lodtensor_to_place, lodtensor_synchronize,
 * lodtensor_cuda_stream.
 * Everything that needs no GPU runs in every build: the CPU place (a copy with its own memory,
 * same values and LoD), NULL arguments, bad places and devices, and, where CUDA cannot be used (a
 * build without CUDA, no driver, no device), the UNSUPPORTED statuses. With a GPU the round trip
 * host -> cuda:0 -> cuda:0 -> host is checked too, sequence_expand_as on the device against the
 * worked example, and each device's stream (the same handle each time, one per device); without
 * one that part says it was skipped. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define WIDTH 3

static const size_t x_sizes[1] = {3}, x_lengths[3] = {2, 0, 3}; /* offsets [[0,2,2,5]] */
static const size_t x_offsets[4] = {0, 2, 2, 5};

static void test_cpu_copy(void) {
    lodtensor_t *x = NULL, *y = NULL;
    lodtensor_place_t place;
    const void *px = NULL, *py = NULL;
    if (!CHECK_OK(fx_make_f32(5, WIDTH, LODTENSOR_LOD_LENGTHS, x_sizes, 1, x_lengths, 3, &x))) return;
    if (CHECK_OK(lodtensor_to_place(x, fx_cpu(), &y))) {
        CHECK_ROWS(y, 0, 5, WIDTH);
        CHECK_OFFSETS(y, 0, x_offsets, 4);
        CHECK_OK(lodtensor_place(y, &place));
        CHECK_EQ_INT(place.device_type, LODTENSOR_DEVICE_CPU);
        /* Same place is still a copy: its own memory. */
        CHECK_OK(lodtensor_data(x, &px));
        CHECK_OK(lodtensor_data(y, &py));
        CHECK(px != py);
    }
    lodtensor_destroy(y);
    CHECK_OK(lodtensor_synchronize(fx_cpu()));
    lodtensor_destroy(x);
}

static void test_bad_arguments(void) {
    lodtensor_t *x = NULL, *y = fx_sentinel();
    if (!CHECK_OK(fx_make_f32(5, WIDTH, LODTENSOR_LOD_LENGTHS, x_sizes, 1, x_lengths, 3, &x))) return;
    CHECK_STATUS_MSG(lodtensor_cuda_device_count(NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_to_place(NULL, fx_cpu(), &y), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_to_place(x, fx_cpu(), NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_to_place(x, fx_place(3, 0), &y), LODTENSOR_INVALID_ARGUMENT, "place");
    CHECK_STATUS_MSG(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CPU, 1), &y), LODTENSOR_INVALID_ARGUMENT,
                     "place");
    CHECK_STATUS_MSG(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, -1), &y), LODTENSOR_INVALID_ARGUMENT,
                     "place");
    CHECK_STATUS_MSG(lodtensor_synchronize(fx_place(0, 0)), LODTENSOR_INVALID_ARGUMENT, "place");
    CHECK_STATUS_MSG(lodtensor_synchronize(fx_place(LODTENSOR_DEVICE_CUDA, -2)), LODTENSOR_INVALID_ARGUMENT,
                     "place");
    CHECK_EQ_PTR(y, fx_sentinel());
    void *stream = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_cuda_stream(0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_cuda_stream(-1, &stream), LODTENSOR_INVALID_ARGUMENT, "device");
    CHECK_EQ_PTR(stream, fx_sentinel());
    lodtensor_destroy(x);
}

/* CUDA cannot be used here: every CUDA place is UNSUPPORTED, and outputs stay untouched. */
static void test_without_cuda(void) {
    lodtensor_t *x = NULL, *y = fx_sentinel();
    if (!CHECK_OK(fx_make_f32(5, WIDTH, LODTENSOR_LOD_LENGTHS, x_sizes, 1, x_lengths, 3, &x))) return;
    CHECK_STATUS_MSG(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &y), LODTENSOR_UNSUPPORTED, "cuda");
    CHECK_STATUS_MSG(lodtensor_synchronize(fx_place(LODTENSOR_DEVICE_CUDA, 0)), LODTENSOR_UNSUPPORTED, "cuda");
    CHECK_EQ_PTR(y, fx_sentinel());
    void *stream = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_cuda_stream(0, &stream), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_EQ_PTR(stream, fx_sentinel());
    lodtensor_destroy(x);
}

/* Each device's stream: a handle of its own, the same at every call; a device beyond the count is
 * INVALID_ARGUMENT and leaves the output untouched. */
static void test_streams(size_t count) {
    void *streams[8] = {NULL}, *again = NULL, *bad = fx_sentinel();
    size_t d, e;
    CHECK_STATUS_MSG(lodtensor_cuda_stream((int32_t)count, &bad), LODTENSOR_INVALID_ARGUMENT, "cuda:");
    CHECK_EQ_PTR(bad, fx_sentinel());
    for (d = 0; d < count && d < 8; d++) {
        if (!CHECK_OK(lodtensor_cuda_stream((int32_t)d, &streams[d]))) continue;
        CHECK(streams[d] != NULL);
        CHECK_OK(lodtensor_cuda_stream((int32_t)d, &again));
        CHECK_EQ_PTR(again, streams[d]);
        for (e = 0; e < d; e++) CHECK(streams[e] != streams[d]);
    }
}

static void test_with_cuda(size_t count) {
    lodtensor_t *x = NULL, *d = NULL, *d2 = NULL, *h = NULL, *y = NULL, *e = NULL, *eh = NULL, *bad = fx_sentinel();
    lodtensor_place_t place;
    const size_t y_sizes[1] = {5}, y_lengths[5] = {1, 0, 2, 3, 1}; /* expand x's 5 rows */
    const size_t e_rows[7] = {0, 2, 2, 3, 3, 3, 4};
    size_t i;
    if (!CHECK_OK(fx_make_f32(5, WIDTH, LODTENSOR_LOD_LENGTHS, x_sizes, 1, x_lengths, 3, &x))) return;
    CHECK_STATUS_MSG(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, (int32_t)count), &bad),
                     LODTENSOR_INVALID_ARGUMENT, "place");
    CHECK_EQ_PTR(bad, fx_sentinel());
    if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &d)) &&
        CHECK_OK(lodtensor_to_place(d, fx_place(LODTENSOR_DEVICE_CUDA, 0), &d2)) &&
        CHECK_OK(lodtensor_to_place(d2, fx_cpu(), &h))) {
        CHECK_OK(lodtensor_place(d, &place));
        CHECK_EQ_INT(place.device_type, LODTENSOR_DEVICE_CUDA);
        CHECK_EQ_INT(place.device_id, 0);
        CHECK_ROWS(h, 0, 5, WIDTH);
        CHECK_OFFSETS(h, 0, x_offsets, 4);
        CHECK_OK(lodtensor_synchronize(fx_place(LODTENSOR_DEVICE_CUDA, 0)));
    }
    /* sequence_expand_as on the device: row r of x repeated y_lengths[r] times. */
    if (CHECK_OK(fx_make_f32(7, 1, LODTENSOR_LOD_LENGTHS, y_sizes, 1, y_lengths, 5, &y)) && d != NULL) {
        lodtensor_t *dense = NULL, *yd = NULL; /* the inputs of an op share its place */
        if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &dense)) &&
            CHECK_OK(lodtensor_to_place(y, fx_place(LODTENSOR_DEVICE_CUDA, 0), &yd))) {
            CHECK_OK(lodtensor_clear_lod(dense));
            CHECK_STATUS_MSG(sequence_expand_as(dense, y, &e), LODTENSOR_INVALID_ARGUMENT, "cuda:0");
            if (CHECK_OK(sequence_expand_as(dense, yd, &e)) && CHECK_OK(lodtensor_to_place(e, fx_cpu(), &eh))) {
                const void *data = NULL;
                CHECK_OK(lodtensor_data(eh, &data));
                for (i = 0; data != NULL && i < 7 * WIDTH; ++i) {
                    CHECK(((const float *)data)[i] == fx_value(e_rows[i / WIDTH], i % WIDTH));
                }
            }
        }
        lodtensor_destroy(yd);
        lodtensor_destroy(dense);
    }
    lodtensor_destroy(eh);
    lodtensor_destroy(e);
    lodtensor_destroy(y);
    lodtensor_destroy(h);
    lodtensor_destroy(d2);
    lodtensor_destroy(d);
    lodtensor_destroy(x);
}

int main(void) {
    size_t count = 0;
    int32_t status = lodtensor_cuda_device_count(&count);
    test_cpu_copy();
    test_bad_arguments();
    if (status == LODTENSOR_OK) {
        CHECK(count > 0);
        test_with_cuda(count);
        test_streams(count);
    } else {
        /* scripts/test-gpu.sh sets LODTENSOR_REQUIRE_GPU=1: a GPU run must not pass by skipping. */
        const char *require = getenv("LODTENSOR_REQUIRE_GPU");
        CHECK(require == NULL || strcmp(require, "1") != 0);
        CHECK_EQ_INT(status, LODTENSOR_UNSUPPORTED);
        CHECK_STATUS_MSG(lodtensor_cuda_device_count(&count), LODTENSOR_UNSUPPORTED, "CUDA");
        printf("test_place: CUDA cannot be used (%s); the GPU part is skipped\n", lodtensor_last_error_message());
        test_without_cuda();
    }
    return CHECK_RETURN();
}
