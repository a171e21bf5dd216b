/* quickstart: build a 2-level LoDTensor, read its LoD and rows, slice out one sequence without
 * copying, and see what an error looks like.
 *
 * The data: 2 paragraphs -> 3 sentences -> 9 words. Each word is one row of a float32 [9, 2]
 * tensor (think of a 2-dim word embedding). The LoD ("level of detail") says how rows group:
 *   level 0 (paragraphs): lengths [2, 1]     = 2 sentences, then 1 sentence
 *   level 1 (sentences):  lengths [3, 2, 4]  = 3, 2 and 4 words (rows)
 * The last level counts rows; every higher level counts sequences of the level below.
 *
 * Build and run: bash scripts/example.sh  (or see examples-c/CMakeLists.txt). */
#include <stdio.h>

#include <lodtensor.h>

/* Every fallible call returns a status; on failure print its name and the message, then clean up. */
#define TRY(call)                                                                              \
    do {                                                                                       \
        lodtensor_status_t status_ = (call);                                                   \
        if (status_ != LODTENSOR_OK) {                                                         \
            fprintf(stderr, "%s failed: %s: %s\n", #call, lodtensor_status_str(status_),       \
                    lodtensor_last_error_message());                                           \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)

/* Prints dims, the LoD (offsets and lengths per level) and the rows grouped by sequence. */
static int print_tensor(const char *name, const lodtensor_t *t) {
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0, levels = 0, level, i, count = 0, p, s;
    const size_t *paragraphs = NULL;
    const void *data = NULL;
    int ok = 0;

    TRY(lodtensor_dims(t, dims, LODTENSOR_MAX_DIMS, &ndim));
    printf("%s: dims [", name);
    for (i = 0; i < ndim; ++i) printf(i ? ", %lld" : "%lld", (long long)dims[i]);
    printf("]\n");

    TRY(lodtensor_lod_num_levels(t, &levels));
    for (level = 0; level < levels; ++level) {
        const size_t *offsets = NULL; /* borrowed: valid until the LoD changes or t is destroyed */
        size_t n = 0, lengths[16];
        TRY(lodtensor_lod_offsets(t, level, &offsets, &n));
        TRY(lodtensor_lod_lengths(t, level, lengths, 16, &count));
        printf("  level %zu: offsets [", level);
        for (i = 0; i < n; ++i) printf(i ? ", %zu" : "%zu", offsets[i]);
        printf("]  lengths [");
        for (i = 0; i < count; ++i) printf(i ? ", %zu" : "%zu", lengths[i]);
        printf("]\n");
    }

    /* The rows, grouped by paragraph and sentence (this printer knows 2-level tensors). Level 0's
     * offsets index sentences; sequence_rows(t, 1, s, ..) gives sentence s's rows [begin, end). */
    if (levels != 2) return 1;
    TRY(lodtensor_data(t, &data));
    TRY(lodtensor_lod_offsets(t, 0, &paragraphs, &count));
    for (p = 0; p + 1 < count; ++p) {
        printf("  paragraph %zu:\n", p);
        for (s = paragraphs[p]; s < paragraphs[p + 1]; ++s) {
            size_t begin = 0, end = 0, r;
            TRY(lodtensor_sequence_rows(t, 1, s, &begin, &end));
            printf("    sentence %zu (rows %zu..%zu):", s, begin, end);
            for (r = begin; r < end; ++r) {
                const float *row = (const float *)data + r * 2; /* rows are contiguous, row-major */
                printf(" (%g, %g)", row[0], row[1]);
            }
            printf("\n");
        }
    }
    ok = 1;
done:
    return ok;
}

int main(void) {
    const int64_t dims[2] = {9, 2};
    float words[9][2];
    /* The LoD, flattened: level_sizes says how many values each level has. */
    const size_t level_sizes[2] = {2, 3};
    const size_t lengths[5] = {2, 1, /* level 1: */ 3, 2, 4};
    const size_t bad_lengths[5] = {2, 1, 3, 2, 3}; /* 8 words, but the tensor has 9 rows */
    const lodtensor_dtype_t f32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
    lodtensor_t *text = NULL, *paragraph = NULL, *bad = NULL;
    const void *text_data = NULL, *paragraph_data = NULL;
    lodtensor_status_t status;
    int exit_code = 1;
    int i;

    printf("lodtensor %s\n\n", lodtensor_version());
    for (i = 0; i < 9; ++i) { /* word i = (i, -i) */
        words[i][0] = (float)i;
        words[i][1] = (float)-i;
    }

    /* 1. Create: the elements are copied; the LoD is validated against the 9 rows. */
    TRY(lodtensor_create(f32, dims, 2, words, sizeof words, LODTENSOR_LOD_LENGTHS, level_sizes, 2, lengths, 5,
                         &text));
    if (!print_tensor("text", text)) goto done;

    /* 2. Slice paragraph 1 (sequences [1, 2) of level 0). No copy: it shares text's memory, its
     *    LoD is re-based to start at 0, and it stays valid even after text is destroyed. */
    TRY(lodtensor_slice(text, 0, 1, 2, &paragraph));
    if (!print_tensor("\nparagraph 1", paragraph)) goto done;
    TRY(lodtensor_data(text, &text_data));
    TRY(lodtensor_data(paragraph, &paragraph_data));
    printf("  zero copy: its data starts at row %td of text's data\n",
           ((const float *)paragraph_data - (const float *)text_data) / 2);

    /* 3. An error: the sentence lengths add up to 8 words, the tensor has 9 rows. The call
     *    returns a status, the message says what was wrong, and `bad` is left untouched. */
    status = lodtensor_create(f32, dims, 2, words, sizeof words, LODTENSOR_LOD_LENGTHS, level_sizes, 2, bad_lengths,
                              5, &bad);
    printf("\ninvalid LoD -> %s: %s\n", lodtensor_status_str(status), lodtensor_last_error_message());
    if (status != LODTENSOR_INVALID_LOD || bad != NULL) goto done;

    exit_code = 0;
done:
    /* 4. Every handle is destroyed on its own (NULL is fine); memory goes with the last one. */
    lodtensor_destroy(paragraph);
    lodtensor_destroy(text);
    lodtensor_destroy(bad);
    return exit_code;
}
