/* test_arrow: lodtensor_to_arrow and lodtensor_from_arrow, with the Arrow C data interface's
 * structs as lodtensor.h defines them. An exported LoD tensor's chain (formats, lengths, offsets,
 * elements in place) and its memory outliving the tensor; a producer's sliced list array taken
 * zero copy, moved out of the caller's struct, released exactly once when the last handle goes
 * and never on failure; a producer's strings taken as bytes and text lent as strings, on the host
 * and on a device; every documented failure; the device export (C device data interface) of
 * a host tensor and, where CUDA can be used, of a device tensor, whose buffers are device memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* ---- a producer: list<int64> (32-bit offsets) of entries 1..3 of [[9], [0, 1, 2], [], [3, 4]],
 * the values array starting one element in -------------------------------------------------- */

static int released;

typedef struct {
    struct ArrowArray values;
    struct ArrowArray *children[1];
    const void *list_buffers[2];
    const void *value_buffers[2];
    int32_t offsets[5];
    int64_t data[7];
    uint8_t validity[1];
} Producer;

typedef struct {
    struct ArrowSchema values;
    struct ArrowSchema *children[1];
} ProducerSchema;

static void release_values(struct ArrowArray *a) { a->release = NULL; }

static void release_list(struct ArrowArray *a) {
    Producer *p = (Producer *)a->private_data;
    if (p->values.release != NULL) {
        p->values.release(&p->values);
    }
    ++released;
    free(p);
    a->release = NULL;
}

static void release_value_schema(struct ArrowSchema *s) { s->release = NULL; }

static void release_list_schema(struct ArrowSchema *s) {
    ProducerSchema *p = (ProducerSchema *)s->private_data;
    if (p->values.release != NULL) {
        p->values.release(&p->values);
    }
    free(p);
    s->release = NULL;
}

static void produce(struct ArrowSchema *schema, struct ArrowArray *array) {
    static const int32_t offsets[5] = {0, 1, 4, 4, 6};
    static const int64_t data[7] = {-1, 9, 0, 1, 2, 3, 4};
    Producer *p = (Producer *)calloc(1, sizeof *p);
    ProducerSchema *ps = (ProducerSchema *)calloc(1, sizeof *ps);
    if (p == NULL || ps == NULL) {
        exit(1);
    }
    memcpy(p->offsets, offsets, sizeof offsets);
    memcpy(p->data, data, sizeof data);
    p->value_buffers[1] = p->data;
    p->values.length = 6;
    p->values.offset = 1;
    p->values.n_buffers = 2;
    p->values.buffers = p->value_buffers;
    p->values.release = release_values;
    p->list_buffers[1] = p->offsets;
    p->children[0] = &p->values;
    memset(array, 0, sizeof *array);
    array->length = 3;
    array->offset = 1;
    array->n_buffers = 2;
    array->n_children = 1;
    array->buffers = p->list_buffers;
    array->children = p->children;
    array->release = release_list;
    array->private_data = p;

    ps->values.format = "l";
    ps->values.release = release_value_schema;
    ps->children[0] = &ps->values;
    memset(schema, 0, sizeof *schema);
    schema->format = "+l";
    schema->n_children = 1;
    schema->children = ps->children;
    schema->release = release_list_schema;
    schema->private_data = ps;
}

