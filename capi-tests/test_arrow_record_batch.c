/* test_arrow_record_batch: lodtensor_to_arrow_record_batch, its _encoded form (text columns),
 * lodtensor_from_arrow_record_batch and their device forms. A decoder's two results (ids with two LoD levels, scores with one) lent as
 * one record batch of a row per source: the struct, each column the chain lodtensor_to_arrow
 * makes, named, in place; a producer's sliced struct taken as its rows, its columns sharing the
 * array, released once when the last column goes and never on failure; every documented failure,
 * with outputs left alone; the device forms on the host, and, where CUDA can be used, over device
 * memory. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

/* ---- a producer: a struct of rows 1..3 of 4 (offset 1, length 2) over an int32 column [10, 11,
 * 12, 13] and a list<int64> column (32-bit offsets) [[1], [2, 3], [], [4]] ----------------------- */

static int released;

typedef struct {
    struct ArrowArray ints, list, values;
    struct ArrowArray *children[2], *list_children[1];
    const void *struct_buffers[1], *int_buffers[2], *list_buffers[2], *value_buffers[2];
    int32_t ints_data[4], offsets[5];
    int64_t values_data[4];
    uint8_t validity[1];
} Producer;

typedef struct {
    struct ArrowSchema ints, list, values;
    struct ArrowSchema *children[2], *list_children[1];
} ProducerSchema;

static void release_child(struct ArrowArray *a) { a->release = NULL; }
static void release_child_schema(struct ArrowSchema *s) { s->release = NULL; }

static void release_struct(struct ArrowArray *a) {
    Producer *p = (Producer *)a->private_data;
    ++released;
    free(p);
    a->release = NULL;
}

static void release_struct_schema(struct ArrowSchema *s) {
    free(s->private_data);
    s->release = NULL;
}

static void produce(struct ArrowSchema *schema, struct ArrowArray *array) {
    static const int32_t ints[4] = {10, 11, 12, 13}, offsets[5] = {0, 1, 3, 3, 4};
    static const int64_t values[4] = {1, 2, 3, 4};
    Producer *p = (Producer *)calloc(1, sizeof *p);
    ProducerSchema *ps = (ProducerSchema *)calloc(1, sizeof *ps);
    if (p == NULL || ps == NULL) {
        exit(1);
    }
    memcpy(p->ints_data, ints, sizeof ints);
    memcpy(p->offsets, offsets, sizeof offsets);
    memcpy(p->values_data, values, sizeof values);
    p->int_buffers[1] = p->ints_data;
    p->ints = (struct ArrowArray){.length = 4, .n_buffers = 2, .buffers = p->int_buffers, .release = release_child};
    p->value_buffers[1] = p->values_data;
    p->values =
        (struct ArrowArray){.length = 4, .n_buffers = 2, .buffers = p->value_buffers, .release = release_child};
    p->list_buffers[1] = p->offsets;
    p->list_children[0] = &p->values;
    p->list = (struct ArrowArray){.length = 4,
                                  .n_buffers = 2,
                                  .n_children = 1,
                                  .buffers = p->list_buffers,
                                  .children = p->list_children,
                                  .release = release_child};
    p->children[0] = &p->ints;
    p->children[1] = &p->list;
    *array = (struct ArrowArray){.length = 2,
                                 .offset = 1,
                                 .n_buffers = 1,
                                 .n_children = 2,
                                 .buffers = p->struct_buffers,
                                 .children = p->children,
                                 .release = release_struct,
                                 .private_data = p};

    ps->ints = (struct ArrowSchema){.format = "i", .name = "n", .release = release_child_schema};
    ps->values = (struct ArrowSchema){.format = "l", .name = "item", .release = release_child_schema};
    ps->list_children[0] = &ps->values;
    ps->list = (struct ArrowSchema){.format = "+l",
                                    .name = "tokens",
                                    .n_children = 1,
                                    .children = ps->list_children,
                                    .release = release_child_schema};
    ps->children[0] = &ps->ints;
    ps->children[1] = &ps->list;
    *schema = (struct ArrowSchema){.format = "+s",
                                   .name = "",
                                   .n_children = 2,
                                   .children = ps->children,
                                   .release = release_struct_schema,
                                   .private_data = ps};
}

