/* test_dlpack: lodtensor_to_dlpack and lodtensor_from_dlpack. The DLPack structs are written out
 * here from DLPack's layout (a program would include its dlpack.h; lodtensor.h only declares the
 * managed tensor). An exported tensor's fields and its memory outliving the tensor; a producer's
 * managed tensor taken zero copy, its deleter called exactly once when the last handle goes and
 * never on failure; every documented failure; and, where CUDA can be used, device tensors both
 * ways. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

typedef struct {
    uint32_t major, minor;
} DLPackVersion;
typedef struct {
    int32_t device_type, device_id;
} DLDevice;
typedef struct {
    uint8_t code, bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
};
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;

#define FLAG_READ_ONLY 1u

/* A producer's float32 [3, 2] tensor holding 0..5; its deleter counts calls. */
typedef struct {
    DLManagedTensorVersioned managed;
    float data[6];
    int64_t shape[2];
    int64_t strides[2];
} Producer;

static int deleted;

static void delete_producer(DLManagedTensorVersioned *m) {
    ++deleted;
    free(m->manager_ctx);
}

static DLManagedTensorVersioned *produce(void) {
    Producer *p = (Producer *)calloc(1, sizeof(Producer));
    int i;
    if (!CHECK(p != NULL)) exit(1);
    for (i = 0; i < 6; ++i) p->data[i] = (float)i;
    p->shape[0] = 3;
    p->shape[1] = 2;
    p->managed.version.major = 1;
    p->managed.version.minor = 1;
    p->managed.manager_ctx = p;
    p->managed.deleter = delete_producer;
    p->managed.dl_tensor.data = p->data;
    p->managed.dl_tensor.device.device_type = 1;
    p->managed.dl_tensor.ndim = 2;
    p->managed.dl_tensor.dtype.code = 2;
    p->managed.dl_tensor.dtype.bits = 32;
    p->managed.dl_tensor.dtype.lanes = 1;
    p->managed.dl_tensor.shape = p->shape;
    return &p->managed;
}

static void test_export(void) {
    static const int16_t values[6] = {1, 2, 3, 4, 5, 6};
    static const int64_t dims[2] = {3, 2};
    static const size_t offsets[3] = {0, 1, 3};
    lodtensor_t *x = fx_make(fx_dtype(LODTENSOR_DTYPE_CODE_INT, 16), dims, 2, values, offsets, 3, NULL, 0);
    lodtensor_t *rows = NULL;
    DLManagedTensorVersioned *m = NULL;
    if (!CHECK_OK(lodtensor_slice(x, 0, 1, 2, &rows)) || !CHECK_OK(lodtensor_to_dlpack(rows, &m))) return;
    CHECK_EQ_PTR(m->dl_tensor.data, fx_data(rows));
    lodtensor_destroy(rows);
    lodtensor_destroy(x);
    CHECK_EQ_INT(m->version.major, 1);
    CHECK_EQ_INT(m->version.minor, 0);
    CHECK_EQ_INT(m->flags, 0);
    CHECK_EQ_INT(m->dl_tensor.device.device_type, 1);
    CHECK_EQ_INT(m->dl_tensor.device.device_id, 0);
    CHECK(m->dl_tensor.dtype.code == 0 && m->dl_tensor.dtype.bits == 16 && m->dl_tensor.dtype.lanes == 1);
    CHECK_EQ_INT(m->dl_tensor.ndim, 2);
    CHECK(m->dl_tensor.shape[0] == 2 && m->dl_tensor.shape[1] == 2);
    CHECK(m->dl_tensor.strides[0] == 2 && m->dl_tensor.strides[1] == 1);
    CHECK_EQ_INT(m->dl_tensor.byte_offset, 0);
    /* The handles are gone; rows 1-2 of x are still there. */
    CHECK(memcmp(m->dl_tensor.data, values + 2, 4 * sizeof(int16_t)) == 0);
    m->deleter(m);
}

static void test_import(void) {
    static const size_t sizes[1] = {3}, offsets[3] = {0, 2, 3};
    static const size_t offsets_tail[2] = {0, 1};
    DLManagedTensorVersioned *m = produce();
    lodtensor_t *x = NULL, *piece = NULL;
    const float *p;
    deleted = 0;
    if (!CHECK_OK(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, sizes, 1, offsets, 3, &x))) return;
    CHECK_EQ_PTR(fx_data(x), ((Producer *)m->manager_ctx)->data);
    CHECK_OFFSETS(x, 0, offsets, 3);
    CHECK_OK(lodtensor_slice(x, 0, 1, 2, &piece));
    lodtensor_destroy(x);
    CHECK_EQ_INT(deleted, 0);
    p = (const float *)fx_data(piece);
    CHECK(p[0] == 4.0f && p[1] == 5.0f);
    CHECK_OFFSETS(piece, 0, offsets_tail, 2);
    lodtensor_destroy(piece);
    CHECK_EQ_INT(deleted, 1);
}

