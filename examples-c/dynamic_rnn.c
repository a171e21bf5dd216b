/* dynamic_rnn: an Elman RNN over a batch of variable-length sequences, the way PaddlePaddle's
 * TensorArray design runs it, written against the C API.
 *
 * The batch: 6 sequences of 4, 0, 7, 1, 3 and 5 time steps (one empty), each step a vector of
 * D = 3 floats, stored as one float32 [20, 3] tensor with the LoD lengths [[4, 0, 7, 1, 3, 5]].
 * The cell: h_t = tanh(Wx x_t + Wh h_(t-1) + b), hidden size H = 4, output y_t = h_t, h_0 = 0.
 *
 * tensor_array_dynamic_rnn does the bookkeeping: it ranks the sequences by length, unpacks the
 * batch into time steps (step t holds the t-th row of every sequence still running, longest
 * first), calls our step function with that step and the state shrunk to the live sequences,
 * and packs the step outputs back into one [20, 4] tensor in the original order with the input's
 * LoD. The program then runs the same cell sequence by sequence in a plain loop and exits
 * non-zero if the two disagree.
 *
 * Build and run: cmake -S examples-c -B build/examples && cmake --build build/examples &&
 * build/examples/dynamic_rnn */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lodtensor.h>

#define D 3
#define H 4
#define NSEQ 6

static const size_t seq_lengths[NSEQ] = {4, 0, 7, 1, 3, 5};

/* The cell's parameters. */
typedef struct {
    float wx[H][D];
    float wh[H][H];
    float b[H];
} elman_t;

/* tanh without libm: a rational approximation, exact enough for an example and identical in both
 * runs (the check compares the driver with a plain loop using this same function). */
static float tanh_approx(float x) {
    float x2;
    if (x > 4.97f) return 1.0f;
    if (x < -4.97f) return -1.0f;
    x2 = x * x;
    return x * (135135.0f + x2 * (17325.0f + x2 * (378.0f + x2))) /
           (135135.0f + x2 * (62370.0f + x2 * (3150.0f + x2 * 28.0f)));
}

/* One time step of one sequence: h_new = tanh(Wx x + Wh h + b). */
static void cell(const elman_t *p, const float *x, const float *h, float *h_new) {
    int i, j;
    for (i = 0; i < H; ++i) {
        float acc = p->b[i];
        for (j = 0; j < D; ++j) acc += p->wx[i][j] * x[j];
        for (j = 0; j < H; ++j) acc += p->wh[i][j] * h[j];
        h_new[i] = tanh_approx(acc);
    }
}

/* The step function the driver calls: step_input is [n, D] (one row per live sequence, longest
 * first), prev_state is [n, H]. We return one new [n, H] tensor as both the step output and the
 * new state (the driver takes ownership and destroys it once). */
static int32_t elman_step(size_t step, const lodtensor_t *step_input, const lodtensor_t *prev_state,
                          lodtensor_t **step_output, lodtensor_t **new_state, void *user_data) {
    const elman_t *p = (const elman_t *)user_data;
    const lodtensor_dtype_t f32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
    const void *x = NULL, *h = NULL;
    int64_t dims[LODTENSOR_MAX_DIMS];
    size_t ndim = 0, n, r;
    float *out;
    int32_t status;
    (void)step;
    if (lodtensor_dims(step_input, dims, LODTENSOR_MAX_DIMS, &ndim) != LODTENSOR_OK ||
        lodtensor_data(step_input, &x) != LODTENSOR_OK || lodtensor_data(prev_state, &h) != LODTENSOR_OK) {
        return 1;
    }
    n = (size_t)dims[0];
    out = (float *)malloc(n * H * sizeof(float) + 1);
    if (out == NULL) return 2;
    for (r = 0; r < n; ++r) cell(p, (const float *)x + r * D, (const float *)h + r * H, out + r * H);
    dims[1] = H;
    status = lodtensor_create(f32, dims, 2, out, n * H * sizeof(float), LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0,
                              step_output);
    free(out);
    if (status != LODTENSOR_OK) return status;
    *new_state = *step_output;
    return 0;
}

