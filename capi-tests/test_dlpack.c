/* test_dlpack: lodtensor_to_dlpack and lodtensor_from_dlpack, and their forms for DLPack before
 * 1.0 (lodtensor_to_dlpack_legacy, lodtensor_from_dlpack_legacy). The DLPack structs are written
 * out here from DLPack's layout (a program would include its dlpack.h; lodtensor.h only declares
 * the managed tensors). In both forms: an exported tensor's fields and its memory outliving the
 * tensor; a producer's managed tensor taken zero copy, its deleter called exactly once when the
 * last handle goes and never on failure; every documented failure; and, where CUDA can be used,
 * device tensors both ways. */
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
/* DLPack before 1.0: no version, no flags, the tensor first. */
struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
};
typedef struct DLManagedTensor DLManagedTensor;

#define FLAG_READ_ONLY 1u

/* The two forms of managed tensor. */
enum form { VERSIONED, LEGACY };
static const char *const form_names[2] = {"versioned", "legacy"};

/* A producer's float32 [3, 2] tensor holding 0..5, as a managed tensor of one form (`managed` or
 * `legacy`; `t` is its dl_tensor); its deleter counts calls. */
typedef struct {
    enum form form;
    DLManagedTensorVersioned managed;
    DLManagedTensor legacy;
    DLTensor *t;
    float data[6];
    int64_t shape[2];
    int64_t strides[2];
} Producer;

static int deleted;

static void delete_producer(DLManagedTensorVersioned *m) {
    ++deleted;
    free(m->manager_ctx);
}

static void delete_legacy_producer(DLManagedTensor *m) {
    ++deleted;
    free(m->manager_ctx);
}

static Producer *produce(enum form form) {
    Producer *p = (Producer *)calloc(1, sizeof(Producer));
    int i;
    if (!CHECK(p != NULL)) exit(1);
    for (i = 0; i < 6; ++i) p->data[i] = (float)i;
    p->shape[0] = 3;
    p->shape[1] = 2;
    p->form = form;
    p->t = form == VERSIONED ? &p->managed.dl_tensor : &p->legacy.dl_tensor;
    p->managed.version.major = 1;
    p->managed.version.minor = 1;
    p->managed.manager_ctx = p;
    p->managed.deleter = delete_producer;
    p->legacy.manager_ctx = p;
    p->legacy.deleter = delete_legacy_producer;
    p->t->data = p->data;
    p->t->device.device_type = 1;
    p->t->ndim = 2;
    p->t->dtype.code = 2;
    p->t->dtype.bits = 32;
    p->t->dtype.lanes = 1;
    p->t->shape = p->shape;
    return p;
}

/* Imports p's managed tensor of its form with the LoD given as in lodtensor_create. */
static int32_t take(Producer *p, const size_t *level_sizes, size_t num_levels, const size_t *lod, size_t n,
                    lodtensor_t **out) {
    return p->form == VERSIONED
               ? lodtensor_from_dlpack(&p->managed, LODTENSOR_LOD_OFFSETS, level_sizes, num_levels, lod, n, out)
               : lodtensor_from_dlpack_legacy(&p->legacy, LODTENSOR_LOD_OFFSETS, level_sizes, num_levels, lod, n, out);
}

/* Frees a producer whose managed tensor was not taken, by its own deleter. */
static void give_back(Producer *p) {
    if (p->form == VERSIONED) {
        p->managed.deleter(&p->managed);
    } else {
        p->legacy.deleter(&p->legacy);
    }
}

/* A tensor exported in one form: the one of the two pointers that is set. */
typedef struct {
    DLManagedTensorVersioned *managed;
    DLManagedTensor *legacy;
} Exported;

static DLTensor *exported_tensor(Exported e) { return e.managed ? &e.managed->dl_tensor : &e.legacy->dl_tensor; }

/* Exports x in `form` into *e; 0 on failure. */
static int export_as(enum form form, const lodtensor_t *x, Exported *e) {
    e->managed = NULL;
    e->legacy = NULL;
    return form == VERSIONED ? CHECK_OK(lodtensor_to_dlpack(x, &e->managed))
                             : CHECK_OK(lodtensor_to_dlpack_legacy(x, &e->legacy));
}

static void delete_exported(Exported e) {
    if (e.managed) {
        e.managed->deleter(e.managed);
    } else {
        e.legacy->deleter(e.legacy);
    }
}

/* Takes back an exported tensor of either form. */
static int32_t take_exported(Exported e, lodtensor_t **out) {
    return e.managed ? lodtensor_from_dlpack(e.managed, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, out)
                     : lodtensor_from_dlpack_legacy(e.legacy, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, out);
}

