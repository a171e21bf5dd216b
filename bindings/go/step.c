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
