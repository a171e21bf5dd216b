package lodtensor

/*
#include <lodtensor.h>
*/
import "C"

import "runtime"

// PoolType selects the reduction of SequencePool.
type PoolType int32

// The pool types (LODTENSOR_POOL_*).
const (
	PoolSum     PoolType = C.LODTENSOR_POOL_SUM
	PoolAverage PoolType = C.LODTENSOR_POOL_AVERAGE
	PoolSqrt    PoolType = C.LODTENSOR_POOL_SQRT
	PoolMax     PoolType = C.LODTENSOR_POOL_MAX
	PoolMin     PoolType = C.LODTENSOR_POOL_MIN
	PoolFirst   PoolType = C.LODTENSOR_POOL_FIRST
	PoolLast    PoolType = C.LODTENSOR_POOL_LAST
)

// handlePair runs a C call that produces two new tensor handles (the second may stay NULL).
func handlePair(f func(a, b **C.lodtensor_t) C.lodtensor_status_t) (*Tensor, *Tensor, error) {
	var a, b *C.lodtensor_t
	if err := call(func() C.lodtensor_status_t { return f(&a, &b) }); err != nil {
		return nil, nil, err
	}
	first := newTensor(a)
	if b == nil {
		return first, nil, nil
	}
	return first, newTensor(b), nil
}

// SequenceExpand repeats x's sequences (or rows) as level refLevel of y's LoD says (-1: the last).
func SequenceExpand(x, y *Tensor, refLevel int) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, y})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_expand(x.c(), y.c(), C.int64_t(refLevel), out)
	})
}

// SequenceExpandAs repeats row h of x by the length of y's sequence h; the result takes y's LoD.
func SequenceExpandAs(x, y *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, y})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.sequence_expand_as(x.c(), y.c(), out) })
}

// SequencePad pads x's sequences to paddedLength steps (-1: the longest) with padValue; it also
// returns the int64 lengths.
func SequencePad(x, padValue *Tensor, paddedLength int) (padded, length *Tensor, err error) {
	defer runtime.KeepAlive([]*Tensor{x, padValue})
	return handlePair(func(a, b **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_pad(x.c(), padValue.c(), C.int64_t(paddedLength), a, b)
	})
}

// SequenceUnpad keeps the first length[i] steps of row i of x.
func SequenceUnpad(x, length *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, length})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.sequence_unpad(x.c(), length.c(), out) })
}

// SequencePool reduces each last-level sequence of x; maxIndex is non-nil for PoolMax/PoolMin.
func SequencePool(x *Tensor, pool PoolType, padValue float64) (out, maxIndex *Tensor, err error) {
	defer runtime.KeepAlive(x)
	return handlePair(func(a, b **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_pool(x.c(), C.int32_t(pool), C.double(padValue), a, b)
	})
}

// SequenceFirstStep is the first row of each sequence (0 for an empty one).
func SequenceFirstStep(x *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.sequence_first_step(x.c(), out) })
}

// SequenceLastStep is the last row of each sequence (0 for an empty one).
func SequenceLastStep(x *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.sequence_last_step(x.c(), out) })
}

// SequenceScatter is x plus the updates: out[i][ids[p]] += updates[p] for the ids of sequence i.
func SequenceScatter(x, ids, updates *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, ids, updates})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_scatter(x.c(), ids.c(), updates.c(), out)
	})
}

// SequenceScatterInPlace adds the updates into x's own (possibly shared) memory.
func SequenceScatterInPlace(x, ids, updates *Tensor) error {
	defer runtime.KeepAlive([]*Tensor{x, ids, updates})
	return call(func() C.lodtensor_status_t { return C.sequence_scatter_inplace(x.c(), ids.c(), updates.c()) })
}
