package lodtensor

/*
#include <stdint.h>
#include <lodtensor.h>

// Defined in step.c.
extern lodtensor_status_t lodtensorgo_dynamic_rnn(const lodtensor_t *x, size_t level,
                                                  const lodtensor_t *init_state, uintptr_t handle,
                                                  lodtensor_t **out);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
)

// StepFunc is one step of a dynamic RNN: given the step's input (one unit per live sequence, in
// rank order) and the previous state of those sequences, it returns the step's output and the
// new state. A nil newState means "output is also the new state".
//
// input and prevState are lent for the call only: do not Close them (it does nothing) and do not
// keep them (they are emptied when the call returns; use Share to keep one). The returned tensors
// are handed to the library: they are empty afterwards (Close on them does nothing). Returning an
// error stops the RNN; DynamicRNN then returns an *Error with status CallbackFailed wrapping it
// (tensors returned along with an error are closed). A panic stops the RNN and is re-raised by
// DynamicRNN in the calling goroutine.
type StepFunc func(step int, input, prevState *Tensor) (output, newState *Tensor, err error)

type rnnContext struct {
	callbackState
	step StepFunc
}

// DynamicRNN runs a whole dynamic RNN over the sequences of LoD level level of x, starting from
// initState (one unit per sequence, original order), and returns the packed step outputs in the
// original order. step runs on the calling goroutine.
func DynamicRNN(x *Tensor, level int, initState *Tensor, step StepFunc) (*Tensor, error) {
	var args cArgs
	l := args.size("level", level)
	if args.err != nil {
		return nil, args.err
	}
	ctx := &rnnContext{step: step}
	handle := cgo.NewHandle(ctx)
	defer handle.Delete()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var out *C.lodtensor_t
	s := C.lodtensorgo_dynamic_rnn(x.c(), l, initState.c(), C.uintptr_t(handle), &out)
	runtime.KeepAlive(x)
	runtime.KeepAlive(initState)
	if err := ctx.result(s); err != nil {
		return nil, err
	}
	return newTensor(out), nil
}

//export lodtensorGoStep
func lodtensorGoStep(step C.size_t, input, prevState *C.lodtensor_t, output, newState **C.lodtensor_t,
	handle C.uintptr_t) (status C.int32_t) {
	ctx := cgo.Handle(handle).Value().(*rnnContext)
	in := &Tensor{h: input, borrowed: true}
	prev := &Tensor{h: prevState, borrowed: true}
	defer func() {
		in.h, prev.h = nil, nil
	}()
	defer ctx.catch(&status)
	o, ns, err := ctx.step(int(step), in, prev)
	if err != nil {
		o.Close()
		ns.Close()
		return ctx.fail(err)
	}
	*output = o.take()
	if ns == nil || ns == o {
		*newState = *output
	} else {
		*newState = ns.take()
	}
	return 0
}
