package lodtensor

/*
#include <stdint.h>
#include <lodtensor.h>

// Defined in step.c.
extern lodtensor_status_t lodtensorgo_from_buffer(lodtensor_place_t place, lodtensor_dtype_t dtype,
                                                  const int64_t *dims, size_t ndim, uintptr_t data,
                                                  size_t data_len, int32_t lod_kind, const size_t *level_sizes,
                                                  size_t num_levels, const size_t *lod, size_t lod_len,
                                                  uintptr_t handle, lodtensor_t **out);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// FromBuffer is a tensor over nbytes bytes at address data on place, without copying them (zero
// copy): memory that is not Go's (cgo's rules forbid the library keeping a Go pointer), such as C
// memory on the host or a CUDA device's memory from other CUDA code. nbytes must be exactly the
// elements' size and data aligned to the element size; other arguments as in NewTensorBytes. The
// memory must stay valid until release runs: once, when the last handle over it (this tensor,
// its shares, slices and split pieces) is closed, on the goroutine or thread that closes it (for
// a CUDA place, after the work queued on the device has finished). release may be nil when the
// memory outlives every such handle. On error nothing is taken and release is never called.
//
// A CUDA device reads the memory in the order of its stream (CUDAStream): what other code writes
// there must be queued on that stream, or finished, first. A CUDA place whose device cannot use
// the memory (another device's, or host memory the driver does not know on a GPU that cannot read
// pageable memory) is an *Error with status InvalidArgument naming data.
//
// release must not panic: the library cannot pass a panic on to the caller of Close, so a panic
// in release ends the program, as a panic in a goroutine of its own does.
func FromBuffer(place Place, dtype DType, dims []int64, data uintptr, nbytes int, lod LoD, release func()) (*Tensor, error) {
	dataLen, sizes, values, err := dataArgs(nbytes, lod)
	if err != nil {
		return nil, err
	}
	var handle cgo.Handle
	if release != nil {
		handle = cgo.NewHandle(release)
	}
	var out *C.lodtensor_t
	err = call(func() C.lodtensor_status_t {
		return C.lodtensorgo_from_buffer(place.c(), dtype.c(), (*C.int64_t)(unsafe.Pointer(ptrOf(dims))),
			C.size_t(len(dims)), C.uintptr_t(data), dataLen, C.int32_t(lod.Kind), ptrOf(sizes),
			C.size_t(len(sizes)), ptrOf(values), C.size_t(len(values)), C.uintptr_t(handle), &out)
	})
	if err != nil {
		if release != nil {
			handle.Delete()
		}
		return nil, err
	}
	return newTensor(out), nil
}

//export lodtensorGoRelease
func lodtensorGoRelease(handle C.uintptr_t) {
	h := cgo.Handle(handle)
	release := h.Value().(func())
	h.Delete()
	defer func() {
		// Not through the library's frames: the panic goes on in a goroutine of its own.
		if r := recover(); r != nil {
			go panic(r)
		}
	}()
	release()
}

// Address is the address of t's first element: host memory for the CPU (View reads it), a device
// address for a CUDA place, for other CUDA code (not memory Go can read). It stays valid while any
// handle on the memory is open.
func (t *Tensor) Address() (uintptr, error) {
	var p unsafe.Pointer
	err := call(func() C.lodtensor_status_t { return C.lodtensor_data(t.c(), &p) })
	runtime.KeepAlive(t)
	return uintptr(p), err
}