static Producer *producer_of(struct ArrowArray *array) { return (Producer *)array->private_data; }

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_export(void) {
    static const int64_t dims[2] = {5, 2};
    static const float values[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    static const size_t l0[4] = {0, 2, 2, 5};
    lodtensor_t *x = fx_make(fx_f32(), dims, 2, values, l0, 4, NULL, 0);
    struct ArrowSchema schema;
    struct ArrowArray array;
    const void *data = fx_data(x);
    size_t i;
    if (!CHECK_OK(lodtensor_to_arrow(x, &schema, &array))) {
        lodtensor_destroy(x);
        return;
    }
    lodtensor_destroy(x); /* the export keeps the memory */
    CHECK(strcmp(schema.format, "+L") == 0 && strcmp(schema.name, "") == 0);
    CHECK(schema.flags == 0 && schema.n_children == 1 && schema.dictionary == NULL && schema.metadata == NULL);
    CHECK(strcmp(schema.children[0]->format, "+w:2") == 0 && strcmp(schema.children[0]->name, "item") == 0);
    CHECK(strcmp(schema.children[0]->children[0]->format, "f") == 0);
    CHECK(schema.children[0]->children[0]->n_children == 0);
    CHECK(array.length == 3 && array.null_count == 0 && array.offset == 0 && array.n_buffers == 2);
    CHECK(array.buffers[0] == NULL);
    for (i = 0; i < 4; ++i) {
        CHECK(((const int64_t *)array.buffers[1])[i] == (int64_t)l0[i]);
    }
    {
        struct ArrowArray *rows = array.children[0], *elements = rows->children[0];
        CHECK(rows->length == 5 && rows->n_buffers == 1 && rows->n_children == 1 && rows->buffers[0] == NULL);
        CHECK(elements->length == 10 && elements->n_buffers == 2 && elements->n_children == 0);
        CHECK_EQ_PTR(elements->buffers[1], data);
        CHECK(memcmp(elements->buffers[1], values, sizeof values) == 0);
    }
    schema.release(&schema);
    CHECK(schema.release == NULL);
    array.release(&array);
    CHECK(array.release == NULL);
}

static void test_import(void) {
    static const size_t want_lod[4] = {0, 3, 3, 5};
    static const int64_t want[5] = {0, 1, 2, 3, 4};
    struct ArrowSchema schema;
    struct ArrowArray array;
    lodtensor_t *t = NULL, *piece = NULL;
    const int64_t *expected_data;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0;
    produce(&schema, &array);
    expected_data = producer_of(&array)->data + 2;
    released = 0;
    if (!CHECK_OK(lodtensor_from_arrow(&schema, &array, &t))) {
        array.release(&array);
        schema.release(&schema);
        return;
    }
    CHECK(array.release == NULL); /* moved */
    CHECK(schema.release != NULL);
    schema.release(&schema); /* the schema stays the caller's */
    CHECK_OK(lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim));
    CHECK(ndim == 1 && dims[0] == 5);
    CHECK_OFFSETS(t, 0, want_lod, 4);
    CHECK_EQ_PTR(fx_data(t), expected_data);
    CHECK(memcmp(fx_data(t), want, sizeof want) == 0);
    CHECK_OK(lodtensor_slice(t, 0, 2, 3, &piece));
    lodtensor_destroy(t);
    CHECK_EQ_INT(released, 0);
    lodtensor_destroy(piece);
    CHECK_EQ_INT(released, 1);
}

static void test_round_trip(void) {
    static const int64_t dims[1] = {4};
    static const uint8_t flags[4] = {1, 0, 0, 1};
    static const size_t l0[3] = {0, 3, 4};
    lodtensor_t *x = fx_make(fx_bool(), dims, 1, flags, l0, 3, NULL, 0), *y = NULL;
    struct ArrowSchema schema;
    struct ArrowArray array;
    if (CHECK_OK(lodtensor_to_arrow(x, &schema, &array))) {
        /* Arrow's bits, least significant first. */
        CHECK(((const uint8_t *)array.children[0]->buffers[1])[0] == 0x9);
        if (CHECK_OK(lodtensor_from_arrow(&schema, &array, &y))) {
            CHECK(array.release == NULL);
            fx_same(y, x);
        } else {
            array.release(&array);
        }
        schema.release(&schema);
    }
    lodtensor_destroy(y);
    lodtensor_destroy(x);
}

static void release_strings(struct ArrowArray *a) {
    ++released;
    a->release = NULL;
}

/* A producer's utf8 array, entries 1..3 of ["x", "hello", "", "world"] (offsets starting at 2),
 * taken as the uint8 bytes "helloworld" under one LoD level, in place. */