/* A decoder's results for 2 sources: ids (LoD [source -> sentences, sentence -> tokens]: 2 and 1
 * sentences of 2, 1 and 3 tokens) and scores (LoD [source -> sentences]). */
static void decoder_results(lodtensor_t **ids, lodtensor_t **scores) {
    static const int64_t id_dims[1] = {6}, score_dims[1] = {3};
    static const int64_t id_values[6] = {5, 1, 1, 7, 8, 1};
    static const float score_values[3] = {-0.5f, -1.25f, -2.0f};
    static const size_t l0[3] = {0, 2, 3}, l1[4] = {0, 2, 3, 6};
    *ids = fx_make(fx_i64(), id_dims, 1, id_values, l0, 3, l1, 4);
    *scores = fx_make(fx_f32(), score_dims, 1, score_values, l0, 3, NULL, 0);
}

static const char *const NAMES[2] = {"ids", "scores"};

/* ---- tests ---------------------------------------------------------------------------------- */

static void test_export(void) {
    lodtensor_t *ids, *scores;
    struct ArrowSchema schema;
    struct ArrowArray array;
    const void *id_data, *score_data;
    decoder_results(&ids, &scores);
    id_data = fx_data(ids);
    score_data = fx_data(scores);
    {
        const lodtensor_t *columns[2] = {ids, scores};
        if (!CHECK_OK(lodtensor_to_arrow_record_batch(columns, NAMES, 2, &schema, &array))) {
            lodtensor_destroy(ids);
            lodtensor_destroy(scores);
            return;
        }
    }
    lodtensor_destroy(ids); /* the export keeps the memory */
    lodtensor_destroy(scores);
    CHECK(strcmp(schema.format, "+s") == 0 && strcmp(schema.name, "") == 0 && schema.n_children == 2);
    CHECK(array.length == 2 && array.offset == 0 && array.null_count == 0 && array.n_buffers == 1);
    CHECK(array.n_children == 2 && array.buffers[0] == NULL);
    CHECK(strcmp(schema.children[0]->name, "ids") == 0 && strcmp(schema.children[1]->name, "scores") == 0);
    /* ids: large_list<large_list<int64>>; scores: large_list<float>. */
    CHECK(strcmp(schema.children[0]->format, "+L") == 0);
    CHECK(strcmp(schema.children[0]->children[0]->format, "+L") == 0);
    CHECK(strcmp(schema.children[0]->children[0]->children[0]->format, "l") == 0);
    CHECK(strcmp(schema.children[1]->format, "+L") == 0 && strcmp(schema.children[1]->children[0]->format, "f") == 0);
    {
        const struct ArrowArray *id_col = array.children[0], *score_col = array.children[1];
        const int64_t *top = (const int64_t *)id_col->buffers[1];
        const int64_t *sentences = (const int64_t *)id_col->children[0]->buffers[1];
        CHECK(id_col->length == 2 && score_col->length == 2);
        CHECK(top[0] == 0 && top[1] == 2 && top[2] == 3);
        CHECK(sentences[0] == 0 && sentences[1] == 2 && sentences[2] == 3 && sentences[3] == 6);
        CHECK_EQ_PTR(id_col->children[0]->children[0]->buffers[1], id_data);
        CHECK_EQ_PTR(score_col->children[0]->buffers[1], score_data);
        CHECK(((const float *)score_col->children[0]->buffers[1])[1] == -1.25f);
    }
    array.release(&array);
    schema.release(&schema);
    CHECK(array.release == NULL && schema.release == NULL);
}

static void test_round_trip(void) {
    lodtensor_t *ids, *scores, *back[3] = {NULL, NULL, fx_sentinel()};
    const lodtensor_t *columns[2];
    struct ArrowSchema schema;
    struct ArrowArray array;
    size_t count = 99;
    decoder_results(&ids, &scores);
    columns[0] = ids;
    columns[1] = scores;
    if (CHECK_OK(lodtensor_to_arrow_record_batch(columns, NAMES, 2, &schema, &array))) {
        if (CHECK_OK(lodtensor_from_arrow_record_batch(&schema, &array, back, 3, &count))) {
            CHECK(array.release == NULL && count == 2 && back[2] == fx_sentinel());
            fx_same(back[0], ids);
            fx_same(back[1], scores);
            CHECK_EQ_PTR(fx_data(back[0]), fx_data(ids));
            lodtensor_destroy(back[0]);
            lodtensor_destroy(back[1]);
        } else {
            array.release(&array);
        }
        schema.release(&schema);
    }
    lodtensor_destroy(ids);
    lodtensor_destroy(scores);
}