static void test_export(enum form form) {
    static const int16_t values[6] = {1, 2, 3, 4, 5, 6};
    static const int64_t dims[2] = {3, 2};
    static const size_t offsets[3] = {0, 1, 3};
    lodtensor_t *x = fx_make(fx_dtype(LODTENSOR_DTYPE_CODE_INT, 16), dims, 2, values, offsets, 3, NULL, 0);
    lodtensor_t *rows = NULL;
    Exported e;
    DLTensor *t;
    if (!CHECK_OK(lodtensor_slice(x, 0, 1, 2, &rows)) || !export_as(form, rows, &e)) return;
    t = exported_tensor(e);
    CHECK_EQ_PTR(t->data, fx_data(rows));
    lodtensor_destroy(rows);
    lodtensor_destroy(x);
    if (e.managed) {
        CHECK_EQ_INT(e.managed->version.major, 1);
        CHECK_EQ_INT(e.managed->version.minor, 0);
        CHECK_EQ_INT(e.managed->flags, 0);
    }
    CHECK_EQ_INT(t->device.device_type, 1);
    CHECK_EQ_INT(t->device.device_id, 0);
    CHECK(t->dtype.code == 0 && t->dtype.bits == 16 && t->dtype.lanes == 1);
    CHECK_EQ_INT(t->ndim, 2);
    CHECK(t->shape[0] == 2 && t->shape[1] == 2);
    CHECK(t->strides[0] == 2 && t->strides[1] == 1);
    CHECK_EQ_INT(t->byte_offset, 0);
    /* The handles are gone; rows 1-2 of x are still there. */
    CHECK(memcmp(t->data, values + 2, 4 * sizeof(int16_t)) == 0);
    delete_exported(e);
}

static void test_import(enum form form) {
    static const size_t sizes[1] = {3}, offsets[3] = {0, 2, 3};
    static const size_t offsets_tail[2] = {0, 1};
    Producer *p = produce(form);
    lodtensor_t *x = NULL, *piece = NULL;
    const float *v;
    deleted = 0;
    if (!CHECK_OK(take(p, sizes, 1, offsets, 3, &x))) return;
    CHECK_EQ_PTR(fx_data(x), p->data);
    CHECK_OFFSETS(x, 0, offsets, 3);
    CHECK_OK(lodtensor_slice(x, 0, 1, 2, &piece));
    lodtensor_destroy(x);
    CHECK_EQ_INT(deleted, 0);
    v = (const float *)fx_data(piece);
    CHECK(v[0] == 4.0f && v[1] == 5.0f);
    CHECK_OFFSETS(piece, 0, offsets_tail, 2);
    lodtensor_destroy(piece);
    CHECK_EQ_INT(deleted, 1);
}

static void test_round_trip(enum form form) {
    static const uint8_t values[3] = {7, 8, 9};
    static const int64_t dims[1] = {3};
    lodtensor_t *x = fx_make(fx_u8(), dims, 1, values, NULL, 0, NULL, 0), *y = NULL;
    Exported e;
    if (export_as(form, x, &e) && CHECK_OK(take_exported(e, &y))) {
        CHECK_EQ_PTR(fx_data(y), fx_data(x));
        lodtensor_destroy(x);
        CHECK(memcmp(fx_data(y), values, 3) == 0);
        lodtensor_destroy(y);
    } else {
        lodtensor_destroy(x);
    }
}

/* Imports a producer's tensor of each form after `change`, with the LoD given by `level_sizes`,
 * `num_levels`, `lod` and `n`; it must fail with `status` naming `words`, leave *out alone and
 * not call the deleter. A change of the versioned form's own fields is tried on that form only. */
static void check_refused_lod(void (*change)(Producer *), int versioned_only, const size_t *level_sizes,
                              size_t num_levels, const size_t *lod, size_t n, int32_t status, const char *words) {
    int form;
    for (form = VERSIONED; form <= (versioned_only ? VERSIONED : LEGACY); ++form) {
        lodtensor_t *out = fx_sentinel();
        Producer *p = produce((enum form)form);
        change(p);
        deleted = 0;
        if (!CHECK_STATUS_MSG(take(p, level_sizes, num_levels, lod, n, &out), status, words)) {
            fprintf(stderr, "  (the %s form)\n", form_names[form]);
        }
        CHECK_EQ_PTR(out, fx_sentinel());
        CHECK_EQ_INT(deleted, 0);
        give_back(p);
    }
}

/* check_refused_lod with a one-level LoD of `n` offsets (none when n is 0), in both forms. */
static void check_refused(void (*change)(Producer *), const size_t *lod, size_t n, int32_t status,
                          const char *words) {
    size_t sizes[1];
    sizes[0] = n;
    check_refused_lod(change, 0, sizes, n ? 1 : 0, lod, n, status, words);
}

