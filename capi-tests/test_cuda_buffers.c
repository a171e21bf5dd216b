/* test_cuda_buffers: lodtensor_from_buffer over memory said to be on a CUDA device. Where CUDA can
 * be used: a device tensor's memory, all of it or some of its rows, wraps as a tensor on that
 * device whose values the device's ops read, and release runs once, at the last destroy; memory
 * of cuda:0 said to be on cuda:1 is INVALID_ARGUMENT naming both devices, and so is a buffer
 * that runs past the end of the address space, one whose last byte lies past all device memory,
 * and host memory from the stack (on the emulator; a GPU that reads pageable host memory may take
 * the last two, and then must read the host values); no failure calls release or writes *out.
 * Without CUDA, a CUDA place is UNSUPPORTED. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define ROWS 64
#define WIDTH 4

struct release_log {
    size_t calls;
    void *data;
};

static void log_release(void *data, void *user_data) {
    struct release_log *log = (struct release_log *)user_data;
    log->calls++;
    log->data = data;
}

/* A float32 [rows, WIDTH] tensor on `place` over `data`, without a LoD. */
static int32_t wrap(lodtensor_place_t place, void *data, int64_t rows, struct release_log *log, lodtensor_t **out) {
    const int64_t dims[2] = {rows, WIDTH};
    size_t len = (size_t)rows * WIDTH * sizeof(float);
    return lodtensor_from_buffer(place, fx_f32(), dims, 2, data, len, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0,
                                 log_release, log, out);
}

/* Whether every element of `t` (on any place), copied to the host, equals `want[i]` (or `value`
 * where `want` is NULL). */
static int holds(const lodtensor_t *t, size_t n, const float *want, float value) {
    lodtensor_t *host = NULL;
    const void *data = NULL;
    size_t bad = 0, i;
    if (!CHECK_OK(lodtensor_to_place(t, fx_cpu(), &host)) || !CHECK_OK(lodtensor_data(host, &data))) {
        lodtensor_destroy(host);
        return 0;
    }
    for (i = 0; i < n; i++) bad += ((const float *)data)[i] != (want != NULL ? want[i] : value);
    lodtensor_destroy(host);
    return CHECK_EQ_SIZE(bad, 0);
}

/* A failed wrap of `data` on `place`: INVALID_ARGUMENT with every substring in the message, no
 * release, *out untouched. */
static void check_refused(lodtensor_place_t place, void *data, int64_t rows, const char *a, const char *b) {
    struct release_log log = {0, NULL};
    lodtensor_t *t = fx_sentinel();
    CHECK_STATUS_MSG(wrap(place, data, rows, &log, &t), LODTENSOR_INVALID_ARGUMENT, a);
    CHECK(strstr(lodtensor_last_error_message(), "data") != NULL);
    CHECK(b == NULL || strstr(lodtensor_last_error_message(), b) != NULL);
    CHECK_EQ_PTR(t, fx_sentinel());
    CHECK_EQ_SIZE(log.calls, 0);
}

/* Memory the device may or may not read (host memory, addresses past every allocation): refused
 * on the emulator; on a GPU either refused or, where it reads pageable memory, taken, and then
 * the device's copy of it must hold `want` (when given). */
static void check_host_memory(lodtensor_place_t place, void *data, int64_t rows, const char *which, const float *want) {
#ifdef FX_CUDA_EMULATOR
    (void)want;
    check_refused(place, data, rows, which, "not memory the CUDA driver knows");
#else
    struct release_log log = {0, NULL};
    lodtensor_t *t = fx_sentinel();
    CHECK_PRIME();
    int32_t status = wrap(place, data, rows, &log, &t);
    if (status == LODTENSOR_OK) {
        if (want != NULL) holds(t, (size_t)rows * WIDTH, want, 0.0f);
        lodtensor_destroy(t);
        CHECK_EQ_SIZE(log.calls, 1);
    } else {
        CHECK_STATUS_VALUE(status, LODTENSOR_INVALID_ARGUMENT, which);
        CHECK_EQ_PTR(t, fx_sentinel());
        CHECK_EQ_SIZE(log.calls, 0);
    }
#endif
}

static void test_with_cuda(size_t count) {
    const int64_t dims[2] = {ROWS, WIDTH};
    lodtensor_place_t cuda0 = fx_place(LODTENSOR_DEVICE_CUDA, 0);
    lodtensor_t *d = NULL, *all = NULL, *half = NULL, *empty = NULL;
    struct release_log log = {0, NULL}, half_log = {0, NULL}, empty_log = {0, NULL};
    static float host[ROWS * WIDTH];
    void *p = NULL;
    size_t i;
    if (!CHECK_OK(lodtensor_fill_on(cuda0, fx_f32(), dims, 2, 2.5, &d)) || !CHECK_OK(lodtensor_data_mut(d, &p))) {
        lodtensor_destroy(d);
        return;
    }
    /* All of it, and its last half: tensors on cuda:0 over the same memory. */
    if (CHECK_OK(wrap(cuda0, p, ROWS, &log, &all))) {
        holds(all, ROWS * WIDTH, NULL, 2.5f);
        lodtensor_destroy(all);
        CHECK_EQ_SIZE(log.calls, 1);
        CHECK_EQ_PTR(log.data, p);
    }
    if (CHECK_OK(wrap(cuda0, (float *)p + ROWS / 2 * WIDTH, ROWS / 2, &half_log, &half))) {
        holds(half, ROWS / 2 * WIDTH, NULL, 2.5f);
        lodtensor_destroy(half);
        CHECK_EQ_SIZE(half_log.calls, 1);
    }
    /* No bytes: nothing to check, whatever the pointer. */
    if (CHECK_OK(wrap(cuda0, NULL, 0, &empty_log, &empty))) {
        lodtensor_destroy(empty);
        CHECK_EQ_SIZE(empty_log.calls, 1);
    }
    /* Memory of cuda:0 said to be on cuda:1. */
    if (count >= 2) check_refused(fx_place(LODTENSOR_DEVICE_CUDA, 1), p, ROWS, "cuda:0", "cuda:1");
    /* A buffer whose last byte would lie past the end of the address space. */
    check_refused(cuda0, (void *)(UINTPTR_MAX - 15), 4, "past the end of memory", NULL);
    /* A buffer that starts in the tensor's memory and ends 2^40 bytes on. */
    check_host_memory(cuda0, p, (int64_t)1 << 36, "last byte", NULL);
    /* Host memory. */
    for (i = 0; i < ROWS * WIDTH; i++) host[i] = (float)i;
    check_host_memory(cuda0, host, ROWS, "first byte", host);
    lodtensor_destroy(d);
}

static void test_without_cuda(void) {
    static float host[ROWS * WIDTH];
    struct release_log log = {0, NULL};
    lodtensor_t *t = fx_sentinel();
    CHECK_STATUS_MSG(wrap(fx_place(LODTENSOR_DEVICE_CUDA, 0), host, ROWS, &log, &t), LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK_EQ_PTR(t, fx_sentinel());
    CHECK_EQ_SIZE(log.calls, 0);
}

int main(void) {
    fx_with_or_without_cuda("test_cuda_buffers", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