static void test_import(void) {
    struct ArrowSchema schema;
    struct ArrowArray array;
    lodtensor_t *columns[2] = {NULL, NULL};
    size_t count = 0;
    int before = released;
    static const size_t l0[3] = {0, 2, 2};
    produce(&schema, &array);
    if (!CHECK_OK(lodtensor_from_arrow_record_batch(&schema, &array, columns, 2, &count))) {
        array.release(&array);
        schema.release(&schema);
        return;
    }
    schema.release(&schema); /* the schema stays the caller's */
    CHECK(array.release == NULL && count == 2);
    /* Rows 1 and 2: ints [11, 12] (no LoD), lists [[2, 3], []] over the values [2, 3]. */
    CHECK(fx_levels(columns[0]) == 0 && memcmp(fx_data(columns[0]), (const int32_t[]){11, 12}, 8) == 0);
    CHECK_OFFSETS(columns[1], 0, l0, 3);
    CHECK(memcmp(fx_data(columns[1]), (const int64_t[]){2, 3}, 16) == 0);
    lodtensor_destroy(columns[0]);
    CHECK(released == before); /* the other column still holds the array */
    lodtensor_destroy(columns[1]);
    CHECK(released == before + 1);
}

/* Refused import of the producer's struct after `damage`: `status` naming `what`, the array left
 * the caller's, no output written, nothing released. */
static void check_refused(void (*damage)(struct ArrowSchema *, struct ArrowArray *), int32_t status,
                          const char *what) {
    struct ArrowSchema schema;
    struct ArrowArray array;
    lodtensor_t *columns[2] = {fx_sentinel(), fx_sentinel()};
    size_t count = 99;
    int before = released;
    void (*release)(struct ArrowArray *);
    produce(&schema, &array);
    release = array.release;
    damage(&schema, &array);
    CHECK_STATUS_MSG(lodtensor_from_arrow_record_batch(&schema, &array, columns, 2, &count), status, what);
    CHECK(columns[0] == fx_sentinel() && columns[1] == fx_sentinel() && count == 99 && released == before);
    array.release = release;
    release(&array);
    schema.release(&schema);
}

static void not_a_struct(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)a;
    s->format = "+L";
}
static void no_columns(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)a;
    s->n_children = 0;
}
static void string_view_column(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)a;
    s->children[1]->children[0]->format = "vu";
}
static void bad_offsets(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)s;
    ((int32_t *)a->children[1]->buffers[1])[2] = 0; /* 1, 0: decreasing */
}
static void null_row(struct ArrowSchema *s, struct ArrowArray *a) {
    Producer *p = (Producer *)a->private_data;
    (void)s;
    p->validity[0] = 0x5; /* rows 0 and 2 valid, row 1 (the first taken) null */
    p->struct_buffers[0] = p->validity;
    a->null_count = 1;
}
static void short_column(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)s;
    a->children[0]->length = 2; /* rows 1..3 need 3 */
}
static void released_array(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)s;
    a->release = NULL;
}
static void three_buffers(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)s;
    a->n_buffers = 3;
}
static void null_child(struct ArrowSchema *s, struct ArrowArray *a) {
    (void)s;
    a->children[1] = NULL;
}