static void test_strings(void) {
    static const int32_t offsets[5] = {2, 3, 8, 8, 13};
    static const char bytes[] = "..xhelloworld";
    static const void *buffers[3] = {NULL, offsets, bytes};
    static const size_t want_lod[4] = {0, 5, 5, 10};
    struct ArrowSchema schema;
    struct ArrowArray array;
    lodtensor_t *t = NULL;
    lodtensor_dtype_t dtype;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0;
    memset(&schema, 0, sizeof schema);
    schema.format = "u";
    schema.release = release_value_schema;
    memset(&array, 0, sizeof array);
    array.length = 3;
    array.offset = 1;
    array.n_buffers = 3;
    array.buffers = buffers;
    array.release = release_strings;
    released = 0;
    if (!CHECK_OK(lodtensor_from_arrow(&schema, &array, &t))) {
        array.release(&array);
        return;
    }
    CHECK(array.release == NULL); /* moved */
    CHECK_OK(lodtensor_dtype(t, &dtype));
    CHECK(dtype.code == LODTENSOR_DTYPE_CODE_UINT && dtype.bits == 8 && dtype.lanes == 1);
    CHECK_OK(lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim));
    CHECK(ndim == 1 && dims[0] == 10);
    CHECK_OFFSETS(t, 0, want_lod, 4);
    CHECK_EQ_PTR(fx_data(t), bytes + 3);
    CHECK(memcmp(fx_data(t), "helloworld", 10) == 0);
    CHECK_EQ_INT(released, 0);
    lodtensor_destroy(t);
    CHECK_EQ_INT(released, 1);
    schema.release(&schema);
}

/* Text lent as Arrow strings: "Grüße", "", "tok" (one LoD level over their bytes) as large_utf8
 * and as large_binary, the LoD's offsets and the tensor's bytes in place, taken back whole; every
 * documented refusal, with the outputs left alone. */
static void test_strings_export(void) {
    static const char text[] = "Gr\xc3\xbc\xc3\x9f" "etok";
    static const int64_t dims[1] = {10}, rows[2] = {1, 10};
    static const size_t l0[4] = {0, 7, 7, 10};
    static const int64_t l0_i64[4] = {0, 7, 7, 10};
    lodtensor_t *x = fx_make(fx_u8(), dims, 1, text, l0, 4, NULL, 0), *y = NULL;
    lodtensor_t *floats = fx_make(fx_f32(), dims, 1, (const float[10]){0}, l0, 4, NULL, 0);
    lodtensor_t *matrix = fx_make(fx_u8(), rows, 2, text, (const size_t[2]){0, 1}, 2, NULL, 0);
    lodtensor_t *flat = fx_make(fx_u8(), dims, 1, text, NULL, 0, NULL, 0);
    lodtensor_t *split = fx_make(fx_u8(), dims, 1, text, (const size_t[4]){0, 3, 7, 10}, 4, NULL, 0);
    struct ArrowSchema schema;
    struct ArrowArray array;
    struct ArrowDeviceArray device;
    int encoding;
    for (encoding = LODTENSOR_ARROW_BINARY; encoding <= LODTENSOR_ARROW_UTF8; ++encoding) {
        if (!CHECK_OK(lodtensor_to_arrow_strings(x, encoding, &schema, &array))) {
            continue;
        }
        CHECK(strcmp(schema.format, encoding == LODTENSOR_ARROW_UTF8 ? "U" : "Z") == 0 && schema.n_children == 0);
        CHECK(array.length == 3 && array.n_buffers == 3 && array.n_children == 0 && array.buffers[0] == NULL);
        CHECK(memcmp(array.buffers[1], l0_i64, sizeof l0_i64) == 0);
        CHECK_EQ_PTR(array.buffers[2], fx_data(x));
        if (CHECK_OK(lodtensor_from_arrow(&schema, &array, &y))) {
            fx_same(y, x);
            lodtensor_destroy(y);
        } else {
            array.release(&array);
        }
        schema.release(&schema);
    }
    /* "Gr" + the first byte of "ü" is not UTF-8 on its own; as binary it is bytes. */
    memset(&schema, 0, sizeof schema);
    memset(&array, 0, sizeof array);
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(split, LODTENSOR_ARROW_UTF8, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "t: sequence 0 of LoD level 0 (bytes 0..3) is not UTF-8 at byte 2");
    CHECK(schema.release == NULL && array.release == NULL); /* not written */
    if (CHECK_OK(lodtensor_to_arrow_strings(split, LODTENSOR_ARROW_BINARY, &schema, &array))) {
        schema.release(&schema);
        array.release(&array);
    }
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(NULL, LODTENSOR_ARROW_UTF8, &schema, &array), LODTENSOR_NULL_ARGUMENT,
                     "t");
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(x, LODTENSOR_ARROW_UTF8, NULL, &array), LODTENSOR_NULL_ARGUMENT,
                     "out_schema");
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(x, LODTENSOR_ARROW_UTF8, &schema, NULL), LODTENSOR_NULL_ARGUMENT,
                     "out_array");
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(x, 3, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                     "encoding: 3 is not");
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(x, LODTENSOR_ARROW_VALUES, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "encoding: LODTENSOR_ARROW_VALUES lends no strings");
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(floats, LODTENSOR_ARROW_BINARY, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "strings are uint8 bytes");
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(matrix, LODTENSOR_ARROW_BINARY, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "1-d tensor of bytes");
    CHECK_STATUS_MSG(lodtensor_to_arrow_strings(flat, LODTENSOR_ARROW_BINARY, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "has no LoD");
    /* The device form of a host tensor: on ARROW_DEVICE_CPU. */
    if (CHECK_OK(lodtensor_to_arrow_device_strings(x, LODTENSOR_ARROW_UTF8, &schema, &device))) {
        CHECK(device.device_type == ARROW_DEVICE_CPU && device.device_id == -1 && device.sync_event == NULL);
        CHECK(strcmp(schema.format, "U") == 0);
        CHECK_EQ_PTR(device.array.buffers[2], fx_data(x));
        schema.release(&schema);
        device.array.release(&device.array);
    }
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_strings(NULL, LODTENSOR_ARROW_UTF8, &schema, &device),
                     LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_strings(x, LODTENSOR_ARROW_UTF8, NULL, &device),
                     LODTENSOR_NULL_ARGUMENT, "out_schema");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_strings(x, LODTENSOR_ARROW_UTF8, &schema, NULL),
                     LODTENSOR_NULL_ARGUMENT, "out_array");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_strings(x, -1, &schema, &device), LODTENSOR_INVALID_ARGUMENT,
                     "encoding: -1");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_strings(split, LODTENSOR_ARROW_UTF8, &schema, &device),
                     LODTENSOR_INVALID_ARGUMENT, "is not UTF-8 at byte 2");
    lodtensor_destroy(split);
    lodtensor_destroy(flat);
    lodtensor_destroy(matrix);
    lodtensor_destroy(floats);
    lodtensor_destroy(x);
}

