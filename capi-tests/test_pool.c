/* test_pool: sizing the library's own thread pool (lodtensor_set_num_threads,
 * lodtensor_num_threads), the LODTENSOR_NUM_THREADS default, and their documented errors. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>

#include <lodtensor.h>

#include "check.h"

static void test_explicit_sizes(void) {
    size_t n = 0;
    CHECK_OK(lodtensor_set_num_threads(3));
    CHECK_OK(lodtensor_num_threads(&n));
    CHECK_EQ_SIZE(n, 3);
    CHECK_OK(lodtensor_set_num_threads(1));
    CHECK_OK(lodtensor_num_threads(&n));
    CHECK_EQ_SIZE(n, 1);
}

static void test_default_comes_from_the_environment(void) {
    size_t n = 0;
    CHECK(setenv("LODTENSOR_NUM_THREADS", "5", 1) == 0);
    CHECK_OK(lodtensor_set_num_threads(0));
    CHECK_OK(lodtensor_num_threads(&n));
    CHECK_EQ_SIZE(n, 5);
    /* Garbage in the variable falls back to the core count (at least 1). */
    CHECK(setenv("LODTENSOR_NUM_THREADS", "many", 1) == 0);
    CHECK_OK(lodtensor_set_num_threads(0));
    CHECK_OK(lodtensor_num_threads(&n));
    CHECK(n >= 1);
    /* So does a count above the bound that lodtensor_set_num_threads refuses. */
    CHECK(setenv("LODTENSOR_NUM_THREADS", "1500", 1) == 0);
    CHECK_OK(lodtensor_set_num_threads(0));
    CHECK_OK(lodtensor_num_threads(&n));
    CHECK(n >= 1 && n <= 1024);
    CHECK(unsetenv("LODTENSOR_NUM_THREADS") == 0);
}

static void test_errors(void) {
    size_t n = 7;
    CHECK_STATUS_MSG(lodtensor_set_num_threads(1025), LODTENSOR_INVALID_ARGUMENT, "num_threads");
    CHECK_STATUS_MSG(lodtensor_set_num_threads((size_t)-1), LODTENSOR_INVALID_ARGUMENT, "num_threads");
    CHECK_STATUS_MSG(lodtensor_num_threads(NULL), LODTENSOR_NULL_ARGUMENT, "out");
    /* A failed resize keeps the pool as it was. */
    CHECK_OK(lodtensor_set_num_threads(2));
    CHECK_STATUS(lodtensor_set_num_threads(5000), LODTENSOR_INVALID_ARGUMENT);
    CHECK_OK(lodtensor_num_threads(&n));
    CHECK_EQ_SIZE(n, 2);
}

int main(void) {
    test_explicit_sizes();
    test_default_comes_from_the_environment();
    test_errors();
    return CHECK_RETURN();
}
