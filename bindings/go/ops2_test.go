package lodtensor_test

import (
	"math"
	"testing"

	lt "lodtensor.dev/lodtensor"
)

// tensor builds a tensor or fails the test; closed when the test ends.
func tensor[T lt.Element](t *testing.T, data []T, dims []int64, lod lt.LoD) *lt.Tensor {
	t.Helper()
	x := must[*lt.Tensor](t)(lt.NewTensor(data, dims, lod))
	t.Cleanup(func() { x.Close() })
	return x
}

// keeper: keep(op(...)) fails the test on an error, else closes the tensor when the test ends.
func keeper(t *testing.T) func(x *lt.Tensor, err error) *lt.Tensor {
	return func(x *lt.Tensor, err error) *lt.Tensor {
		t.Helper()
		ok(t, err)
		t.Cleanup(func() { x.Close() })
		return x
	}
}

func near(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
	for i := range got {
		if math.Abs(float64(got[i])-want[i]) > 1e-5 {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

func TestSequenceOps2(t *testing.T) {
	keep := keeper(t)
	x := tensor(t, []float32{1, 2, 3, 4, 5}, []int64{5, 1}, lt.Offsets([]int{0, 3, 5}))
	xs := tensor(t, []float32{1, 1, 1, 2, 2}, []int64{5, 1}, lt.Offsets([]int{0, 3, 5}))
	near(t, "softmax", floats(t, keep(lt.SequenceSoftmax(xs))), []float64{1. / 3, 1. / 3, 1. / 3, .5, .5})

	a := tensor(t, []float32{1, 2, 3}, []int64{3, 1}, lt.Offsets([]int{0, 1, 3}))
	b := tensor(t, []float32{10, 20, 30}, []int64{3, 1}, lt.Offsets([]int{0, 2, 3}))
	cat := keep(lt.SequenceConcat(a, b))
	eq(t, "concat", floats(t, cat), []float32{1, 10, 20, 2, 3, 30})
	eq(t, "concat LoD", must[[]int](t)(cat.LoDOffsets(0)), []int{0, 3, 6})

	sl := keep(lt.SequenceSlice(x, tensor(t, []int64{1, 0}, []int64{2, 1}, lt.LoD{}),
		tensor(t, []int64{2, 1}, []int64{2, 1}, lt.LoD{})))
	eq(t, "slice", floats(t, sl), []float32{2, 3, 4})
	eq(t, "slice LoD", must[[]int](t)(sl.LoDOffsets(0)), []int{0, 2, 3})

	eq(t, "reverse", floats(t, keep(lt.SequenceReverse(x))), []float32{3, 2, 1, 5, 4})

	mask := keep(lt.SequenceMask(tensor(t, []int64{2, 0, 3}, []int64{3}, lt.LoD{}), -1, lt.Int32))
	eq(t, "mask dims", must[[]int64](t)(mask.Dims()), []int64{3, 3})
	eq(t, "mask", must[[]int32](t)(lt.Data[int32](mask)), []int32{1, 1, 0, 0, 0, 0, 1, 1, 1})

	tok := tensor(t, []int64{1, 2, 3, 2, 5}, []int64{5, 1}, lt.Offsets([]int{0, 3, 5}))
	en := keep(lt.SequenceEnumerate(tok, 2, 0))
	eq(t, "enumerate", must[[]int64](t)(lt.Data[int64](en)), []int64{1, 2, 2, 3, 3, 0, 2, 5, 5, 0})
	er := keep(lt.SequenceErase(tok, []int64{2}))
	eq(t, "erase", must[[]int64](t)(lt.Data[int64](er)), []int64{1, 3, 5})
	eq(t, "erase LoD", must[[]int](t)(er.LoDOffsets(0)), []int{0, 2, 3})

	r := keep(lt.SequenceReshape(tensor(t, []float32{1, 2, 3, 4, 5, 6, 7, 8}, []int64{4, 2},
		lt.Offsets([]int{0, 2, 4})), 4))
	eq(t, "reshape dims", must[[]int64](t)(r.Dims()), []int64{2, 4})
	eq(t, "reshape LoD", must[[]int](t)(r.LoDOffsets(0)), []int{0, 1, 2})

	cx := tensor(t, []float32{1, 2, 3, 4, 5, 6}, []int64{3, 2}, lt.Offsets([]int{0, 3}))
	eye := tensor(t, []float32{1, 0, 0, 1}, []int64{2, 2}, lt.LoD{})
	eq(t, "conv identity", floats(t, keep(lt.SequenceConv(cx, eye, nil, 1, 0, 1, false))),
		[]float32{1, 2, 3, 4, 5, 6})
	// Rows (t-1, t) summed: out[t] = x[t-1] + x[t], zero before the sequence.
	sum2 := tensor(t, []float32{1, 0, 0, 1, 1, 0, 0, 1}, []int64{4, 2}, lt.LoD{})
	eq(t, "conv context 2", floats(t, keep(lt.SequenceConv(cx, sum2, nil, 2, -1, 1, false))),
		[]float32{1, 2, 4, 6, 8, 10})
}

func TestDenseOps(t *testing.T) {
	keep := keeper(t)
	eq(t, "fill", floats(t, keep(lt.Fill(lt.Float32, []int64{2, 2}, 1.5))), []float32{1.5, 1.5, 1.5, 1.5})
	_, err := lt.Fill(lt.Int32, []int64{1}, 0.5)
	wantError(t, err, lt.InvalidArgument, "value")
	c := keep(lt.Cast(tensor(t, []int32{1, -2, 3}, []int64{3}, lt.LoD{}), lt.Float64))
	eq(t, "cast", must[[]float64](t)(lt.Data[float64](c)), []float64{1, -2, 3})
	g := keep(lt.GatherRows(tensor(t, []float32{1, 2, 3}, []int64{3, 1}, lt.LoD{}),
		tensor(t, []int64{2, 0}, []int64{2}, lt.LoD{})))
	eq(t, "gather_rows", floats(t, g), []float32{3, 1})
	// Paddle's scatter example: x [[1,1],[2,2],[3,3]], index [2,1,0,1], updates [[1,1],[2,2],[3,3],[4,4]]:
	// overwrite (the last of row 1 wins) [[3,3],[4,4],[1,1]]; add [[1+3,1+3],[2+2+4,2+2+4],[3+1,3+1]].
	sx := tensor(t, []float32{1, 1, 2, 2, 3, 3}, []int64{3, 2}, lt.LoD{})
	si := tensor(t, []int64{2, 1, 0, 1}, []int64{4}, lt.LoD{})
	su := tensor(t, []float32{1, 1, 2, 2, 3, 3, 4, 4}, []int64{4, 2}, lt.LoD{})
	eq(t, "scatter_rows overwrite", floats(t, keep(lt.ScatterRows(sx, si, su, lt.ScatterOverwrite))), []float32{3, 3, 4, 4, 1, 1})
	eq(t, "scatter_rows add", floats(t, keep(lt.ScatterRows(sx, si, su, lt.ScatterAdd))), []float32{4, 4, 8, 8, 4, 4})
	_, err = lt.ScatterRows(sx, tensor(t, []int64{3}, []int64{1}, lt.LoD{}), tensor(t, []float32{0, 0}, []int64{1, 2}, lt.LoD{}), lt.ScatterAdd)
	wantError(t, err, lt.OutOfRange, "index[0] = 3")
	_, err = lt.ScatterRows(sx, si, su, 2)
	wantError(t, err, lt.InvalidArgument, "mode")
	near(t, "log_softmax", floats(t, keep(lt.LogSoftmax(tensor(t, []float32{0, 0}, []int64{1, 2}, lt.LoD{})))),
		[]float64{-math.Ln2, -math.Ln2})
	values, indices, err := lt.TopK(tensor(t, []float32{1, 3, 2}, []int64{1, 3}, lt.LoD{}), 2, true)
	ok(t, err)
	defer values.Close()
	defer indices.Close()
	eq(t, "topk values", floats(t, values), []float32{3, 2})
	eq(t, "topk indices", must[[]int64](t)(lt.Data[int64](indices)), []int64{1, 2})
}

func TestBeamBlocks(t *testing.T) {
	keep := keeper(t)
	// Spec §4.4 gather_tree.
	tree := keep(lt.BeamSearchGatherTree(
		tensor(t, []int64{2, 2, 6, 1, 3, 9, 6, 1, 0, 1, 9, 0}, []int64{3, 2, 2}, lt.LoD{}),
		tensor(t, []int64{0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1}, []int64{3, 2, 2}, lt.LoD{})))
	eq(t, "gather_tree", must[[]int64](t)(lt.Data[int64](tree)), []int64{2, 2, 1, 6, 3, 3, 6, 1, 0, 1, 9, 0})

	// One source with one prefix (token 5, score 0), log-probs [-1, -0.2, -3], beam 2: tokens 1
	// (-0.2) and 0 (-1), both extending prefix row 0.
	first := lt.Offsets([]int{0, 1}, []int{0, 1})
	preIDs := tensor(t, []int64{5}, []int64{1, 1}, first)
	preScores := tensor(t, []float32{0}, []int64{1, 1}, first)
	checkSel := func(what string, sel *lt.BeamSelection, err error) {
		t.Helper()
		ok(t, err)
		defer sel.Close()
		ids := must[[]int64](t)(lt.Data[int64](sel.IDs))
		scores := floats(t, sel.Scores)
		if len(ids) != 2 {
			t.Fatalf("%s: ids %v", what, ids)
		}
		i1 := 0 // the order within a prefix is the library's
		if ids[0] != 1 {
			i1 = 1
		}
		if ids[i1] != 1 || ids[1-i1] != 0 || math.Abs(float64(scores[i1])+0.2) > 1e-6 || math.Abs(float64(scores[1-i1])+1) > 1e-6 {
			t.Errorf("%s: ids %v scores %v", what, ids, scores)
		}
		eq(t, what+" parents", must[[]int32](t)(lt.Data[int32](sel.ParentIdx)), []int32{0, 0})
	}
	sel, err := lt.BeamSearchFusedStep(preIDs, preScores, tensor(t, []float32{-1, -0.2, -3}, []int64{1, 3}, lt.LoD{}), 2, 9)
	checkSel("fused step", sel, err)
	sel, err = lt.BeamSearchStep(preIDs, preScores, tensor(t, []int64{1, 0}, []int64{1, 2}, first),
		tensor(t, []float32{-0.2, -1}, []int64{1, 2}, first), 0, 2, 9, true)
	checkSel("step", sel, err)

	g := keep(lt.BeamSearchGatherState(tensor(t, []float32{10, 20}, []int64{2, 1}, lt.LoD{}),
		tensor(t, []int64{1, 1, 0}, []int64{3}, lt.LoD{})))
	eq(t, "gather_state", floats(t, g), []float32{20, 20, 10})

	a := tensor(t, []float32{10, 20}, []int64{2, 1}, lt.LoD{})
	b := tensor(t, []int32{7, 8, 9}, []int64{3}, lt.LoD{})
	both, err := lt.BeamSearchGatherStates([]*lt.Tensor{a, b}, tensor(t, []int64{1, 1, 0}, []int64{3}, lt.LoD{}))
	if err != nil || len(both) != 2 {
		t.Fatalf("gather_states: %v, %d results", err, len(both))
	}
	eq(t, "gather_states 0", floats(t, keep(both[0], nil)), []float32{20, 20, 10})
	eq(t, "gather_states 1", must[[]int32](t)(lt.Data[int32](keep(both[1], nil))), []int32{8, 8, 7})
	_, err = lt.BeamSearchGatherStates([]*lt.Tensor{b, a}, tensor(t, []int64{2}, []int64{1}, lt.LoD{}))
	wantError(t, err, lt.OutOfRange, "states[1]")
}