/* Imports a produced array after `damage`, expecting `status` with `words` in the message, *out
 * and the array left alone. */
static void check_refused(void (*damage)(struct ArrowSchema *, struct ArrowArray *), int32_t status,
                          const char *words) {
    struct ArrowSchema schema;
    struct ArrowArray array;
    void (*release)(struct ArrowArray *);
    lodtensor_t *out = fx_sentinel();
    produce(&schema, &array);
    release = array.release;
    damage(&schema, &array);
    released = 0;
    CHECK_STATUS_MSG(lodtensor_from_arrow(&schema, &array, &out), status, words);
    CHECK_EQ_PTR(out, fx_sentinel());
    CHECK_EQ_INT(released, 0);
    array.release = release;
    array.release(&array);
    schema.release(&schema);
}

static void released_array(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)s;
    a->release = NULL;
}
static void string_view_values(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)a;
    s->children[0]->format = "vu";
}
static void no_format(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)a;
    s->format = NULL;
}
static void empty_top(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)s;
    a->length = 0;
}
static void a_null(struct ArrowSchema *s, struct ArrowArray *a) {
    Producer *p = producer_of(a);
    (void)s;
    /* Bit 3: entry 2 of the values array, after its offset of 1; among the entries used. */
    p->validity[0] = (uint8_t)(0xff & ~(1u << 3));
    p->value_buffers[0] = p->validity;
    p->values.null_count = 1;
}
static void list_of_huge_lists(struct ArrowSchema *s, struct ArrowArray *a) {
    /* list<fixed_size_list<int64, 2^62>> of one entry of four lists: their items overflow */
    static struct ArrowSchema fixed_schema;
    static struct ArrowSchema *fixed_schema_children[1];
    static struct ArrowArray fixed;
    static struct ArrowArray *fixed_children[1];
    static const void *no_buffers[1];
    static const int32_t offsets[2] = {0, 4};
    Producer *p = producer_of(a);
    fixed_schema_children[0] = s->children[0];
    memset(&fixed_schema, 0, sizeof fixed_schema);
    fixed_schema.format = "+w:4611686018427387904";
    fixed_schema.n_children = 1;
    fixed_schema.children = fixed_schema_children;
    fixed_schema.release = release_value_schema;
    s->children[0] = &fixed_schema;
    memset(&fixed, 0, sizeof fixed);
    fixed.length = 4;
    fixed.n_buffers = 1;
    fixed.n_children = 1;
    fixed.buffers = no_buffers;
    fixed_children[0] = &p->values;
    fixed.children = fixed_children;
    fixed.release = release_values;
    p->values.length = INT64_MAX;
    p->values.offset = 0;
    p->children[0] = &fixed;
    p->list_buffers[1] = offsets;
    a->length = 1;
    a->offset = 0;
}

