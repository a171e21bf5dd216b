/* translate: n-best beam-search decoding of a toy "translation model" with the decoder API.
 *
 * The model is self-contained and seeded: a vocabulary of 300 made-up words (0 = <s>, 1 = </s>),
 * word embeddings, a GRU-like cell of 16 units and an output layer, all random. Each source
 * sentence is "encoded" as the tanh of its mean word embedding, which starts the decoder state,
 * and the end token gets more likely once the output is as long as the source. So the model says
 * nothing sensible, but it is a real recurrent model whose state must follow the beams.
 *
 * beam_search_decoder_run owns the search: each step it gives our callback the live prefixes
 * (their last token and the prefix of the previous step they extend, grouped by source); the
 * callback reorders its per-prefix states by parent_idx, runs the cell and writes the
 * log-probabilities of the next token. The library selects the beams (finished hypotheses keep
 * competing with their final score), stops when all have ended or at max_length, and returns the
 * n best sentences per source with their length-penalized scores. An optional second callback
 * edits the log-probabilities before selection; here it forbids a word twice in a row.
 *
 * The program then checks its results and exits non-zero if any check fails:
 *   - each source gets num_hypotheses sentences, scores sorted best first, every sentence ends
 *     with </s> or is max_length long, and no word follows itself (the edit callback bans that);
 *   - every score equals the model's own score of that sentence, recomputed by feeding the
 *     sentence through the model (so the states really followed parent_idx);
 *   - with beam 1 the decoder returns exactly what greedy decoding, written here, returns.
 *
 * Build and run: cmake -S examples-c -B build/examples && cmake --build build/examples &&
 * build/examples/translate */
#include <math.h> /* INFINITY only: the program does not need libm */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#define VOCAB 300
#define HIDDEN 16
#define START_ID 0
#define END_ID 1
#define NSRC 4
#define MAX_SRC 8

static const size_t src_len[NSRC] = {3, 7, 1, 5};

typedef struct {
    float emb[VOCAB][HIDDEN];
    float wz[HIDDEN][HIDDEN], uz[HIDDEN][HIDDEN];
    float wh[HIDDEN][HIDDEN], uh[HIDDEN][HIDDEN];
    float out[VOCAB][HIDDEN];
    float out_bias[VOCAB];
    int64_t src[NSRC][MAX_SRC];
    float h0[NSRC][HIDDEN]; /* the encoded sources */
} model_t;

/* ---- arithmetic without libm (the example links only lodtensor) ------------------------------ */

static float tanh_approx(float x) {
    float x2;
    if (x > 4.97f) return 1.0f;
    if (x < -4.97f) return -1.0f;
    x2 = x * x;
    return x * (135135.0f + x2 * (17325.0f + x2 * (378.0f + x2))) /
           (135135.0f + x2 * (62370.0f + x2 * (3150.0f + x2 * 28.0f)));
}

static float sigmoid_approx(float x) { return 0.5f * (1.0f + tanh_approx(0.5f * x)); }

/* e^x for x <= 0 (enough for a softmax after subtracting the maximum): 2^k * e^r. */
static float exp_neg(float x) {
    union {
        float f;
        uint32_t u;
    } scale;
    float k, r, p;
    if (x < -80.0f) return 0.0f;
    k = (float)(int)(x * 1.44269504f - 0.5f);
    r = x - k * 0.69314718f;
    p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r / 720)))));
    scale.u = (uint32_t)((int)k + 127) << 23;
    return p * scale.f;
}

/* ln x for x > 0: x = m 2^e with m in [0.75, 1.5), ln m = 2 atanh((m-1)/(m+1)). */
static float log_pos(float x) {
    union {
        float f;
        uint32_t u;
    } v;
    int e;
    float s, s2;
    v.f = x;
    e = (int)((v.u >> 23) & 0xff) - 127;
    v.u = (v.u & 0x007fffffu) | 0x3f800000u;
    if (v.f >= 1.5f) {
        v.f *= 0.5f;
        e += 1;
    }
    s = (v.f - 1.0f) / (v.f + 1.0f);
    s2 = s * s;
    return (float)e * 0.69314718f + 2.0f * s * (1.0f + s2 * (1.0f / 3 + s2 * (1.0f / 5 + s2 * (1.0f / 7 + s2 / 9))));
}

/* ---- the model --------------------------------------------------------------------------------- */

