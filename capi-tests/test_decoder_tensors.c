/* test_decoder_tensors: beam_search_decoder_run_tensors, the decoder whose model hands back its
 * log-probs as a tensor. With the same toy model it must give exactly the sentences and scores of
 * beam_search_decoder_run (several sources, min_length, prefixes that finish early, float32 and
 * float16/bfloat16 log-probs; the host decoder is fed the same values rounded to the narrow
 * type), every documented failure must come back as its status, and (under valgrind) every
 * handle the callback hands over is destroyed, on failure too. When a CUDA device is usable the
 * callback moves its tensor to cuda:0 (and between places from step to step) and the results
 * must still equal the host decoder's; otherwise that part says it was skipped. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#include "check.h"
#include "fixtures.h"

static const lodtensor_dtype_t F32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
static const lodtensor_dtype_t F16 = {LODTENSOR_DTYPE_CODE_FLOAT, 16, 1};
static const lodtensor_dtype_t BF16 = {LODTENSOR_DTYPE_CODE_BFLOAT, 16, 1};
static const lodtensor_dtype_t F64 = {LODTENSOR_DTYPE_CODE_FLOAT, 64, 1};
static const lodtensor_dtype_t I32 = {LODTENSOR_DTYPE_CODE_INT, 32, 1};

enum { VOCAB = 11, END = 1, START = 0, BEAM = 3, SOURCES = 4, MIN_LENGTH = 2, MAX_LENGTH = 7 };

/* What the tensor callback does at each step. */
enum misbehaviour {
    BEHAVE = 0,
    FAIL,           /* returns 42 at step fail_at, without a handle */
    FAIL_WITH_HANDLE, /* returns 43 at step fail_at, after storing a handle (which must not leak) */
    LEAVE_NULL,     /* returns 0 at step fail_at but leaves *out_log_probs NULL */
    EXTRA_COLUMN,   /* returns [P, V + 1] at step fail_at */
    FLAT,           /* returns [P * V] at step fail_at */
    HAND_PARENTS    /* stores the borrowed info->parent_idx_tensor at step fail_at (never freed) */
};

/* Where the callback puts its tensor: the host, cuda:0, or a different place each step. */
enum placement { ON_HOST, ON_CUDA0, ROTATE };

typedef struct {
    lodtensor_dtype_t dtype; /* the dtype of the returned log-probs */
    int placement;
    int misbehaviour;
    size_t fail_at;
    size_t calls;
    size_t devices; /* CUDA devices, for ROTATE */
} model_t;

/* The toy model: a log-prob for token v after prefix row r, from the prefix's last token, its
 * parent and the step (deterministic, no libm). end_id is attractive for some prefixes, so some
 * branches finish early while others run to max_length. */
static float model_value(const beam_search_step_info_t *info, size_t r, size_t v) {
    uint64_t h = (uint64_t)info->ids[r] * 2654435761u + (uint64_t)info->parent_idx[r] * 40503u + v * 9973u +
                 info->step * 131u + 7u;
    h ^= h >> 13;
    h = (h * 0x5bd1e995u) & 0xffffffffu;
    h ^= h >> 15;
    if (v == END && h % 4u == 0u) return -0.03f * (float)(h % 7u);
    return -(float)(h % 1000u) / 97.0f - 0.001f * (float)v;
}

/* The model's log-probs of this step as a new float32 host tensor, converted to `dtype` (round to
 * nearest even) when that is not float32. NULL after a failed check. */
static lodtensor_t *model_tensor(const beam_search_step_info_t *info, lodtensor_dtype_t dtype, size_t extra_cols,
                                 int flat) {
    size_t p = info->num_prefixes, w = info->vocab_size + extra_cols, r, v;
    int64_t dims[2];
    float *lp = (float *)malloc((p * w + 1) * sizeof(float));
    lodtensor_t *t = NULL, *c = NULL;
    int ok;
    if (lp == NULL) return NULL;
    for (r = 0; r < p; ++r) {
        for (v = 0; v < w; ++v) lp[r * w + v] = model_value(info, r, v);
    }
    dims[0] = (int64_t)p;
    dims[1] = (int64_t)w;
    if (flat) dims[0] = (int64_t)(p * w);
    ok = CHECK_OK(lodtensor_create(F32, dims, flat ? 1 : 2, lp, p * w * sizeof(float), LODTENSOR_LOD_OFFSETS, NULL, 0,
                                   NULL, 0, &t));
    free(lp);
    if (!ok) return NULL;
    if (dtype.code == F32.code && dtype.bits == F32.bits) return t;
    ok = CHECK_OK(lodtensor_cast(t, dtype, &c));
    lodtensor_destroy(t);
    return ok ? c : NULL;
}

