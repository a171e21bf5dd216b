/* test_thread_start: the library's thread pool cannot start. A forked child of this fresh process
 * (whose pool has not started yet) may start no more threads: it gives up root, which the limit
 * does not bind, then lowers RLIMIT_NPROC to 1. lodtensor_num_threads and
 * lodtensor_set_num_threads then return LODTENSOR_INTERNAL naming the pool, and calls that need
 * no pool go on working on the calling thread. Skipped (77) where the limit cannot be set or
 * does not bind. */
#define _DEFAULT_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static void *nothing(void *arg) {
    return arg;
}

/* Whether this process can start no thread. */
static int threads_refused(void) {
    pthread_t t;
    if (pthread_create(&t, NULL, nothing, NULL) != 0) {
        return 1;
    }
    pthread_join(t, NULL);
    return 0;
}

static int child(void) {
    struct rlimit one = {1, 1};
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) {
        fprintf(stderr, "skipped: cannot give up root\n");
        return CHECK_SKIP_CODE;
    }
    if (setrlimit(RLIMIT_NPROC, &one) != 0 || !threads_refused()) {
        fprintf(stderr, "skipped: RLIMIT_NPROC does not stop new threads here\n");
        return CHECK_SKIP_CODE;
    }
    size_t n = 99;
    CHECK_STATUS_MSG(lodtensor_num_threads(&n), LODTENSOR_INTERNAL, "thread pool");
    CHECK_EQ_SIZE(n, 99); /* not written */
    CHECK_STATUS_MSG(lodtensor_set_num_threads(3), LODTENSOR_INTERNAL, "3 thread(s)");
    CHECK_STATUS_MSG(lodtensor_set_num_threads(0), LODTENSOR_INTERNAL, "thread pool");
    /* A small copy runs on the calling thread, without the pool. */
    lodtensor_t *t = NULL, *c = NULL;
    if (CHECK_OK(fx_make_f32(4, 1, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &t))) {
        const void *a = NULL, *b = NULL;
        if (CHECK_OK(lodtensor_copy(t, &c)) && CHECK_OK(lodtensor_data(t, &a)) && CHECK_OK(lodtensor_data(c, &b))) {
            CHECK(memcmp(a, b, 4 * sizeof(float)) == 0);
        }
    }
    lodtensor_destroy(c);
    lodtensor_destroy(t);
    return CHECK_RETURN();
}

int main(void) {
    int status = 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        int code = child();
        fflush(NULL);
        _exit(code);
    }
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
        fprintf(stderr, "the child did not exit normally (status %d)\n", status);
        return 1;
    }
    return WEXITSTATUS(status);
}
