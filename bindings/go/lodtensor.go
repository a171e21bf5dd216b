// Package lodtensor is the Go binding of lodtensor, tensors of variable-length sequences
// (PaddlePaddle's LoDTensor design), over its C library (liblodtensor, found with pkg-config).
//
// Ownership: every *Tensor, *TensorArray and *RankTable owns one C handle and must be closed with
// Close (idempotent; a finalizer closes forgotten ones, but only as a safety net: memory held by C
// is invisible to the Go garbage collector). Using a closed value gives an *Error with status
// NullArgument, never a crash.
//
// Errors: a failed call returns an *Error with the library's status and message. Each call locks
// its goroutine to the OS thread across the C call and the read of the message, which the library
// keeps per thread. An int that the C argument's type cannot hold (a negative size, count, index
// or level; a CUDA device beyond int32) is an *Error with status InvalidArgument naming the
// argument, not converted: it would wrap into another value, which the library might accept.
//
// Data: slices passed in are copied (NewTensor); Data copies out. View returns a zero-copy slice
// over the library's memory, valid only while the tensor (or another handle sharing its memory)
// is open and its memory is not written through another handle.
//
// Threads: as in the C API, any number of goroutines may read one value at once; a call that
// changes it (SetLoD, ClearLoD, MutableView writes, Close) needs exclusive access.
package lodtensor

