// The C side of the binding's callbacks, each with the exact C signature the library expects and
// forwarding to a Go function exported from the binding (cgo's export prototype has no const and
// takes the cgo.Handle as an integer, so it cannot be passed to the library directly). First
// DynamicRNN's step function (rnn.go).
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

// The C side of FromBuffer: the release function, forwarding to lodtensorGoRelease, and the call
// taking the buffer's address as an integer (a device address is no Go pointer). Handle 0 is no
// release function.
static void lodtensorgo_release(void *data, void *user_data) {
    (void)data;
    lodtensorGoRelease((uintptr_t)user_data);
}

lodtensor_status_t lodtensorgo_from_buffer(lodtensor_place_t place, lodtensor_dtype_t dtype, const int64_t *dims,
                                           size_t ndim, uintptr_t data, size_t data_len, int32_t lod_kind,
                                           const size_t *level_sizes, size_t num_levels, const size_t *lod,
                                           size_t lod_len, uintptr_t handle, lodtensor_t **out) {
    return lodtensor_from_buffer(place, dtype, dims, ndim, (void *)data, data_len, lod_kind, level_sizes, num_levels,
                                 lod, lod_len, handle != 0 ? lodtensorgo_release : NULL, (void *)handle, out);
}
