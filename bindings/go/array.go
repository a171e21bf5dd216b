package lodtensor

/*
#include <lodtensor.h>
*/
import "C"

import "runtime"

// TensorArray is a growable array of tensors (Paddle's LoDTensorArray), owning one C handle.
type TensorArray struct {
	h *C.tensor_array_t
}

func newTensorArray(h *C.tensor_array_t) *TensorArray {
	a := &TensorArray{h: h}
	runtime.SetFinalizer(a, (*TensorArray).Close)
	return a
}

func (a *TensorArray) c() *C.tensor_array_t {
	if a == nil {
		return nil
	}
	return a.h
}

// NewTensorArray creates an empty array.
func NewTensorArray() (*TensorArray, error) {
	var out *C.tensor_array_t
	if err := call(func() C.lodtensor_status_t { return C.tensor_array_create(&out) }); err != nil {
		return nil, err
	}
	return newTensorArray(out), nil
}

// Close destroys the array and its elements (tensors read from it stay valid). Idempotent.
func (a *TensorArray) Close() error {
	if a == nil || a.h == nil {
		return nil
	}
	C.tensor_array_destroy(a.h)
	a.h = nil
	runtime.SetFinalizer(a, nil)
	return nil
}

// Len is the number of elements.
func (a *TensorArray) Len() (int, error) {
	var n C.size_t
	err := call(func() C.lodtensor_status_t { return C.tensor_array_size(a.c(), &n) })
	runtime.KeepAlive(a)
	return int(n), err
}

// Read is element index as a new tensor sharing its memory (copy false) or with its own copy.
func (a *TensorArray) Read(index int, copy bool) (*Tensor, error) {
	defer runtime.KeepAlive(a)
	var args cArgs
	i := args.size("index", index)
	if args.err != nil {
		return nil, args.err
	}
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.tensor_array_read(a.c(), i, C.bool(copy), out)
	})
}

// Write stores t at index (shared or copied), growing the array if needed.
func (a *TensorArray) Write(index int, t *Tensor, copy bool) error {
	defer runtime.KeepAlive(a)
	defer runtime.KeepAlive(t)
	var args cArgs
	i := args.size("index", index)
	if args.err != nil {
		return args.err
	}
	return call(func() C.lodtensor_status_t { return C.tensor_array_write(a.c(), i, t.c(), C.bool(copy)) })
}

// Clear removes every element.
func (a *TensorArray) Clear() error {
	defer runtime.KeepAlive(a)
	return call(func() C.lodtensor_status_t { return C.tensor_array_clear(a.c()) })
}

// ToTensor concatenates (stack false) or stacks the elements along axis.
func (a *TensorArray) ToTensor(axis int, stack bool) (*Tensor, error) {
	defer runtime.KeepAlive(a)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.tensor_array_to_tensor(a.c(), C.int64_t(axis), C.bool(stack), out, nil, 0)
	})
}

func arrayOp(f func(out **C.tensor_array_t) C.lodtensor_status_t) (*TensorArray, error) {
	var out *C.tensor_array_t
	if err := call(func() C.lodtensor_status_t { return f(&out) }); err != nil {
		return nil, err
	}
	return newTensorArray(out), nil
}

// Unstack splits x along axis into an array of tensors.
func Unstack(x *Tensor, axis int) (*TensorArray, error) {
	defer runtime.KeepAlive(x)
	return arrayOp(func(out **C.tensor_array_t) C.lodtensor_status_t {
		return C.tensor_array_unstack(x.c(), C.int64_t(axis), out)
	})
}

// Unpack splits x into time steps by table (Paddle's lod_tensor_to_array).
func Unpack(x *Tensor, table *RankTable) (*TensorArray, error) {
	defer runtime.KeepAlive(x)
	defer runtime.KeepAlive(table)
	return arrayOp(func(out **C.tensor_array_t) C.lodtensor_status_t {
		return C.tensor_array_unpack(x.c(), table.c(), out)
	})
}

