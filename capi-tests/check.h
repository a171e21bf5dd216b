/* check.h: a tiny, header-only helper for the C and C++ test programs of lodtensor's C API.
 *
 * No framework: every macro is an expression that evaluates to 1 when the check passes and 0
 * when it fails (after printing file:line and what went wrong to stderr and counting the
 * failure), so a test can either just state a check or bail out when later checks would be
 * meaningless:
 *
 *     lodtensor_t *t = NULL;
 *     if (!CHECK_OK(lodtensor_create(...,&t))) return;
 *     CHECK(t != NULL);
 *     CHECK_EQ_SIZE(rows, 20);
 *     CHECK_STATUS(lodtensor_share(NULL, &t), LODTENSOR_NULL_ARGUMENT);
 *     CHECK_STATUS_MSG(lodtensor_create(...), LODTENSOR_INVALID_ARGUMENT, "dims");
 *     ...
 *     int main(void) { test_a(); test_b(); return CHECK_RETURN(); }
 *
 * CHECK_STATUS / CHECK_STATUS_MSG also prove that the failing call wrote its own message: just
 * before the call they make a failure with a known marker message, and afterwards the last error
 * message must be non-empty, different from the marker, and (CHECK_STATUS_MSG) contain the given
 * substring (usually the argument's name, e.g. "dims" or "level").
 *
 * Plain C11 (no extensions), also valid C++17. */
#ifndef LODTENSOR_CAPI_TESTS_CHECK_H
#define LODTENSOR_CAPI_TESTS_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lodtensor.h>

/* ---- counters ------------------------------------------------------------------------------ */

static inline int *check_failure_counter(void) {
    static int failures;
    return &failures;
}

static inline int *check_check_counter(void) {
    static int checks;
    return &checks;
}

static inline int check_record(int ok) {
    ++*check_check_counter();
    if (!ok) {
        ++*check_failure_counter();
    }
    return ok;
}

/* ---- plain conditions ---------------------------------------------------------------------- */

static inline int check_true(int ok, const char *expr, const char *file, int line) {
    if (!ok) {
        fprintf(stderr, "%s:%d: CHECK(%s) failed\n", file, line, expr);
    }
    return check_record(ok);
}

static inline int check_eq_u64(unsigned long long got, unsigned long long want, const char *expr_got,
                               const char *expr_want, const char *file, int line) {
    int ok = got == want;
    if (!ok) {
        fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %llu != %llu\n", file, line, expr_got, expr_want,
                got, want);
    }
    return check_record(ok);
}

static inline int check_eq_i64(long long got, long long want, const char *expr_got, const char *expr_want,
                               const char *file, int line) {
    int ok = got == want;
    if (!ok) {
        fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %lld != %lld\n", file, line, expr_got, expr_want,
                got, want);
    }
    return check_record(ok);
}

static inline int check_eq_ptr(const void *got, const void *want, const char *expr_got, const char *expr_want,
                               const char *file, int line) {
    int ok = got == want;
    if (!ok) {
        fprintf(stderr, "%s:%d: CHECK_EQ(%s, %s) failed: %p != %p\n", file, line, expr_got, expr_want, got,
                want);
    }
    return check_record(ok);
}

static inline int check_str_eq(const char *got, const char *want, const char *expr_got, const char *file,
                               int line) {
    int ok = got != NULL && want != NULL && strcmp(got, want) == 0;
    if (!ok) {
        fprintf(stderr, "%s:%d: CHECK_STR_EQ(%s) failed: \"%s\" != \"%s\"\n", file, line, expr_got,
                got ? got : "(null)", want ? want : "(null)");
    }
    return check_record(ok);
}

/* ---- status codes -------------------------------------------------------------------------- */

/* The marker the last error message holds just before each CHECK_STATUS call: a failure no test
 * provokes on purpose (a dtype with 48879 lanes). */
#define CHECK_MARKER_LANES 48879

/* The marker message's first bytes (enough to recognise it), kept by check_prime_last_error. */
static inline char *check_marker(void) {
    static char marker[256];
    return marker;
}

/* Makes a failing call whose message is the marker and keeps a copy of that message. */
static inline void check_prime_last_error(void) {
    char *marker = check_marker();
    size_t n;
    lodtensor_dtype_t bad;
    lodtensor_t *out = NULL;
    int32_t status;
    bad.code = LODTENSOR_DTYPE_CODE_FLOAT;
    bad.bits = 32;
    bad.lanes = CHECK_MARKER_LANES;
    status = lodtensor_create(bad, NULL, 0, NULL, 0, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &out);
    if (status == LODTENSOR_OK) { /* cannot happen; do not leak if it does */
        lodtensor_destroy(out);
    }
    n = strlen(lodtensor_last_error_message());
    if (n > 255) {
        n = 255;
    }
    memcpy(marker, lodtensor_last_error_message(), n);
    marker[n] = '\0';
    if (status != LODTENSOR_UNSUPPORTED || strstr(marker, "48879") == NULL) {
        fprintf(stderr, "check.h: priming the last error failed: status %d, message \"%s\"\n", (int)status,
                marker);
        check_record(0);
    }
}

