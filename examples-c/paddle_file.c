/* paddle_file: writing and reading tensors in Paddle's tensor file format.
 *
 * A `save_combine` file holds one record per variable, back to back. This program writes two
 * tensors that way (a batch of sentences' word embeddings with a 2-level LoD, and their int64 word
 * ids), reads the file back record by record, prints what it finds and checks it against what it
 * wrote. Returns 0 when every tensor came back the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#define VARIABLES 2

static int ok(lodtensor_status_t status, const char *what) {
    if (status != LODTENSOR_OK) {
        fprintf(stderr, "%s: %s: %s\n", what, lodtensor_status_str(status), lodtensor_last_error_message());
        return 0;
    }
    return 1;
}

/* Appends t's record to `file`. */
static int save(FILE *file, const lodtensor_t *t) {
    size_t len = 0;
    void *record;
    int written;
    if (!ok(lodtensor_serialize(t, NULL, 0, &len), "lodtensor_serialize (length)")) return 0;
    record = malloc(len);
    if (record == NULL) return 0;
    written = ok(lodtensor_serialize(t, record, len, &len), "lodtensor_serialize") &&
              fwrite(record, 1, len, file) == len;
    free(record);
    return written;
}

/* Whether a and b have the same dims, LoD and bytes. */
static int same(const lodtensor_t *a, const lodtensor_t *b) {
    int64_t da[LODTENSOR_MAX_DIMS], db[LODTENSOR_MAX_DIMS];
    size_t na = 0, nb = 0, la = 0, lb = 0, ba = 0, bb = 0, level;
    const void *pa = NULL, *pb = NULL;
    if (lodtensor_dims(a, da, LODTENSOR_MAX_DIMS, &na) || lodtensor_dims(b, db, LODTENSOR_MAX_DIMS, &nb) ||
        na != nb || memcmp(da, db, na * sizeof(int64_t)) != 0)
        return 0;
    if (lodtensor_lod_num_levels(a, &la) || lodtensor_lod_num_levels(b, &lb) || la != lb) return 0;
    for (level = 0; level < la; ++level) {
        const size_t *oa = NULL, *ob = NULL;
        size_t ca = 0, cb = 0;
        if (lodtensor_lod_offsets(a, level, &oa, &ca) || lodtensor_lod_offsets(b, level, &ob, &cb) || ca != cb ||
            memcmp(oa, ob, ca * sizeof(size_t)) != 0)
            return 0;
    }
    return !lodtensor_nbytes(a, &ba) && !lodtensor_nbytes(b, &bb) && ba == bb && !lodtensor_data(a, &pa) &&
           !lodtensor_data(b, &pb) && memcmp(pa, pb, ba) == 0;
}

static void describe(const lodtensor_t *t) {
    lodtensor_dtype_t dtype;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0, levels = 0, i, level;
    lodtensor_dtype(t, &dtype);
    lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim);
    lodtensor_lod_num_levels(t, &levels);
    printf("  dtype (code %u, %u bits), dims [", (unsigned)dtype.code, (unsigned)dtype.bits);
    for (i = 0; i < ndim; ++i) printf("%s%lld", i ? ", " : "", (long long)dims[i]);
    printf("], LoD [");
    for (level = 0; level < levels; ++level) {
        const size_t *offsets = NULL;
        size_t n = 0;
        lodtensor_lod_offsets(t, level, &offsets, &n);
        printf("%s[", level ? ", " : "");
        for (i = 0; i < n; ++i) printf("%s%zu", i ? ", " : "", offsets[i]);
        printf("]");
    }
    printf("]\n");
}

int main(void) {
    /* Two paragraphs of 2 and 1 sentences, of 2, 1 and 3 words; a 4-wide embedding a word. */
    static const size_t level_sizes[2] = {3, 4}, lod[7] = {0, 2, 3, 0, 2, 3, 6};
    static const int64_t embedding_dims[2] = {6, 4}, id_dims[2] = {6, 1};
    static const int64_t ids[6] = {12, 7, 301, 5, 5, 88};
    const lodtensor_dtype_t f32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1}, i64 = {LODTENSOR_DTYPE_CODE_INT, 64, 1};
    float embeddings[24];
    lodtensor_t *saved[VARIABLES] = {NULL, NULL};
    FILE *file = tmpfile();
    unsigned char *bytes = NULL;
    long file_len;
    size_t at = 0, n = 0, i;
    int good = 1;

    for (i = 0; i < 24; ++i) embeddings[i] = (float)i / 8.0f;
    if (file == NULL ||
        !ok(lodtensor_create(f32, embedding_dims, 2, embeddings, sizeof embeddings, LODTENSOR_LOD_OFFSETS,
                             level_sizes, 2, lod, 7, &saved[0]),
            "lodtensor_create") ||
        !ok(lodtensor_create(i64, id_dims, 2, ids, sizeof ids, LODTENSOR_LOD_OFFSETS, level_sizes, 2, lod, 7,
                             &saved[1]),
            "lodtensor_create") ||
        !save(file, saved[0]) || !save(file, saved[1])) {
        good = 0;
        goto done;
    }

    /* The whole file in memory, then one record after another. */
    file_len = ftell(file);
    rewind(file);
    bytes = (unsigned char *)malloc((size_t)file_len);
    if (file_len < 0 || bytes == NULL || fread(bytes, 1, (size_t)file_len, file) != (size_t)file_len) {
        good = 0;
        goto done;
    }
    printf("a save_combine file of %ld bytes:\n", file_len);
    while (at < (size_t)file_len) {
        lodtensor_t *t = NULL;
        size_t used = 0;
        if (!ok(lodtensor_deserialize(bytes + at, (size_t)file_len - at, &used, &t), "lodtensor_deserialize")) {
            good = 0;
            break;
        }
        printf("variable %zu, %zu bytes at %zu:\n", n, used, at);
        describe(t);
        good = good && n < VARIABLES && same(t, saved[n]);
        lodtensor_destroy(t);
        at += used;
        ++n;
    }
    good = good && n == VARIABLES;
    printf("%s\n", good ? "every variable read back as written" : "MISMATCH");

done:
    free(bytes);
    if (file != NULL) fclose(file);
    for (i = 0; i < VARIABLES; ++i) lodtensor_destroy(saved[i]);
    return good ? 0 : 1;
}