/*
#cgo pkg-config: lodtensor
#include <stdlib.h>
#include <lodtensor.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Status is a lodtensor_status_t.
type Status int32

// The status codes of the C API.
const (
	OK              Status = C.LODTENSOR_OK
	NullArgument    Status = C.LODTENSOR_NULL_ARGUMENT
	InvalidArgument Status = C.LODTENSOR_INVALID_ARGUMENT
	InvalidLoD      Status = C.LODTENSOR_INVALID_LOD
	OutOfRange      Status = C.LODTENSOR_OUT_OF_RANGE
	BufferTooSmall  Status = C.LODTENSOR_BUFFER_TOO_SMALL
	Unsupported     Status = C.LODTENSOR_UNSUPPORTED
	OutOfMemory     Status = C.LODTENSOR_OUT_OF_MEMORY
	Internal        Status = C.LODTENSOR_INTERNAL
	CallbackFailed  Status = C.LODTENSOR_CALLBACK_FAILED
)

// String is the library's static name of the status.
func (s Status) String() string { return C.GoString(C.lodtensor_status_str(C.int32_t(s))) }

// Error is a failed call: its status and the library's message (which argument broke which rule).
// For CallbackFailed caused by a Go step function's error, Err holds that error (see Unwrap).
type Error struct {
	Status  Status
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("lodtensor: %s: %s: %v", e.Status, e.Message, e.Err)
	}
	return fmt.Sprintf("lodtensor: %s: %s", e.Status, e.Message)
}

// Unwrap gives the step function's error behind a CallbackFailed error, if any.
func (e *Error) Unwrap() error { return e.Err }

// call runs one C call with the goroutine locked to its thread, so that the thread-local error
// message read afterwards belongs to this call.
func call(f func() C.lodtensor_status_t) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if s := f(); s != C.LODTENSOR_OK {
		return lastError(s)
	}
	return nil
}

// lastError builds an *Error; the caller holds the OS thread.
func lastError(s C.lodtensor_status_t) *Error {
	return &Error{Status: Status(s), Message: C.GoString(C.lodtensor_last_error_message())}
}

// cArgs converts the Go ints of one call to the C integer types of its arguments. A value the C
// type cannot hold is refused rather than wrapped, since the library would act on another value
// (a negative size as SIZE_MAX, device 1<<32 as device 0): err keeps the first one refused, for
// the caller to return instead of making the call.
type cArgs struct{ err error }

// size is v as a size_t: a size, a count, an index or a level.
func (a *cArgs) size(name string, v int) C.size_t { return cInt[C.size_t](a, name, v) }

// int32 is v as an int32_t: a CUDA device.
func (a *cArgs) int32(name string, v int) C.int32_t { return cInt[C.int32_t](a, name, v) }

// The C types of cInt's constraint: cgo does not rewrite C names in a type parameter list.
type (
	cSize  = C.size_t
	cInt32 = C.int32_t
)

func cInt[T cSize | cInt32](a *cArgs, name string, v int) T {
	c := T(v)
	// A negative int converted to size_t and back is itself again: the signs tell.
	if a.err == nil && (int(c) != v || (c < 0) != (v < 0)) {
		rule := "is negative"
		if _, ok := any(c).(C.int32_t); ok {
			rule = "is out of the range of int32_t"
		}
		a.err = &Error{Status: InvalidArgument, Message: fmt.Sprintf("%s: %d %s", name, v, rule)}
	}
	return c
}

// Version is the library's version, "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.lodtensor_version()) }

// SetNumThreads sizes the library's own thread pool (0: the default).
func SetNumThreads(n int) error {
	var args cArgs
	num := args.size("num_threads", n)
	if args.err != nil {
		return args.err
	}
	return call(func() C.lodtensor_status_t { return C.lodtensor_set_num_threads(num) })
}

// NumThreads is the size of the library's thread pool.
func NumThreads() (int, error) {
	var n C.size_t
	err := call(func() C.lodtensor_status_t { return C.lodtensor_num_threads(&n) })
	return int(n), err
}

// SetHostCacheLimit bounds the freed host memory the library keeps for reuse (bytes; 0 keeps
// nothing and frees what is kept).
func SetHostCacheLimit(bytes int) error {
	var args cArgs
	limit := args.size("bytes", bytes)
	if args.err != nil {
		return args.err
	}
	return call(func() C.lodtensor_status_t { return C.lodtensor_set_host_cache_limit(limit) })
}

// HostCacheInfo is the freed host memory kept for reuse now and the bound on it, in bytes.
func HostCacheInfo() (kept, limit int, err error) {
	var k, l C.size_t
	err = call(func() C.lodtensor_status_t { return C.lodtensor_host_cache_info(&k, &l) })
	return int(k), int(l), err
}

// SelftestPanic makes the library panic on purpose; it returns an *Error with status Internal.
func SelftestPanic() error {
	return call(func() C.lodtensor_status_t { return C.lodtensor_selftest_panic() })
}

// DType is an element type in DLPack form.
type DType struct {
	Code  uint8
	Bits  uint8
	Lanes uint16
}

// The dtypes of the Go element types.
var (
	Bool    = DType{C.LODTENSOR_DTYPE_CODE_BOOL, 8, 1}
	Uint8   = DType{C.LODTENSOR_DTYPE_CODE_UINT, 8, 1}
	Int8    = DType{C.LODTENSOR_DTYPE_CODE_INT, 8, 1}
	Int16   = DType{C.LODTENSOR_DTYPE_CODE_INT, 16, 1}
	Int32   = DType{C.LODTENSOR_DTYPE_CODE_INT, 32, 1}
	Int64   = DType{C.LODTENSOR_DTYPE_CODE_INT, 64, 1}
	Float32 = DType{C.LODTENSOR_DTYPE_CODE_FLOAT, 32, 1}
	Float64 = DType{C.LODTENSOR_DTYPE_CODE_FLOAT, 64, 1}
)

// Element is a Go type with a lodtensor dtype (bool is one byte, 0 or 1, in both).
type Element interface {
	bool | uint8 | int8 | int16 | int32 | int64 | float32 | float64
}

// DTypeOf is the dtype of T.
func DTypeOf[T Element]() DType {
	var zero T
	switch any(zero).(type) {
	case bool:
		return Bool
	case uint8:
		return Uint8
	case int8:
		return Int8
	case int16:
		return Int16
	case int32:
		return Int32
	case int64:
		return Int64
	case float32:
		return Float32
	default:
		return Float64
	}
}

func (d DType) c() C.lodtensor_dtype_t {
	return C.lodtensor_dtype_t{code: C.uint8_t(d.Code), bits: C.uint8_t(d.Bits), lanes: C.uint16_t(d.Lanes)}
}

// Place is where a tensor's elements live: DeviceType 1 = CPU, 2 = CUDA (DeviceID the GPU).
type Place struct {
	DeviceType int32
	DeviceID   int32
}

// LoD kinds.
const (
	LoDOffsets int32 = C.LODTENSOR_LOD_OFFSETS
	LoDLengths int32 = C.LODTENSOR_LOD_LENGTHS
)

// LoD is a LoD to give to NewTensor or SetLoD: its levels, top first, as offsets or lengths.
// The zero value is "no LoD".
type LoD struct {
	Kind   int32
	Levels [][]int
}

// Lengths is a LoD given as sequence lengths per level.
func Lengths(levels ...[]int) LoD { return LoD{Kind: LoDLengths, Levels: levels} }

// Offsets is a LoD given as offsets per level (each level starts at 0).
func Offsets(levels ...[]int) LoD { return LoD{Kind: LoDOffsets, Levels: levels} }

// dataArgs are the C arguments of a tensor's data length and LoD, the first refused value (see
// cArgs) as the error.
func dataArgs(nbytes int, lod LoD) (dataLen C.size_t, sizes, values []C.size_t, err error) {
	var args cArgs
	if dataLen = args.size("data_len", nbytes); args.err != nil {
		return 0, nil, nil, args.err
	}
	sizes, values, err = lod.flat()
	return dataLen, sizes, values, err
}

// flat is the C encoding of a LoD: level sizes and all values, in Go memory holding no Go
// pointers (so it may be passed to C).
func (l LoD) flat() (sizes, values []C.size_t, err error) {
	var args cArgs
	for i, level := range l.Levels {
		sizes = append(sizes, C.size_t(len(level)))
		name := fmt.Sprintf("LoD level %d", i)
		for _, v := range level {
			values = append(values, args.size(name, v))
		}
	}
	return sizes, values, args.err
}

func ptrOf[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// Tensor is a tensor with a LoD, owning one C handle.
type Tensor struct {
	h        *C.lodtensor_t
	borrowed bool // lent to a step function: never destroyed by Go
}

func newTensor(h *C.lodtensor_t) *Tensor {
	t := &Tensor{h: h}
	runtime.SetFinalizer(t, (*Tensor).Close)
	return t
}

// c is the C handle; NULL for a nil or closed tensor (the library then reports NullArgument).
func (t *Tensor) c() *C.lodtensor_t {
	if t == nil {
		return nil
	}
	return t.h
}

// Close destroys the handle (the memory goes when its last handle goes). Calling it again, or on
// a tensor lent to a step function, does nothing. It always returns nil.
func (t *Tensor) Close() error {
	if t == nil || t.h == nil || t.borrowed {
		return nil
	}
	C.lodtensor_destroy(t.h)
	t.h = nil
	runtime.SetFinalizer(t, nil)
	return nil
}

// take hands the C handle over to the library (a step function's result): t is empty afterwards.
func (t *Tensor) take() *C.lodtensor_t {
	if t == nil {
		return nil
	}
	h := t.h
	if !t.borrowed {
		t.h = nil
		runtime.SetFinalizer(t, nil)
	}
	return h
}

// NewTensor creates a host tensor holding a copy of data, with shape dims and a LoD (LoD{} for
// none).
func NewTensor[T Element](data []T, dims []int64, lod LoD) (*Tensor, error) {
	return NewTensorBytes(DTypeOf[T](), dims, unsafe.Pointer(ptrOf(data)), len(data)*int(unsafe.Sizeof(*new(T))), lod)
}

// NewTensorBytes creates a host tensor of any dtype from nbytes bytes at data (copied).
func NewTensorBytes(dtype DType, dims []int64, data unsafe.Pointer, nbytes int, lod LoD) (*Tensor, error) {
	dataLen, sizes, values, err := dataArgs(nbytes, lod)
	if err != nil {
		return nil, err
	}
	var out *C.lodtensor_t
	err = call(func() C.lodtensor_status_t {
		return C.lodtensor_create(dtype.c(), (*C.int64_t)(unsafe.Pointer(ptrOf(dims))), C.size_t(len(dims)), data,
			dataLen, C.int32_t(lod.Kind), ptrOf(sizes), C.size_t(len(sizes)), ptrOf(values),
			C.size_t(len(values)), &out)
	})
	if err != nil {
		return nil, err
	}
	return newTensor(out), nil
}

// handleOp runs a C call that produces one new tensor handle.
func handleOp(f func(out **C.lodtensor_t) C.lodtensor_status_t) (*Tensor, error) {
	var out *C.lodtensor_t
	if err := call(func() C.lodtensor_status_t { return f(&out) }); err != nil {
		return nil, err
	}
	return newTensor(out), nil
}

func (t *Tensor) size(f func(*C.lodtensor_t, *C.size_t) C.lodtensor_status_t) (int, error) {
	var n C.size_t
	err := call(func() C.lodtensor_status_t { return f(t.c(), &n) })
	runtime.KeepAlive(t)
	return int(n), err
}

// DType is the element type.
func (t *Tensor) DType() (DType, error) {
	var d C.lodtensor_dtype_t
	err := call(func() C.lodtensor_status_t { return C.lodtensor_dtype(t.c(), &d) })
	runtime.KeepAlive(t)
	return DType{uint8(d.code), uint8(d.bits), uint16(d.lanes)}, err
}

// Place is where the elements live.
func (t *Tensor) Place() (Place, error) {
	var p C.lodtensor_place_t
	err := call(func() C.lodtensor_status_t { return C.lodtensor_place(t.c(), &p) })
	runtime.KeepAlive(t)
	return Place{int32(p.device_type), int32(p.device_id)}, err
}

// Dims is the shape.
func (t *Tensor) Dims() ([]int64, error) {
	var buf [C.LODTENSOR_MAX_DIMS]C.int64_t
	var n C.size_t
	err := call(func() C.lodtensor_status_t {
		return C.lodtensor_dims(t.c(), &buf[0], C.LODTENSOR_MAX_DIMS, &n)
	})
	runtime.KeepAlive(t)
	if err != nil {
		return nil, err
	}
	dims := make([]int64, int(n))
	for i := range dims {
		dims[i] = int64(buf[i])
	}
	return dims, nil
}

// NumEl is the number of elements.
func (t *Tensor) NumEl() (int, error) {
	return t.size(func(h *C.lodtensor_t, n *C.size_t) C.lodtensor_status_t { return C.lodtensor_numel(h, n) })
}

// NBytes is the size of the elements in bytes.
func (t *Tensor) NBytes() (int, error) {
	return t.size(func(h *C.lodtensor_t, n *C.size_t) C.lodtensor_status_t { return C.lodtensor_nbytes(h, n) })
}

// LoDLevels is the number of LoD levels (0 without a LoD).
func (t *Tensor) LoDLevels() (int, error) {
	return t.size(func(h *C.lodtensor_t, n *C.size_t) C.lodtensor_status_t {
		return C.lodtensor_lod_num_levels(h, n)
	})
}

// LoDOffsets copies the offsets of one LoD level.
func (t *Tensor) LoDOffsets(level int) ([]int, error) {
	var args cArgs
	l := args.size("level", level)
	if args.err != nil {
		return nil, args.err
	}
	var p *C.size_t
	var n C.size_t
	var out []int
	err := call(func() C.lodtensor_status_t {
		s := C.lodtensor_lod_offsets(t.c(), l, &p, &n)
		if s == C.LODTENSOR_OK {
			out = make([]int, int(n))
			for i, v := range unsafe.Slice(p, int(n)) {
				out[i] = int(v)
			}
		}
		return s
	})
	runtime.KeepAlive(t)
	return out, err
}

// LoDLengths copies the sequence lengths of one LoD level.
func (t *Tensor) LoDLengths(level int) ([]int, error) {
	offsets, err := t.LoDOffsets(level)
	if err != nil {
		return nil, err
	}
	lengths := make([]int, len(offsets)-1)
	for i := range lengths {
		lengths[i] = offsets[i+1] - offsets[i]
	}
	return lengths, nil
}

// SequenceRows is the row range [begin, end) of sequence index at LoD level level.
func (t *Tensor) SequenceRows(level, index int) (begin, end int, err error) {
	var args cArgs
	l, i := args.size("level", level), args.size("index", index)
	if args.err != nil {
		return 0, 0, args.err
	}
	var b, e C.size_t
	err = call(func() C.lodtensor_status_t {
		return C.lodtensor_sequence_rows(t.c(), l, i, &b, &e)
	})
	runtime.KeepAlive(t)
	return int(b), int(e), err
}

// SetLoD replaces the LoD (validated first; on failure the old one stays).
func (t *Tensor) SetLoD(lod LoD) error {
	sizes, values, err := lod.flat()
	if err != nil {
		return err
	}
	err = call(func() C.lodtensor_status_t {
		return C.lodtensor_set_lod(t.c(), C.int32_t(lod.Kind), ptrOf(sizes), C.size_t(len(sizes)), ptrOf(values),
			C.size_t(len(values)))
	})
	runtime.KeepAlive(t)
	return err
}

// ClearLoD removes every LoD level.
func (t *Tensor) ClearLoD() error {
	err := call(func() C.lodtensor_status_t { return C.lodtensor_clear_lod(t.c()) })
	runtime.KeepAlive(t)
	return err
}

// Share is a new handle on the same memory and LoD (no copy).
func (t *Tensor) Share() (*Tensor, error) {
	defer runtime.KeepAlive(t)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.lodtensor_share(t.c(), out) })
}

// Copy is a new tensor with its own copy of the elements.
func (t *Tensor) Copy() (*Tensor, error) {
	defer runtime.KeepAlive(t)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.lodtensor_copy(t.c(), out) })
}

// Slice is sequences [begin, end) of LoD level level, sharing t's memory.
func (t *Tensor) Slice(level, begin, end int) (*Tensor, error) {
	defer runtime.KeepAlive(t)
	var args cArgs
	l, b, e := args.size("level", level), args.size("begin", begin), args.size("end", end)
	if args.err != nil {
		return nil, args.err
	}
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_slice(t.c(), l, b, e, out)
	})
}

// Split cuts the batch into at most numPieces pieces of whole top-level sequences, sharing t's
// memory.
func (t *Tensor) Split(numPieces int) ([]*Tensor, error) {
	defer runtime.KeepAlive(t)
	var args cArgs
	n := args.size("num_pieces", numPieces)
	if args.err != nil {
		return nil, args.err
	}
	// The call needs room for numPieces handles (it fills at most the batch's, or numPieces
	// shares of an empty batch). C memory, so that a count no memory holds is an error from
	// calloc, not a crash in make; 0 is the library's to refuse.
	var raw **C.lodtensor_t
	if numPieces > 0 {
		if raw = (**C.lodtensor_t)(C.calloc(n, C.size_t(unsafe.Sizeof(raw)))); raw == nil {
			return nil, &Error{Status: OutOfMemory, Message: fmt.Sprintf("num_pieces: no memory for %d handles", numPieces)}
		}
		defer C.free(unsafe.Pointer(raw))
	}
	var count C.size_t
	err := call(func() C.lodtensor_status_t { return C.lodtensor_split(t.c(), n, raw, n, &count) })
	if err != nil {
		return nil, err
	}
	pieces := make([]*Tensor, int(count))
	for i, h := range unsafe.Slice(raw, int(count)) {
		pieces[i] = newTensor(h)
	}
	return pieces, nil
}

// Merge concatenates tensors along rows (their LoD levels appended) into a new tensor.
func Merge(tensors ...*Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(tensors)
	raw := make([]*C.lodtensor_t, len(tensors))
	for i, t := range tensors {
		raw[i] = t.c()
	}
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_merge(ptrOf(raw), C.size_t(len(tensors)), out)
	})
}

// LoDReset is a new handle on t's memory whose LoD is the target offsets (append: added below
// t's LoD).
func (t *Tensor) LoDReset(target []int64, appendLevel bool) (*Tensor, error) {
	defer runtime.KeepAlive(t)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_lod_reset(t.c(), nil, (*C.int64_t)(unsafe.Pointer(ptrOf(target))), C.size_t(len(target)),
			C.bool(appendLevel), out)
	})
}

// LoDResetFrom is LoDReset taking the target from y (its LoD, or its int32/int64 elements).
func (t *Tensor) LoDResetFrom(y *Tensor, appendLevel bool) (*Tensor, error) {
	defer runtime.KeepAlive(t)
	defer runtime.KeepAlive(y)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_lod_reset(t.c(), y.c(), nil, 0, C.bool(appendLevel), out)
	})
}

// checkDType fails unless t's dtype is T's; the caller holds the OS thread.
func checkDType[T Element](t *Tensor) error {
	d, err := t.DType()
	if err != nil {
		return err
	}
	if d != DTypeOf[T]() {
		return &Error{Status: InvalidArgument, Message: fmt.Sprintf("the tensor's dtype %v is not the Go type's %v", d, DTypeOf[T]())}
	}
	return nil
}

// View is a zero-copy slice over t's elements, which must be on the host (a tensor on a CUDA
// device is an *Error with status InvalidArgument: copy it with ToPlace(CPU), or Data, first). It
// is valid only while t (or another handle on the same memory) is open: keep t reachable
// (runtime.KeepAlive) while using the slice, and do not use it after Close. Writes through other
// handles on the memory are visible in it.
func View[T Element](t *Tensor) ([]T, error) {
	return viewWith[T](t, func(p *unsafe.Pointer) C.lodtensor_status_t { return C.lodtensor_data(t.c(), p) })
}

// MutableView is View for writing: writes are seen by every handle sharing t's memory. Same
// lifetime rule as View.
func MutableView[T Element](t *Tensor) ([]T, error) {
	return viewWith[T](t, func(p *unsafe.Pointer) C.lodtensor_status_t { return C.lodtensor_data_mut(t.c(), p) })
}

// viewWith is View and MutableView: a slice of t's elements at the address data reports.
func viewWith[T Element](t *Tensor, data func(*unsafe.Pointer) C.lodtensor_status_t) ([]T, error) {
	if err := checkDType[T](t); err != nil {
		return nil, err
	}
	if err := onHost(t); err != nil {
		return nil, err
	}
	var p unsafe.Pointer
	if err := call(func() C.lodtensor_status_t { return data(&p) }); err != nil {
		return nil, err
	}
	n, err := t.NumEl()
	if err != nil {
		return nil, err
	}
	return unsafe.Slice((*T)(p), n), nil
}

// onHost is an *Error unless t is on the host: a slice over device memory would fault when read.
func onHost(t *Tensor) error {
	p, err := t.Place()
	if err != nil || p == CPU {
		return err
	}
	return &Error{Status: InvalidArgument, Message: fmt.Sprintf("the tensor is on %v, not on the host: copy it with ToPlace(CPU)", p)}
}

// Data copies t's elements into a new Go slice (from a CUDA device through a host copy). A bool
// byte other than 0 and 1 comes out as true (View shows the byte as it is).
func Data[T Element](t *Tensor) ([]T, error) {
	if p, err := t.Place(); err == nil && p != CPU {
		host, err := t.ToPlace(CPU)
		if err != nil {
			return nil, err
		}
		defer host.Close()
		t = host
	}
	view, err := View[T](t)
	if err != nil {
		return nil, err
	}
	out := append([]T(nil), view...)
	runtime.KeepAlive(t)
	// Bool bytes are the library's as given (FromBuffer, DLPack take them as they are), but a Go
	// bool must be 0 or 1: any other byte is true, as the library reads it.
	if bools, ok := any(out).([]bool); ok && len(bools) > 0 {
		for i, b := range unsafe.Slice((*byte)(unsafe.Pointer(&bools[0])), len(bools)) {
			if b > 1 {
				bools[i] = true
			}
		}
	}
	return out, nil
}

// CPU is the host place; CUDA(id) is CUDA device id.
var CPU = Place{C.LODTENSOR_DEVICE_CPU, 0}

// CUDA is the place of CUDA device id.
func CUDA(id int32) Place { return Place{C.LODTENSOR_DEVICE_CUDA, id} }

// String is the place as the library's messages name it: "cpu", "cuda:0", ...
func (p Place) String() string {
	switch p.DeviceType {
	case C.LODTENSOR_DEVICE_CPU:
		return "cpu"
	case C.LODTENSOR_DEVICE_CUDA:
		return fmt.Sprintf("cuda:%d", p.DeviceID)
	}
	return fmt.Sprintf("place(device type %d, id %d)", p.DeviceType, p.DeviceID)
}

func (p Place) c() C.lodtensor_place_t {
	return C.lodtensor_place_t{device_type: C.int32_t(p.DeviceType), device_id: C.int32_t(p.DeviceID)}
}

// ToPlace is a copy of t (elements and LoD) on place, always with its own memory.
func (t *Tensor) ToPlace(place Place) (*Tensor, error) {
	defer runtime.KeepAlive(t)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.lodtensor_to_place(t.c(), place.c(), out) })
}

// Serialize is t as a record of Paddle's tensor file format (lodtensor_serialize): the bytes
// Paddle's save op writes for it; a save_combine file is such records back to back. A CUDA
// tensor's elements are copied from the device.
func (t *Tensor) Serialize() ([]byte, error) {
	defer runtime.KeepAlive(t)
	var n C.size_t
	if err := call(func() C.lodtensor_status_t { return C.lodtensor_serialize(t.c(), nil, 0, &n) }); err != nil {
		return nil, err
	}
	// A record is never empty: it has its headers.
	buf := make([]byte, int(n))
	err := call(func() C.lodtensor_status_t {
		return C.lodtensor_serialize(t.c(), unsafe.Pointer(&buf[0]), C.size_t(len(buf)), &n)
	})
	if err != nil {
		return nil, err
	}
	return buf, nil
}

// Deserialize reads the record of Paddle's tensor file format at the start of b
// (lodtensor_deserialize): a host tensor holding a copy of its elements, and the record's
// length, where the next record of a save_combine file starts.
func Deserialize(b []byte) (*Tensor, int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	var consumed C.size_t
	x, err := handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_deserialize(p, C.size_t(len(b)), &consumed, out)
	})
	return x, int(consumed), err
}

// DeserializeSlice is Paddle's partial load (lodtensor_deserialize_slice): from the record at the
// start of b, which has no LoD, a host tensor of dims holding a copy of the elements from element
// seek on, and the whole record's length, where the next record of a save_combine file starts.
func DeserializeSlice(b []byte, seek int64, dims []int64) (*Tensor, int, error) {
	var p unsafe.Pointer
	if len(b) > 0 {
		p = unsafe.Pointer(&b[0])
	}
	var consumed C.size_t
	x, err := handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_deserialize_slice(p, C.size_t(len(b)), C.int64_t(seek),
			(*C.int64_t)(unsafe.Pointer(ptrOf(dims))), C.size_t(len(dims)), &consumed, out)
	})
	return x, int(consumed), err
}

// ToDLPack lends t's elements as a DLPack managed tensor (lodtensor_to_dlpack), zero copy: a
// *DLManagedTensorVersioned of dlpack.h, for a consumer that calls its deleter once when done.
// DLPack has no LoD.
func (t *Tensor) ToDLPack() (unsafe.Pointer, error) {
	defer runtime.KeepAlive(t)
	var m *C.struct_DLManagedTensorVersioned
	err := call(func() C.lodtensor_status_t { return C.lodtensor_to_dlpack(t.c(), &m) })
	return unsafe.Pointer(m), err
}

// FromDLPack takes over a DLPack managed tensor (lodtensor_from_dlpack), zero copy, with lod: the
// library calls its deleter once, when the last handle over the memory is closed. On an error
// nothing was taken: managed is still the caller's.
func FromDLPack(managed unsafe.Pointer, lod LoD) (*Tensor, error) {
	sizes, values, err := lod.flat()
	if err != nil {
		return nil, err
	}
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_from_dlpack((*C.struct_DLManagedTensorVersioned)(managed), C.int32_t(lod.Kind),
			ptrOf(sizes), C.size_t(len(sizes)), ptrOf(values), C.size_t(len(values)), out)
	})
}

// ToDLPackLegacy is ToDLPack in the form of DLPack before 1.0 (lodtensor_to_dlpack_legacy): a
// *DLManagedTensor of dlpack.h, for a consumer that has only that form.
func (t *Tensor) ToDLPackLegacy() (unsafe.Pointer, error) {
	defer runtime.KeepAlive(t)
	var m *C.struct_DLManagedTensor
	err := call(func() C.lodtensor_status_t { return C.lodtensor_to_dlpack_legacy(t.c(), &m) })
	return unsafe.Pointer(m), err
}

// FromDLPackLegacy is FromDLPack for a *DLManagedTensor of DLPack before 1.0
// (lodtensor_from_dlpack_legacy), with the same ownership.
func FromDLPackLegacy(managed unsafe.Pointer, lod LoD) (*Tensor, error) {
	sizes, values, err := lod.flat()
	if err != nil {
		return nil, err
	}
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_from_dlpack_legacy((*C.struct_DLManagedTensor)(managed), C.int32_t(lod.Kind),
			ptrOf(sizes), C.size_t(len(sizes)), ptrOf(values), C.size_t(len(values)), out)
	})
}

// ToArrow lends t to Arrow through the C data interface (lodtensor_to_arrow), zero copy (bool
// elements are packed into a copy): it fills the caller's struct ArrowSchema and struct ArrowArray
// (Arrow Go's *cdata.CArrowSchema and *cdata.CArrowArray, say) with one large_list per LoD level,
// one fixed_size_list per dim after the first, then the elements. The caller releases each once,
// with its release callback (Arrow's import functions do); the memory stays until the array is
// released, also after t is closed. On an error neither struct is written.
func (t *Tensor) ToArrow(schema, array unsafe.Pointer) error {
	defer runtime.KeepAlive(t)
	return call(func() C.lodtensor_status_t {
		return C.lodtensor_to_arrow(t.c(), (*C.struct_ArrowSchema)(schema), (*C.struct_ArrowArray)(array))
	})
}

// FromArrow takes the Arrow array at array, of the type at schema (lodtensor_from_arrow), as a
// tensor, zero copy (bool elements are unpacked into a copy): the array is moved (its release
// becomes NULL) and released once, when the last handle over its memory is closed. The schema is
// only read: it stays the caller's to release. On an error nothing was taken: the array is
// untouched.
func FromArrow(schema, array unsafe.Pointer) (*Tensor, error) {
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_from_arrow((*C.struct_ArrowSchema)(schema), (*C.struct_ArrowArray)(array), out)
	})
}

// ToArrowDevice lends t to Arrow through the C device data interface (lodtensor_to_arrow_device),
// zero copy, in the form ToArrow makes: it fills the caller's struct ArrowSchema and struct
// ArrowDeviceArray (Arrow Go's *cdata.CArrowSchema and *cdata.CArrowDeviceArray, say). A host
// tensor goes out as from ToArrow, on ARROW_DEVICE_CPU with device_id -1; a tensor on CUDA device n
// on ARROW_DEVICE_CUDA with device_id n, its elements and LoD offsets device memory that is ready
// when the call returns (sync_event is nil). The caller releases the schema and the device array's
// array once each, as for ToArrow; the memory stays until the array is released. On an error
// neither struct is written.
func (t *Tensor) ToArrowDevice(schema, array unsafe.Pointer) error {
	defer runtime.KeepAlive(t)
	return call(func() C.lodtensor_status_t {
		return C.lodtensor_to_arrow_device(t.c(), (*C.struct_ArrowSchema)(schema), (*C.struct_ArrowDeviceArray)(array))
	})
}

// ArrowEncoding says how a tensor is lent: as strings by ToArrowStrings (ArrowBinary, ArrowUTF8),
// and in a record batch's column (any of the three). Its values are the binding's own, so that the
// zero value is ArrowValues; each is passed to the library as its LODTENSOR_ARROW_* constant.
type ArrowEncoding int32

const (
	// ArrowValues lends a tensor as ToArrow does (uint8 as uint8); no strings.
	ArrowValues ArrowEncoding = iota
	// ArrowBinary lends any bytes, as large_binary.
	ArrowBinary
	// ArrowUTF8 lends UTF-8 text, as large_utf8, each string checked to be UTF-8.
	ArrowUTF8
)

// c is e's LODTENSOR_ARROW_* constant; a value of no constant goes as it is, for the library to
// refuse.
func (e ArrowEncoding) c() C.int32_t {
	switch e {
	case ArrowValues:
		return C.LODTENSOR_ARROW_VALUES
	case ArrowBinary:
		return C.LODTENSOR_ARROW_BINARY
	case ArrowUTF8:
		return C.LODTENSOR_ARROW_UTF8
	}
	return C.int32_t(e)
}

// ToArrowStrings lends t, a 1-d uint8 tensor with a LoD, to Arrow as strings
// (lodtensor_to_arrow_strings), zero copy: its last LoD level's sequences are one large_utf8
// (ArrowUTF8) or large_binary (ArrowBinary) array, the levels above it large lists as ToArrow
// makes them. Released as ToArrow's structs. On an error neither struct is written.
func (t *Tensor) ToArrowStrings(encoding ArrowEncoding, schema, array unsafe.Pointer) error {
	defer runtime.KeepAlive(t)
	return call(func() C.lodtensor_status_t {
		return C.lodtensor_to_arrow_strings(t.c(), encoding.c(), (*C.struct_ArrowSchema)(schema),
			(*C.struct_ArrowArray)(array))
	})
}

// ToArrowDeviceStrings is ToArrowStrings through the C device data interface
// (lodtensor_to_arrow_device_strings), as ToArrowDevice lends a tensor; UTF-8 on a device is
// checked there.
func (t *Tensor) ToArrowDeviceStrings(encoding ArrowEncoding, schema, array unsafe.Pointer) error {
	defer runtime.KeepAlive(t)
	return call(func() C.lodtensor_status_t {
		return C.lodtensor_to_arrow_device_strings(t.c(), encoding.c(), (*C.struct_ArrowSchema)(schema),
			(*C.struct_ArrowDeviceArray)(array))
	})
}

// FromArrowDevice takes the Arrow device array at array (a struct ArrowDeviceArray), of the type
// at schema (lodtensor_from_arrow_device), as a tensor, zero copy, as FromArrow takes an array: on
// the CPU for ARROW_DEVICE_CPU and ARROW_DEVICE_CUDA_HOST, on CUDA device n for ARROW_DEVICE_CUDA
// with device_id n (the elements stay in the producer's device memory; a non-nil sync_event is
// waited for first). The device array's array is moved (its release becomes NULL) and released
// once, when the last handle over its memory is closed; the schema stays the caller's to release.
// On an error nothing was taken: the array is untouched.
func FromArrowDevice(schema, array unsafe.Pointer) (*Tensor, error) {
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_from_arrow_device((*C.struct_ArrowSchema)(schema), (*C.struct_ArrowDeviceArray)(array), out)
	})
}

// Synchronize waits until the work queued on place has finished (the CPU returns at once).
func Synchronize(place Place) error {
	return call(func() C.lodtensor_status_t { return C.lodtensor_synchronize(place.c()) })
}

// CUDADeviceCount is the number of CUDA devices; an *Error with status Unsupported in a build
// without CUDA, without a driver or without a device.
func CUDADeviceCount() (int, error) {
	var n C.size_t
	err := call(func() C.lodtensor_status_t { return C.lodtensor_cuda_device_count(&n) })
	return int(n), err
}

// CUDAMemoryInfo is the device memory the library holds on a CUDA device, in bytes: that of its
// live tensors (and of the small blocks it keeps zeroed for its counting kernels), and the freed
// blocks its cache keeps for reuse.
func CUDAMemoryInfo(device int) (inUse, kept int, err error) {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return 0, 0, args.err
	}
	var u, k C.size_t
	err = call(func() C.lodtensor_status_t { return C.lodtensor_cuda_memory_info(d, &u, &k) })
	return int(u), int(k), err
}

// The indices of CUDACounters' values (LODTENSOR_CUDA_COUNTER_*).
const (
	CUDACounterLaunches          = int(C.LODTENSOR_CUDA_COUNTER_LAUNCHES)           // kernels launched
	CUDACounterFills             = int(C.LODTENSOR_CUDA_COUNTER_FILLS)              // device memory filled with a byte
	CUDACounterDeviceCopies      = int(C.LODTENSOR_CUDA_COUNTER_DEVICE_COPIES)      // copies device to device
	CUDACounterUploads           = int(C.LODTENSOR_CUDA_COUNTER_UPLOADS)            // copies host to device
	CUDACounterUploadBytes       = int(C.LODTENSOR_CUDA_COUNTER_UPLOAD_BYTES)       // their bytes
	CUDACounterDownloads         = int(C.LODTENSOR_CUDA_COUNTER_DOWNLOADS)          // copies device to host
	CUDACounterDownloadBytes     = int(C.LODTENSOR_CUDA_COUNTER_DOWNLOAD_BYTES)     // their bytes
	CUDACounterWaits             = int(C.LODTENSOR_CUDA_COUNTER_WAITS)              // waits for the device
	CUDACounterAllocations       = int(C.LODTENSOR_CUDA_COUNTER_ALLOCATIONS)        // device blocks handed out
	CUDACounterDriverAllocations = int(C.LODTENSOR_CUDA_COUNTER_DRIVER_ALLOCATIONS) // of them, new from the driver
)

// CUDACounters is what the library has asked of a CUDA device so far (lodtensor_cuda_counters):
// every counter, indexed by the CUDACounter* constants. Subtract two readings to see what a call
// asked of the device.
func CUDACounters(device int) ([]uint64, error) {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return nil, args.err
	}
	values := make([]C.uint64_t, C.LODTENSOR_CUDA_COUNTERS)
	err := call(func() C.lodtensor_status_t {
		return C.lodtensor_cuda_counters(d, &values[0], C.size_t(len(values)))
	})
	if err != nil {
		return nil, err
	}
	out := make([]uint64, len(values))
	for i, v := range values {
		out[i] = uint64(v)
	}
	return out, nil
}

// CUDAFreeMemory is a CUDA device's free and total memory in bytes, as the driver reports them
// (blocks the library's cache keeps count as used).
func CUDAFreeMemory(device int) (free, total int, err error) {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return 0, 0, args.err
	}
	var f, t C.size_t
	err = call(func() C.lodtensor_status_t { return C.lodtensor_cuda_free_memory(d, &f, &t) })
	return int(f), int(t), err
}

// CUDALoadKernels compiles and loads every kernel file for a CUDA device now, instead of each at
// the first call that needs it (compiling takes seconds; compiled files are kept on disk for
// later processes). A server calls it at start-up.
func CUDALoadKernels(device int) error {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return args.err
	}
	return call(func() C.lodtensor_status_t { return C.lodtensor_cuda_load_kernels(d) })
}

// CUDAStream is the stream all the library's work on a CUDA device goes to, in call order: a
// CUstream (cudaStream_t) the library owns, valid for the life of the process (never destroy it).
// A model whose kernels run on it hands its tensors to the library's ops with no wait between;
// work on another stream must be ordered with events (see lodtensor_cuda_stream in lodtensor.h).
func CUDAStream(device int) (unsafe.Pointer, error) {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return nil, args.err
	}
	var s unsafe.Pointer
	err := call(func() C.lodtensor_status_t { return C.lodtensor_cuda_stream(d, &s) })
	return s, err
}

// CUDAEmptyCache gives the freed blocks that a CUDA device's cache keeps back to the driver.
func CUDAEmptyCache(device int) error {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return args.err
	}
	return call(func() C.lodtensor_status_t { return C.lodtensor_cuda_empty_cache(d) })
}

// CUDASetCacheLimit bounds the freed blocks a CUDA device's cache keeps for reuse (bytes; 0 keeps
// nothing; math.MaxUint64, the initial value, is no bound). Blocks over the new bound go back to
// the driver now.
func CUDASetCacheLimit(device int, bytes uint64) error {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return args.err
	}
	return call(func() C.lodtensor_status_t {
		return C.lodtensor_cuda_set_cache_limit(d, C.size_t(bytes))
	})
}

// CUDACacheLimit is the bound on the freed blocks a CUDA device's cache keeps, in bytes
// (math.MaxUint64 when there is none).
func CUDACacheLimit(device int) (uint64, error) {
	var args cArgs
	d := args.int32("device", device)
	if args.err != nil {
		return 0, args.err
	}
	var l C.size_t
	err := call(func() C.lodtensor_status_t { return C.lodtensor_cuda_cache_limit(d, &l) })
	return uint64(l), err
}