static void no_change(Producer *p) { (void)p; }
static void version_2(Producer *p) { p->managed.version.major = 2; }
static void version_0(Producer *p) { p->managed.version.major = 0; }
static void read_only(Producer *p) { p->managed.flags = FLAG_READ_ONLY; }
static void opencl(Producer *p) { p->t->device.device_type = 4; }
static void cpu_1(Producer *p) { p->t->device.device_id = 1; }
static void on_cuda(Producer *p) { p->t->device.device_type = 2; }
static void on_cuda_managed(Producer *p) { p->t->device.device_type = 13; }
static void on_cuda_managed_beyond(Producer *p) {
    p->t->device.device_type = 13;
    p->t->device.device_id = 1000;
}
static void on_cuda_beyond(Producer *p) {
    p->t->device.device_type = 2;
    p->t->device.device_id = 1000;
}
static void lanes_4(Producer *p) { p->t->dtype.lanes = 4; }
static void complex64(Producer *p) { p->t->dtype.code = 5; }
static void ndim_10(Producer *p) { p->t->ndim = 10; }
static void ndim_negative(Producer *p) { p->t->ndim = -1; }
static void no_shape(Producer *p) { p->t->shape = NULL; }
static void dim_negative(Producer *p) { p->t->shape[0] = -3; }
static void no_data(Producer *p) { p->t->data = NULL; }
static void misaligned(Producer *p) { p->t->byte_offset = 2; }
static void count_overflows(Producer *p) { p->t->shape[1] = INT64_MAX; }
static void bytes_overflow(Producer *p) { p->t->shape[0] = (int64_t)1 << 61; }
static void column_major(Producer *p) {
    p->strides[0] = 1;
    p->strides[1] = 3;
    p->t->strides = p->strides;
}
static void compact(Producer *p) {
    p->strides[0] = 2;
    p->strides[1] = 1;
    p->t->strides = p->strides;
}