static uint64_t rng_state = 0x2545F4914F6CDD1DULL;
static float uniform(float scale) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return scale * ((float)(rng_state >> 40) / (float)(1u << 24) * 2.0f - 1.0f);
}

static void model_init(model_t *m) {
    size_t i, j, s;
    for (i = 0; i < VOCAB; ++i) {
        for (j = 0; j < HIDDEN; ++j) {
            m->emb[i][j] = uniform(1.0f);
            m->out[i][j] = uniform(1.2f);
        }
        m->out_bias[i] = uniform(0.5f);
    }
    for (i = 0; i < HIDDEN; ++i) {
        for (j = 0; j < HIDDEN; ++j) {
            m->wz[i][j] = uniform(0.4f);
            m->uz[i][j] = uniform(0.4f);
            m->wh[i][j] = uniform(0.6f);
            m->uh[i][j] = uniform(0.6f);
        }
    }
    for (s = 0; s < NSRC; ++s) {
        float mean[HIDDEN] = {0};
        for (i = 0; i < src_len[s]; ++i) {
            m->src[s][i] = 2 + (int64_t)(rng_state % (VOCAB - 2));
            uniform(1.0f);
            for (j = 0; j < HIDDEN; ++j) mean[j] += m->emb[m->src[s][i]][j] / (float)src_len[s];
        }
        for (j = 0; j < HIDDEN; ++j) m->h0[s][j] = tanh_approx(2.0f * mean[j]);
    }
}

/* h_new = (1 - z) h + z tanh(Wh x + Uh h), z = sigmoid(Wz x + Uz h), x = emb[token]. */
static void cell(const model_t *m, const float *h, int64_t token, float *h_new) {
    const float *x = m->emb[token];
    size_t i, j;
    for (i = 0; i < HIDDEN; ++i) {
        float az = 0, ah = 0, z;
        for (j = 0; j < HIDDEN; ++j) {
            az += m->wz[i][j] * x[j] + m->uz[i][j] * h[j];
            ah += m->wh[i][j] * x[j] + m->uh[i][j] * h[j];
        }
        z = sigmoid_approx(az);
        h_new[i] = (1.0f - z) * h[i] + z * tanh_approx(ah);
    }
}

/* The next-token log-probabilities after `length` output tokens for source s. */
static void next_log_probs(const model_t *m, const float *h, size_t s, size_t length, float *lp) {
    size_t v, j;
    float max = -1e30f, sum = 0, lse;
    for (v = 0; v < VOCAB; ++v) {
        float a = m->out_bias[v];
        for (j = 0; j < HIDDEN; ++j) a += m->out[v][j] * h[j];
        if (v == END_ID) a += 1.5f * ((float)length - (float)src_len[s]);
        if (v == START_ID) a -= 20.0f;
        lp[v] = a;
        if (a > max) max = a;
    }
    for (v = 0; v < VOCAB; ++v) sum += exp_neg(lp[v] - max);
    lse = max + log_pos(sum);
    for (v = 0; v < VOCAB; ++v) lp[v] -= lse;
}

/* ---- the decoder callback ------------------------------------------------------------------------ */

typedef struct {
    const model_t *model;
    float (*state)[HIDDEN]; /* one state per live prefix, after its last token */
    size_t *source;         /* the source of each live prefix */
    size_t rows;
} decode_ctx_t;

static int32_t model_step(const beam_search_step_info_t *info, float *log_probs, void *user_data) {
    decode_ctx_t *c = (decode_ctx_t *)user_data;
    size_t n = info->num_prefixes, i;
    float(*state)[HIDDEN] = malloc((n ? n : 1) * sizeof *state);
    size_t *source = malloc((n ? n : 1) * sizeof *source);
    if (state == NULL || source == NULL) {
        free(state);
        free(source);
        return 1;
    }
    for (i = 0; i < n; ++i) {
        size_t p = (size_t)info->parent_idx[i];
        /* Step 0: the parent is the source, whose state is the encoded source. */
        const float *prev = info->step == 0 ? c->model->h0[p] : c->state[p];
        source[i] = info->step == 0 ? p : c->source[p];
        cell(c->model, prev, info->ids[i], state[i]);
        next_log_probs(c->model, state[i], source[i], info->step, log_probs + i * VOCAB);
    }
    free(c->state);
    free(c->source);
    c->state = state;
    c->source = source;
    c->rows = n;
    return 0;
}