static inline int check_ok(int32_t status, const char *expr, const char *file, int line) {
    int ok = status == LODTENSOR_OK;
    if (!ok) {
        fprintf(stderr, "%s:%d: CHECK_OK(%s) failed: status %d (%s): %s\n", file, line, expr, (int)status,
                lodtensor_status_str(status), lodtensor_last_error_message());
    }
    return check_record(ok);
}

/* `substring` may be NULL (then only "non-empty and not the marker" is checked). */
static inline int check_status(int32_t status, int32_t expected, const char *substring,
                               const char *expr, const char *file, int line) {
    const char *message = lodtensor_last_error_message();
    const char *marker = check_marker();
    int ok = 1;
    if (status != expected) {
        fprintf(stderr, "%s:%d: %s returned %d (%s), expected %d (%s); last error: \"%s\"\n", file, line, expr,
                (int)status, lodtensor_status_str(status), (int)expected, lodtensor_status_str(expected),
                message ? message : "(null)");
        ok = 0;
    } else if (expected != LODTENSOR_OK) {
        if (message == NULL || message[0] == '\0') {
            fprintf(stderr, "%s:%d: %s returned %s but the last error message is empty\n", file, line, expr,
                    lodtensor_status_str(status));
            ok = 0;
        } else if (marker[0] != '\0' && strncmp(message, marker, strlen(marker)) == 0) {
            fprintf(stderr, "%s:%d: %s returned %s but did not set the last error message (still \"%s\")\n",
                    file, line, expr, lodtensor_status_str(status), message);
            ok = 0;
        } else if (substring != NULL && strstr(message, substring) == NULL) {
            fprintf(stderr, "%s:%d: %s: the last error message \"%s\" does not mention \"%s\"\n", file, line,
                    expr, message, substring);
            ok = 0;
        }
    }
    return check_record(ok);
}

/* ---- the macros ---------------------------------------------------------------------------- */

#define CHECK(cond) check_true((cond) ? 1 : 0, #cond, __FILE__, __LINE__)
#define CHECK_EQ_SIZE(got, want) \
    check_eq_u64((unsigned long long)(got), (unsigned long long)(want), #got, #want, __FILE__, __LINE__)
#define CHECK_EQ_INT(got, want) \
    check_eq_i64((long long)(got), (long long)(want), #got, #want, __FILE__, __LINE__)
#define CHECK_EQ_PTR(got, want) \
    check_eq_ptr((const void *)(got), (const void *)(want), #got, #want, __FILE__, __LINE__)
#define CHECK_STR_EQ(got, want) check_str_eq((got), (want), #got, __FILE__, __LINE__)

/* The call must return LODTENSOR_OK; otherwise prints the status name and the last error. */
#define CHECK_OK(call) check_ok((call), #call, __FILE__, __LINE__)

/* The call must return `expected` and leave its own non-empty message (containing `substring`).
 * The comma operator makes sure the marker is set before the call runs. */
#define CHECK_STATUS_MSG(call, expected, substring) \
    (check_prime_last_error(), check_status((call), (expected), (substring), #call, __FILE__, __LINE__))
#define CHECK_STATUS(call, expected) CHECK_STATUS_MSG(call, expected, NULL)

/* For a status obtained earlier (e.g. from a helper that wraps the call): CHECK_PRIME() before the
 * call, then CHECK_STATUS_VALUE(status, expected, substring) after it. */
#define CHECK_PRIME() check_prime_last_error()
#define CHECK_STATUS_VALUE(status, expected, substring) \
    check_status((status), (expected), (substring), #status, __FILE__, __LINE__)

/* ---- the end of main ----------------------------------------------------------------------- */

static inline int check_finish(const char *file) {
    int failures = *check_failure_counter();
    int checks = *check_check_counter();
    if (failures == 0) {
        printf("%s: all %d checks passed\n", file, checks);
        return 0;
    }
    fprintf(stderr, "%s: %d of %d checks FAILED\n", file, failures, checks);
    return 1;
}

/* `return CHECK_RETURN();` at the end of main: 0 when every check passed, 1 otherwise. */
#define CHECK_RETURN() check_finish(__FILE__)

/* Exit code CTest reports as "skipped" (SKIP_RETURN_CODE 77). */
#define CHECK_SKIP_CODE 77

#endif /* LODTENSOR_CAPI_TESTS_CHECK_H */