static void test_errors(void) {
    static const int64_t dims[1] = {2};
    static const uint16_t halves[2] = {0, 0};
    lodtensor_t *x = fx_make(fx_f32(), dims, 1, (const float[]){1, 2}, NULL, 0, NULL, 0), *bf = NULL, *scalar = NULL;
    struct ArrowSchema schema;
    struct ArrowArray array;
    lodtensor_t *out = fx_sentinel();
    CHECK_STATUS_MSG(lodtensor_to_arrow(NULL, &schema, &array), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_to_arrow(x, NULL, &array), LODTENSOR_NULL_ARGUMENT, "out_schema");
    CHECK_STATUS_MSG(lodtensor_to_arrow(x, &schema, NULL), LODTENSOR_NULL_ARGUMENT, "out_array");
    bf = fx_make(fx_dtype(LODTENSOR_DTYPE_CODE_BFLOAT, 16), dims, 1, halves, NULL, 0, NULL, 0);
    memset(&schema, 0, sizeof schema);
    CHECK_STATUS_MSG(lodtensor_to_arrow(bf, &schema, &array), LODTENSOR_UNSUPPORTED, "bfloat16");
    CHECK(schema.release == NULL); /* not written */
    scalar = fx_make(fx_f32(), NULL, 0, (const float[]){1}, NULL, 0, NULL, 0);
    CHECK_STATUS_MSG(lodtensor_to_arrow(scalar, &schema, &array), LODTENSOR_INVALID_ARGUMENT, "0-d");

    produce(&schema, &array);
    CHECK_STATUS_MSG(lodtensor_from_arrow(NULL, &array, &out), LODTENSOR_NULL_ARGUMENT, "schema");
    CHECK_STATUS_MSG(lodtensor_from_arrow(&schema, NULL, &out), LODTENSOR_NULL_ARGUMENT, "array");
    CHECK_STATUS_MSG(lodtensor_from_arrow(&schema, &array, NULL), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK_EQ_PTR(out, fx_sentinel());
    array.release(&array);
    schema.release(&schema);
    check_refused(released_array, LODTENSOR_INVALID_ARGUMENT, "array: has been released");
    check_refused(no_format, LODTENSOR_NULL_ARGUMENT, "schema: format is NULL");
    check_refused(string_view_values, LODTENSOR_UNSUPPORTED, "\"vu\"");
    check_refused(empty_top, LODTENSOR_INVALID_LOD, "array: ");
    check_refused(a_null, LODTENSOR_INVALID_ARGUMENT, "entry 2 is null");
    check_refused(list_of_huge_lists, LODTENSOR_OUT_OF_MEMORY, "more than memory holds");
    lodtensor_destroy(scalar);
    lodtensor_destroy(bf);
    lodtensor_destroy(x);
}

/* The device export of a host tensor: the host export's chain, on ARROW_DEVICE_CPU. */
static void test_device_export_on_the_host(void) {
    static const int64_t dims[1] = {3};
    static const int32_t values[3] = {7, 8, 9};
    static const size_t l0[3] = {0, 1, 3};
    lodtensor_t *x = fx_make(fx_i32(), dims, 1, values, l0, 3, NULL, 0), *bf = NULL;
    struct ArrowSchema schema;
    struct ArrowDeviceArray array;
    memset(&array, 0xff, sizeof array);
    if (CHECK_OK(lodtensor_to_arrow_device(x, &schema, &array))) {
        CHECK(array.device_type == ARROW_DEVICE_CPU && array.device_id == -1 && array.sync_event == NULL);
        CHECK(array.reserved[0] == 0 && array.reserved[1] == 0 && array.reserved[2] == 0);
        CHECK(strcmp(schema.format, "+L") == 0 && strcmp(schema.children[0]->format, "i") == 0);
        CHECK(array.array.length == 2 && ((const int64_t *)array.array.buffers[1])[2] == 3);
        CHECK_EQ_PTR(array.array.children[0]->buffers[1], fx_data(x));
        schema.release(&schema);
        array.array.release(&array.array);
        CHECK(array.array.release == NULL);
    }
    /* ... and back: taken on the CPU, zero copy, the array moved. */
    if (CHECK_OK(lodtensor_to_arrow_device(x, &schema, &array))) {
        lodtensor_t *y = fx_sentinel();
        array.device_type = 7; /* Vulkan: refused, left alone */
        CHECK_STATUS_MSG(lodtensor_from_arrow_device(&schema, &array, &y), LODTENSOR_UNSUPPORTED, "device_type");
        CHECK(array.array.release != NULL && y == fx_sentinel());
        array.device_type = ARROW_DEVICE_CPU;
        CHECK_STATUS_MSG(lodtensor_from_arrow_device(NULL, &array, &y), LODTENSOR_NULL_ARGUMENT, "schema");
        CHECK_STATUS_MSG(lodtensor_from_arrow_device(&schema, NULL, &y), LODTENSOR_NULL_ARGUMENT, "array");
        CHECK_STATUS_MSG(lodtensor_from_arrow_device(&schema, &array, NULL), LODTENSOR_NULL_ARGUMENT, "out");
        if (CHECK_OK(lodtensor_from_arrow_device(&schema, &array, &y))) {
            CHECK(array.array.release == NULL);
            CHECK_EQ_PTR(fx_data(y), fx_data(x));
            fx_same(y, x);
            lodtensor_destroy(y);
        } else {
            array.array.release(&array.array);
        }
        schema.release(&schema);
    }
    CHECK_STATUS_MSG(lodtensor_to_arrow_device(NULL, &schema, &array), LODTENSOR_NULL_ARGUMENT, "t");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device(x, NULL, &array), LODTENSOR_NULL_ARGUMENT, "out_schema");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device(x, &schema, NULL), LODTENSOR_NULL_ARGUMENT, "out_array");
    bf = fx_make(fx_dtype(LODTENSOR_DTYPE_CODE_BFLOAT, 16), dims, 1, (const uint16_t[]){0, 0, 0}, NULL, 0, NULL, 0);
    CHECK_STATUS_MSG(lodtensor_to_arrow_device(bf, &schema, &array), LODTENSOR_UNSUPPORTED, "bfloat16");
    lodtensor_destroy(bf);
    lodtensor_destroy(x);
}

