package lodtensor_test

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"testing"

	lt "lodtensor.dev/lodtensor"
)

func TestBeamSearchDecodeWorkedExample(t *testing.T) {
	// Spec §4.3: beam_size 2, end_id 1, 2 sources, 5 steps; scores equal the ids.
	steps := []struct {
		l0, l1 []int
		ids    []int64
	}{
		{[]int{0, 1, 2}, []int{0, 1, 2}, []int64{0, 0}},
		{[]int{0, 1, 2}, []int{0, 2, 4}, []int64{2, 3, 4, 5}},
		{[]int{0, 2, 4}, []int{0, 2, 2, 4, 4}, []int64{3, 1, 5, 4}},
		{[]int{0, 2, 4}, []int{0, 1, 2, 3, 4}, []int64{1, 1, 3, 5}},
		{[]int{0, 2, 4}, []int{0, 0, 0, 2, 2}, []int64{5, 1}},
	}
	ids := must[*lt.TensorArray](t)(lt.NewTensorArray())
	defer ids.Close()
	scores := must[*lt.TensorArray](t)(lt.NewTensorArray())
	defer scores.Close()
	for i, s := range steps {
		f := make([]float32, len(s.ids))
		for j, v := range s.ids {
			f[j] = float32(v)
		}
		dims := []int64{int64(len(s.ids)), 1}
		it := must[*lt.Tensor](t)(lt.NewTensor(s.ids, dims, lt.Offsets(s.l0, s.l1)))
		st := must[*lt.Tensor](t)(lt.NewTensor(f, dims, lt.Offsets(s.l0, s.l1)))
		ok(t, ids.Write(i, it, false))
		ok(t, scores.Write(i, st, false))
		it.Close()
		st.Close()
	}
	sid, ssc, err := lt.BeamSearchDecode(ids, scores, 2, 1)
	ok(t, err)
	defer sid.Close()
	defer ssc.Close()
	want := []int64{0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1}
	eq(t, "sentence LoD 0", must[[]int](t)(sid.LoDOffsets(0)), []int{0, 2, 4})
	eq(t, "sentence LoD 1", must[[]int](t)(sid.LoDOffsets(1)), []int{0, 4, 7, 12, 17})
	eq(t, "sentence ids", must[[]int64](t)(lt.Data[int64](sid)), want)
	wantScores := make([]float32, len(want))
	for i, v := range want {
		wantScores[i] = float32(v)
	}
	eq(t, "sentence scores", floats(t, ssc), wantScores)
}

// The toy model: tokens 0 = start, 1 = end, 2, 3; the next token's log-probability depends on
// the source and the last token only (row 1 is never used: ended prefixes are not extended).
var table = [2][4][4]float64{
	{{math.Inf(-1), -1.2137, -0.4131, -0.9377}, {}, {math.Inf(-1), -0.7219, -1.1043, -0.8311},
		{math.Inf(-1), -0.5077, -1.3359, -1.6123}},
	{{math.Inf(-1), -0.3071, -1.5233, -1.1189}, {}, {math.Inf(-1), -0.9463, -0.6007, -1.4251},
		{math.Inf(-1), -1.0391, -0.2113, -2.0447}},
}

type sentence struct {
	tokens []int64
	score  float64
}

// exhaustive: every sentence of source s of at most maxLen tokens (ending with 1, or cut at
// maxLen) without the banned token, best first, the first n. With a beam wider than every
// candidate set the decoder prunes nothing, so it must find exactly these.
func exhaustive(s, maxLen int, banned int64, n int) []sentence {
	var all []sentence
	open := []sentence{{nil, 0}}
	for l := 1; l <= maxLen; l++ {
		var next []sentence
		for _, p := range open {
			last := int64(0)
			if len(p.tokens) > 0 {
				last = p.tokens[len(p.tokens)-1]
			}
			for tok := int64(1); tok < 4; tok++ {
				if tok == banned {
					continue
				}
				q := sentence{append(append([]int64(nil), p.tokens...), tok), p.score + table[s][last][tok]}
				if tok == 1 || l == maxLen {
					all = append(all, q)
				} else {
					next = append(next, q)
				}
			}
		}
		open = next
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].score > all[j].score })
	if len(all) > n {
		all = all[:n]
	}
	return all
}