static void test_round_trip(void) {
    static const uint8_t values[3] = {7, 8, 9};
    static const int64_t dims[1] = {3};
    lodtensor_t *x = fx_make(fx_u8(), dims, 1, values, NULL, 0, NULL, 0), *y = NULL;
    DLManagedTensorVersioned *m = NULL;
    if (CHECK_OK(lodtensor_to_dlpack(x, &m)) &&
        CHECK_OK(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &y))) {
        CHECK_EQ_PTR(fx_data(y), fx_data(x));
        lodtensor_destroy(x);
        CHECK(memcmp(fx_data(y), values, 3) == 0);
        lodtensor_destroy(y);
    } else {
        lodtensor_destroy(x);
    }
}

/* Imports a producer's tensor after `change`, with the LoD given by `level_sizes`, `num_levels`,
 * `lod` and `n`; it must fail with `status` naming `words`, leave *out alone and not call the
 * deleter. */
static void check_refused_lod(void (*change)(DLManagedTensorVersioned *), const size_t *level_sizes, size_t num_levels,
                              const size_t *lod, size_t n, int32_t status, const char *words) {
    lodtensor_t *out = fx_sentinel();
    DLManagedTensorVersioned *m = produce();
    Producer *p = (Producer *)m->manager_ctx;
    change(m);
    deleted = 0;
    CHECK_STATUS_MSG(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, level_sizes, num_levels, lod, n, &out), status,
                     words);
    CHECK_EQ_PTR(out, fx_sentinel());
    CHECK_EQ_INT(deleted, 0);
    p->managed.deleter(&p->managed);
}

/* check_refused_lod with a one-level LoD of `n` offsets (none when n is 0). */
static void check_refused(void (*change)(DLManagedTensorVersioned *), const size_t *lod, size_t n, int32_t status,
                          const char *words) {
    size_t sizes[1];
    sizes[0] = n;
    check_refused_lod(change, sizes, n ? 1 : 0, lod, n, status, words);
}

static void no_change(DLManagedTensorVersioned *m) { (void)m; }
static void version_2(DLManagedTensorVersioned *m) { m->version.major = 2; }
static void read_only(DLManagedTensorVersioned *m) { m->flags = FLAG_READ_ONLY; }
static void opencl(DLManagedTensorVersioned *m) { m->dl_tensor.device.device_type = 4; }
static void cpu_1(DLManagedTensorVersioned *m) { m->dl_tensor.device.device_id = 1; }
static void on_cuda(DLManagedTensorVersioned *m) { m->dl_tensor.device.device_type = 2; }
static void on_cuda_beyond(DLManagedTensorVersioned *m) {
    m->dl_tensor.device.device_type = 2;
    m->dl_tensor.device.device_id = 1000;
}
static void lanes_4(DLManagedTensorVersioned *m) { m->dl_tensor.dtype.lanes = 4; }
static void complex64(DLManagedTensorVersioned *m) { m->dl_tensor.dtype.code = 5; }
static void ndim_10(DLManagedTensorVersioned *m) { m->dl_tensor.ndim = 10; }
static void ndim_negative(DLManagedTensorVersioned *m) { m->dl_tensor.ndim = -1; }
static void no_shape(DLManagedTensorVersioned *m) { m->dl_tensor.shape = NULL; }
static void dim_negative(DLManagedTensorVersioned *m) { m->dl_tensor.shape[0] = -3; }
static void no_data(DLManagedTensorVersioned *m) { m->dl_tensor.data = NULL; }
static void misaligned(DLManagedTensorVersioned *m) { m->dl_tensor.byte_offset = 2; }
static void count_overflows(DLManagedTensorVersioned *m) { m->dl_tensor.shape[1] = INT64_MAX; }
static void bytes_overflow(DLManagedTensorVersioned *m) { m->dl_tensor.shape[0] = (int64_t)1 << 61; }
static void column_major(DLManagedTensorVersioned *m) {
    Producer *p = (Producer *)m->manager_ctx;
    p->strides[0] = 1;
    p->strides[1] = 3;
    m->dl_tensor.strides = p->strides;
}
static void compact(DLManagedTensorVersioned *m) {
    Producer *p = (Producer *)m->manager_ctx;
    p->strides[0] = 2;
    p->strides[1] = 1;
    m->dl_tensor.strides = p->strides;
}