/* The optional edit callback: a decoding constraint on top of the model. Here: no word twice in a
 * row (its log-prob becomes -infinity; the end token is exempt). */
static int32_t no_repeats(const beam_search_step_info_t *info, float *log_probs, void *user_data) {
    size_t r;
    (void)user_data;
    for (r = 0; r < info->num_prefixes; ++r) {
        int64_t last = info->ids[r];
        if (last != START_ID && last != END_ID) log_probs[r * info->vocab_size + (size_t)last] = -INFINITY;
    }
    return 0;
}

/* ---- words ---------------------------------------------------------------------------------------- */

static void word(int64_t id, char *buf) {
    static const char *syll[12] = {"ka", "ri", "mo", "su", "ne", "ta", "lu", "vi", "po", "ze", "ga", "do"};
    if (id == START_ID) {
        strcpy(buf, "<s>");
    } else if (id == END_ID) {
        strcpy(buf, "</s>");
    } else {
        strcpy(buf, syll[id % 12]);
        strcat(buf, syll[(id / 12) % 12]);
        if (id >= 144) strcat(buf, syll[(id / 144) % 12]);
    }
}

/* ---- checks ------------------------------------------------------------------------------------ */

static int failures = 0;
#define EXPECT(cond, ...)                                 \
    do {                                                  \
        if (!(cond)) {                                    \
            fprintf(stderr, "translate: check failed: "); \
            fprintf(stderr, __VA_ARGS__);                 \
            fprintf(stderr, "\n");                        \
            ++failures;                                   \
        }                                                 \
    } while (0)

/* The model's score of a sentence (teacher forcing), with the decoder's length penalty. */
static float rescore(const model_t *m, size_t s, const int64_t *tok, size_t n, double penalty) {
    float h[HIDDEN], h2[HIDDEN], lp[VOCAB], score = 0.0f;
    size_t t;
    int64_t prev = START_ID;
    memcpy(h, m->h0[s], sizeof h);
    for (t = 0; t < n; ++t) {
        cell(m, h, prev, h2);
        memcpy(h, h2, sizeof h);
        next_log_probs(m, h, s, t, lp);
        score += lp[tok[t]];
        prev = tok[t];
    }
    if (penalty != 0.0) {
        /* ((5 + n) / 6)^penalty for the penalty used below (0.5): a square root by Newton. */
        double base = (5.0 + (double)n) / 6.0, r = base;
        int i;
        for (i = 0; i < 30; ++i) r = 0.5 * (r + base / r);
        score = (float)((double)score / r);
    }
    return score;
}

/* Runs the decoder; returns 0 and the results, or the status. */
static int32_t decode(const model_t *m, size_t beam, size_t nbest, size_t max_length, double penalty,
                      beam_search_step_fn edit, lodtensor_t **ids, lodtensor_t **scores) {
    beam_search_decoder_options_t o;
    beam_search_decoder_t *dec = NULL;
    decode_ctx_t ctx = {m, NULL, NULL, 0};
    int32_t status = beam_search_decoder_options_init(&o);
    if (status != LODTENSOR_OK) return status;
    o.beam_size = beam;
    o.vocab_size = VOCAB;
    o.start_id = START_ID;
    o.end_id = END_ID;
    o.max_length = max_length;
    o.length_penalty = penalty;
    o.num_hypotheses = nbest;
    status = beam_search_decoder_create(&o, &dec);
    if (status != LODTENSOR_OK) return status;
    status = beam_search_decoder_run(dec, NSRC, model_step, edit, &ctx, ids, scores);
    free(ctx.state);
    free(ctx.source);
    beam_search_decoder_destroy(dec);
    return status;
}

/* Reads the results: the token offsets of hypothesis k and its score. */
typedef struct {
    const int64_t *tok;
    const float *score;
    const size_t *hyp; /* borrowed from the ids tensor */
    const size_t *off;
} result_t;

static int read_result(const lodtensor_t *ids, const lodtensor_t *scores, result_t *r) {
    const void *a = NULL, *b = NULL;
    size_t n0 = 0, n1 = 0;
    if (lodtensor_data(ids, &a) || lodtensor_data(scores, &b) ||
        lodtensor_lod_offsets(ids, 0, &r->hyp, &n0) || lodtensor_lod_offsets(ids, 1, &r->off, &n1) ||
        n0 != NSRC + 1 || n1 != r->hyp[NSRC] + 1) {
        fprintf(stderr, "translate: cannot read the results: %s\n", lodtensor_last_error_message());
        return 0;
    }
    r->tok = (const int64_t *)a;
    r->score = (const float *)b;
    return 1;
}

