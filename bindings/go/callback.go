package lodtensor

/*
#include <stdint.h>
#include <lodtensor.h>
*/
import "C"

import "errors"

// callbackState is what a Go callback run by the library leaves for the call that started it:
// the error it returned, and a panic to re-raise there (a panic must not unwind through the
// library's frames).
type callbackState struct {
	err      error
	panicked bool
	panicVal any
}

// catch, deferred by every exported callback, records a panic and makes the callback return -1.
func (c *callbackState) catch(status *C.int32_t) {
	if r := recover(); r != nil {
		c.panicked, c.panicVal = true, r
		*status = -1
	}
}

// fail records the callback's error and returns the status it hands the library: a library
// error's own status (so the message names it), else -1.
func (c *callbackState) fail(err error) C.int32_t {
	c.err = err
	var e *Error
	if errors.As(err, &e) && e.Status != OK {
		return C.int32_t(e.Status)
	}
	return -1
}

// result, on the calling goroutine once the library returned s, re-raises the callback's panic,
// else turns s into an error (CallbackFailed wrapping the callback's error). The caller holds the
// OS thread.
func (c *callbackState) result(s C.lodtensor_status_t) error {
	if c.panicked {
		panic(c.panicVal)
	}
	if s == C.LODTENSOR_OK {
		return nil
	}
	e := lastError(s)
	if e.Status == CallbackFailed {
		e.Err = c.err
	}
	return e
}