static void test_import_errors(void) {
    struct ArrowSchema schema;
    struct ArrowArray array;
    lodtensor_t *columns[2] = {fx_sentinel(), fx_sentinel()};
    size_t count = 99;
    check_refused(not_a_struct, LODTENSOR_INVALID_ARGUMENT, "is not a struct (+s)");
    check_refused(no_columns, LODTENSOR_INVALID_ARGUMENT, "a struct of no columns");
    check_refused(string_view_column, LODTENSOR_UNSUPPORTED, "schema.children[1].children[0]: format \"vu\"");
    check_refused(bad_offsets, LODTENSOR_INVALID_ARGUMENT, "array.children[1]: offsets[2]");
    check_refused(null_row, LODTENSOR_INVALID_ARGUMENT, "array: entry 0 is null");
    check_refused(short_column, LODTENSOR_INVALID_ARGUMENT, "array.children[0]: length 2 is less than the 3 rows");
    check_refused(released_array, LODTENSOR_INVALID_ARGUMENT, "array: has been released");
    check_refused(three_buffers, LODTENSOR_INVALID_ARGUMENT, "array: has 3 buffer(s)");
    check_refused(null_child, LODTENSOR_NULL_ARGUMENT, "array: child 1 is NULL");

    produce(&schema, &array);
    CHECK_STATUS_MSG(lodtensor_from_arrow_record_batch(NULL, &array, columns, 2, &count), LODTENSOR_NULL_ARGUMENT,
                     "schema");
    CHECK_STATUS_MSG(lodtensor_from_arrow_record_batch(&schema, NULL, columns, 2, &count), LODTENSOR_NULL_ARGUMENT,
                     "array");
    CHECK_STATUS_MSG(lodtensor_from_arrow_record_batch(&schema, &array, NULL, 2, &count), LODTENSOR_NULL_ARGUMENT,
                     "out_columns");
    CHECK_STATUS_MSG(lodtensor_from_arrow_record_batch(&schema, &array, columns, 2, NULL), LODTENSOR_NULL_ARGUMENT,
                     "out_count");
    CHECK_STATUS_MSG(lodtensor_from_arrow_record_batch(&schema, &array, columns, 1, &count),
                     LODTENSOR_BUFFER_TOO_SMALL, "out_columns: holds 1 handle(s), the record batch has 2 columns");
    CHECK(columns[0] == fx_sentinel() && columns[1] == fx_sentinel() && count == 99 && array.release != NULL);
    array.release(&array);
    schema.release(&schema);
}

static void test_export_errors(void) {
    static const int64_t three[1] = {3}, none[1] = {0};
    lodtensor_t *ids, *scores, *rows, *bf, *scalar;
    const lodtensor_t *columns[2];
    const char *names[2] = {"a", "b"};
    struct ArrowSchema schema, schema_before;
    struct ArrowArray array, array_before;
    decoder_results(&ids, &scores);
    rows = fx_make(fx_f32(), three, 1, (const float[]){1, 2, 3}, NULL, 0, NULL, 0);
    bf = fx_make(fx_dtype(LODTENSOR_DTYPE_CODE_BFLOAT, 16), three, 1, (const uint16_t[]){0, 0, 0}, NULL, 0, NULL, 0);
    scalar = fx_make(fx_f32(), none, 0, (const float[]){1}, NULL, 0, NULL, 0);
    memset(&schema, 0xA5, sizeof schema);
    memset(&array, 0xA5, sizeof array);
    schema_before = schema;
    array_before = array;
    columns[0] = ids;
    columns[1] = scores;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(NULL, names, 2, &schema, &array), LODTENSOR_NULL_ARGUMENT,
                     "columns");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, NULL, 2, &schema, &array), LODTENSOR_NULL_ARGUMENT,
                     "names");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, NULL, &array), LODTENSOR_NULL_ARGUMENT,
                     "out_schema");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, &schema, NULL), LODTENSOR_NULL_ARGUMENT,
                     "out_array");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 0, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                     "num_columns: 0");
    /* Lists of length 0 may be NULL: the count is what is wrong. */
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(NULL, NULL, 0, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                     "num_columns: 0");
    names[1] = NULL;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, &schema, &array), LODTENSOR_NULL_ARGUMENT,
                     "names[1]");
    names[1] = "\xff";
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                     "names[1]: is not UTF-8");
    names[1] = "b";
    columns[1] = NULL;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, &schema, &array), LODTENSOR_NULL_ARGUMENT,
                     "columns[1]");
    columns[1] = rows; /* 3 rows against 2 sequences */
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                     "columns[1]: 3 entries, columns[0] 2");
    columns[0] = rows;
    columns[1] = bf;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, &schema, &array), LODTENSOR_UNSUPPORTED,
                     "columns[1]: bfloat16");
    columns[1] = scalar;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, names, 2, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                     "columns[1]: a 0-d tensor");
    {
        struct ArrowDeviceArray device, device_before;
        memset(&device, 0xA5, sizeof device);
        device_before = device;
        CHECK_STATUS_MSG(lodtensor_to_arrow_device_record_batch(columns, names, 2, &schema, &device),
                         LODTENSOR_INVALID_ARGUMENT, "columns[1]: a 0-d tensor");
        CHECK_STATUS_MSG(lodtensor_to_arrow_device_record_batch(columns, names, 2, &schema, NULL),
                         LODTENSOR_NULL_ARGUMENT, "out_array");
        CHECK(memcmp(&device, &device_before, sizeof device) == 0);
    }
    CHECK(memcmp(&schema, &schema_before, sizeof schema) == 0 && memcmp(&array, &array_before, sizeof array) == 0);
    lodtensor_destroy(ids);
    lodtensor_destroy(scores);
    lodtensor_destroy(rows);
    lodtensor_destroy(bf);
    lodtensor_destroy(scalar);
}