int main(void) {
    const lodtensor_dtype_t f32 = {LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
    elman_t params;
    float x[20][D], h0[NSEQ][H], expected[20][H];
    size_t level_sizes[1] = {NSEQ}, rows = 0, s, t, i, j, ndim = 0;
    int64_t dims[2];
    lodtensor_t *input = NULL, *init = NULL, *output = NULL;
    const void *got = NULL;
    const size_t *offsets = NULL;
    size_t offsets_len = 0;
    int64_t out_dims[LODTENSOR_MAX_DIMS];
    int exit_code = 1;

    for (i = 0; i < H; ++i) {
        for (j = 0; j < D; ++j) params.wx[i][j] = 0.1f * (float)((int)(i * 3 + j * 7) % 11 - 5);
        for (j = 0; j < H; ++j) params.wh[i][j] = 0.05f * (float)((int)(i * 5 + j * 3) % 9 - 4);
        params.b[i] = 0.01f * (float)i;
    }
    for (s = 0; s < NSEQ; ++s) rows += seq_lengths[s];
    for (i = 0; i < rows; ++i) {
        for (j = 0; j < D; ++j) x[i][j] = (float)((int)(i * 13 + j * 5) % 17 - 8) / 8.0f;
    }
    memset(h0, 0, sizeof h0);

    dims[0] = (int64_t)rows;
    dims[1] = D;
    if (lodtensor_create(f32, dims, 2, x, rows * D * sizeof(float), LODTENSOR_LOD_LENGTHS, level_sizes, 1,
                         seq_lengths, NSEQ, &input) != LODTENSOR_OK) {
        fprintf(stderr, "create input: %s\n", lodtensor_last_error_message());
        goto done;
    }
    dims[0] = NSEQ;
    dims[1] = H;
    if (lodtensor_create(f32, dims, 2, h0, sizeof h0, LODTENSOR_LOD_OFFSETS, NULL, 0, NULL, 0, &init) !=
        LODTENSOR_OK) {
        fprintf(stderr, "create init: %s\n", lodtensor_last_error_message());
        goto done;
    }

    /* The whole RNN in one call. */
    if (tensor_array_dynamic_rnn(input, 0, init, elman_step, &params, &output) != LODTENSOR_OK) {
        fprintf(stderr, "tensor_array_dynamic_rnn: %s\n", lodtensor_last_error_message());
        goto done;
    }

    /* The reference: each sequence on its own, step by step. */
    {
        size_t row = 0;
        for (s = 0; s < NSEQ; ++s) {
            float h[H];
            memcpy(h, h0[s], sizeof h);
            for (t = 0; t < seq_lengths[s]; ++t, ++row) {
                cell(&params, x[row], h, expected[row]);
                memcpy(h, expected[row], sizeof h);
            }
        }
    }

    if (lodtensor_dims(output, out_dims, LODTENSOR_MAX_DIMS, &ndim) != LODTENSOR_OK || ndim != 2 ||
        out_dims[0] != (int64_t)rows || out_dims[1] != H || lodtensor_data(output, &got) != LODTENSOR_OK ||
        lodtensor_lod_offsets(output, 0, &offsets, &offsets_len) != LODTENSOR_OK || offsets_len != NSEQ + 1) {
        fprintf(stderr, "the output has the wrong shape or LoD\n");
        goto done;
    }
    {
        size_t at = 0;
        for (s = 0; s < NSEQ; ++s) {
            if (offsets[s] != at) {
                fprintf(stderr, "output LoD offset %zu is %zu, expected %zu\n", s, offsets[s], at);
                goto done;
            }
            at += seq_lengths[s];
        }
    }
    for (i = 0; i < rows; ++i) {
        for (j = 0; j < H; ++j) {
            float a = ((const float *)got)[i * H + j], b = expected[i][j];
            if (a != b) {
                fprintf(stderr, "mismatch at row %zu, unit %zu: driver %g, plain loop %g\n", i, j, (double)a,
                        (double)b);
                goto done;
            }
        }
    }
    printf("dynamic_rnn: %zu sequences, %zu rows, hidden size %d: driver and plain loop agree\n", (size_t)NSEQ,
           rows, H);
    printf("last step of sequence 2: [%.4f, %.4f, %.4f, %.4f]\n", (double)expected[10][0],
           (double)expected[10][1], (double)expected[10][2], (double)expected[10][3]);
    exit_code = 0;
done:
    lodtensor_destroy(output);
    lodtensor_destroy(init);
    lodtensor_destroy(input);
    return exit_code;
}
