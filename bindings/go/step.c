// The C side of DynamicRNN: a step function with the exact C signature the library expects,
// forwarding to the Go function exported from rnn.go (cgo's export prototype has no const and
// takes the cgo.Handle as an integer, so it cannot be passed to the library directly).
#include <stdint.h>

#include <lodtensor.h>

#include "_cgo_export.h"

static int32_t lodtensorgo_step(size_t step, const lodtensor_t *input, const lodtensor_t *prev_state,
                                lodtensor_t **step_output, lodtensor_t **new_state, void *user_data) {
    return lodtensorGoStep(step, (lodtensor_t *)input, (lodtensor_t *)prev_state, step_output, new_state,
                           (uintptr_t)user_data);
}

lodtensor_status_t lodtensorgo_dynamic_rnn(const lodtensor_t *x, size_t level, const lodtensor_t *init_state,
                                           uintptr_t handle, lodtensor_t **out) {
    return tensor_array_dynamic_rnn(x, level, init_state, lodtensorgo_step, (void *)handle, out);
}

// The C side of Decoder.Run: the step and edit callbacks, forwarding to lodtensorGoBeamStep
// (which = 0 for the step function, 1 for the edit function).
static int32_t lodtensorgo_beam_step(const beam_search_step_info_t *info, float *log_probs, void *user_data) {
    return lodtensorGoBeamStep((beam_search_step_info_t *)info, log_probs, (uintptr_t)user_data, 0);
}

static int32_t lodtensorgo_beam_edit(const beam_search_step_info_t *info, float *log_probs, void *user_data) {
    return lodtensorGoBeamStep((beam_search_step_info_t *)info, log_probs, (uintptr_t)user_data, 1);
}

lodtensor_status_t lodtensorgo_decoder_run(const beam_search_decoder_t *decoder, size_t num_sources, int with_edit,
                                           uintptr_t handle, lodtensor_t **out_ids, lodtensor_t **out_scores) {
    return beam_search_decoder_run(decoder, num_sources, lodtensorgo_beam_step,
                                   with_edit ? lodtensorgo_beam_edit : NULL, (void *)handle, out_ids, out_scores);
}

// The C side of Decoder.RunTensors: the tensor step callback, forwarding to
// lodtensorGoBeamTensorStep.
static int32_t lodtensorgo_beam_tensor_step(const beam_search_step_info_t *info, lodtensor_t **out_log_probs,
                                            void *user_data) {
    return lodtensorGoBeamTensorStep((beam_search_step_info_t *)info, out_log_probs, (uintptr_t)user_data);
}

lodtensor_status_t lodtensorgo_decoder_run_tensors(const beam_search_decoder_t *decoder, size_t num_sources,
                                                   uintptr_t handle, lodtensor_t **out_ids, lodtensor_t **out_scores) {
    return beam_search_decoder_run_tensors(decoder, num_sources, lodtensorgo_beam_tensor_step, (void *)handle, out_ids,
                                           out_scores);
}
