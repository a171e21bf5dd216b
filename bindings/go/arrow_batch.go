package lodtensor

/*
#include <stdlib.h>
#include <lodtensor.h>
*/
import "C"

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// ArrowColumn is a column of an Arrow record batch: a tensor, its field name (UTF-8) and its form
// (ArrowValues, the zero value, as ToArrow lends a tensor; ArrowUTF8 or ArrowBinary for text, as
// ToArrowStrings lends it).
type ArrowColumn struct {
	Tensor   *Tensor
	Name     string
	Encoding ArrowEncoding
}

// ToArrowRecordBatch lends columns to Arrow as one record batch
// (lodtensor_to_arrow_record_batch_encoded), zero copy: it fills the caller's struct ArrowSchema
// and struct ArrowArray (Arrow Go's *cdata.CArrowSchema and *cdata.CArrowArray, say) with a struct
// array whose children are the columns, each named, each in its form, each with one entry per row
// (its sequences at LoD level 0, or its rows). The caller releases each struct once; the memory
// stays until the array is released. On an error neither struct is written.
func ToArrowRecordBatch(columns []ArrowColumn, schema, array unsafe.Pointer) error {
	return lendBatch(columns, func(t **C.lodtensor_t, n **C.char, e *C.int32_t, k C.size_t) C.lodtensor_status_t {
		return C.lodtensor_to_arrow_record_batch_encoded(t, n, e, k, (*C.struct_ArrowSchema)(schema),
			(*C.struct_ArrowArray)(array))
	})
}

// ToArrowDeviceRecordBatch is ToArrowRecordBatch through the C device data interface
// (lodtensor_to_arrow_device_record_batch_encoded), array being a struct ArrowDeviceArray: every
// column on one place, as ToArrowDevice lends one tensor.
func ToArrowDeviceRecordBatch(columns []ArrowColumn, schema, array unsafe.Pointer) error {
	return lendBatch(columns, func(t **C.lodtensor_t, n **C.char, e *C.int32_t, k C.size_t) C.lodtensor_status_t {
		return C.lodtensor_to_arrow_device_record_batch_encoded(t, n, e, k, (*C.struct_ArrowSchema)(schema),
			(*C.struct_ArrowDeviceArray)(array))
	})
}

// lendBatch calls lend with the columns' handles, names and encodings as C arrays.
func lendBatch(columns []ArrowColumn,
	lend func(**C.lodtensor_t, **C.char, *C.int32_t, C.size_t) C.lodtensor_status_t) error {
	defer runtime.KeepAlive(columns)
	// Go memory holding C pointers (not Go pointers) may be passed to C.
	handles := make([]*C.lodtensor_t, len(columns))
	names := make([]*C.char, len(columns))
	encodings := make([]C.int32_t, len(columns))
	for i, c := range columns {
		// A C string ends at its first NUL: the field would get another name.
		if strings.IndexByte(c.Name, 0) >= 0 {
			return &Error{Status: InvalidArgument, Message: fmt.Sprintf("columns[%d]: the name %q holds a NUL byte", i, c.Name)}
		}
		handles[i] = c.Tensor.c()
		names[i] = C.CString(c.Name)
		defer C.free(unsafe.Pointer(names[i]))
		encodings[i] = c.Encoding.c()
	}
	// The C call takes const pointers; cgo spells them without const.
	return call(func() C.lodtensor_status_t {
		return lend((**C.lodtensor_t)(unsafe.Pointer(ptrOf(handles))), ptrOf(names), ptrOf(encodings),
			C.size_t(len(columns)))
	})
}

// FromArrowRecordBatch takes the Arrow record batch at array (a struct array), of the type at
// schema (lodtensor_from_arrow_record_batch), as one tensor a column, zero copy, each as FromArrow
// takes an array. The columns share the array, which is moved (its release becomes NULL) and
// released once, when the last handle over its memory is closed; the schema stays the caller's.
// On an error nothing was taken.
func FromArrowRecordBatch(schema, array unsafe.Pointer) ([]*Tensor, error) {
	return takeBatch(schema, func(out **C.lodtensor_t, room C.size_t, count *C.size_t) C.lodtensor_status_t {
		return C.lodtensor_from_arrow_record_batch((*C.struct_ArrowSchema)(schema), (*C.struct_ArrowArray)(array), out,
			room, count)
	})
}

// FromArrowDeviceRecordBatch is FromArrowRecordBatch for a struct ArrowDeviceArray
// (lodtensor_from_arrow_device_record_batch), on the place FromArrowDevice takes an array on.
func FromArrowDeviceRecordBatch(schema, array unsafe.Pointer) ([]*Tensor, error) {
	return takeBatch(schema, func(out **C.lodtensor_t, room C.size_t, count *C.size_t) C.lodtensor_status_t {
		return C.lodtensor_from_arrow_device_record_batch((*C.struct_ArrowSchema)(schema),
			(*C.struct_ArrowDeviceArray)(array), out, room, count)
	})
}

// takeBatch calls take with room for the columns the schema says. The schema is the caller's, so
// the library checks it before its n_children sizes anything: called with no room, take fails
// with BufferTooSmall only for a schema it accepts, having counted the columns from it before
// reading the array.
func takeBatch(schema unsafe.Pointer,
	take func(**C.lodtensor_t, C.size_t, *C.size_t) C.lodtensor_status_t) ([]*Tensor, error) {
	var raw []*C.lodtensor_t
	var count C.size_t
	err := call(func() C.lodtensor_status_t { return take(nil, 0, &count) })
	if e, ok := err.(*Error); ok && e.Status == BufferTooSmall {
		raw = make([]*C.lodtensor_t, int((*C.struct_ArrowSchema)(schema).n_children))
		err = call(func() C.lodtensor_status_t { return take(ptrOf(raw), C.size_t(len(raw)), &count) })
	}
	if err != nil {
		return nil, err
	}
	columns := make([]*Tensor, int(count))
	for i, h := range raw[:int(count)] {
		columns[i] = newTensor(h)
	}
	return columns, nil
}