/* The host decoder's step function: the same values, through the same rounding, as float32. */
static int32_t host_step(const beam_search_step_info_t *info, float *log_probs, void *user_data) {
    model_t *m = (model_t *)user_data;
    lodtensor_t *t = model_tensor(info, m->dtype, 0, 0), *back = NULL;
    m->calls++;
    if (t == NULL) return 3;
    if (!CHECK_OK(lodtensor_cast(t, F32, &back))) {
        lodtensor_destroy(t);
        return 4;
    }
    memcpy(log_probs, fx_data(back), info->num_prefixes * info->vocab_size * sizeof(float));
    lodtensor_destroy(back);
    lodtensor_destroy(t);
    return 0;
}

static lodtensor_place_t step_place(const model_t *m, size_t step) {
    switch (m->placement) {
    case ON_CUDA0: return fx_place(LODTENSOR_DEVICE_CUDA, 0);
    case ROTATE:
        /* host, cuda:0, cuda:1 (or cuda:0 again), ...: the decoder follows the tensor */
        if (step % 3 == 0) return fx_cpu();
        return fx_place(LODTENSOR_DEVICE_CUDA, (int32_t)(step % 3 == 2 && m->devices > 1 ? 1 : 0));
    default: return fx_cpu();
    }
}

/* parent_idx_tensor: NULL at step 0 and after a step on the host; after a step on a device, the
 * parents as int32 there, the values of parent_idx. */
static int parents_as_documented(const model_t *m, const beam_search_step_info_t *info) {
    const lodtensor_t *t = info->parent_idx_tensor;
    lodtensor_t *host = NULL;
    lodtensor_dtype_t dtype;
    lodtensor_place_t at;
    int ok;
    size_t i;
    if (info->step == 0 || step_place(m, info->step - 1).device_type == LODTENSOR_DEVICE_CPU) return t == NULL;
    if (t == NULL || lodtensor_dtype(t, &dtype) != LODTENSOR_OK || lodtensor_place(t, &at) != LODTENSOR_OK) return 0;
    if (dtype.code != I32.code || dtype.bits != 32 || at.device_type != LODTENSOR_DEVICE_CUDA) return 0;
    if (lodtensor_to_place(t, fx_cpu(), &host) != LODTENSOR_OK) return 0;
    ok = 1;
    for (i = 0; i < info->num_prefixes; ++i) {
        ok = ok && ((const int32_t *)fx_data(host))[i] == info->parent_idx[i];
    }
    lodtensor_destroy(host);
    return ok;
}

/* The tensor callback: a new handle with the model's log-probs on the model's place. */
static int32_t tensor_step(const beam_search_step_info_t *info, lodtensor_t **out_log_probs, void *user_data) {
    model_t *m = (model_t *)user_data;
    int misbehave = info->step == m->fail_at ? m->misbehaviour : BEHAVE;
    lodtensor_place_t place = step_place(m, info->step);
    lodtensor_t *t;
    m->calls++;
    if (*out_log_probs != NULL) return 5; /* documented: NULL on entry */
    if (info->source_offsets[info->num_sources] != info->num_prefixes || info->vocab_size != VOCAB) return 7;
    if (!parents_as_documented(m, info)) return 9;
    if (misbehave == FAIL) return 42;
    if (misbehave == LEAVE_NULL) return 0;
    if (misbehave == HAND_PARENTS) {
        *out_log_probs = (lodtensor_t *)info->parent_idx_tensor;
        return 0;
    }
    t = model_tensor(info, m->dtype, misbehave == EXTRA_COLUMN ? 1 : 0, misbehave == FLAT);
    if (t == NULL) return 6;
    if (place.device_type != LODTENSOR_DEVICE_CPU) {
        lodtensor_t *d = NULL;
        int32_t s = lodtensor_to_place(t, place, &d);
        lodtensor_destroy(t);
        if (s != LODTENSOR_OK) return 8;
        t = d;
    }
    *out_log_probs = t;
    return misbehave == FAIL_WITH_HANDLE ? 43 : 0;
}

static beam_search_decoder_t *make_decoder(size_t num_hypotheses, double length_penalty) {
    beam_search_decoder_options_t o;
    beam_search_decoder_t *d = NULL;
    CHECK_OK(beam_search_decoder_options_init(&o));
    o.vocab_size = VOCAB;
    o.beam_size = BEAM;
    o.num_hypotheses = num_hypotheses;
    o.start_id = START;
    o.end_id = END;
    o.min_length = MIN_LENGTH;
    o.max_length = MAX_LENGTH;
    o.length_penalty = length_penalty;
    if (!CHECK_OK(beam_search_decoder_create(&o, &d))) exit(1);
    return d;
}

