/* test_threads: the last error message is per thread, a handle can be read from many threads at
 * once, and handles sharing a from_buffer allocation can be destroyed on different threads with
 * the release callback still running exactly once. Threads record what they saw; the main thread
 * does the checking (check.h's counters are not thread-safe). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

#define THREADS 8
#define ROUNDS 200

/* ---- the last error is thread-local ----------------------------------------------------------- */

struct error_probe {
    char initial[64];   /* the message before this thread failed anything */
    int32_t status;     /* of the failure this thread makes */
    char message[256];  /* its message */
};

static void *probe_errors(void *arg) {
    struct error_probe *p = (struct error_probe *)arg;
    size_t n;
    snprintf(p->initial, sizeof p->initial, "%s", lodtensor_last_error_message());
    p->status = lodtensor_lod_offsets(NULL, 0, NULL, &n);
    snprintf(p->message, sizeof p->message, "%s", lodtensor_last_error_message());
    return NULL;
}

static void test_last_error_is_per_thread(void) {
    pthread_t thread;
    struct error_probe probe;
    char mine[256];
    memset(&probe, 0, sizeof probe);
    /* This thread fails with a message about `level`. */
    {
        lodtensor_t *t = NULL;
        size_t b, e;
        if (!CHECK_OK(fx_make_f32(2, 1, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
            return;
        }
        CHECK_STATUS_MSG(lodtensor_sequence_rows(t, 4, 0, &b, &e), LODTENSOR_OUT_OF_RANGE, "level");
        lodtensor_destroy(t);
    }
    snprintf(mine, sizeof mine, "%s", lodtensor_last_error_message());
    if (!CHECK(pthread_create(&thread, NULL, probe_errors, &probe) == 0)) {
        return;
    }
    pthread_join(thread, NULL);
    /* A new thread starts with an empty message, and its failure stays its own. */
    CHECK_STR_EQ(probe.initial, "");
    CHECK_EQ_INT(probe.status, LODTENSOR_NULL_ARGUMENT);
    CHECK(strstr(probe.message, "t:") != NULL || strstr(probe.message, "t ") != NULL);
    CHECK(strstr(probe.message, "level") == NULL);
    CHECK_STR_EQ(lodtensor_last_error_message(), mine);
}

/* ---- concurrent reads of one handle ----------------------------------------------------------- */

/* Spec §1.1 header LoD, 20 rows. */
static const size_t header_sizes[3] = {3, 4, 8};
static const size_t header_lod[15] = {0, 2, 3, 0, 2, 4, 7, 0, 2, 5, 7, 10, 12, 15, 20};

struct reader {
    const lodtensor_t *t;
    int errors;
};

static void *read_many_times(void *arg) {
    struct reader *r = (struct reader *)arg;
    int round;
    for (round = 0; round < ROUNDS; ++round) {
        const size_t *offsets = NULL;
        size_t len = 0, b = 0, e = 0, levels = 0;
        const void *data = NULL;
        lodtensor_t *s = NULL, *share = NULL;
        if (lodtensor_lod_num_levels(r->t, &levels) != LODTENSOR_OK || levels != 3) r->errors++;
        if (lodtensor_lod_offsets(r->t, 2, &offsets, &len) != LODTENSOR_OK || len != 8 || offsets[7] != 20) r->errors++;
        if (lodtensor_sequence_rows(r->t, 0, 1, &b, &e) != LODTENSOR_OK || b != 10 || e != 20) r->errors++;
        if (lodtensor_data(r->t, &data) != LODTENSOR_OK || ((const float *)data)[2 * 19 + 1] != fx_value(19, 1)) {
            r->errors++;
        }
        if (lodtensor_slice(r->t, 1, 1, 3, &s) != LODTENSOR_OK) {
            r->errors++;
        } else {
            if (lodtensor_sequence_rows(s, 0, 1, &b, &e) != LODTENSOR_OK || b != 5 || e != 15) r->errors++;
            lodtensor_destroy(s);
        }
        if (lodtensor_share(r->t, &share) != LODTENSOR_OK) {
            r->errors++;
        } else {
            lodtensor_destroy(share);
        }
        /* Failures on many threads at once, each with its own message. */
        if (lodtensor_slice(r->t, 0, 1, 1, &s) != LODTENSOR_OUT_OF_RANGE ||
            strstr(lodtensor_last_error_message(), "begin") == NULL) {
            r->errors++;
        }
    }
    return NULL;
}

static void test_concurrent_reads(void) {
    lodtensor_t *t = NULL;
    pthread_t threads[THREADS];
    struct reader readers[THREADS];
    int i, started = 0;
    if (!CHECK_OK(fx_make_f32(20, 2, LODTENSOR_LOD_OFFSETS, header_sizes, 3, header_lod, 15, &t))) {
        return;
    }
    for (i = 0; i < THREADS; ++i) {
        readers[i].t = t;
        readers[i].errors = 0;
        if (pthread_create(&threads[i], NULL, read_many_times, &readers[i]) != 0) {
            break;
        }
        started++;
    }
    CHECK_EQ_INT(started, THREADS);
    for (i = 0; i < started; ++i) {
        pthread_join(threads[i], NULL);
        CHECK_EQ_INT(readers[i].errors, 0);
    }
    lodtensor_destroy(t);
}

/* ---- release with handles destroyed on many threads ------------------------------------------- */

static atomic_int release_calls;

static void count_release(void *data, void *user_data) {
    (void)data;
    (void)user_data;
    atomic_fetch_add(&release_calls, 1);
}

static void *destroy_handle(void *arg) {
    lodtensor_destroy((lodtensor_t *)arg);
    return NULL;
}

static void test_release_once_across_threads(void) {
    float buffer[20 * 2] = {0};
    const int64_t dims[2] = {20, 2};
    lodtensor_t *t = NULL, *handles[THREADS];
    pthread_t threads[THREADS];
    int i, round;
    for (round = 0; round < 20; ++round) {
        atomic_store(&release_calls, 0);
        if (!CHECK_OK(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 2, buffer, sizeof buffer, LODTENSOR_LOD_OFFSETS,
                                            header_sizes, 3, header_lod, 15, count_release, NULL, &t))) {
            return;
        }
        for (i = 0; i < THREADS; ++i) {
            handles[i] = NULL;
            CHECK_OK(i % 2 ? lodtensor_share(t, &handles[i]) : lodtensor_slice(t, 2, (size_t)i % 7, 7, &handles[i]));
        }
        lodtensor_destroy(t);
        for (i = 0; i < THREADS; ++i) {
            if (pthread_create(&threads[i], NULL, destroy_handle, handles[i]) != 0) {
                lodtensor_destroy(handles[i]);
                threads[i] = pthread_self();
            }
        }
        for (i = 0; i < THREADS; ++i) {
            if (!pthread_equal(threads[i], pthread_self())) {
                pthread_join(threads[i], NULL);
            }
        }
        if (!CHECK_EQ_INT(atomic_load(&release_calls), 1)) {
            fprintf(stderr, "  round %d\n", round);
        }
    }
}

/* ---- release runs on the thread that destroys the last handle ---------------------------------- */

struct release_thread {
    int calls;
    pthread_t thread;
};

static void record_release_thread(void *data, void *user_data) {
    struct release_thread *r = (struct release_thread *)user_data;
    (void)data;
    r->calls++;
    r->thread = pthread_self();
}

struct destroyer {
    lodtensor_t *t;
    pthread_t self;
};

static void *destroy_and_remember(void *arg) {
    struct destroyer *d = (struct destroyer *)arg;
    d->self = pthread_self();
    lodtensor_destroy(d->t);
    return NULL;
}

static void test_release_on_destroying_thread(void) {
    float buffer[4] = {0};
    const int64_t dims[1] = {4};
    struct release_thread r;
    struct destroyer d;
    pthread_t thread;
    r.calls = 0;
    r.thread = pthread_self();
    d.t = NULL;
    if (!CHECK_OK(lodtensor_from_buffer(fx_cpu(), fx_f32(), dims, 1, buffer, sizeof buffer, LODTENSOR_LOD_OFFSETS,
                                        NULL, 0, NULL, 0, record_release_thread, &r, &d.t))) {
        return;
    }
    if (!CHECK(pthread_create(&thread, NULL, destroy_and_remember, &d) == 0)) {
        lodtensor_destroy(d.t);
        return;
    }
    pthread_join(thread, NULL);
    CHECK_EQ_INT(r.calls, 1);
    CHECK(pthread_equal(r.thread, d.self));
    CHECK(!pthread_equal(r.thread, pthread_self()));
}

/* ---- calls while a thread exits ------------------------------------------------------------ */

/* What a failing call made from a thread-exit destructor returned, and whether its message
 * pointer was NULL. */
static int32_t exit_status = -1;
static int exit_message_null = -1;
static pthread_key_t exit_key;

static void failing_call_at_exit(void *unused) {
    size_t n;
    (void)unused;
    exit_status = lodtensor_numel(NULL, &n);
    exit_message_null = lodtensor_last_error_message() == NULL;
}

/* Fails a call, which gives the thread its library message, then exits: the key's destructor
 * runs after the thread's other thread-locals, the library's message among them, are gone. */
static void *fail_then_exit(void *arg) {
    size_t n;
    pthread_setspecific(exit_key, arg);
    (void)lodtensor_numel(NULL, &n);
    return NULL;
}

static void test_failing_call_while_the_thread_exits(void) {
    pthread_t thread;
    static int marker;
    if (!CHECK(pthread_key_create(&exit_key, failing_call_at_exit) == 0)) return;
    if (CHECK(pthread_create(&thread, NULL, fail_then_exit, &marker) == 0)) {
        CHECK(pthread_join(thread, NULL) == 0);
        /* The process is still here, and the call said what was wrong by its status. */
        CHECK_EQ_INT(exit_status, LODTENSOR_NULL_ARGUMENT);
        CHECK_EQ_INT(exit_message_null, 0);
    }
    pthread_key_delete(exit_key);
}

int main(void) {
    test_failing_call_while_the_thread_exits();
    test_last_error_is_per_thread();
    test_concurrent_reads();
    test_release_once_across_threads();
    test_release_on_destroying_thread();
    return CHECK_RETURN();
}