/* A decoder's text output (one string a source, 2 sources: "Grüße" and "ok") and its scores as one
 * batch (lodtensor_to_arrow_record_batch_encoded): the text a large_utf8 (or large_binary) column
 * over the tensor's offsets and bytes, the scores a large_list<float>; taken back; NULL encodings
 * is every column as values; every documented refusal, outputs left alone. */
static const char TEXT[] = "Gr\xc3\xbc\xc3\x9f" "eok";
static lodtensor_t *text_tensor(const size_t *offsets) {
    static const int64_t dims[1] = {9};
    return fx_make(fx_dtype(LODTENSOR_DTYPE_CODE_UINT, 8), dims, 1, TEXT, offsets, 3, NULL, 0);
}
static const size_t SENTENCES[3] = {0, 7, 9};

static void test_text_columns(void) {
    static const int64_t two[1] = {2};
    lodtensor_t *text = text_tensor(SENTENCES), *scores, *back[2] = {NULL, NULL};
    lodtensor_t *split = text_tensor((const size_t[]){0, 3, 9}); /* "Gr" and the first byte of "ü" */
    const lodtensor_t *columns[2];
    const char *names[2] = {"text", "score"};
    int32_t encodings[2] = {LODTENSOR_ARROW_UTF8, LODTENSOR_ARROW_VALUES};
    struct ArrowSchema schema, schema_before;
    struct ArrowArray array, array_before;
    struct ArrowDeviceArray device, device_before;
    size_t count = 0;
    scores = fx_make(fx_f32(), two, 1, (const float[]){-0.5f, -1.5f}, NULL, 0, NULL, 0);
    columns[0] = text;
    columns[1] = scores;
    if (CHECK_OK(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 2, &schema, &array))) {
        const struct ArrowArray *strings = array.children[0];
        CHECK(array.length == 2 && strcmp(schema.children[0]->format, "U") == 0);
        CHECK(strcmp(schema.children[1]->format, "f") == 0 && strcmp(schema.children[0]->name, "text") == 0);
        CHECK(strings->length == 2 && strings->n_buffers == 3 && strings->n_children == 0);
        CHECK(((const int64_t *)strings->buffers[1])[1] == 7 && ((const int64_t *)strings->buffers[1])[2] == 9);
        CHECK_EQ_PTR(strings->buffers[2], fx_data(text));
        if (CHECK_OK(lodtensor_from_arrow_record_batch(&schema, &array, back, 2, &count))) {
            CHECK(count == 2 && array.release == NULL);
            fx_same(back[0], text);
            fx_same(back[1], scores);
            CHECK_EQ_PTR(fx_data(back[0]), fx_data(text));
            lodtensor_destroy(back[0]);
            lodtensor_destroy(back[1]);
        } else {
            array.release(&array);
        }
        schema.release(&schema);
    }
    encodings[0] = LODTENSOR_ARROW_BINARY;
    if (CHECK_OK(lodtensor_to_arrow_device_record_batch_encoded(columns, names, encodings, 2, &schema, &device))) {
        CHECK(device.device_type == ARROW_DEVICE_CPU && strcmp(schema.children[0]->format, "Z") == 0);
        CHECK_EQ_PTR(device.array.children[0]->buffers[2], fx_data(text));
        device.array.release(&device.array);
        schema.release(&schema);
    }
    /* NULL encodings: the text as a list of uint8, as lodtensor_to_arrow_record_batch lends it. */
    if (CHECK_OK(lodtensor_to_arrow_record_batch_encoded(columns, names, NULL, 2, &schema, &array))) {
        CHECK(strcmp(schema.children[0]->format, "+L") == 0 && strcmp(schema.children[0]->children[0]->format, "C") == 0);
        array.release(&array);
        schema.release(&schema);
    }

    memset(&schema, 0xA5, sizeof schema);
    memset(&array, 0xA5, sizeof array);
    memset(&device, 0xA5, sizeof device);
    schema_before = schema;
    array_before = array;
    device_before = device;
    encodings[0] = 7;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 2, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT,
                     "encodings[0]: 7 is not LODTENSOR_ARROW_BINARY (0), LODTENSOR_ARROW_UTF8 (1) or "
                     "LODTENSOR_ARROW_VALUES (2)");
    encodings[0] = LODTENSOR_ARROW_VALUES;
    encodings[1] = LODTENSOR_ARROW_UTF8;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 2, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "columns[1]: float32; strings are uint8 bytes");
    columns[1] = split;
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 2, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT,
                     "columns[1]: sequence 0 of LoD level 0 (bytes 0..3) is not UTF-8 at byte 2");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_record_batch_encoded(columns, names, encodings, 2, &schema, &device),
                     LODTENSOR_INVALID_ARGUMENT, "columns[1]: sequence 0 of LoD level 0");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(NULL, names, encodings, 2, &schema, &array),
                     LODTENSOR_NULL_ARGUMENT, "columns");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, NULL, encodings, 2, &schema, &array),
                     LODTENSOR_NULL_ARGUMENT, "names");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 2, NULL, &array),
                     LODTENSOR_NULL_ARGUMENT, "out_schema");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 2, &schema, NULL),
                     LODTENSOR_NULL_ARGUMENT, "out_array");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_record_batch_encoded(columns, names, encodings, 2, &schema, NULL),
                     LODTENSOR_NULL_ARGUMENT, "out_array");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 0, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "num_columns: 0");
    CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(NULL, NULL, NULL, 0, &schema, &array),
                     LODTENSOR_INVALID_ARGUMENT, "num_columns: 0");
    CHECK_STATUS_MSG(lodtensor_to_arrow_device_record_batch(NULL, NULL, 0, &schema, &device),
                     LODTENSOR_INVALID_ARGUMENT, "num_columns: 0");
    CHECK(memcmp(&schema, &schema_before, sizeof schema) == 0 && memcmp(&array, &array_before, sizeof array) == 0);
    CHECK(memcmp(&device, &device_before, sizeof device) == 0);
    lodtensor_destroy(text);
    lodtensor_destroy(split);
    lodtensor_destroy(scores);
}

