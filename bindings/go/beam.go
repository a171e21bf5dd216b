package lodtensor

/*
#include <stdint.h>
#include <lodtensor.h>

// Defined in step.c.
extern lodtensor_status_t lodtensorgo_decoder_run(const beam_search_decoder_t *decoder, size_t num_sources,
                                                  int with_edit, uintptr_t handle, lodtensor_t **out_ids,
                                                  lodtensor_t **out_scores);
extern lodtensor_status_t lodtensorgo_decoder_run_tensors(const beam_search_decoder_t *decoder, size_t num_sources,
                                                          uintptr_t handle, lodtensor_t **out_ids,
                                                          lodtensor_t **out_scores);
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"unsafe"
)

// BeamSearchDecode is Paddle's beam_search_decode: it backtracks the steps' ids and scores arrays
// into beamSize sentences per source (ids int64, LoD [source -> sentences, sentence -> tokens]).
func BeamSearchDecode(ids, scores *TensorArray, beamSize int, endID int64) (sentenceIDs, sentenceScores *Tensor, err error) {
	defer runtime.KeepAlive(ids)
	defer runtime.KeepAlive(scores)
	var args cArgs
	beam := args.size("beam_size", beamSize)
	if args.err != nil {
		return nil, nil, args.err
	}
	return handlePair(func(a, b **C.lodtensor_t) C.lodtensor_status_t {
		return C.beam_search_decode(ids.c(), scores.c(), beam, C.int64_t(endID), a, b)
	})
}

// DecoderOptions configure a Decoder (see beam_search_decoder_options_t).
type DecoderOptions struct {
	BeamSize      int     // prefixes kept per source
	VocabSize     int     // tokens of the model's output (must be set)
	StartID       int64   // the token every prefix starts from
	EndID         int64   // the token that ends a sentence
	MaxLength     int     // the most tokens per sentence
	MinLength     int     // end_id is banned while a prefix is shorter
	LengthPenalty float64 // ranking: score / ((5 + length) / 6)^LengthPenalty
	NumHypotheses int     // sentences returned per source
}

// DefaultDecoderOptions are the library's defaults (VocabSize 0 must still be set).
func DefaultDecoderOptions() DecoderOptions {
	var o C.beam_search_decoder_options_t
	C.beam_search_decoder_options_init(&o) // cannot fail with a valid pointer
	return DecoderOptions{
		BeamSize: int(o.beam_size), VocabSize: int(o.vocab_size), StartID: int64(o.start_id),
		EndID: int64(o.end_id), MaxLength: int(o.max_length), MinLength: int(o.min_length),
		LengthPenalty: float64(o.length_penalty), NumHypotheses: int(o.num_hypotheses),
	}
}

// Decoder is a beam-search decoder around the caller's model, owning one C handle. It is
// immutable: any number of goroutines may run one decoder at once.
type Decoder struct {
	h *C.beam_search_decoder_t
}

// NewDecoder creates a decoder.
func NewDecoder(o DecoderOptions) (*Decoder, error) {
	var c C.beam_search_decoder_options_t
	C.beam_search_decoder_options_init(&c)
	var args cArgs
	c.beam_size, c.vocab_size = args.size("options.beam_size", o.BeamSize), args.size("options.vocab_size", o.VocabSize)
	c.start_id, c.end_id = C.int64_t(o.StartID), C.int64_t(o.EndID)
	c.max_length, c.min_length = args.size("options.max_length", o.MaxLength), args.size("options.min_length", o.MinLength)
	c.length_penalty, c.num_hypotheses = C.double(o.LengthPenalty), args.size("options.num_hypotheses", o.NumHypotheses)
	if args.err != nil {
		return nil, args.err
	}
	var out *C.beam_search_decoder_t
	if err := call(func() C.lodtensor_status_t { return C.beam_search_decoder_create(&c, &out) }); err != nil {
		return nil, err
	}
	d := &Decoder{h: out}
	runtime.SetFinalizer(d, (*Decoder).Close)
	return d, nil
}

// Close destroys the decoder. Idempotent.
func (d *Decoder) Close() error {
	if d == nil || d.h == nil {
		return nil
	}
	C.beam_search_decoder_destroy(d.h)
	d.h = nil
	runtime.SetFinalizer(d, nil)
	return nil
}

func (d *Decoder) c() *C.beam_search_decoder_t {
	if d == nil {
		return nil
	}
	return d.h
}

// BeamStep is what a decoder callback sees at one step. The slices are views of the library's
// memory, valid only during the call.
type BeamStep struct {
	Step          int
	NumSources    int
	SourceOffsets []int     // NumSources+1: source s owns prefixes SourceOffsets[s] .. SourceOffsets[s+1]
	IDs           []int64   // the last token of each live prefix
	ParentIdx     []int64   // the previous step's prefix each extends (the source index at step 0)
	Scores        []float32 // cumulative log-probabilities
	VocabSize     int
	// ParentIdxTensor: in RunTensors, after a step on a CUDA device, ParentIdx as an int32 tensor
	// there (BeamSearchGatherStates then reorders state on the device without an upload); closed
	// after the call (Share() keeps it). nil otherwise.
	ParentIdxTensor *Tensor
}

// DecoderFunc is a decoder callback: it fills (step function) or changes (edit function)
// logProbs, the next-token log-probabilities of the live prefixes (len(IDs) x VocabSize,
// row-major; a view valid only during the call). An error stops decoding.
type DecoderFunc func(step *BeamStep, logProbs []float32) error

type decoderContext struct {
	callbackState
	fns [2]DecoderFunc
}

// Run decodes numSources sentences around the model: step fills the log-probabilities each
// step; edit (may be nil) may then change them. It returns the best sentences per source (ids
// int64, LoD [source -> sentences, sentence -> tokens], best first, without the start token)
// and their scores (float32). An error from a callback comes back as an *Error with status
// CallbackFailed wrapping it; a panic is re-raised here.
func (d *Decoder) Run(numSources int, step, edit DecoderFunc) (ids, scores *Tensor, err error) {
	var args cArgs
	sources := args.size("num_sources", numSources)
	if args.err != nil {
		return nil, nil, args.err
	}
	ctx := &decoderContext{fns: [2]DecoderFunc{step, edit}}
	handle := cgo.NewHandle(ctx)
	defer handle.Delete()
	withEdit := C.int(0)
	if edit != nil {
		withEdit = 1
	}
	if step == nil { // the library reports the NULL step function
		return handlePair(func(a, b **C.lodtensor_t) C.lodtensor_status_t {
			return C.beam_search_decoder_run(d.c(), sources, nil, nil, nil, a, b)
		})
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b *C.lodtensor_t
	s := C.lodtensorgo_decoder_run(d.c(), sources, withEdit, C.uintptr_t(handle), &a, &b)
	runtime.KeepAlive(d)
	if err := ctx.result(s); err != nil {
		return nil, nil, err
	}
	return newTensor(a), newTensor(b), nil
}

//export lodtensorGoBeamStep
func lodtensorGoBeamStep(info *C.beam_search_step_info_t, logProbs *C.float, handle C.uintptr_t, which C.int) (status C.int32_t) {
	ctx := cgo.Handle(handle).Value().(*decoderContext)
	defer ctx.catch(&status)
	st := beamStepOf(info)
	n := len(st.IDs) * st.VocabSize
	if err := ctx.fns[which](st, unsafe.Slice((*float32)(unsafe.Pointer(logProbs)), n)); err != nil {
		return ctx.fail(err)
	}
	return 0
}

// beamStepOf is the Go view of a step's prefixes (slices into the library's memory).
func beamStepOf(info *C.beam_search_step_info_t) *BeamStep {
	p := int(info.num_prefixes)
	offsets := make([]int, int(info.num_sources)+1)
	for i, o := range unsafe.Slice(info.source_offsets, len(offsets)) {
		offsets[i] = int(o)
	}
	return &BeamStep{
		Step:          int(info.step),
		NumSources:    int(info.num_sources),
		SourceOffsets: offsets,
		IDs:           unsafe.Slice((*int64)(unsafe.Pointer(info.ids)), p),
		ParentIdx:     unsafe.Slice((*int64)(unsafe.Pointer(info.parent_idx)), p),
		Scores:        unsafe.Slice((*float32)(unsafe.Pointer(info.scores)), p),
		VocabSize:     int(info.vocab_size),
	}
}

// TensorModel is a decoder callback of RunTensors: it returns the next-token log-probabilities
// of the live prefixes as a new [len(IDs), VocabSize] tensor, float32, float16 or bfloat16, on
// the host or on a CUDA device (see beam_search_tensor_step_fn). The decoder takes the tensor
// over: it is empty (closed) after the call, so return a Share() of a tensor the model keeps. An
// error stops decoding (a tensor returned with it is closed).
type TensorModel func(step *BeamStep) (*Tensor, error)

type tensorDecoderContext struct {
	callbackState
	fn TensorModel
}

// RunTensors decodes numSources sentences around a model that returns its log-probabilities as
// a tensor (beam_search_decoder_run_tensors): where that tensor lives on a CUDA device, the step's
// selection runs there and the log-probs never go through the host. Results as for Run. An error
// from the model comes back as an *Error with status CallbackFailed wrapping it; a panic is
// re-raised here; a tensor of the wrong dims or dtype is an *Error of the library.
func (d *Decoder) RunTensors(numSources int, step TensorModel) (ids, scores *Tensor, err error) {
	var args cArgs
	sources := args.size("num_sources", numSources)
	if args.err != nil {
		return nil, nil, args.err
	}
	if step == nil { // the library reports the NULL step function
		return handlePair(func(a, b **C.lodtensor_t) C.lodtensor_status_t {
			return C.beam_search_decoder_run_tensors(d.c(), sources, nil, nil, a, b)
		})
	}
	ctx := &tensorDecoderContext{fn: step}
	handle := cgo.NewHandle(ctx)
	defer handle.Delete()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var a, b *C.lodtensor_t
	s := C.lodtensorgo_decoder_run_tensors(d.c(), sources, C.uintptr_t(handle), &a, &b)
	runtime.KeepAlive(d)
	if err := ctx.result(s); err != nil {
		return nil, nil, err
	}
	return newTensor(a), newTensor(b), nil
}

//export lodtensorGoBeamTensorStep
func lodtensorGoBeamTensorStep(info *C.beam_search_step_info_t, out **C.lodtensor_t, handle C.uintptr_t) (status C.int32_t) {
	ctx := cgo.Handle(handle).Value().(*tensorDecoderContext)
	defer ctx.catch(&status)
	st := beamStepOf(info)
	if info.parent_idx_tensor != nil {
		var h *C.lodtensor_t
		if s := C.lodtensor_share(info.parent_idx_tensor, &h); s != C.LODTENSOR_OK {
			return ctx.fail(lastError(s))
		}
		st.ParentIdxTensor = newTensor(h)
		defer st.ParentIdxTensor.Close()
	}
	lp, err := ctx.fn(st)
	if err != nil {
		lp.Close()
		return ctx.fail(err)
	}
	*out = lp.take()
	return 0
}