static void test_errors(void) {
    static const size_t bad_lod[2] = {0, 2}, good_lod[2] = {0, 3};
    /* Ends at the 3 rows, but offset[2] < offset[1]. */
    static const size_t decreasing[4] = {0, 2, 1, 3};
    static const size_t sizes[1] = {2};
    lodtensor_t *out = fx_sentinel();
    DLManagedTensorVersioned *m = produce();
    CHECK_STATUS_MSG(lodtensor_to_dlpack(NULL, &m), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_to_dlpack(out, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(lodtensor_from_dlpack(NULL, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &out),
                     LODTENSOR_NULL_ARGUMENT, "managed");
    CHECK_STATUS_MSG(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, NULL), LODTENSOR_NULL_ARGUMENT,
                     "out");
    CHECK_STATUS_MSG(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, sizes, 1, NULL, 2, &out), LODTENSOR_NULL_ARGUMENT,
                     "lod");
    CHECK_STATUS_MSG(lodtensor_from_dlpack(m, 7, NULL, 0, NULL, 0, &out), LODTENSOR_INVALID_ARGUMENT, "lod_kind");
    CHECK_STATUS_MSG(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, sizes, 1, good_lod, 1, &out),
                     LODTENSOR_INVALID_ARGUMENT, "level_sizes");
    CHECK_EQ_PTR(out, fx_sentinel());
    m->deleter(m);

    check_refused(version_2, NULL, 0, LODTENSOR_UNSUPPORTED, "version 2.1");
    check_refused(read_only, NULL, 0, LODTENSOR_UNSUPPORTED, "read-only");
    check_refused(opencl, NULL, 0, LODTENSOR_UNSUPPORTED, "device type 4");
    check_refused(cpu_1, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "device_id");
    check_refused(lanes_4, NULL, 0, LODTENSOR_UNSUPPORTED, "lanes");
    check_refused(complex64, NULL, 0, LODTENSOR_UNSUPPORTED, "code 5");
    check_refused(ndim_10, NULL, 0, LODTENSOR_UNSUPPORTED, "10 dims");
    check_refused(ndim_negative, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "ndim -1");
    check_refused(no_shape, NULL, 0, LODTENSOR_NULL_ARGUMENT, "shape");
    check_refused(dim_negative, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "negative");
    check_refused(no_data, NULL, 0, LODTENSOR_NULL_ARGUMENT, "data");
    check_refused(misaligned, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "aligned");
    check_refused(column_major, NULL, 0, LODTENSOR_UNSUPPORTED, "compact row-major");
    check_refused(no_change, bad_lod, 2, LODTENSOR_INVALID_LOD, "rows");
    check_refused(no_change, decreasing, 4, LODTENSOR_INVALID_LOD, "non-decreasing");
    check_refused_lod(no_change, NULL, 1, good_lod, 2, LODTENSOR_NULL_ARGUMENT, "level_sizes");
    check_refused(count_overflows, NULL, 0, LODTENSOR_OUT_OF_MEMORY, "overflows");
    check_refused(bytes_overflow, NULL, 0, LODTENSOR_OUT_OF_MEMORY, "more bytes");
    /* Compact strides given explicitly are taken. */
    m = produce();
    compact(m);
    deleted = 0;
    if (CHECK_OK(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, sizes, 1, good_lod, 2, &out))) {
        lodtensor_destroy(out);
        CHECK_EQ_INT(deleted, 1);
    }
}

static void test_with_cuda(size_t count) {
    static const int64_t dims[2] = {2, 2};
    static const float values[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    lodtensor_t *x = fx_make(fx_f32(), dims, 2, values, NULL, 0, NULL, 0), *on_device = NULL, *back = NULL;
    DLManagedTensorVersioned *m = NULL;
    (void)count;
    if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &on_device)) &&
        CHECK_OK(lodtensor_to_dlpack(on_device, &m))) {
        CHECK(m->dl_tensor.device.device_type == 2 && m->dl_tensor.device.device_id == 0);
        CHECK_EQ_PTR(m->dl_tensor.data, fx_data(on_device));
        if (CHECK_OK(lodtensor_from_dlpack(m, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &back))) {
            lodtensor_t *host = NULL;
            lodtensor_place_t place;
            CHECK_EQ_PTR(fx_data(back), fx_data(on_device));
            CHECK_OK(lodtensor_place(back, &place));
            CHECK(place.device_type == LODTENSOR_DEVICE_CUDA && place.device_id == 0);
            lodtensor_destroy(on_device);
            on_device = NULL;
            if (CHECK_OK(lodtensor_to_place(back, fx_cpu(), &host))) {
                CHECK(memcmp(fx_data(host), values, sizeof values) == 0);
            }
            lodtensor_destroy(host);
        } else {
            m->deleter(m);
        }
    }
    lodtensor_destroy(back);
    lodtensor_destroy(on_device);
    lodtensor_destroy(x);
    check_refused(on_cuda_beyond, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "cuda:1000");
}

static void test_without_cuda(void) { check_refused(on_cuda, NULL, 0, LODTENSOR_UNSUPPORTED, "cuda:0"); }

int main(void) {
    test_export();
    test_import();
    test_round_trip();
    test_errors();
    fx_with_or_without_cuda("test_dlpack", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