/* The device forms on host memory: the host batch on ARROW_DEVICE_CPU, taken back. */
static void test_device_forms_on_the_host(void) {
    lodtensor_t *ids, *scores, *back[2] = {NULL, NULL};
    const lodtensor_t *columns[2];
    struct ArrowSchema schema;
    struct ArrowDeviceArray device;
    size_t count = 0;
    decoder_results(&ids, &scores);
    columns[0] = ids;
    columns[1] = scores;
    if (CHECK_OK(lodtensor_to_arrow_device_record_batch(columns, NAMES, 2, &schema, &device))) {
        CHECK(device.device_type == ARROW_DEVICE_CPU && device.device_id == -1 && device.sync_event == NULL);
        CHECK(device.reserved[0] == 0 && device.reserved[1] == 0 && device.reserved[2] == 0);
        CHECK(strcmp(schema.format, "+s") == 0 && device.array.n_children == 2);
        device.device_type = 7; /* refused, left alone */
        CHECK_STATUS_MSG(lodtensor_from_arrow_device_record_batch(&schema, &device, back, 2, &count),
                         LODTENSOR_UNSUPPORTED, "device_type");
        CHECK(device.array.release != NULL && back[0] == NULL && count == 0);
        device.device_type = ARROW_DEVICE_CPU;
        CHECK_STATUS_MSG(lodtensor_from_arrow_device_record_batch(&schema, NULL, back, 2, &count),
                         LODTENSOR_NULL_ARGUMENT, "array");
        if (CHECK_OK(lodtensor_from_arrow_device_record_batch(&schema, &device, back, 2, &count))) {
            CHECK(device.array.release == NULL && count == 2);
            fx_same(back[0], ids);
            fx_same(back[1], scores);
            lodtensor_destroy(back[0]);
            lodtensor_destroy(back[1]);
        } else {
            device.array.release(&device.array);
        }
        schema.release(&schema);
    }
    lodtensor_destroy(ids);
    lodtensor_destroy(scores);
}