func checkDecoded(t *testing.T, ids, scores *lt.Tensor, banned int64) {
	t.Helper()
	var wantIDs []int64
	var wantScores []float64
	l0, l1 := []int{0}, []int{0}
	for s := 0; s < 2; s++ {
		for _, sen := range exhaustive(s, 3, banned, 5) {
			wantIDs = append(wantIDs, sen.tokens...)
			l1 = append(l1, len(wantIDs))
			wantScores = append(wantScores, sen.score)
		}
		l0 = append(l0, len(l1)-1)
	}
	eq(t, "LoD 0", must[[]int](t)(ids.LoDOffsets(0)), l0)
	eq(t, "LoD 1", must[[]int](t)(ids.LoDOffsets(1)), l1)
	eq(t, "ids", must[[]int64](t)(lt.Data[int64](ids)), wantIDs)
	got := floats(t, scores)
	if len(got) != len(wantScores) {
		t.Fatalf("%d scores, want %d", len(got), len(wantScores))
	}
	for i := range got {
		if math.Abs(float64(got[i])-wantScores[i]) > 1e-4 {
			t.Errorf("score %d: got %v, want %v", i, got[i], wantScores[i])
		}
	}
}

func TestDecoderWithGoModel(t *testing.T) {
	o := lt.DefaultDecoderOptions()
	eq(t, "default beam size", o.BeamSize, 4)
	o.VocabSize, o.StartID, o.EndID = 4, 0, 1
	o.BeamSize, o.MaxLength, o.NumHypotheses = 16, 3, 5 // a beam wider than any candidate set
	dec := must[*lt.Decoder](t)(lt.NewDecoder(o))
	defer dec.Close()

	calls := 0
	model := func(st *lt.BeamStep, logProbs []float32) error {
		if st.Step != calls || st.NumSources != 2 || st.VocabSize != 4 || st.SourceOffsets[2] != len(st.IDs) {
			t.Errorf("step %d: unexpected info %+v", calls, st)
		}
		if st.Step == 0 {
			eq(t, "step 0 parents are the sources", st.ParentIdx, []int64{0, 1})
		}
		calls++
		for s := 0; s < 2; s++ {
			for p := st.SourceOffsets[s]; p < st.SourceOffsets[s+1]; p++ {
				for v := 0; v < 4; v++ {
					logProbs[p*4+v] = float32(table[s][st.IDs[p]][v])
				}
			}
		}
		return nil
	}
	ids, scores, err := dec.Run(2, model, nil)
	ok(t, err)
	eq(t, "model calls", calls, 3)
	checkDecoded(t, ids, scores, -1)
	ids.Close()
	scores.Close()

	// An edit function banning token 3.
	calls = 0
	ids, scores, err = dec.Run(2, model, func(st *lt.BeamStep, logProbs []float32) error {
		for p := range st.IDs {
			logProbs[p*st.VocabSize+3] = float32(math.Inf(-1))
		}
		return nil
	})
	ok(t, err)
	checkDecoded(t, ids, scores, 3)
	ids.Close()
	scores.Close()

	// A Go error stops decoding: CallbackFailed wrapping it.
	boom := errors.New("model failed")
	calls = 0
	_, _, err = dec.Run(2, func(st *lt.BeamStep, logProbs []float32) error {
		if st.Step == 1 {
			return boom
		}
		return model(st, logProbs)
	}, nil)
	wantError(t, err, lt.CallbackFailed, "step 1")
	if !errors.Is(err, boom) {
		t.Errorf("the model's error is not wrapped: %v", err)
	}
	// A panic comes back out in the calling goroutine.
	func() {
		defer func() {
			if r := recover(); r != "model panic" {
				t.Errorf("recovered %v, want the model's panic", r)
			}
		}()
		_, _, _ = dec.Run(2, func(*lt.BeamStep, []float32) error { panic("model panic") }, nil)
	}()
	calls = 0
	_, _, err = dec.Run(0, model, nil)
	wantError(t, err, lt.InvalidArgument, "num_sources")
	_, _, err = dec.Run(2, nil, nil)
	wantError(t, err, lt.NullArgument, "step_fn")
	o.VocabSize = 0
	_, err = lt.NewDecoder(o)
	wantError(t, err, lt.InvalidArgument, "vocab_size")
	// As a size_t, -1 would be huge: MaxLength -1 no limit at all.
	o.VocabSize = 4
	for name, field := range map[string]*int{"beam_size": &o.BeamSize, "vocab_size": &o.VocabSize,
		"max_length": &o.MaxLength, "min_length": &o.MinLength, "num_hypotheses": &o.NumHypotheses} {
		old := *field
		*field = -1
		_, err = lt.NewDecoder(o)
		wantError(t, err, lt.InvalidArgument, "options."+name+": -1 is negative")
		*field = old
	}
	_, _, err = dec.Run(-1, model, nil)
	wantError(t, err, lt.InvalidArgument, "num_sources: -1 is negative")
	ok(t, dec.Close())
	ok(t, dec.Close())
	_, _, err = dec.Run(2, model, nil)
	wantError(t, err, lt.NullArgument, "decoder")
}