/* Two host results are identical: dtype, dims, LoD and bytes. */
static int same(const lodtensor_t *got, const lodtensor_t *want) {
    lodtensor_place_t p;
    return CHECK_OK(lodtensor_place(got, &p)) && CHECK_EQ_INT(p.device_type, LODTENSOR_DEVICE_CPU) &&
           fx_same(got, want);
}

/* The host decoder's result is a sensible decoding: num_hypotheses sentences per source, scores
 * descending, no end_id before min_length tokens, end_id only last, and at least one sentence
 * that finished before max_length (so finished prefixes took part in the search). */
static void check_plausible(const lodtensor_t *ids, const lodtensor_t *scores, size_t hyps) {
    const size_t *per_source = NULL, *tokens = NULL;
    size_t n0 = 0, n1 = 0, s, h, i, early = 0;
    const int64_t *tok = (const int64_t *)fx_data(ids);
    const float *sc = (const float *)fx_data(scores);
    if (!CHECK_OK(lodtensor_lod_offsets(ids, 0, &per_source, &n0)) ||
        !CHECK_OK(lodtensor_lod_offsets(ids, 1, &tokens, &n1)) || !CHECK_EQ_SIZE(n0, SOURCES + 1))
        return;
    for (s = 0; s < SOURCES; ++s) {
        CHECK_EQ_SIZE(per_source[s + 1] - per_source[s], hyps);
        for (h = per_source[s]; h < per_source[s + 1]; ++h) {
            size_t a = tokens[h], b = tokens[h + 1];
            if (h + 1 < per_source[s + 1]) CHECK(sc[h] >= sc[h + 1]);
            CHECK(b > a && b - a <= MAX_LENGTH);
            for (i = a; i < b; ++i) CHECK(tok[i] >= 0 && tok[i] < VOCAB && (tok[i] != END || i == b - 1));
            if (tok[b - 1] == END) {
                CHECK(b - a > MIN_LENGTH);
                early += b - a < MAX_LENGTH;
            }
        }
    }
    CHECK(early > 0);
}

/* Decodes with both decoders and compares: `m` says what the tensor callback returns. */
static void compare(const beam_search_decoder_t *d, size_t hyps, model_t m, const char *what) {
    lodtensor_t *wi = NULL, *ws = NULL, *gi = NULL, *gs = NULL;
    model_t host = m;
    host.placement = ON_HOST;
    if (!CHECK_OK(beam_search_decoder_run(d, SOURCES, host_step, NULL, &host, &wi, &ws))) return;
    check_plausible(wi, ws, hyps);
    if (CHECK_OK(beam_search_decoder_run_tensors(d, SOURCES, tensor_step, &m, &gi, &gs))) {
        if (!(same(gi, wi) && same(gs, ws))) fprintf(stderr, "  (in: %s)\n", what);
        CHECK_EQ_SIZE(m.calls, host.calls);
        lodtensor_destroy(gi);
        lodtensor_destroy(gs);
    }
    lodtensor_destroy(wi);
    lodtensor_destroy(ws);
}

static model_t model(lodtensor_dtype_t dtype, int placement) {
    model_t m;
    memset(&m, 0, sizeof m);
    m.dtype = dtype;
    m.placement = placement;
    m.misbehaviour = BEHAVE;
    m.fail_at = SIZE_MAX;
    return m;
}

static void test_same_as_host_decoder(void) {
    beam_search_decoder_t *d3 = make_decoder(3, 0.0), *d1 = make_decoder(1, 0.7);
    compare(d3, 3, model(F32, ON_HOST), "float32 on the host");
    compare(d3, 3, model(F16, ON_HOST), "float16 on the host");
    compare(d3, 3, model(BF16, ON_HOST), "bfloat16 on the host");
    compare(d1, 1, model(F32, ON_HOST), "float32, one hypothesis, length penalty");
    compare(d1, 1, model(BF16, ON_HOST), "bfloat16, one hypothesis, length penalty");
    beam_search_decoder_destroy(d3);
    beam_search_decoder_destroy(d1);
}

/* Runs the tensor decoder with a misbehaving model: `status`, its message, the outputs untouched. */
static void expect_failure(const beam_search_decoder_t *d, model_t m, int32_t status, const char *message,
                           size_t calls) {
    lodtensor_t *ids = fx_sentinel(), *scores = fx_sentinel();
    CHECK_STATUS_MSG(beam_search_decoder_run_tensors(d, SOURCES, tensor_step, &m, &ids, &scores), status, message);
    CHECK(ids == fx_sentinel() && scores == fx_sentinel());
    CHECK_EQ_SIZE(m.calls, calls);
}

static model_t failing(lodtensor_dtype_t dtype, int placement, int misbehaviour, size_t at) {
    model_t m = model(dtype, placement);
    m.misbehaviour = misbehaviour;
    m.fail_at = at;
    return m;
}

