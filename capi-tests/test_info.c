/* test_info: the library-wide functions: lodtensor_version, lodtensor_status_str,
 * lodtensor_last_error_message and lodtensor_selftest_panic (a panic becomes LODTENSOR_INTERNAL
 * and the process keeps running). */
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static void test_last_error_is_empty_before_any_failure(void) {
    /* Must run first: nothing has failed on this thread yet. */
    const char *message = lodtensor_last_error_message();
    CHECK(message != NULL);
    CHECK_STR_EQ(message, "");
}

static void test_version(void) {
    const char *v = lodtensor_version();
    char expected[64];
    CHECK(v != NULL);
    CHECK_STR_EQ(v, LODTENSOR_VERSION_STRING);
    /* The macros agree with the string. */
    snprintf(expected, sizeof expected, "%d.%d.%d", LODTENSOR_VERSION_MAJOR, LODTENSOR_VERSION_MINOR,
             LODTENSOR_VERSION_PATCH);
    CHECK_STR_EQ(v, expected);
    /* Static storage: the same pointer every time. */
    CHECK_EQ_PTR(lodtensor_version(), v);
}

static void test_status_str(void) {
    static const struct {
        int32_t code;
        const char *text;
    } table[] = {
        {LODTENSOR_OK, "ok"},
        {LODTENSOR_NULL_ARGUMENT, "null argument"},
        {LODTENSOR_INVALID_ARGUMENT, "invalid argument"},
        {LODTENSOR_INVALID_LOD, "invalid LoD"},
        {LODTENSOR_OUT_OF_RANGE, "out of range"},
        {LODTENSOR_BUFFER_TOO_SMALL, "buffer too small"},
        {LODTENSOR_UNSUPPORTED, "unsupported"},
        {LODTENSOR_OUT_OF_MEMORY, "out of memory"},
        {LODTENSOR_INTERNAL, "internal error"},
        {LODTENSOR_CALLBACK_FAILED, "callback failed"},
    };
    static const int32_t not_codes[] = {-1, 10, 77, 1000, INT32_MIN, INT32_MAX};
    size_t i, j;
    /* The codes are the documented, stable numbers. */
    CHECK_EQ_INT(LODTENSOR_OK, 0);
    CHECK_EQ_INT(LODTENSOR_NULL_ARGUMENT, 1);
    CHECK_EQ_INT(LODTENSOR_INVALID_ARGUMENT, 2);
    CHECK_EQ_INT(LODTENSOR_INVALID_LOD, 3);
    CHECK_EQ_INT(LODTENSOR_OUT_OF_RANGE, 4);
    CHECK_EQ_INT(LODTENSOR_BUFFER_TOO_SMALL, 5);
    CHECK_EQ_INT(LODTENSOR_UNSUPPORTED, 6);
    CHECK_EQ_INT(LODTENSOR_OUT_OF_MEMORY, 7);
    CHECK_EQ_INT(LODTENSOR_INTERNAL, 8);
    CHECK_EQ_INT(LODTENSOR_CALLBACK_FAILED, 9);
    for (i = 0; i < sizeof table / sizeof table[0]; ++i) {
        const char *s = lodtensor_status_str(table[i].code);
        CHECK(s != NULL);
        CHECK_STR_EQ(s, table[i].text);
        /* Every code has its own text. */
        for (j = 0; j < i; ++j) {
            CHECK(strcmp(s, table[j].text) != 0);
        }
    }
    for (i = 0; i < sizeof not_codes / sizeof not_codes[0]; ++i) {
        CHECK_STR_EQ(lodtensor_status_str(not_codes[i]), "unknown status");
    }
}

static void test_last_error_rules(void) {
    lodtensor_t *t = NULL;
    size_t n = 0;
    const char *message;
    char saved[512];

    /* A failure sets a message naming the argument. */
    CHECK_STATUS_MSG(lodtensor_ndim(NULL, &n), LODTENSOR_NULL_ARGUMENT, "t");
    message = lodtensor_last_error_message();
    CHECK(message != NULL && message[0] != '\0');
    snprintf(saved, sizeof saved, "%s", message);

    /* Successful calls leave it unchanged, and so do the infallible functions. */
    if (CHECK_OK(fx_make_f32(3, 2, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        CHECK_OK(lodtensor_ndim(t, &n));
        CHECK_EQ_SIZE(n, 2);
        CHECK_STR_EQ(lodtensor_last_error_message(), saved);
    }
    (void)lodtensor_version();
    (void)lodtensor_status_str(3);
    lodtensor_destroy(NULL);
    CHECK_STR_EQ(lodtensor_last_error_message(), saved);

    /* The next failure replaces it. */
    CHECK_STATUS_MSG(lodtensor_lod_offsets(t, 5, NULL, &n), LODTENSOR_NULL_ARGUMENT, "out");
    CHECK(strcmp(lodtensor_last_error_message(), saved) != 0);
    lodtensor_destroy(t);
}

static void test_selftest_panic(void) {
    int i;
    lodtensor_t *t = NULL;
    size_t rows = 0;
    /* Several times in a row: the process survives every one. */
    for (i = 0; i < 3; ++i) {
        CHECK_STATUS_MSG(lodtensor_selftest_panic(), LODTENSOR_INTERNAL, "panic");
        CHECK_STATUS_MSG(lodtensor_selftest_panic(), LODTENSOR_INTERNAL, "lodtensor_selftest_panic");
    }
    /* The library still works after a caught panic. */
    if (CHECK_OK(fx_make_f32(4, 1, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        CHECK_OK(lodtensor_numel(t, &rows));
        CHECK_EQ_SIZE(rows, 4);
        lodtensor_destroy(t);
    }
}

int main(void) {
    test_last_error_is_empty_before_any_failure();
    test_version();
    test_status_str();
    test_last_error_rules();
    test_selftest_panic();
    return CHECK_RETURN();
}