/* The host copy of `n` int64 at device address `p` on cuda:0. */
static int device_i64_equal(const void *p, const int64_t *want, size_t n) {
    int64_t dims[1];
    lodtensor_t *view = NULL, *host = NULL;
    int ok;
    dims[0] = (int64_t)n;
    ok = CHECK_OK(lodtensor_from_buffer(fx_place(LODTENSOR_DEVICE_CUDA, 0), fx_i64(), dims, 1, (void *)(uintptr_t)p,
                                        n * 8, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, NULL, NULL, &view)) &&
         CHECK_OK(lodtensor_to_place(view, fx_cpu(), &host)) && CHECK(memcmp(fx_data(host), want, n * 8) == 0);
    lodtensor_destroy(host);
    lodtensor_destroy(view);
    return ok;
}

/* Text on a device lent as Arrow strings: the offsets and bytes device memory, the host call
 * refused, UTF-8 checked (after a copy to the host). */
static void test_device_strings(void) {
    static const int64_t dims[1] = {3};
    static const size_t l0[3] = {0, 2, 3};
    static const int64_t l0_i64[3] = {0, 2, 3};
    lodtensor_t *x = fx_make(fx_u8(), dims, 1, "\xc3\xbcx", l0, 3, NULL, 0), *on_device = NULL;
    lodtensor_t *split = fx_make(fx_u8(), dims, 1, "\xc3\xbcx", (const size_t[3]){0, 1, 3}, 3, NULL, 0);
    lodtensor_t *split_on_device = NULL;
    struct ArrowSchema schema;
    struct ArrowArray array;
    struct ArrowDeviceArray device;
    if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &on_device))) {
        CHECK_STATUS_MSG(lodtensor_to_arrow_strings(on_device, LODTENSOR_ARROW_UTF8, &schema, &array),
                         LODTENSOR_UNSUPPORTED, "lodtensor_to_arrow_device_strings");
        if (CHECK_OK(lodtensor_to_arrow_device_strings(on_device, LODTENSOR_ARROW_UTF8, &schema, &device))) {
            CHECK(device.device_type == ARROW_DEVICE_CUDA && device.device_id == 0 && device.sync_event == NULL);
            CHECK(strcmp(schema.format, "U") == 0 && device.array.length == 2);
            CHECK_EQ_PTR(device.array.buffers[2], fx_data(on_device));
            device_i64_equal(device.array.buffers[1], l0_i64, 3);
            schema.release(&schema);
            device.array.release(&device.array);
        }
    }
    if (CHECK_OK(lodtensor_to_place(split, fx_place(LODTENSOR_DEVICE_CUDA, 0), &split_on_device))) {
        CHECK_STATUS_MSG(lodtensor_to_arrow_device_strings(split_on_device, LODTENSOR_ARROW_UTF8, &schema, &device),
                         LODTENSOR_INVALID_ARGUMENT, "t: sequence 0 of LoD level 0 (bytes 0..1) is not UTF-8 at byte 0");
        if (CHECK_OK(lodtensor_to_arrow_device_strings(split_on_device, LODTENSOR_ARROW_BINARY, &schema, &device))) {
            CHECK(strcmp(schema.format, "Z") == 0);
            schema.release(&schema);
            device.array.release(&device.array);
        }
    }
    lodtensor_destroy(split_on_device);
    lodtensor_destroy(split);
    lodtensor_destroy(on_device);
    lodtensor_destroy(x);
}