int main(void) {
    static model_t m;
    const size_t beam = 5, nbest = 3, max_length = 2 * MAX_SRC + 4;
    const double penalty = 0.5;
    lodtensor_t *ids = NULL, *scores = NULL;
    result_t r;
    size_t s, k, t;
    char w[16];
    int32_t status;

    model_init(&m);
    status = decode(&m, beam, nbest, max_length, penalty, no_repeats, &ids, &scores);
    if (status != LODTENSOR_OK) {
        fprintf(stderr, "translate: decoding failed: %s\n", lodtensor_last_error_message());
        return 1;
    }
    if (!read_result(ids, scores, &r)) return 1;
    for (s = 0; s < NSRC; ++s) {
        printf("source %zu:", s);
        for (t = 0; t < src_len[s]; ++t) {
            word(m.src[s][t], w);
            printf(" %s", w);
        }
        printf("\n");
        EXPECT(r.hyp[s + 1] - r.hyp[s] == nbest, "source %zu has %zu hypotheses", s, r.hyp[s + 1] - r.hyp[s]);
        for (k = r.hyp[s]; k < r.hyp[s + 1]; ++k) {
            const int64_t *tok = r.tok + r.off[k];
            size_t n = r.off[k + 1] - r.off[k];
            float again = rescore(&m, s, tok, n, penalty), diff = again - r.score[k];
            printf("  %8.4f ", r.score[k]);
            for (t = 0; t < n; ++t) {
                word(tok[t], w);
                printf(" %s", w);
            }
            printf("\n");
            EXPECT(k == r.hyp[s] || r.score[k] <= r.score[k - 1], "source %zu: scores not sorted", s);
            EXPECT(n == max_length || (n > 0 && tok[n - 1] == END_ID), "source %zu: hypothesis %zu is cut", s, k);
            EXPECT(diff < 1e-3f && diff > -1e-3f, "source %zu: score %f, the model says %f", s, r.score[k], again);
            for (t = 1; t < n; ++t) EXPECT(tok[t] != tok[t - 1], "source %zu: a word repeats despite the constraint", s);
        }
    }
    lodtensor_destroy(ids);
    lodtensor_destroy(scores);

    /* Beam 1 is greedy decoding. */
    status = decode(&m, 1, 1, max_length, 0.0, NULL, &ids, &scores);
    if (status != LODTENSOR_OK || !read_result(ids, scores, &r)) {
        fprintf(stderr, "translate: greedy decoding failed: %s\n", lodtensor_last_error_message());
        lodtensor_destroy(ids);
        lodtensor_destroy(scores);
        return 1;
    }
    for (s = 0; s < NSRC; ++s) {
        float h[HIDDEN], h2[HIDDEN], lp[VOCAB], score = 0.0f;
        int64_t tok[2 * MAX_SRC + 4], prev = START_ID;
        size_t n = 0, v;
        memcpy(h, m.h0[s], sizeof h);
        while (n < max_length && (n == 0 || tok[n - 1] != END_ID)) {
            size_t best = 0;
            cell(&m, h, prev, h2);
            memcpy(h, h2, sizeof h);
            next_log_probs(&m, h, s, n, lp);
            for (v = 1; v < VOCAB; ++v)
                if (lp[v] > lp[best]) best = v;
            score += lp[best];
            tok[n++] = (int64_t)best;
            prev = (int64_t)best;
        }
        EXPECT(r.hyp[s + 1] - r.hyp[s] == 1, "greedy: source %zu has %zu hypotheses", s, r.hyp[s + 1] - r.hyp[s]);
        EXPECT(r.off[r.hyp[s] + 1] - r.off[r.hyp[s]] == n && memcmp(r.tok + r.off[r.hyp[s]], tok, n * sizeof *tok) == 0,
               "greedy: source %zu: beam 1 differs from greedy decoding", s);
        EXPECT(r.score[r.hyp[s]] == score, "greedy: source %zu: score %f, greedy %f", s, r.score[r.hyp[s]], score);
    }
    printf("beam 1 == greedy for all %d sources\n", NSRC);
    lodtensor_destroy(ids);
    lodtensor_destroy(scores);
    if (failures) fprintf(stderr, "translate: %d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
