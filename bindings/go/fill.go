package lodtensor

/*
#include <lodtensor.h>
*/
import "C"

import "unsafe"

// FillOn is Fill directly on place: on a CUDA device the elements are written there, without a
// host tensor and a copy.
func FillOn(place Place, dtype DType, dims []int64, value float64) (*Tensor, error) {
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_fill_on(place.c(), dtype.c(), (*C.int64_t)(unsafe.Pointer(ptrOf(dims))), C.size_t(len(dims)),
			C.double(value), out)
	})
}