// toyLogProbs is a deterministic toy model: the log-prob of token v after prefix p depends on its
// last token, its parent and the step; token 1 (end) is attractive for some prefixes.
func toyLogProbs(st *lt.BeamStep) []float32 {
	lp := make([]float32, len(st.IDs)*st.VocabSize)
	for p := range st.IDs {
		for v := 0; v < st.VocabSize; v++ {
			h := uint64(st.IDs[p])*2654435761 + uint64(st.ParentIdx[p])*40503 + uint64(v)*9973 + uint64(st.Step)*131
			h ^= h >> 13
			h = (h * 0x5bd1e995) & 0xffffffff
			h ^= h >> 15
			if v == 1 && h%3 == 0 {
				lp[p*st.VocabSize+v] = -0.05 * float32(h%5)
			} else {
				lp[p*st.VocabSize+v] = -float32(h%777) / 101
			}
		}
	}
	return lp
}

// toyTensor is toyLogProbs as a [prefixes, vocab] tensor of dtype (rounded to nearest even).
func toyTensor(st *lt.BeamStep, dtype lt.DType) (*lt.Tensor, error) {
	t, err := lt.NewTensor(toyLogProbs(st), []int64{int64(len(st.IDs)), int64(st.VocabSize)}, lt.LoD{})
	if err != nil || dtype == lt.Float32 {
		return t, err
	}
	defer t.Close()
	return lt.Cast(t, dtype)
}

func sameTensors(t *testing.T, what string, got, want *lt.Tensor) {
	t.Helper()
	for l := 0; l < 2; l++ {
		g, _ := got.LoDOffsets(l)
		w, _ := want.LoDOffsets(l)
		eq(t, what+" LoD", g, w)
	}
	if gd, _ := got.DType(); gd == lt.Int64 {
		eq(t, what, must[[]int64](t)(lt.Data[int64](got)), must[[]int64](t)(lt.Data[int64](want)))
	} else {
		eq(t, what, floats(t, got), floats(t, want))
	}
}

