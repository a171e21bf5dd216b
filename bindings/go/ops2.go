package lodtensor

/*
#include <lodtensor.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// SequenceSoftmax is the softmax over each sequence (one element per row).
func SequenceSoftmax(x *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.sequence_softmax(x.c(), out) })
}

// SequenceConcat concatenates the i-th sequences of every input (at least 2).
func SequenceConcat(xs ...*Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(xs)
	raw := make([]*C.lodtensor_t, len(xs))
	for i, t := range xs {
		raw[i] = t.c()
	}
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_concat(ptrOf(raw), C.size_t(len(raw)), out)
	})
}

// SequenceSlice keeps length[i] rows from offset[i] of each sequence i.
func SequenceSlice(x, offset, length *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, offset, length})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_slice(x.c(), offset.c(), length.c(), out)
	})
}

// SequenceReverse reverses the rows of each sequence.
func SequenceReverse(x *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.sequence_reverse(x.c(), out) })
}

// SequenceMask is the mask of lengths x: y[..., j] = j < x[...] for j in [0, maxlen) (maxlen < 0:
// the largest length), of dtype outDType.
func SequenceMask(x *Tensor, maxlen int64, outDType DType) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_mask(x.c(), C.int64_t(maxlen), outDType.c(), out)
	})
}

// SequenceEnumerate is the sliding windows of winSize ids within each sequence (padValue past its end).
func SequenceEnumerate(x *Tensor, winSize, padValue int64) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_enumerate(x.c(), C.int64_t(winSize), C.int64_t(padValue), out)
	})
}

// SequenceErase removes the given tokens from each sequence.
func SequenceErase(x *Tensor, tokens []int64) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_erase(x.c(), (*C.int64_t)(unsafe.Pointer(ptrOf(tokens))), C.size_t(len(tokens)), out)
	})
}

// SequenceReshape regroups the elements of each sequence into rows of newDim.
func SequenceReshape(x *Tensor, newDim int64) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_reshape(x.c(), C.int64_t(newDim), out)
	})
}

// SequenceConv is Paddle's sequence_conv (context projection times filter); paddingData may be
// nil unless paddingTrainable.
func SequenceConv(x, filter, paddingData *Tensor, contextLength, contextStart, contextStride int64,
	paddingTrainable bool) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, filter, paddingData})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.sequence_conv(x.c(), filter.c(), paddingData.c(), C.int64_t(contextLength), C.int64_t(contextStart),
			C.int64_t(contextStride), C.bool(paddingTrainable), out)
	})
}

// Fill is a new tensor of dtype and dims with every element value (exactly representable).
func Fill(dtype DType, dims []int64, value float64) (*Tensor, error) {
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_fill(dtype.c(), (*C.int64_t)(unsafe.Pointer(ptrOf(dims))), C.size_t(len(dims)),
			C.double(value), out)
	})
}

// Cast converts x's elements to dtype (Rust's `as` rules); the LoD is kept.
func Cast(x *Tensor, dtype DType) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.lodtensor_cast(x.c(), dtype.c(), out) })
}

// GatherRows is the rows index[0], index[1], ... of x.
func GatherRows(x, index *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, index})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_gather_rows(x.c(), index.c(), out)
	})
}

// ScatterMode selects how ScatterRows combines an update row with the row it names.
type ScatterMode int32

// The scatter modes (LODTENSOR_SCATTER_*).
const (
	ScatterOverwrite ScatterMode = C.LODTENSOR_SCATTER_OVERWRITE // the last update of a row wins
	ScatterAdd       ScatterMode = C.LODTENSOR_SCATTER_ADD       // the updates of a row add up, in order
)

// ScatterRows is a copy of x (its LoD kept) whose rows index[i] are replaced by, or increased by,
// the rows updates[i], as mode says.
func ScatterRows(x, index, updates *Tensor, mode ScatterMode) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{x, index, updates})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_scatter_rows(x.c(), index.c(), updates.c(), C.int32_t(mode), out)
	})
}

// LogSoftmax is the log-softmax over the last axis.
func LogSoftmax(x *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.lodtensor_log_softmax(x.c(), out) })
}

// TopK is the k largest (or smallest) entries of every row of the last axis, sorted, and their
// int64 indices.
func TopK(x *Tensor, k int, largest bool) (values, indices *Tensor, err error) {
	defer runtime.KeepAlive(x)
	var args cArgs
	n := args.size("k", k)
	if args.err != nil {
		return nil, nil, args.err
	}
	return handlePair(func(a, b **C.lodtensor_t) C.lodtensor_status_t {
		return C.lodtensor_topk(x.c(), n, C.bool(largest), a, b)
	})
}

// BeamSelection is one beam-search step's result: the selected ids (int64) and scores with the
// LoD [source -> prefix rows, prefix row -> selected], and the prefix row each extends (int32).
type BeamSelection struct {
	IDs, Scores, ParentIdx *Tensor
}

// Close closes the three tensors.
func (s *BeamSelection) Close() error {
	s.IDs.Close()
	s.Scores.Close()
	s.ParentIdx.Close()
	return nil
}

func beamSelection(f func(a, b, c **C.lodtensor_t) C.lodtensor_status_t) (*BeamSelection, error) {
	var a, b, c *C.lodtensor_t
	if err := call(func() C.lodtensor_status_t { return f(&a, &b, &c) }); err != nil {
		return nil, err
	}
	return &BeamSelection{newTensor(a), newTensor(b), newTensor(c)}, nil
}

// BeamSearchStep is Paddle's beam_search op.
func BeamSearchStep(preIDs, preScores, ids, scores *Tensor, level, beamSize int, endID int64,
	isAccumulated bool) (*BeamSelection, error) {
	defer runtime.KeepAlive([]*Tensor{preIDs, preScores, ids, scores})
	var args cArgs
	l, beam := args.size("level", level), args.size("beam_size", beamSize)
	if args.err != nil {
		return nil, args.err
	}
	return beamSelection(func(a, b, c **C.lodtensor_t) C.lodtensor_status_t {
		return C.beam_search_step(preIDs.c(), preScores.c(), ids.c(), scores.c(), l, beam, C.int64_t(endID),
			C.bool(isAccumulated), a, b, c)
	})
}

// BeamSearchFusedStep is top-k of logProbs, plus the prefix scores, then BeamSearchStep, in one pass.
func BeamSearchFusedStep(preIDs, preScores, logProbs *Tensor, beamSize int, endID int64) (*BeamSelection, error) {
	defer runtime.KeepAlive([]*Tensor{preIDs, preScores, logProbs})
	var args cArgs
	beam := args.size("beam_size", beamSize)
	if args.err != nil {
		return nil, args.err
	}
	return beamSelection(func(a, b, c **C.lodtensor_t) C.lodtensor_status_t {
		return C.beam_search_fused_step(preIDs.c(), preScores.c(), logProbs.c(), beam, C.int64_t(endID), a, b, c)
	})
}

// BeamSearchGatherState reorders decoder state: row i is row parentIdx[i] of state.
func BeamSearchGatherState(state, parentIdx *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{state, parentIdx})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.beam_search_gather_state(state.c(), parentIdx.c(), out)
	})
}

// BeamSearchGatherStates reorders every tensor of a model's state by one parentIdx (result i is
// states[i] reordered); on a CUDA device the call waits for the device once, not once a state.
func BeamSearchGatherStates(states []*Tensor, parentIdx *Tensor) ([]*Tensor, error) {
	defer runtime.KeepAlive(states)
	defer runtime.KeepAlive(parentIdx)
	raw := make([]*C.lodtensor_t, len(states))
	for i, t := range states {
		raw[i] = t.c()
	}
	outs := make([]*C.lodtensor_t, len(states))
	err := call(func() C.lodtensor_status_t {
		return C.beam_search_gather_states(ptrOf(raw), C.size_t(len(raw)), parentIdx.c(), ptrOf(outs))
	})
	if err != nil {
		return nil, err
	}
	result := make([]*Tensor, len(outs))
	for i, h := range outs {
		result[i] = newTensor(h)
	}
	return result, nil
}

// BeamSearchGatherTree backtracks dense [T, B, beam] ids through their parents.
func BeamSearchGatherTree(ids, parents *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive([]*Tensor{ids, parents})
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.beam_search_gather_tree(ids.c(), parents.c(), out)
	})
}