/* The argument checks of one form's import and export. */
static void test_argument_errors(enum form form) {
    static const size_t good_lod[2] = {0, 3};
    static const size_t sizes[1] = {2};
    lodtensor_t *out = fx_sentinel();
    Producer *p = produce(form);
    DLManagedTensorVersioned *m = NULL;
    DLManagedTensor *l = NULL;
    if (form == VERSIONED) {
        CHECK_STATUS_MSG(lodtensor_to_dlpack(NULL, &m), LODTENSOR_NULL_ARGUMENT, "t");
        CHECK_STATUS_MSG(lodtensor_to_dlpack(out, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(lodtensor_from_dlpack(NULL, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &out),
                         LODTENSOR_NULL_ARGUMENT, "managed");
        CHECK_STATUS_MSG(lodtensor_from_dlpack(&p->managed, 7, NULL, 0, NULL, 0, &out), LODTENSOR_INVALID_ARGUMENT,
                         "lod_kind");
    } else {
        CHECK_STATUS_MSG(lodtensor_to_dlpack_legacy(NULL, &l), LODTENSOR_NULL_ARGUMENT, "t");
        CHECK_STATUS_MSG(lodtensor_to_dlpack_legacy(out, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        CHECK_STATUS_MSG(lodtensor_from_dlpack_legacy(NULL, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &out),
                         LODTENSOR_NULL_ARGUMENT, "managed");
        CHECK_STATUS_MSG(lodtensor_from_dlpack_legacy(&p->legacy, 7, NULL, 0, NULL, 0, &out),
                         LODTENSOR_INVALID_ARGUMENT, "lod_kind");
    }
    CHECK(m == NULL && l == NULL);
    CHECK_STATUS_MSG(take(p, NULL, 0, NULL, 0, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_STATUS_MSG(take(p, sizes, 1, NULL, 2, &out), LODTENSOR_NULL_ARGUMENT, "lod");
    CHECK_STATUS_MSG(take(p, sizes, 1, good_lod, 1, &out), LODTENSOR_INVALID_ARGUMENT, "level_sizes");
    CHECK_EQ_PTR(out, fx_sentinel());
    give_back(p);
}

static void test_errors(void) {
    static const size_t bad_lod[2] = {0, 2}, good_lod[2] = {0, 3};
    /* Ends at the 3 rows, but offset[2] < offset[1]. */
    static const size_t decreasing[4] = {0, 2, 1, 3};
    static const size_t sizes[1] = {2};
    lodtensor_t *out = fx_sentinel();
    int form;
    test_argument_errors(VERSIONED);
    test_argument_errors(LEGACY);
    check_refused_lod(version_2, 1, NULL, 0, NULL, 0, LODTENSOR_UNSUPPORTED, "version 2.1");
    check_refused_lod(version_0, 1, NULL, 0, NULL, 0, LODTENSOR_UNSUPPORTED, "lodtensor_from_dlpack_legacy");
    check_refused_lod(read_only, 1, NULL, 0, NULL, 0, LODTENSOR_UNSUPPORTED, "read-only");
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
    check_refused(no_change, bad_lod, 2, LODTENSOR_INVALID_LOD, "lod: ");
    check_refused(no_change, decreasing, 4, LODTENSOR_INVALID_LOD, "lod: ");
    check_refused_lod(no_change, 0, NULL, 1, good_lod, 2, LODTENSOR_NULL_ARGUMENT, "level_sizes");
    check_refused(count_overflows, NULL, 0, LODTENSOR_OUT_OF_MEMORY, "overflows");
    check_refused(bytes_overflow, NULL, 0, LODTENSOR_OUT_OF_MEMORY, "more bytes");
    /* Compact strides given explicitly are taken; so is, in the legacy form, what a versioned
     * tensor's own fields would refuse (it has none). */
    for (form = VERSIONED; form <= LEGACY; ++form) {
        Producer *p = produce((enum form)form);
        compact(p);
        if (form == LEGACY) {
            version_2(p);
            read_only(p);
        }
        deleted = 0;
        if (CHECK_OK(take(p, sizes, 1, good_lod, 2, &out))) {
            lodtensor_destroy(out);
            CHECK_EQ_INT(deleted, 1);
        }
    }
}

/* A device tensor's memory lent as kDLCUDAManaged (13): taken as that device's, zero copy. */
static void test_managed_on_cuda(enum form form) {
    static const int64_t dims[1] = {3};
    static const int32_t values[3] = {5, 6, 7};
    lodtensor_t *x = fx_make(fx_i32(), dims, 1, values, NULL, 0, NULL, 0), *on_device = NULL, *back = NULL;
    Exported e;
    if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &on_device)) &&
        export_as(form, on_device, &e)) {
        exported_tensor(e)->device.device_type = 13;
        if (CHECK_OK(take_exported(e, &back))) {
            lodtensor_place_t place;
            CHECK_EQ_PTR(fx_data(back), fx_data(on_device));
            CHECK_OK(lodtensor_place(back, &place));
            CHECK(place.device_type == LODTENSOR_DEVICE_CUDA && place.device_id == 0);
        } else {
            delete_exported(e);
        }
    }
    lodtensor_destroy(back);
    lodtensor_destroy(on_device);
    lodtensor_destroy(x);
}

static void test_with_cuda(size_t count) {
    static const int64_t dims[2] = {2, 2};
    static const float values[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    int form;
    (void)count;
    for (form = VERSIONED; form <= LEGACY; ++form) {
        lodtensor_t *x = fx_make(fx_f32(), dims, 2, values, NULL, 0, NULL, 0), *on_device = NULL, *back = NULL;
        Exported e;
        if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &on_device)) &&
            export_as((enum form)form, on_device, &e)) {
            DLTensor *t = exported_tensor(e);
            CHECK(t->device.device_type == 2 && t->device.device_id == 0);
            CHECK_EQ_PTR(t->data, fx_data(on_device));
            if (CHECK_OK(take_exported(e, &back))) {
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
                delete_exported(e);
            }
        }
        lodtensor_destroy(back);
        lodtensor_destroy(on_device);
        lodtensor_destroy(x);
    }
    check_refused(on_cuda_beyond, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "cuda:1000");
    check_refused(on_cuda_managed_beyond, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "cuda:1000");
#ifdef FX_CUDA_EMULATOR
    /* Host memory marked as CUDA managed memory is refused as memory the device cannot use (a GPU
     * that reads pageable memory may take it). */
    check_refused(on_cuda_managed, NULL, 0, LODTENSOR_INVALID_ARGUMENT, "data");
#endif
    test_managed_on_cuda(VERSIONED);
    test_managed_on_cuda(LEGACY);
}

static void test_without_cuda(void) {
    check_refused(on_cuda, NULL, 0, LODTENSOR_UNSUPPORTED, "cuda:0");
    check_refused(on_cuda_managed, NULL, 0, LODTENSOR_UNSUPPORTED, "cuda:0");
}

int main(void) {
    int form;
    for (form = VERSIONED; form <= LEGACY; ++form) {
        test_export((enum form)form);
        test_import((enum form)form);
        test_round_trip((enum form)form);
    }
    test_errors();
    fx_with_or_without_cuda("test_dlpack", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