static void test_with_cuda(size_t count) {
    static const int64_t dims[1] = {3};
    static const size_t l0[3] = {0, 1, 3};
    static const int64_t l0_i64[3] = {0, 1, 3}, values[3] = {7, 8, 9};
    lodtensor_t *x = fx_make(fx_i64(), dims, 1, values, l0, 3, NULL, 0), *on_device = NULL, *flags = NULL;
    lodtensor_t *flags_on_device = NULL;
    struct ArrowSchema schema;
    struct ArrowArray array;
    struct ArrowDeviceArray device;
    (void)count;
    if (CHECK_OK(lodtensor_to_place(x, fx_place(LODTENSOR_DEVICE_CUDA, 0), &on_device))) {
        CHECK_STATUS_MSG(lodtensor_to_arrow(on_device, &schema, &array), LODTENSOR_UNSUPPORTED,
                         "lodtensor_to_arrow_device");
        if (CHECK_OK(lodtensor_to_arrow_device(on_device, &schema, &device))) {
            CHECK(device.device_type == ARROW_DEVICE_CUDA && device.device_id == 0 && device.sync_event == NULL);
            CHECK_EQ_PTR(device.array.children[0]->buffers[1], fx_data(on_device));
            lodtensor_destroy(on_device); /* the export holds the memory */
            on_device = NULL;
            device_i64_equal(device.array.buffers[1], l0_i64, 3);
            device_i64_equal(device.array.children[0]->buffers[1], values, 3);
            {
                /* Taken back as a device tensor over the same memory. */
                lodtensor_t *back = NULL, *host = NULL;
                const void *elements = device.array.children[0]->buffers[1];
                if (CHECK_OK(lodtensor_from_arrow_device(&schema, &device, &back))) {
                    lodtensor_place_t place;
                    CHECK(device.array.release == NULL);
                    CHECK_OK(lodtensor_place(back, &place));
                    CHECK(place.device_type == LODTENSOR_DEVICE_CUDA && place.device_id == 0);
                    CHECK_EQ_PTR(fx_data(back), elements);
                    CHECK_OFFSETS(back, 0, l0, 3);
                    if (CHECK_OK(lodtensor_to_place(back, fx_cpu(), &host))) {
                        CHECK(memcmp(fx_data(host), values, sizeof values) == 0);
                    }
                    lodtensor_destroy(host);
                    lodtensor_destroy(back);
                } else {
                    device.array.release(&device.array);
                }
            }
            schema.release(&schema);
        }
    }
    flags = fx_make(fx_bool(), dims, 1, (const uint8_t[]){1, 0, 1}, NULL, 0, NULL, 0);
    if (CHECK_OK(lodtensor_to_place(flags, fx_place(LODTENSOR_DEVICE_CUDA, 0), &flags_on_device))) {
        /* Bool elements go as Arrow's bits, packed on the device: 1, 0, 1 is 0b101. */
        if (CHECK_OK(lodtensor_to_arrow_device(flags_on_device, &schema, &device))) {
            static const int64_t one[1] = {1};
            lodtensor_t *bits = NULL, *host = NULL, *back = NULL;
            CHECK(device.device_type == ARROW_DEVICE_CUDA && device.array.length == 3);
            if (CHECK_OK(lodtensor_from_buffer(fx_place(LODTENSOR_DEVICE_CUDA, 0), fx_u8(), one, 1,
                                               (void *)device.array.buffers[1], 1, LODTENSOR_LOD_OFFSETS, NULL, 0,
                                               NULL, 0, NULL, NULL, &bits)) &&
                CHECK_OK(lodtensor_to_place(bits, fx_cpu(), &host))) {
                CHECK(*(const uint8_t *)fx_data(host) == 0x5);
            }
            lodtensor_destroy(host);
            lodtensor_destroy(bits);
            host = NULL;
            /* Taken back: unpacked on the device into bool elements. */
            if (CHECK_OK(lodtensor_from_arrow_device(&schema, &device, &back))) {
                CHECK(device.array.release == NULL);
                if (CHECK_OK(lodtensor_to_place(back, fx_cpu(), &host))) {
                    CHECK(memcmp(fx_data(host), (const uint8_t[]){1, 0, 1}, 3) == 0);
                }
            } else {
                device.array.release(&device.array);
            }
            lodtensor_destroy(host);
            lodtensor_destroy(back);
            schema.release(&schema);
        }
    }
    lodtensor_destroy(flags_on_device);
    lodtensor_destroy(flags);
    lodtensor_destroy(on_device);
    lodtensor_destroy(x);
    test_device_strings();
}

static void test_without_cuda(void) {
    static const int64_t dims[1] = {2};
    lodtensor_t *x = fx_make(fx_f32(), dims, 1, (const float[]){1, 2}, NULL, 0, NULL, 0), *out = fx_sentinel();
    struct ArrowSchema schema;
    struct ArrowDeviceArray device;
    if (CHECK_OK(lodtensor_to_arrow_device(x, &schema, &device))) {
        device.device_type = ARROW_DEVICE_CUDA;
        device.device_id = 0;
        CHECK_STATUS_MSG(lodtensor_from_arrow_device(&schema, &device, &out), LODTENSOR_UNSUPPORTED, "cuda:0");
        CHECK(device.array.release != NULL && out == fx_sentinel());
        device.array.release(&device.array);
        schema.release(&schema);
    }
    lodtensor_destroy(x);
}

int main(void) {
    test_export();
    test_import();
    test_round_trip();
    test_strings();
    test_strings_export();
    test_errors();
    test_device_export_on_the_host();
    fx_with_or_without_cuda("test_arrow", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