static void test_failures(int placement) {
    beam_search_decoder_t *d = make_decoder(2, 0.0);
    lodtensor_t *ids = fx_sentinel(), *scores = fx_sentinel();
    model_t m = model(F32, placement);
    m.devices = 1;

    expect_failure(d, failing(F32, placement, FAIL, 2), LODTENSOR_CALLBACK_FAILED,
                   "step_fn: returned status 42 at step 2", 3);
    expect_failure(d, failing(F32, placement, FAIL_WITH_HANDLE, 0), LODTENSOR_CALLBACK_FAILED,
                   "step_fn: returned status 43 at step 0", 1);
    expect_failure(d, failing(BF16, placement, FAIL_WITH_HANDLE, 3), LODTENSOR_CALLBACK_FAILED,
                   "step_fn: returned status 43 at step 3", 4);
    expect_failure(d, failing(F32, placement, LEAVE_NULL, 1), LODTENSOR_INVALID_ARGUMENT,
                   "left out_log_probs NULL at step 1", 2);
    expect_failure(d, failing(F32, placement, EXTRA_COLUMN, 2), LODTENSOR_INVALID_ARGUMENT, "log_probs: has dims",
                   3);
    expect_failure(d, failing(F16, placement, FLAT, 0), LODTENSOR_INVALID_ARGUMENT, "log_probs: has dims", 1);
    expect_failure(d, failing(F64, placement, BEHAVE, SIZE_MAX), LODTENSOR_UNSUPPORTED, "log_probs: dtype", 1);
    expect_failure(d, failing(I32, placement, BEHAVE, SIZE_MAX), LODTENSOR_UNSUPPORTED, "log_probs: dtype", 1);

    CHECK_STATUS_MSG(beam_search_decoder_run_tensors(NULL, SOURCES, tensor_step, &m, &ids, &scores),
                     LODTENSOR_NULL_ARGUMENT, "decoder");
    CHECK_STATUS_MSG(beam_search_decoder_run_tensors(d, SOURCES, NULL, &m, &ids, &scores), LODTENSOR_NULL_ARGUMENT,
                     "step_fn");
    CHECK_STATUS_MSG(beam_search_decoder_run_tensors(d, SOURCES, tensor_step, &m, NULL, &scores),
                     LODTENSOR_NULL_ARGUMENT, "out_ids");
    CHECK_STATUS_MSG(beam_search_decoder_run_tensors(d, SOURCES, tensor_step, &m, &ids, NULL),
                     LODTENSOR_NULL_ARGUMENT, "out_scores");
    CHECK_STATUS_MSG(beam_search_decoder_run_tensors(d, 0, tensor_step, &m, &ids, &scores),
                     LODTENSOR_INVALID_ARGUMENT, "num_sources");
    CHECK_EQ_SIZE(m.calls, 0);
    CHECK(ids == fx_sentinel() && scores == fx_sentinel());
    beam_search_decoder_destroy(d);
}

static void test_on_cuda(void) {
    beam_search_decoder_t *d3 = make_decoder(3, 0.0), *d1 = make_decoder(1, 0.7);
    model_t rotate = model(F16, ROTATE);
    if (!fx_cuda_usable()) {
        printf("test_decoder_tensors: CUDA part skipped: no CUDA device\n");
        beam_search_decoder_destroy(d3);
        beam_search_decoder_destroy(d1);
        return;
    }
    CHECK_OK(lodtensor_cuda_device_count(&rotate.devices));
    compare(d3, 3, model(F32, ON_CUDA0), "float32 on cuda:0");
    compare(d3, 3, model(F16, ON_CUDA0), "float16 on cuda:0");
    compare(d3, 3, model(BF16, ON_CUDA0), "bfloat16 on cuda:0");
    compare(d1, 1, model(F32, ON_CUDA0), "float32 on cuda:0, one hypothesis, length penalty");
    compare(d3, 3, rotate, "float16, the place changing every step");
    rotate.dtype = F32;
    compare(d1, 1, rotate, "float32, the place changing every step, one hypothesis");
    test_failures(ON_CUDA0);
    {
        /* After a step on a device the parents are a device tensor, borrowed for the call. */
        beam_search_decoder_t *d = make_decoder(2, 0.0);
        expect_failure(d, failing(F32, ON_CUDA0, HAND_PARENTS, 1), LODTENSOR_INVALID_ARGUMENT,
                       "stored the borrowed info->parent_idx_tensor in out_log_probs at step 1", 2);
        beam_search_decoder_destroy(d);
    }
    beam_search_decoder_destroy(d3);
    beam_search_decoder_destroy(d1);
}

int main(void) {
    test_same_as_host_decoder();
    test_failures(ON_HOST);
    test_on_cuda();
    return CHECK_RETURN();
}