func TestDecoderRunTensors(t *testing.T) {
	o := lt.DefaultDecoderOptions()
	o.VocabSize, o.StartID, o.EndID = 9, 0, 1
	o.BeamSize, o.NumHypotheses, o.MinLength, o.MaxLength = 4, 3, 2, 6
	dec := must[*lt.Decoder](t)(lt.NewDecoder(o))
	defer dec.Close()
	bfloat16 := lt.DType{Code: 4, Bits: 16, Lanes: 1}
	devices, err := lt.CUDADeviceCount()
	if err != nil {
		devices = 0
		t.Log("CUDA part skipped: no CUDA device")
	}
	for _, dtype := range []lt.DType{lt.Float32, bfloat16} {
		// The host decoder fed the same values through the same rounding.
		wantIDs, wantScores, err := dec.Run(3, func(st *lt.BeamStep, logProbs []float32) error {
			x, err := toyTensor(st, dtype)
			if err != nil {
				return err
			}
			defer x.Close()
			back, err := lt.Cast(x, lt.Float32)
			if err != nil {
				return err
			}
			defer back.Close()
			copy(logProbs, floats(t, back))
			return nil
		}, nil)
		ok(t, err)
		eq(t, "sentences", must[int](t)(wantScores.NumEl()), 9)
		places := []lt.Place{lt.CPU}
		if devices > 0 {
			places = append(places, lt.CUDA(0))
		}
		for _, place := range places {
			var kept *lt.Tensor
			ids, scores, err := dec.RunTensors(3, func(st *lt.BeamStep) (*lt.Tensor, error) {
				// The parents on the device after a step there (int32, ParentIdx's values); none
				// at step 0 or on the host.
				if (st.ParentIdxTensor != nil) != (place != lt.CPU && st.Step > 0) {
					return nil, fmt.Errorf("step %d on %v: ParentIdxTensor %v", st.Step, place, st.ParentIdxTensor)
				}
				if st.ParentIdxTensor != nil {
					host, err := st.ParentIdxTensor.ToPlace(lt.CPU)
					if err != nil {
						return nil, err
					}
					parents, err := lt.Data[int32](host)
					if err != nil {
						return nil, err
					}
					for i, p := range parents {
						if int64(p) != st.ParentIdx[i] {
							return nil, fmt.Errorf("step %d: parent %d is %d, ParentIdx says %d", st.Step, i, p, st.ParentIdx[i])
						}
					}
					host.Close()
				}
				x, err := toyTensor(st, dtype)
				if err != nil || place == lt.CPU {
					return x, err
				}
				defer x.Close()
				return x.ToPlace(place)
			})
			ok(t, err)
			sameTensors(t, "ids", ids, wantIDs)
			sameTensors(t, "scores", scores, wantScores)
			ids.Close()
			scores.Close()
			// A tensor the model keeps, handed over as a share.
			ids, scores, err = dec.RunTensors(3, func(st *lt.BeamStep) (*lt.Tensor, error) {
				kept.Close()
				var e error
				if kept, e = toyTensor(st, dtype); e != nil {
					return nil, e
				}
				return kept.Share()
			})
			ok(t, err)
			sameTensors(t, "ids (shared)", ids, wantIDs)
			eq(t, "kept tensor still open", must[int](t)(kept.NumEl()) > 0, true)
			kept.Close()
			ids.Close()
			scores.Close()
		}
		wantIDs.Close()
		wantScores.Close()
	}

	boom := errors.New("model failed")
	_, _, err = dec.RunTensors(2, func(st *lt.BeamStep) (*lt.Tensor, error) {
		if st.Step == 1 {
			return nil, boom
		}
		return toyTensor(st, lt.Float32)
	})
	wantError(t, err, lt.CallbackFailed, "step 1")
	if !errors.Is(err, boom) {
		t.Errorf("the model's error is not wrapped: %v", err)
	}
	func() {
		defer func() {
			if r := recover(); r != "model panic" {
				t.Errorf("recovered %v, want the model's panic", r)
			}
		}()
		_, _, _ = dec.RunTensors(2, func(*lt.BeamStep) (*lt.Tensor, error) { panic("model panic") })
	}()
	_, _, err = dec.RunTensors(2, func(*lt.BeamStep) (*lt.Tensor, error) { return nil, nil })
	wantError(t, err, lt.InvalidArgument, "out_log_probs")
	_, _, err = dec.RunTensors(2, func(st *lt.BeamStep) (*lt.Tensor, error) {
		return lt.NewTensor(make([]float64, len(st.IDs)*st.VocabSize), []int64{int64(len(st.IDs)), int64(st.VocabSize)}, lt.LoD{})
	})
	wantError(t, err, lt.Unsupported, "log_probs")
	_, _, err = dec.RunTensors(2, func(st *lt.BeamStep) (*lt.Tensor, error) {
		return lt.NewTensor(toyLogProbs(st), []int64{int64(len(st.IDs) * st.VocabSize)}, lt.LoD{})
	})
	wantError(t, err, lt.InvalidArgument, "dims")
	_, _, err = dec.RunTensors(0, func(st *lt.BeamStep) (*lt.Tensor, error) { return toyTensor(st, lt.Float32) })
	wantError(t, err, lt.InvalidArgument, "num_sources")
	_, _, err = dec.RunTensors(-1, func(st *lt.BeamStep) (*lt.Tensor, error) { return toyTensor(st, lt.Float32) })
	wantError(t, err, lt.InvalidArgument, "num_sources: -1 is negative")
	_, _, err = dec.RunTensors(2, nil)
	wantError(t, err, lt.NullArgument, "step_fn")
}