/* The two columns of a device batch taken back into `back` (the array moved); else the array is
 * released. The schema is released either way. */
static int take_device_batch(struct ArrowSchema *schema, struct ArrowDeviceArray *device, lodtensor_t **back) {
    size_t n = 0;
    int taken = CHECK_OK(lodtensor_from_arrow_device_record_batch(schema, device, back, 2, &n));
    if (taken) {
        CHECK(n == 2 && device->array.release == NULL);
    } else {
        device->array.release(&device->array);
    }
    schema->release(schema);
    return taken;
}

/* Device tensor `got`, copied to the host, is `want`. */
static void check_on_host(const lodtensor_t *got, const lodtensor_t *want) {
    lodtensor_t *host = NULL;
    if (CHECK_OK(lodtensor_to_place(got, fx_cpu(), &host))) {
        fx_same(host, want);
    }
    lodtensor_destroy(host);
}

static void test_with_cuda(size_t count) {
    lodtensor_t *ids, *scores, *ids_on = NULL, *scores_on = NULL, *flags = NULL, *flags_on = NULL;
    lodtensor_t *back[2] = {NULL, NULL};
    const lodtensor_t *columns[2];
    struct ArrowSchema schema;
    struct ArrowArray array;
    struct ArrowDeviceArray device;
    static const int64_t two[1] = {2};
    (void)count;
    decoder_results(&ids, &scores);
    if (CHECK_OK(lodtensor_to_place(ids, fx_place(LODTENSOR_DEVICE_CUDA, 0), &ids_on)) &&
        CHECK_OK(lodtensor_to_place(scores, fx_place(LODTENSOR_DEVICE_CUDA, 0), &scores_on))) {
        columns[0] = ids_on;
        columns[1] = scores;
        CHECK_STATUS_MSG(lodtensor_to_arrow_device_record_batch(columns, NAMES, 2, &schema, &device),
                         LODTENSOR_INVALID_ARGUMENT, "columns[1]: on cpu, columns[0] on cuda:0");
        columns[1] = scores_on;
        CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch(columns, NAMES, 2, &schema, &array), LODTENSOR_UNSUPPORTED,
                         "columns[0]: on cuda:0");
        if (CHECK_OK(lodtensor_to_arrow_device_record_batch(columns, NAMES, 2, &schema, &device))) {
            const void *id_data = device.array.children[0]->children[0]->children[0]->buffers[1];
            CHECK(device.device_type == ARROW_DEVICE_CUDA && device.device_id == 0 && device.sync_event == NULL);
            CHECK_EQ_PTR(id_data, fx_data(ids_on));
            CHECK_EQ_PTR(device.array.children[1]->children[0]->buffers[1], fx_data(scores_on));
            if (take_device_batch(&schema, &device, back)) {
                lodtensor_place_t place;
                CHECK_OK(lodtensor_place(back[1], &place));
                CHECK(place.device_type == LODTENSOR_DEVICE_CUDA && place.device_id == 0);
                CHECK_EQ_PTR(fx_data(back[0]), id_data);
                check_on_host(back[0], ids);
                lodtensor_destroy(back[0]);
                lodtensor_destroy(back[1]);
            }
        }
    }
    flags = fx_make(fx_bool(), two, 1, (const uint8_t[]){1, 0}, NULL, 0, NULL, 0);
    if (CHECK_OK(lodtensor_to_place(flags, fx_place(LODTENSOR_DEVICE_CUDA, 0), &flags_on))) {
        /* A bool column on the device goes as bits packed there, and comes back as bools. */
        columns[0] = scores_on;
        columns[1] = flags_on;
        if (CHECK_OK(lodtensor_to_arrow_device_record_batch(columns, NAMES, 2, &schema, &device))) {
            CHECK(device.device_type == ARROW_DEVICE_CUDA && device.array.children[1]->length == 2);
            if (take_device_batch(&schema, &device, back)) {
                check_on_host(back[1], flags);
                lodtensor_destroy(back[0]);
                lodtensor_destroy(back[1]);
            }
        }
    }
    {
        /* Text on the device beside its scores: device offsets and bytes, UTF-8 checked there. */
        lodtensor_t *text = text_tensor(SENTENCES), *split = text_tensor((const size_t[]){0, 3, 9});
        lodtensor_t *text_on = NULL, *split_on = NULL, *two_scores = NULL;
        const char *names[2] = {"text", "score"};
        const int32_t encodings[2] = {LODTENSOR_ARROW_UTF8, LODTENSOR_ARROW_VALUES};
        two_scores = fx_make(fx_f32(), two, 1, (const float[]){-0.5f, -1.5f}, NULL, 0, NULL, 0);
        if (CHECK_OK(lodtensor_to_place(text, fx_place(LODTENSOR_DEVICE_CUDA, 0), &text_on)) &&
            CHECK_OK(lodtensor_to_place(split, fx_place(LODTENSOR_DEVICE_CUDA, 0), &split_on))) {
            lodtensor_t *scores_device = NULL;
            if (CHECK_OK(lodtensor_to_place(two_scores, fx_place(LODTENSOR_DEVICE_CUDA, 0), &scores_device))) {
                columns[0] = text_on;
                columns[1] = scores_device;
                if (CHECK_OK(lodtensor_to_arrow_device_record_batch_encoded(columns, names, encodings, 2, &schema,
                                                                            &device))) {
                    CHECK(device.device_type == ARROW_DEVICE_CUDA && strcmp(schema.children[0]->format, "U") == 0);
                    CHECK_EQ_PTR(device.array.children[0]->buffers[2], fx_data(text_on));
                    if (take_device_batch(&schema, &device, back)) {
                        check_on_host(back[0], text);
                        lodtensor_destroy(back[0]);
                        lodtensor_destroy(back[1]);
                    }
                }
                columns[0] = split_on;
                CHECK_STATUS_MSG(lodtensor_to_arrow_device_record_batch_encoded(columns, names, encodings, 2, &schema,
                                                                                &device),
                                 LODTENSOR_INVALID_ARGUMENT,
                                 "columns[0]: sequence 0 of LoD level 0 (bytes 0..3) is not UTF-8 at byte 2");
                CHECK_STATUS_MSG(lodtensor_to_arrow_record_batch_encoded(columns, names, encodings, 2, &schema, &array),
                                 LODTENSOR_UNSUPPORTED, "columns[0]: on cuda:0");
            }
            lodtensor_destroy(scores_device);
        }
        lodtensor_destroy(text_on);
        lodtensor_destroy(split_on);
        lodtensor_destroy(text);
        lodtensor_destroy(split);
        lodtensor_destroy(two_scores);
    }
    lodtensor_destroy(flags_on);
    lodtensor_destroy(flags);
    lodtensor_destroy(ids_on);
    lodtensor_destroy(scores_on);
    lodtensor_destroy(ids);
    lodtensor_destroy(scores);
}

static void test_without_cuda(void) {
    struct ArrowSchema schema;
    struct ArrowArray array;
    struct ArrowDeviceArray device;
    lodtensor_t *columns[2] = {fx_sentinel(), fx_sentinel()};
    size_t count = 99;
    produce(&schema, &array);
    device = (struct ArrowDeviceArray){.array = array, .device_id = 0, .device_type = ARROW_DEVICE_CUDA};
    CHECK_STATUS_MSG(lodtensor_from_arrow_device_record_batch(&schema, &device, columns, 2, &count),
                     LODTENSOR_UNSUPPORTED, "cuda:0");
    CHECK(device.array.release != NULL && columns[0] == fx_sentinel() && count == 99);
    device.array.release(&device.array);
    schema.release(&schema);
}

int main(void) {
    test_export();
    test_round_trip();
    test_import();
    test_import_errors();
    test_export_errors();
    test_device_forms_on_the_host();
    test_text_columns();
    fx_with_or_without_cuda("test_arrow_record_batch", test_with_cuda, test_without_cuda);
    return CHECK_RETURN();
}