// Pack puts the time steps back in the original order (Paddle's array_to_lod_tensor).
func (a *TensorArray) Pack(table *RankTable) (*Tensor, error) {
	defer runtime.KeepAlive(a)
	defer runtime.KeepAlive(table)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.tensor_array_pack(a.c(), table.c(), out)
	})
}

// RankTable lists the sequences of one LoD level by length, longest first (Paddle's
// LoDRankTable), owning one C handle.
type RankTable struct {
	h *C.rank_table_t
}

func (r *RankTable) c() *C.rank_table_t {
	if r == nil {
		return nil
	}
	return r.h
}

// NewRankTable ranks the sequences of LoD level level of x.
func NewRankTable(x *Tensor, level int) (*RankTable, error) {
	defer runtime.KeepAlive(x)
	var args cArgs
	l := args.size("level", level)
	if args.err != nil {
		return nil, args.err
	}
	var out *C.rank_table_t
	if err := call(func() C.lodtensor_status_t { return C.rank_table_create(x.c(), l, &out) }); err != nil {
		return nil, err
	}
	r := &RankTable{h: out}
	runtime.SetFinalizer(r, (*RankTable).Close)
	return r, nil
}

// Close destroys the table. Idempotent.
func (r *RankTable) Close() error {
	if r == nil || r.h == nil {
		return nil
	}
	C.rank_table_destroy(r.h)
	r.h = nil
	runtime.SetFinalizer(r, nil)
	return nil
}

func (r *RankTable) size(f func(*C.rank_table_t, *C.size_t) C.lodtensor_status_t) (int, error) {
	var n C.size_t
	err := call(func() C.lodtensor_status_t { return f(r.c(), &n) })
	runtime.KeepAlive(r)
	return int(n), err
}

// Len is the number of ranked sequences.
func (r *RankTable) Len() (int, error) {
	return r.size(func(h *C.rank_table_t, n *C.size_t) C.lodtensor_status_t { return C.rank_table_size(h, n) })
}

// Level is the LoD level the table ranks.
func (r *RankTable) Level() (int, error) {
	return r.size(func(h *C.rank_table_t, n *C.size_t) C.lodtensor_status_t { return C.rank_table_level(h, n) })
}

// MaxSequenceLen is the longest length (0 for an empty table).
func (r *RankTable) MaxSequenceLen() (int, error) {
	return r.size(func(h *C.rank_table_t, n *C.size_t) C.lodtensor_status_t {
		return C.rank_table_max_sequence_len(h, n)
	})
}

// Items are the original indices and lengths of the sequences, longest first.
func (r *RankTable) Items() (indices, lengths []int, err error) {
	n, err := r.Len()
	if err != nil {
		return nil, nil, err
	}
	idx := make([]C.size_t, n)
	lens := make([]C.size_t, n)
	var got C.size_t
	err = call(func() C.lodtensor_status_t {
		return C.rank_table_items(r.c(), ptrOf(idx), ptrOf(lens), C.size_t(n), &got)
	})
	runtime.KeepAlive(r)
	if err != nil {
		return nil, nil, err
	}
	indices = make([]int, n)
	lengths = make([]int, n)
	for i := range idx {
		indices[i], lengths[i] = int(idx[i]), int(lens[i])
	}
	return indices, lengths, nil
}

// ShrinkRNNMemory is the state of the sequences still alive at step (zero copy).
func (r *RankTable) ShrinkRNNMemory(x *Tensor, step int) (*Tensor, error) {
	defer runtime.KeepAlive(r)
	defer runtime.KeepAlive(x)
	var args cArgs
	s := args.size("step", step)
	if args.err != nil {
		return nil, args.err
	}
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t {
		return C.rank_table_shrink_rnn_memory(r.c(), x.c(), s, out)
	})
}

// Reorder puts x's units (top-level sequences, or rows) in rank order.
func (r *RankTable) Reorder(x *Tensor) (*Tensor, error) {
	defer runtime.KeepAlive(r)
	defer runtime.KeepAlive(x)
	return handleOp(func(out **C.lodtensor_t) C.lodtensor_status_t { return C.rank_table_reorder(r.c(), x.c(), out) })
}
