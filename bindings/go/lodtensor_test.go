package lodtensor_test

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"unsafe"

	lt "lodtensor.dev/lodtensor"
	"lodtensor.dev/lodtensor/internal/arrowc"
)

// must fails the test on an error and returns the value.
func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func ok(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

// wantError checks that err is an *lt.Error with the status and a message containing substr.
func wantError(t *testing.T, err error, status lt.Status, substr string) {
	t.Helper()
	var e *lt.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want an *lt.Error with status %v", err, status)
	}
	if e.Status != status || !strings.Contains(e.Message, substr) {
		t.Errorf("got status %v message %q, want %v containing %q", e.Status, e.Message, status, substr)
	}
}

func floats(t *testing.T, x *lt.Tensor) []float32 { return must[[]float32](t)(lt.Data[float32](x)) }

// err2 and err3 are the error of a call with two or three results.
func err2(_ any, err error) error    { return err }
func err3(_, _ any, err error) error { return err }

func iota(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i)
	}
	return v
}

// A bool byte other than 0 and 1, which the library keeps as given, is a proper Go true in Data.
func TestDataOfBoolBytes(t *testing.T) {
	b := []byte{2, 1, 0, 255}
	x := must[*lt.Tensor](t)(lt.NewTensorBytes(lt.Bool, []int64{4}, unsafe.Pointer(&b[0]), len(b), lt.LoD{}))
	defer x.Close()
	v := must[[]bool](t)(lt.Data[bool](x))
	eq(t, "bools", v, []bool{true, true, false, true})
	if !(v[0] == v[1] && v[3] == v[1]) || *(*byte)(unsafe.Pointer(&v[0])) != 1 {
		t.Errorf("Data[bool] kept a byte other than 1 for true: %v", *(*[4]byte)(unsafe.Pointer(&v[0])))
	}
}

func TestCreateAndRead(t *testing.T) {
	// Spec §1.2: lengths [[2,1],[2,2,3]] are offsets [[0,2,3],[0,2,4,7]], shape [7, 2].
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(14), []int64{7, 2}, lt.Lengths([]int{2, 1}, []int{2, 2, 3})))
	defer x.Close()
	eq(t, "dims", must[[]int64](t)(x.Dims()), []int64{7, 2})
	eq(t, "numel", must[int](t)(x.NumEl()), 14)
	eq(t, "nbytes", must[int](t)(x.NBytes()), 56)
	eq(t, "dtype", must[lt.DType](t)(x.DType()), lt.Float32)
	eq(t, "place", must[lt.Place](t)(x.Place()), lt.Place{DeviceType: 1, DeviceID: 0})
	eq(t, "levels", must[int](t)(x.LoDLevels()), 2)
	eq(t, "level 0", must[[]int](t)(x.LoDOffsets(0)), []int{0, 2, 3})
	eq(t, "level 1", must[[]int](t)(x.LoDOffsets(1)), []int{0, 2, 4, 7})
	eq(t, "lengths", must[[]int](t)(x.LoDLengths(1)), []int{2, 2, 3})
	b, e, err := x.SequenceRows(0, 1)
	ok(t, err)
	eq(t, "rows of paragraph 1", []int{b, e}, []int{4, 7})
	eq(t, "data", floats(t, x), iota(14))

	// Zero-copy views: a write through one handle is seen through a share, not a copy.
	share := must[*lt.Tensor](t)(x.Share())
	defer share.Close()
	cp := must[*lt.Tensor](t)(x.Copy())
	defer cp.Close()
	w := must[[]float32](t)(lt.MutableView[float32](x))
	w[0] = 42
	runtime.KeepAlive(x)
	eq(t, "share sees the write", floats(t, share)[0], float32(42))
	eq(t, "copy does not", floats(t, cp)[0], float32(0))

	ok(t, x.SetLoD(lt.Offsets([]int{0, 7})))
	eq(t, "new LoD", must[[]int](t)(x.LoDOffsets(0)), []int{0, 7})
	ok(t, x.ClearLoD())
	eq(t, "no LoD", must[int](t)(x.LoDLevels()), 0)

	// Other element types.
	ints := must[*lt.Tensor](t)(lt.NewTensor([]int64{5, -6, 7}, []int64{3}, lt.LoD{}))
	defer ints.Close()
	eq(t, "int64", must[[]int64](t)(lt.Data[int64](ints)), []int64{5, -6, 7})
	flags := must[*lt.Tensor](t)(lt.NewTensor([]bool{true, false}, []int64{2}, lt.LoD{}))
	defer flags.Close()
	eq(t, "bool", must[[]bool](t)(lt.Data[bool](flags)), []bool{true, false})
	empty := must[*lt.Tensor](t)(lt.NewTensor([]float32{}, []int64{0, 2}, lt.LoD{}))
	defer empty.Close()
	eq(t, "empty dims", must[[]int64](t)(empty.Dims()), []int64{0, 2})
	eq(t, "empty data", len(floats(t, empty)), 0)
	_, err = lt.Data[float64](ints)
	wantError(t, err, lt.InvalidArgument, "dtype")
}

func TestSliceSplitMergeReset(t *testing.T) {
	// Spec §1.5: paragraph 1 of a 3-level LoD starts at row 10.
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(20), []int64{20, 1},
		lt.Lengths([]int{2, 1}, []int{2, 2, 3}, []int{2, 3, 2, 3, 2, 3, 5})))
	defer x.Close()
	s := must[*lt.Tensor](t)(x.Slice(0, 1, 2))
	defer s.Close()
	eq(t, "slice level 2", must[[]int](t)(s.LoDOffsets(2)), []int{0, 2, 5, 10})
	eq(t, "slice data", floats(t, s)[0], float32(10))

	// Spec §1.8: split into 2 pieces and merge back.
	batch := must[*lt.Tensor](t)(lt.NewTensor(iota(20), []int64{20, 1},
		lt.Lengths([]int{2, 2, 1, 1}, []int{1, 5, 2, 5, 2, 5})))
	defer batch.Close()
	// Room for more handles than memory holds is an error, not a crash; more pieces than
	// sequences give a piece a sequence.
	_, err := batch.Split(1 << 61)
	wantError(t, err, lt.OutOfMemory, "num_pieces")
	for _, p := range must[[]*lt.Tensor](t)(batch.Split(9)) {
		eq(t, "one sequence a piece", len(must[[]int](t)(p.LoDOffsets(0))), 2)
		ok(t, p.Close())
	}
	pieces := must[[]*lt.Tensor](t)(batch.Split(2))
	eq(t, "pieces", len(pieces), 2)
	eq(t, "piece 0", must[[]int](t)(pieces[0].LoDOffsets(1)), []int{0, 1, 6, 8, 13})
	eq(t, "piece 1", must[[]int](t)(pieces[1].LoDOffsets(0)), []int{0, 1, 2})
	merged := must[*lt.Tensor](t)(lt.Merge(pieces...))
	defer merged.Close()
	eq(t, "merged LoD", must[[]int](t)(merged.LoDOffsets(0)), []int{0, 2, 4, 5, 6})
	eq(t, "merged data", floats(t, merged), iota(20))
	for _, p := range pieces {
		p.Close()
	}

	// Spec §1.11: lod_reset.
	plain := must[*lt.Tensor](t)(lt.NewTensor(iota(10), []int64{10, 1}, lt.LoD{}))
	defer plain.Close()
	r := must[*lt.Tensor](t)(plain.LoDReset([]int64{0, 7, 10}, false))
	defer r.Close()
	eq(t, "reset", must[[]int](t)(r.LoDOffsets(0)), []int{0, 7, 10})
	r2 := must[*lt.Tensor](t)(plain.LoDResetFrom(r, false))
	defer r2.Close()
	eq(t, "reset from y", must[[]int](t)(r2.LoDOffsets(0)), []int{0, 7, 10})
	_, err = plain.LoDReset([]int64{0, 7, 9}, false)
	wantError(t, err, lt.InvalidLoD, "rows")
}

func TestErrorsAndClose(t *testing.T) {
	_, err := lt.NewTensor(iota(10), []int64{10, 1}, lt.Lengths([]int{3, 2, 4}))
	wantError(t, err, lt.InvalidLoD, "10")
	_, err = lt.NewTensor(iota(10), []int64{5, 1}, lt.LoD{})
	wantError(t, err, lt.InvalidArgument, "data_len")
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(10), []int64{10, 1}, lt.Lengths([]int{3, 2, 5})))
	_, err = x.Slice(0, 2, 2)
	wantError(t, err, lt.OutOfRange, "begin")
	if err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("Error() should name the status: %v", err)
	}
	wantError(t, lt.SelftestPanic(), lt.Internal, "panic")

	// Close is idempotent; a closed tensor is a NullArgument error, not a crash.
	ok(t, x.Close())
	ok(t, x.Close())
	_, err = x.NumEl()
	wantError(t, err, lt.NullArgument, "t")
	var nilTensor *lt.Tensor
	_, err = nilTensor.Dims()
	wantError(t, err, lt.NullArgument, "t")
	ok(t, nilTensor.Close())

	eq(t, "version", lt.Version(), "0.1.0")
	ok(t, lt.SetNumThreads(2))
	eq(t, "threads", must[int](t)(lt.NumThreads()), 2)
	ok(t, lt.SetNumThreads(0))
	ok(t, lt.SetHostCacheLimit(5<<20))
	_, limit, err := lt.HostCacheInfo()
	ok(t, err)
	eq(t, "host cache limit", limit, 5<<20)
	ok(t, lt.SetHostCacheLimit(0))
	kept, _, err := lt.HostCacheInfo()
	ok(t, err)
	eq(t, "kept with limit 0", kept, 0)
	ok(t, lt.SetHostCacheLimit(256<<20))
	// As a size_t, -1 would be no bound at all.
	wantError(t, lt.SetHostCacheLimit(-1), lt.InvalidArgument, "bytes: -1 is negative")
	_, limit, err = lt.HostCacheInfo()
	ok(t, err)
	eq(t, "the bound kept", limit, 256<<20)
	wantError(t, lt.SetNumThreads(-1), lt.InvalidArgument, "num_threads: -1 is negative")
	eq(t, "status name", lt.InvalidLoD.String(), "invalid LoD")
}

// Paddle's format: the spec's worked example (float32 [5,1], LoD [[0,2,5]]) and a second record
// after it, as a save_combine file holds them, read back in turn; a partial load of the second.
func TestSerialize(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor([]float32{1.5, -2, 3, 0.25, 8}, []int64{5, 1}, lt.Offsets([]int{0, 2, 5})))
	defer x.Close()
	file := must[[]byte](t)(x.Serialize())
	eq(t, "length", len(file), 78)
	eq(t, "desc", file[48:58], []byte{6, 0, 0, 0, 0x08, 0x05, 0x10, 0x05, 0x10, 0x01})
	ids := must[*lt.Tensor](t)(lt.NewTensor([]int64{7, -1, 9}, []int64{3}, lt.LoD{}))
	defer ids.Close()
	file = append(file, must[[]byte](t)(ids.Serialize())...)
	a, n, err := lt.Deserialize(file)
	ok(t, err)
	defer a.Close()
	eq(t, "first record's length", n, 78)
	eq(t, "first", floats(t, a), []float32{1.5, -2, 3, 0.25, 8})
	eq(t, "first LoD", must[[]int](t)(a.LoDOffsets(0)), []int{0, 2, 5})
	b, m, err := lt.Deserialize(file[n:])
	ok(t, err)
	defer b.Close()
	eq(t, "second record's length", n+m, len(file))
	eq(t, "second", must[[]int64](t)(lt.Data[int64](b)), []int64{7, -1, 9})
	c, k, err := lt.DeserializeSlice(file[n:], 1, []int64{2})
	ok(t, err)
	defer c.Close()
	eq(t, "sliced record's length", k, m)
	eq(t, "slice's dims", must[[]int64](t)(c.Dims()), []int64{2})
	eq(t, "slice", must[[]int64](t)(lt.Data[int64](c)), []int64{-1, 9})
	_, _, err = lt.DeserializeSlice(file, 0, []int64{1})
	wantError(t, err, lt.InvalidArgument, "without LoD")
	_, _, err = lt.Deserialize(file[:77])
	wantError(t, err, lt.InvalidArgument, "the bytes end inside")
	_, _, err = lt.Deserialize(nil)
	wantError(t, err, lt.InvalidArgument, "version")
}

// DLPack: a round trip lends and takes back the same memory, with a LoD given on the way back;
// a LoD that does not fit leaves the managed tensor with the caller. In both forms.
func TestDLPack(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor([]int32{4, 5, 6, 7}, []int64{2, 2}, lt.LoD{}))
	m := must[unsafe.Pointer](t)(x.ToDLPack())
	_, err := lt.FromDLPack(m, lt.Offsets([]int{0, 1, 3}))
	wantError(t, err, lt.InvalidLoD, "rows")
	y := must[*lt.Tensor](t)(lt.FromDLPack(m, lt.Offsets([]int{0, 1, 2})))
	defer y.Close()
	eq(t, "same memory", must[[]int32](t)(lt.Data[int32](y)), must[[]int32](t)(lt.Data[int32](x)))
	eq(t, "same address", &must[[]int32](t)(lt.Data[int32](y))[0], &must[[]int32](t)(lt.Data[int32](x))[0])
	ok(t, x.Close())
	eq(t, "after x is closed", must[[]int32](t)(lt.Data[int32](y)), []int32{4, 5, 6, 7})
	eq(t, "LoD", must[[]int](t)(y.LoDOffsets(0)), []int{0, 1, 2})
	_, err = lt.FromDLPack(nil, lt.LoD{})
	wantError(t, err, lt.NullArgument, "managed")
	// The same in the form before DLPack 1.0.
	z := must[*lt.Tensor](t)(lt.NewTensor([]int32{8, 9}, []int64{2}, lt.LoD{}))
	legacy := must[unsafe.Pointer](t)(z.ToDLPackLegacy())
	zAddress := &must[[]int32](t)(lt.Data[int32](z))[0]
	ok(t, z.Close())
	_, err = lt.FromDLPackLegacy(legacy, lt.Offsets([]int{0, 3}))
	wantError(t, err, lt.InvalidLoD, "rows")
	w := must[*lt.Tensor](t)(lt.FromDLPackLegacy(legacy, lt.Offsets([]int{0, 2})))
	defer w.Close()
	eq(t, "legacy: same address", &must[[]int32](t)(lt.Data[int32](w))[0], zAddress)
	eq(t, "legacy: values", must[[]int32](t)(lt.Data[int32](w)), []int32{8, 9})
	_, err = lt.FromDLPackLegacy(nil, lt.LoD{})
	wantError(t, err, lt.NullArgument, "managed")
}

// Arrow: float32 [5, 2] rows under one LoD level go out as large_list<fixed_size_list<float, 2>>
// over the tensor's memory and come back as the same memory and LoD, the array moved and released
// once, at the last close; an array that does not match its schema is refused and left alone.
func TestArrow(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(10), []int64{5, 2}, lt.Offsets([]int{0, 2, 5})))
	defer x.Close()
	schema, array := arrowc.New()
	defer arrowc.Free(schema, array)
	ok(t, x.ToArrow(schema, array))

	s := arrowc.ReadSchema(schema)
	eq(t, "root", []any{s.Format, s.Name, s.Flags, s.NChildren}, []any{"+L", "", int64(0), int64(1)})
	rows := arrowc.ReadSchema(s.Child)
	eq(t, "rows", []any{rows.Format, rows.Name, rows.NChildren}, []any{"+w:2", "item", int64(1)})
	elements := arrowc.ReadSchema(rows.Child)
	eq(t, "elements", []any{elements.Format, elements.NChildren}, []any{"f", int64(0)})
	a := arrowc.ReadArray(array)
	eq(t, "list", []int64{a.Length, a.NullCount, a.Offset, a.NBuffers, a.NChildren}, []int64{2, 0, 0, 2, 1})
	eq(t, "no validity", a.Buffers[0], unsafe.Pointer(nil))
	eq(t, "offsets", unsafe.Slice((*int64)(a.Buffers[1]), 3), []int64{0, 2, 5})
	fixed := arrowc.ReadArray(a.Child)
	eq(t, "fixed-size lists", []int64{fixed.Length, fixed.NBuffers, fixed.NChildren}, []int64{5, 1, 1})
	values := arrowc.ReadArray(fixed.Child)
	eq(t, "values", []int64{values.Length, values.NBuffers, values.NChildren}, []int64{10, 2, 0})
	eq(t, "the tensor's memory", uintptr(values.Buffers[1]), must[uintptr](t)(x.Address()))
	eq(t, "its elements", unsafe.Slice((*float32)(values.Buffers[1]), 10), iota(10))

	_, err := lt.FromArrow(rows.Child, array)
	wantError(t, err, lt.InvalidArgument, "child(ren)")
	eq(t, "a refused array stays the caller's", arrowc.ReadArray(array).Released, false)

	arrowc.CountReleases(array)
	y := must[*lt.Tensor](t)(lt.FromArrow(schema, array))
	eq(t, "the array moved", arrowc.ReadArray(array).Released, true)
	_, err = lt.FromArrow(schema, array)
	wantError(t, err, lt.InvalidArgument, "released")
	arrowc.ReleaseSchema(schema)
	eq(t, "the schema released", arrowc.ReadSchema(schema).Released, true)
	eq(t, "the same memory", must[uintptr](t)(y.Address()), must[uintptr](t)(x.Address()))
	eq(t, "dims", must[[]int64](t)(y.Dims()), []int64{5, 2})
	eq(t, "LoD", must[[]int](t)(y.LoDOffsets(0)), []int{0, 2, 5})
	ok(t, x.Close())
	share := must[*lt.Tensor](t)(y.Share())
	ok(t, y.Close())
	eq(t, "after x and y are closed", floats(t, share), iota(10))
	eq(t, "not released while a handle is open", arrowc.Releases(), 0)
	ok(t, share.Close())
	eq(t, "released at the last close", arrowc.Releases(), 1)
}

func TestArrowDevice(t *testing.T) {
	eq(t, "sizeof(struct ArrowDeviceArray)", int(arrowc.DeviceArraySize), 128)
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(10), []int64{5, 2}, lt.Offsets([]int{0, 2, 5})))
	defer x.Close()
	schema, device := arrowc.NewDevice()
	defer arrowc.Free(schema, device)
	ok(t, x.ToArrowDevice(schema, device))

	d := arrowc.ReadDevice(device)
	eq(t, "a host tensor on ARROW_DEVICE_CPU", []any{d.DeviceType, d.DeviceID, d.SyncEvent, d.Reserved},
		[]any{int32(1), int64(-1), unsafe.Pointer(nil), [3]int64{}})
	s := arrowc.ReadSchema(schema)
	eq(t, "root", []any{s.Format, s.Name, s.NChildren}, []any{"+L", "", int64(1)})
	rows := arrowc.ReadSchema(s.Child)
	eq(t, "rows", []any{rows.Format, rows.Name, rows.NChildren}, []any{"+w:2", "item", int64(1)})
	eq(t, "elements", arrowc.ReadSchema(rows.Child).Format, "f")
	array := arrowc.DeviceArrayArray(device)
	a := arrowc.ReadArray(array)
	eq(t, "list", []int64{a.Length, a.NBuffers, a.NChildren}, []int64{2, 2, 1})
	eq(t, "offsets", unsafe.Slice((*int64)(a.Buffers[1]), 3), []int64{0, 2, 5})
	values := arrowc.ReadArray(arrowc.ReadArray(a.Child).Child)
	eq(t, "values", []int64{values.Length, values.NBuffers}, []int64{10, 2})
	eq(t, "the tensor's memory", uintptr(values.Buffers[1]), must[uintptr](t)(x.Address()))

	arrowc.CountReleases(array)
	y := must[*lt.Tensor](t)(lt.FromArrowDevice(schema, device))
	eq(t, "the array moved", arrowc.ReadArray(array).Released, true)
	arrowc.ReleaseSchema(schema)
	eq(t, "the same memory", must[uintptr](t)(y.Address()), must[uintptr](t)(x.Address()))
	eq(t, "placed on the CPU", must[lt.Place](t)(y.Place()), lt.CPU)
	eq(t, "dims", must[[]int64](t)(y.Dims()), []int64{5, 2})
	eq(t, "LoD", must[[]int](t)(y.LoDOffsets(0)), []int{0, 2, 5})
	eq(t, "its elements", floats(t, y), iota(10))
	ok(t, y.Close())
	eq(t, "released at the last close", arrowc.Releases(), 1)

	ok(t, x.ToArrowDevice(schema, device))
	arrowc.SetDevice(device, 7, 0) // ARROW_DEVICE_VULKAN
	_, err := lt.FromArrowDevice(schema, device)
	wantError(t, err, lt.Unsupported, "device_type")
	eq(t, "a refused array stays the caller's", arrowc.ReadArray(array).Released, false)
	arrowc.ReleaseArray(array)
	eq(t, "released by the caller", arrowc.ReadArray(array).Released, true)
	arrowc.ReleaseSchema(schema)
}

// Text lent as Arrow strings over the tensor's bytes, taken back, and refused when not UTF-8.
func TestArrowStrings(t *testing.T) {
	text := []byte("Grüße!")
	x := must[*lt.Tensor](t)(lt.NewTensor(text, []int64{int64(len(text))}, lt.Offsets([]int{0, 7, 8})))
	defer x.Close()
	schema, array := arrowc.New()
	defer arrowc.Free(schema, array)
	ok(t, x.ToArrowStrings(lt.ArrowUTF8, schema, array))
	eq(t, "format", arrowc.ReadSchema(schema).Format, "U")
	a := arrowc.ReadArray(array)
	eq(t, "strings", []int64{a.Length, a.NBuffers, a.NChildren}, []int64{2, 3, 0})
	eq(t, "offsets", unsafe.Slice((*int64)(a.Buffers[1]), 3), []int64{0, 7, 8})
	eq(t, "the tensor's bytes", uintptr(a.Buffers[2]), must[uintptr](t)(x.Address()))
	y := must[*lt.Tensor](t)(lt.FromArrow(schema, array))
	arrowc.ReleaseSchema(schema)
	eq(t, "taken back", must[[]int](t)(y.LoDOffsets(0)), []int{0, 7, 8})
	ok(t, y.Close())

	// "Gr" and the first byte of "ü" are not UTF-8 on their own; as binary they are bytes.
	split := must[*lt.Tensor](t)(lt.NewTensor(text, []int64{int64(len(text))}, lt.Offsets([]int{0, 3, 8})))
	defer split.Close()
	wantError(t, split.ToArrowStrings(lt.ArrowUTF8, schema, array), lt.InvalidArgument, "is not UTF-8 at byte 2")
	eq(t, "not written", arrowc.ReadArray(array).Released, true)
	wantError(t, split.ToArrowStrings(lt.ArrowEncoding(5), schema, array), lt.InvalidArgument, "encoding: 5")
	schemaD, device := arrowc.NewDevice()
	defer arrowc.Free(schemaD, device)
	ok(t, split.ToArrowDeviceStrings(lt.ArrowBinary, schemaD, device))
	eq(t, "binary, on the CPU", []any{arrowc.ReadSchema(schemaD).Format, arrowc.ReadDevice(device).DeviceType},
		[]any{"Z", int32(1)})
	arrowc.ReleaseArray(arrowc.DeviceArrayArray(device))
	arrowc.ReleaseSchema(schemaD)
}

// Arrow record batches: a LoD column and a plain one lent as one struct, named, over the tensors'
// memory, and taken back as two tensors sharing the array, released once at the last close; a
// column of another length is refused, and the device form goes out on the CPU.
func TestArrowRecordBatch(t *testing.T) {
	ids := must[*lt.Tensor](t)(lt.NewTensor([]int64{1, 2, 3, 4, 5}, []int64{5}, lt.Offsets([]int{0, 2, 5})))
	defer ids.Close()
	scores := must[*lt.Tensor](t)(lt.NewTensor([]float32{0.5, 1.5}, []int64{2}, lt.LoD{}))
	defer scores.Close()
	schema, array := arrowc.New()
	defer arrowc.Free(schema, array)
	ok(t, lt.ToArrowRecordBatch([]lt.ArrowColumn{{ids, "ids", lt.ArrowValues}, {scores, "scores", lt.ArrowValues}}, schema, array))

	s := arrowc.ReadSchema(schema)
	eq(t, "root", []any{s.Format, s.Name, s.NChildren}, []any{"+s", "", int64(2)})
	eq(t, "names", []string{arrowc.ReadSchema(arrowc.SchemaChild(schema, 0)).Name,
		arrowc.ReadSchema(arrowc.SchemaChild(schema, 1)).Name}, []string{"ids", "scores"})
	a := arrowc.ReadArray(array)
	eq(t, "struct", []int64{a.Length, a.NBuffers, a.NChildren}, []int64{2, 1, 2})
	scoreValues := arrowc.ReadArray(arrowc.ArrayChild(array, 1))
	eq(t, "the scores' memory", uintptr(scoreValues.Buffers[1]), must[uintptr](t)(scores.Address()))

	arrowc.CountReleases(array)
	back := must[[]*lt.Tensor](t)(lt.FromArrowRecordBatch(schema, array))
	eq(t, "the array moved", arrowc.ReadArray(array).Released, true)
	arrowc.ReleaseSchema(schema)
	eq(t, "columns", len(back), 2)
	eq(t, "the ids' memory", must[uintptr](t)(back[0].Address()), must[uintptr](t)(ids.Address()))
	eq(t, "the ids' LoD", must[[]int](t)(back[0].LoDOffsets(0)), []int{0, 2, 5})
	eq(t, "the scores", floats(t, back[1]), []float32{0.5, 1.5})
	ok(t, back[0].Close())
	eq(t, "not released while a column is open", arrowc.Releases(), 0)
	ok(t, back[1].Close())
	eq(t, "released at the last close", arrowc.Releases(), 1)

	three := must[*lt.Tensor](t)(lt.NewTensor([]float32{1, 2, 3}, []int64{3}, lt.LoD{}))
	defer three.Close()
	err := lt.ToArrowRecordBatch([]lt.ArrowColumn{{ids, "ids", lt.ArrowValues}, {three, "x", lt.ArrowValues}}, schema, array)
	wantError(t, err, lt.InvalidArgument, "columns[1]: 3 entries, columns[0] 2")
	_, err = lt.FromArrowRecordBatch(nil, array)
	wantError(t, err, lt.NullArgument, "schema")
	_, err = lt.FromArrowRecordBatch(schema, array) // both released above
	wantError(t, err, lt.InvalidArgument, "schema: has been released")
	// A C string ends at a NUL: such a name would reach Arrow cut short.
	err = lt.ToArrowRecordBatch([]lt.ArrowColumn{{scores, "scores", lt.ArrowValues}, {ids, "ids\x00v2", lt.ArrowValues}},
		schema, array)
	wantError(t, err, lt.InvalidArgument, `columns[1]: the name "ids\x00v2" holds a NUL byte`)
	eq(t, "the schema not written", arrowc.ReadSchema(schema).Released, true)
	eq(t, "the array not written", arrowc.ReadArray(array).Released, true)

	// A text column beside the scores: large_utf8 over the tensor's bytes; broken text refused.
	words := must[*lt.Tensor](t)(lt.NewTensor([]uint8("tokyo"), []int64{5}, lt.Offsets([]int{0, 3, 5})))
	defer words.Close()
	tschema, tarray := arrowc.New()
	defer arrowc.Free(tschema, tarray)
	ok(t, lt.ToArrowRecordBatch([]lt.ArrowColumn{{words, "text", lt.ArrowUTF8}, {Tensor: scores, Name: "s"}},
		tschema, tarray))
	eq(t, "text and scores", []string{arrowc.ReadSchema(arrowc.SchemaChild(tschema, 0)).Format,
		arrowc.ReadSchema(arrowc.SchemaChild(tschema, 1)).Format}, []string{"U", "f"})
	text := arrowc.ReadArray(arrowc.ArrayChild(tarray, 0))
	eq(t, "the text's bytes", uintptr(text.Buffers[2]), must[uintptr](t)(words.Address()))
	arrowc.ReleaseSchema(tschema)
	arrowc.ReleaseArray(tarray)
	split := must[*lt.Tensor](t)(lt.NewTensor([]uint8("\xc3\xbc"), []int64{2}, lt.Offsets([]int{0, 1, 2})))
	defer split.Close()
	err = lt.ToArrowRecordBatch([]lt.ArrowColumn{{split, "text", lt.ArrowUTF8}}, tschema, tarray)
	wantError(t, err, lt.InvalidArgument, "columns[0]: sequence 0 of LoD level 0 (bytes 0..1) is not UTF-8")
	err = lt.ToArrowRecordBatch([]lt.ArrowColumn{{split, "text", lt.ArrowEncoding(9)}}, tschema, tarray)
	wantError(t, err, lt.InvalidArgument, "encodings[0]: 9 is not")

	dschema, device := arrowc.NewDevice()
	defer arrowc.Free(dschema, device)
	err = lt.ToArrowDeviceRecordBatch([]lt.ArrowColumn{{scores, "\x00", lt.ArrowValues}}, dschema, device)
	wantError(t, err, lt.InvalidArgument, `columns[0]: the name "\x00" holds a NUL byte`)
	eq(t, "the device schema not written", arrowc.ReadSchema(dschema).Released, true)
	ok(t, lt.ToArrowDeviceRecordBatch([]lt.ArrowColumn{{scores, "scores", lt.ArrowValues}}, dschema, device))
	d := arrowc.ReadDevice(device)
	eq(t, "on ARROW_DEVICE_CPU", []any{d.DeviceType, d.DeviceID}, []any{int32(1), int64(-1)})
	taken := must[[]*lt.Tensor](t)(lt.FromArrowDeviceRecordBatch(dschema, device))
	arrowc.ReleaseSchema(dschema)
	eq(t, "the scores again", floats(t, taken[0]), []float32{0.5, 1.5})
	ok(t, taken[0].Close())
}

// A record batch's n_children is the caller's to get wrong: a negative or huge count is an
// *Error, not the size of a Go allocation, and the array stays the caller's.
func TestArrowRecordBatchMalformedSchema(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor([]float32{1, 2}, []int64{2}, lt.LoD{}))
	defer x.Close()
	columns := []lt.ArrowColumn{{x, "a", lt.ArrowValues}, {x, "b", lt.ArrowValues}}
	schema, array := arrowc.New()
	defer arrowc.Free(schema, array)
	ok(t, lt.ToArrowRecordBatch(columns, schema, array))
	dschema, device := arrowc.NewDevice()
	defer arrowc.Free(dschema, device)
	ok(t, lt.ToArrowDeviceRecordBatch(columns, dschema, device))
	for _, n := range []int64{-1, 1 << 62, math.MaxInt64} {
		old := arrowc.SetNChildren(schema, n)
		_, err := lt.FromArrowRecordBatch(schema, array)
		arrowc.SetNChildren(schema, old)
		var e *lt.Error
		if !errors.As(err, &e) {
			t.Errorf("n_children %d: got %v, want an *lt.Error", n, err)
		}
		eq(t, fmt.Sprint("n_children ", n, ": the array untouched"), arrowc.ReadArray(array).Released, false)

		old = arrowc.SetNChildren(dschema, n)
		_, err = lt.FromArrowDeviceRecordBatch(dschema, device)
		arrowc.SetNChildren(dschema, old)
		if !errors.As(err, &e) {
			t.Errorf("device, n_children %d: got %v, want an *lt.Error", n, err)
		}
		eq(t, fmt.Sprint("device, n_children ", n, ": the array untouched"),
			arrowc.ReadArray(arrowc.DeviceArrayArray(device)).Released, false)
	}
	for _, taken := range [][]*lt.Tensor{must[[]*lt.Tensor](t)(lt.FromArrowRecordBatch(schema, array)),
		must[[]*lt.Tensor](t)(lt.FromArrowDeviceRecordBatch(dschema, device))} {
		eq(t, "the columns of the schema restored", len(taken), 2)
		for _, c := range taken {
			ok(t, c.Close())
		}
	}
	arrowc.ReleaseSchema(schema)
	arrowc.ReleaseSchema(dschema)
}

// A negative int for a size_t argument is refused by name, not converted into a huge value that
// the library would act on or report as another number.
func TestNegativeSizes(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(10), []int64{10, 1}, lt.Lengths([]int{3, 2, 5})))
	defer x.Close()
	arr := must[*lt.TensorArray](t)(lt.NewTensorArray())
	defer arr.Close()
	table := must[*lt.RankTable](t)(lt.NewRankTable(x, 0))
	defer table.Close()
	noStep := func(int, *lt.Tensor, *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) { return nil, nil, nil }
	for _, c := range []struct {
		what string
		err  error
		want string
	}{
		{"NewTensorBytes", err2(lt.NewTensorBytes(lt.Float32, []int64{0}, nil, -1, lt.LoD{})), "data_len: -1 is negative"},
		{"NewTensor lengths", err2(lt.NewTensor(iota(10), []int64{10, 1}, lt.Lengths([]int{11, -1}))),
			"LoD level 0: -1 is negative"},
		{"NewTensor offsets", err2(lt.NewTensor(iota(10), []int64{10, 1}, lt.Offsets([]int{0, 1}, []int{0, -1, 10}))),
			"LoD level 1: -1 is negative"},
		{"SetLoD", x.SetLoD(lt.Lengths([]int{3, 8, -1})), "LoD level 0: -1 is negative"},
		{"FromDLPack", err2(lt.FromDLPack(nil, lt.Lengths([]int{-2}))), "LoD level 0: -2 is negative"},
		{"FromDLPackLegacy", err2(lt.FromDLPackLegacy(nil, lt.Lengths([]int{-2}))), "LoD level 0: -2 is negative"},
		{"LoDOffsets", err2(x.LoDOffsets(-1)), "level: -1 is negative"},
		{"LoDLengths", err2(x.LoDLengths(-1)), "level: -1 is negative"},
		{"SequenceRows level", err3(x.SequenceRows(-1, 0)), "level: -1 is negative"},
		{"SequenceRows index", err3(x.SequenceRows(0, -1)), "index: -1 is negative"},
		{"Slice level", err2(x.Slice(-1, 0, 1)), "level: -1 is negative"},
		{"Slice begin", err2(x.Slice(0, -1, 1)), "begin: -1 is negative"},
		{"Slice end", err2(x.Slice(0, 0, -1)), "end: -1 is negative"},
		{"Split", err2(x.Split(-1)), "num_pieces: -1 is negative"},
		{"TensorArray.Read", err2(arr.Read(-1, false)), "index: -1 is negative"},
		{"TensorArray.Write", arr.Write(-1, x, false), "index: -1 is negative"},
		{"NewRankTable", err2(lt.NewRankTable(x, -1)), "level: -1 is negative"},
		{"ShrinkRNNMemory", err2(table.ShrinkRNNMemory(x, -1)), "step: -1 is negative"},
		{"DynamicRNN", err2(lt.DynamicRNN(x, -1, x, noStep)), "level: -1 is negative"},
		{"TopK", err3(lt.TopK(x, -1, true)), "k: -1 is negative"},
		{"BeamSearchStep level", err2(lt.BeamSearchStep(x, x, x, x, -1, 2, 1, true)), "level: -1 is negative"},
		{"BeamSearchStep beam", err2(lt.BeamSearchStep(x, x, x, x, 0, -1, 1, true)), "beam_size: -1 is negative"},
		{"BeamSearchFusedStep", err2(lt.BeamSearchFusedStep(x, x, x, -1, 1)), "beam_size: -1 is negative"},
		{"BeamSearchDecode", err3(lt.BeamSearchDecode(arr, arr, -1, 1)), "beam_size: -1 is negative"},
	} {
		t.Run(c.what, func(t *testing.T) { wantError(t, c.err, lt.InvalidArgument, c.want) })
	}
	eq(t, "the LoD SetLoD refused to replace", must[[]int](t)(x.LoDOffsets(0)), []int{0, 3, 5, 10})
}

func TestPlaces(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(6), []int64{6, 1}, lt.Lengths([]int{4, 2})))
	defer x.Close()
	c := must[*lt.Tensor](t)(x.ToPlace(lt.CPU))
	defer c.Close()
	eq(t, "copy on the CPU", floats(t, c), iota(6))
	eq(t, "its LoD", must[[]int](t)(c.LoDOffsets(0)), []int{0, 4, 6})
	w := must[[]float32](t)(lt.MutableView[float32](c))
	w[0] = 9
	eq(t, "always a copy", floats(t, x)[0], float32(0))
	ok(t, lt.Synchronize(lt.CPU))
	if _, err := lt.CUDADeviceCount(); err != nil {
		wantError(t, err, lt.Unsupported, "")
		_, err = x.ToPlace(lt.CUDA(0))
		wantError(t, err, lt.Unsupported, "")
		wantError(t, lt.Synchronize(lt.CUDA(0)), lt.Unsupported, "")
		_, _, err = lt.CUDAMemoryInfo(0)
		wantError(t, err, lt.Unsupported, "cuda:0")
		wantError(t, lt.CUDAEmptyCache(0), lt.Unsupported, "cuda:0")
		wantError(t, lt.CUDALoadKernels(0), lt.Unsupported, "cuda:0")
		wantError(t, lt.CUDASetCacheLimit(0, 0), lt.Unsupported, "cuda:0")
		_, err = lt.CUDACacheLimit(0)
		wantError(t, err, lt.Unsupported, "cuda:0")
		_, _, err = lt.CUDAFreeMemory(0)
		wantError(t, err, lt.Unsupported, "cuda:0")
		_, err = lt.CUDACounters(0)
		wantError(t, err, lt.Unsupported, "cuda:0")
		_, err = lt.CUDAStream(0)
		wantError(t, err, lt.Unsupported, "cuda:0")
	} else {
		before := must[[]uint64](t)(lt.CUDACounters(0))
		d := must[*lt.Tensor](t)(x.ToPlace(lt.CUDA(0)))
		defer d.Close()
		after := must[[]uint64](t)(lt.CUDACounters(0))
		eq(t, "one upload", after[lt.CUDACounterUploads]-before[lt.CUDACounterUploads], uint64(1))
		eq(t, "its bytes", after[lt.CUDACounterUploadBytes]-before[lt.CUDACounterUploadBytes], uint64(24))
		inUse, _, err := lt.CUDAMemoryInfo(0)
		ok(t, err)
		eq(t, "device memory in use holds the tensor", inUse >= 24, true)
		ok(t, lt.CUDAEmptyCache(0))
		ok(t, lt.CUDALoadKernels(0))
		_, kept, err := lt.CUDAMemoryInfo(0)
		ok(t, err)
		eq(t, "kept after emptying", kept, 0)
		ok(t, lt.CUDASetCacheLimit(0, 1<<20))
		eq(t, "the bound set", must[uint64](t)(lt.CUDACacheLimit(0)), uint64(1<<20))
		ok(t, lt.CUDASetCacheLimit(0, math.MaxUint64))
		eq(t, "no bound", must[uint64](t)(lt.CUDACacheLimit(0)), uint64(math.MaxUint64))
		free, total, err := lt.CUDAFreeMemory(0)
		ok(t, err)
		eq(t, "0 < free <= total", free > 0 && free <= total, true)
		stream := must[unsafe.Pointer](t)(lt.CUDAStream(0))
		eq(t, "a stream", stream != nil, true)
		eq(t, "the same stream again", must[unsafe.Pointer](t)(lt.CUDAStream(0)), stream)
	}
	_, _, err := lt.CUDAMemoryInfo(-1)
	wantError(t, err, lt.InvalidArgument, "device")
	wantError(t, lt.CUDAEmptyCache(-1), lt.InvalidArgument, "device")
	wantError(t, lt.CUDALoadKernels(-1), lt.InvalidArgument, "device")
	wantError(t, lt.CUDASetCacheLimit(-1, 0), lt.InvalidArgument, "device")
	_, err = lt.CUDACacheLimit(-1)
	wantError(t, err, lt.InvalidArgument, "device")
	_, _, err = lt.CUDAFreeMemory(-1)
	wantError(t, err, lt.InvalidArgument, "device")
	_, err = lt.CUDACounters(-1)
	wantError(t, err, lt.InvalidArgument, "device")
	_, err = lt.CUDAStream(-1)
	wantError(t, err, lt.InvalidArgument, "device")
	_, err = x.ToPlace(lt.Place{DeviceType: 7})
	wantError(t, err, lt.InvalidArgument, "place")

	// A device beyond int32 is refused: converted, 1<<32 and -1<<32 would both be device 0.
	for what, f := range map[string]func(device int) error{
		"CUDAMemoryInfo":    func(d int) error { return err3(lt.CUDAMemoryInfo(d)) },
		"CUDACounters":      func(d int) error { return err2(lt.CUDACounters(d)) },
		"CUDAFreeMemory":    func(d int) error { return err3(lt.CUDAFreeMemory(d)) },
		"CUDALoadKernels":   lt.CUDALoadKernels,
		"CUDAStream":        func(d int) error { return err2(lt.CUDAStream(d)) },
		"CUDAEmptyCache":    lt.CUDAEmptyCache,
		"CUDASetCacheLimit": func(d int) error { return lt.CUDASetCacheLimit(d, 0) },
		"CUDACacheLimit":    func(d int) error { return err2(lt.CUDACacheLimit(d)) },
	} {
		t.Run(what, func(t *testing.T) {
			for _, device := range []int{1 << 32, -1 << 32} {
				wantError(t, f(device), lt.InvalidArgument, fmt.Sprintf("device: %d is out of the range of int32_t", device))
			}
		})
	}
}

// Each goroutine's error carries its own message although goroutines share OS threads: the
// binding holds the thread across a call and its message read.
func TestErrorMessagesPerGoroutine(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(10), []int64{10, 1}, lt.Lengths([]int{3, 2, 5})))
	defer x.Close()
	var wg sync.WaitGroup
	failures := make(chan string, 64)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				level := 1 + (g+i)%7
				_, err := x.LoDOffsets(level)
				var e *lt.Error
				if !errors.As(err, &e) || !strings.Contains(e.Message, fmt.Sprintf("%d is out of range", level)) {
					failures <- fmt.Sprintf("goroutine %d: level %d gave %v", g, level, err)
					return
				}
				runtime.Gosched()
			}
		}(g)
	}
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Error(f)
	}
}

func TestSequenceOps(t *testing.T) {
	// Spec §2.1 case 1.
	x := must[*lt.Tensor](t)(lt.NewTensor([]float32{1, 2, 3, 4}, []int64{4, 1}, lt.Offsets([]int{0, 2, 4})))
	defer x.Close()
	y := must[*lt.Tensor](t)(lt.NewTensor(make([]float32, 8), []int64{8, 1},
		lt.Offsets([]int{0, 2, 4}, []int{0, 3, 6, 7, 8})))
	defer y.Close()
	e := must[*lt.Tensor](t)(lt.SequenceExpand(x, y, 0))
	defer e.Close()
	eq(t, "expand", floats(t, e), []float32{1, 2, 1, 2, 3, 4, 3, 4})
	eq(t, "expand LoD", must[[]int](t)(e.LoDOffsets(0)), []int{0, 2, 4, 6, 8})

	// Spec §2.2.
	rows := must[*lt.Tensor](t)(lt.NewTensor([]float32{1, 2, 3, 4}, []int64{4, 1}, lt.LoD{}))
	defer rows.Close()
	y2 := must[*lt.Tensor](t)(lt.NewTensor(make([]float32, 8), []int64{8, 1}, lt.Offsets([]int{0, 3, 6, 7, 8})))
	defer y2.Close()
	ea := must[*lt.Tensor](t)(lt.SequenceExpandAs(rows, y2))
	defer ea.Close()
	eq(t, "expand_as", floats(t, ea), []float32{1, 1, 1, 2, 2, 2, 3, 4})

	// Spec §6 pool: lod [[0,2,5,7,7]], X [1,3,2,4,6,5,1].
	p := must[*lt.Tensor](t)(lt.NewTensor([]float32{1, 3, 2, 4, 6, 5, 1}, []int64{7, 1}, lt.Offsets([]int{0, 2, 5, 7, 7})))
	defer p.Close()
	for _, c := range []struct {
		pool lt.PoolType
		want []float32
	}{{lt.PoolSum, []float32{4, 12, 6, 0}}, {lt.PoolAverage, []float32{2, 4, 3, 0}}, {lt.PoolMax, []float32{3, 6, 5, 0}},
		{lt.PoolFirst, []float32{1, 2, 5, 0}}, {lt.PoolLast, []float32{3, 6, 1, 0}}} {
		out, idx, err := lt.SequencePool(p, c.pool, 0)
		ok(t, err)
		eq(t, fmt.Sprint("pool ", c.pool), floats(t, out), c.want)
		if c.pool == lt.PoolMax {
			eq(t, "max index", must[[]int32](t)(lt.Data[int32](idx)), []int32{1, 4, 5, -1})
		} else if idx != nil {
			t.Errorf("pool %d: unexpected max index", c.pool)
		}
		out.Close()
		idx.Close()
	}
	first := must[*lt.Tensor](t)(lt.SequenceFirstStep(p))
	defer first.Close()
	eq(t, "first step", floats(t, first), []float32{1, 2, 5, 0})
	last := must[*lt.Tensor](t)(lt.SequenceLastStep(p))
	defer last.Close()
	eq(t, "last step", floats(t, last), []float32{3, 6, 1, 0})
	_, _, err := lt.SequencePool(p, 99, 0)
	wantError(t, err, lt.InvalidArgument, "pool_type")

	// pad and unpad (plain expectations).
	zero := must[*lt.Tensor](t)(lt.NewTensor([]float32{0}, []int64{1}, lt.LoD{}))
	defer zero.Close()
	padded, length, err := lt.SequencePad(p, zero, -1)
	ok(t, err)
	defer padded.Close()
	defer length.Close()
	eq(t, "padded dims", must[[]int64](t)(padded.Dims()), []int64{4, 3, 1})
	eq(t, "padded", floats(t, padded), []float32{1, 3, 0, 2, 4, 6, 5, 1, 0, 0, 0, 0})
	eq(t, "lengths", must[[]int64](t)(lt.Data[int64](length)), []int64{2, 3, 2, 0})
	unpadded := must[*lt.Tensor](t)(lt.SequenceUnpad(padded, length))
	defer unpadded.Close()
	eq(t, "unpadded", floats(t, unpadded), []float32{1, 3, 2, 4, 6, 5, 1})

	// scatter: out[i][ids[p]] += updates[p].
	sx := must[*lt.Tensor](t)(lt.NewTensor([]float32{0, 0, 0, 10, 10, 10}, []int64{2, 3}, lt.LoD{}))
	defer sx.Close()
	ids := must[*lt.Tensor](t)(lt.NewTensor([]int64{0, 2, 1, 1}, []int64{4, 1}, lt.Lengths([]int{2, 2})))
	defer ids.Close()
	upd := must[*lt.Tensor](t)(lt.NewTensor([]float32{1, 2, 3, 4}, []int64{4, 1}, lt.Lengths([]int{2, 2})))
	defer upd.Close()
	sc := must[*lt.Tensor](t)(lt.SequenceScatter(sx, ids, upd))
	defer sc.Close()
	eq(t, "scatter", floats(t, sc), []float32{1, 0, 2, 10, 17, 10})
	ok(t, lt.SequenceScatterInPlace(sx, ids, upd))
	eq(t, "scatter in place", floats(t, sx), []float32{1, 0, 2, 10, 17, 10})
	bad := must[*lt.Tensor](t)(lt.NewTensor([]int64{0, 3, 1, 1}, []int64{4, 1}, lt.Lengths([]int{2, 2})))
	defer bad.Close()
	_, err = lt.SequenceScatter(sx, bad, upd)
	wantError(t, err, lt.OutOfRange, "ids")
}

func TestTensorArrayUnpackPack(t *testing.T) {
	// Spec §5.3 level_0: lengths [[3,6,1]], values 0..9.
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(10), []int64{10, 1}, lt.Lengths([]int{3, 6, 1})))
	defer x.Close()
	table := must[*lt.RankTable](t)(lt.NewRankTable(x, 0))
	defer table.Close()
	eq(t, "table size", must[int](t)(table.Len()), 3)
	eq(t, "table level", must[int](t)(table.Level()), 0)
	eq(t, "max len", must[int](t)(table.MaxSequenceLen()), 6)
	idx, lens, err := table.Items()
	ok(t, err)
	eq(t, "indices", idx, []int{1, 0, 2})
	eq(t, "lengths", lens, []int{6, 3, 1})

	steps := must[*lt.TensorArray](t)(lt.Unpack(x, table))
	defer steps.Close()
	eq(t, "steps", must[int](t)(steps.Len()), 6)
	want := [][]float32{{3, 0, 9}, {4, 1}, {5, 2}, {6}, {7}, {8}}
	for i, w := range want {
		s := must[*lt.Tensor](t)(steps.Read(i, false))
		eq(t, fmt.Sprint("step ", i), floats(t, s), w)
		s.Close()
	}
	back := must[*lt.Tensor](t)(steps.Pack(table))
	defer back.Close()
	eq(t, "packed", floats(t, back), iota(10))
	eq(t, "packed LoD", must[[]int](t)(back.LoDOffsets(0)), []int{0, 3, 9, 10})

	state := must[*lt.Tensor](t)(lt.NewTensor([]float32{100, 101, 102}, []int64{3, 1}, lt.LoD{}))
	defer state.Close()
	ranked := must[*lt.Tensor](t)(table.Reorder(state))
	defer ranked.Close()
	eq(t, "reorder", floats(t, ranked), []float32{101, 100, 102})
	shrunk := must[*lt.Tensor](t)(table.ShrinkRNNMemory(ranked, 1))
	defer shrunk.Close()
	eq(t, "shrink", floats(t, shrunk), []float32{101, 100})

	arr := must[*lt.TensorArray](t)(lt.NewTensorArray())
	defer arr.Close()
	s1 := must[*lt.Tensor](t)(steps.Read(1, true))
	defer s1.Close()
	ok(t, arr.Write(1, s1, false))
	eq(t, "array size", must[int](t)(arr.Len()), 2)
	cat := must[*lt.Tensor](t)(arr.ToTensor(0, false))
	defer cat.Close()
	eq(t, "to_tensor", floats(t, cat), []float32{4, 1})
	grid := must[*lt.Tensor](t)(lt.NewTensor([]float32{1, 2, 3, 4, 5, 6}, []int64{2, 3}, lt.LoD{}))
	defer grid.Close()
	cols := must[*lt.TensorArray](t)(lt.Unstack(grid, 1))
	defer cols.Close()
	stacked := must[*lt.Tensor](t)(cols.ToTensor(0, true))
	defer stacked.Close()
	eq(t, "unstack/stack", floats(t, stacked), []float32{1, 4, 2, 5, 3, 6})
	ok(t, arr.Clear())
	_, err = arr.Read(0, false)
	wantError(t, err, lt.OutOfRange, "index")
	ok(t, arr.Close())
	ok(t, arr.Close())
	_, err = arr.Len()
	wantError(t, err, lt.NullArgument, "a")
	_, err = lt.NewRankTable(x, 1)
	wantError(t, err, lt.InvalidArgument, "level")
}

// rnnInput: 5 sequences of 3, 0, 5, 1, 2 rows of width 2, and an initial state per sequence.
func rnnInput(t *testing.T) (x, init *lt.Tensor, xs, h0 []float32, lens []int) {
	lens = []int{3, 0, 5, 1, 2}
	xs = make([]float32, 11*2)
	for i := range xs {
		xs[i] = float32(i%7) - 2
	}
	h0 = make([]float32, 5*2)
	for i := range h0 {
		h0[i] = 10 * float32(i)
	}
	x = must[*lt.Tensor](t)(lt.NewTensor(xs, []int64{11, 2}, lt.Lengths(lens)))
	init = must[*lt.Tensor](t)(lt.NewTensor(h0, []int64{5, 2}, lt.LoD{}))
	return
}

func TestDynamicRNNWithGoStep(t *testing.T) {
	x, init, xs, h0, lens := rnnInput(t)
	defer x.Close()
	defer init.Close()
	// The reference: h_t = h_(t-1) + x_t, output h_t, each sequence alone in a plain loop.
	var want []float32
	for s, r := 0, 0; s < len(lens); s++ {
		h := []float32{h0[2*s], h0[2*s+1]}
		for i := 0; i < lens[s]; i, r = i+1, r+1 {
			h[0] += xs[2*r]
			h[1] += xs[2*r+1]
			want = append(want, h[0], h[1])
		}
	}

	calls := 0
	var kept *lt.Tensor
	out, err := lt.DynamicRNN(x, 0, init, func(step int, in, prev *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) {
		if step != calls {
			return nil, nil, fmt.Errorf("step %d, expected %d", step, calls)
		}
		calls++
		if kept == nil {
			kept = in // lent for this call only
		}
		a, err := lt.Data[float32](in)
		if err != nil {
			return nil, nil, err
		}
		b, err := lt.View[float32](prev)
		if err != nil {
			return nil, nil, err
		}
		for i := range a {
			a[i] += b[i]
		}
		o, err := lt.NewTensor(a, []int64{int64(len(a) / 2), 2}, lt.LoD{})
		return o, nil, err
	})
	ok(t, err)
	defer out.Close()
	eq(t, "calls", calls, 5)
	eq(t, "rnn output", floats(t, out), want)
	eq(t, "rnn LoD", must[[]int](t)(out.LoDOffsets(0)), []int{0, 3, 3, 8, 9, 11})
	_, err = kept.NumEl()
	wantError(t, err, lt.NullArgument, "t") // a lent input is emptied after its call

	// Separate output and state (the state a share of the output).
	out2, err := lt.DynamicRNN(x, 0, init, func(step int, in, prev *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) {
		a := must[[]float32](t)(lt.Data[float32](in))
		b := must[[]float32](t)(lt.Data[float32](prev))
		for i := range a {
			a[i] += b[i]
		}
		o := must[*lt.Tensor](t)(lt.NewTensor(a, []int64{int64(len(a) / 2), 2}, lt.LoD{}))
		s := must[*lt.Tensor](t)(o.Share())
		return o, s, nil
	})
	ok(t, err)
	defer out2.Close()
	eq(t, "rnn output (separate state)", floats(t, out2), want)

	// A Go error stops the loop: CallbackFailed wrapping it.
	boom := errors.New("model failed")
	calls = 0
	_, err = lt.DynamicRNN(x, 0, init, func(step int, in, prev *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) {
		calls++
		if step == 1 {
			return nil, nil, boom
		}
		s, err := in.Share()
		return s, nil, err
	})
	wantError(t, err, lt.CallbackFailed, "step 1")
	if !errors.Is(err, boom) {
		t.Errorf("the step function's error is not wrapped: %v", err)
	}
	eq(t, "calls before the error", calls, 2)

	// Returning a lent input is refused by the driver.
	_, err = lt.DynamicRNN(x, 0, init, func(step int, in, prev *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) {
		return in, nil, nil
	})
	wantError(t, err, lt.InvalidArgument, "borrowed")

	// A panic comes back out in the calling goroutine.
	func() {
		defer func() {
			if r := recover(); r != "step panic" {
				t.Errorf("recovered %v, want the step function's panic", r)
			}
		}()
		_, _ = lt.DynamicRNN(x, 0, init, func(step int, in, prev *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) {
			panic("step panic")
		})
		t.Error("DynamicRNN returned after a panic")
	}()

	// The driver's own checks.
	_, err = lt.DynamicRNN(x, 2, init, func(int, *lt.Tensor, *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) {
		return nil, nil, nil
	})
	wantError(t, err, lt.InvalidArgument, "level")
	_, err = lt.DynamicRNN(x, 0, nil, func(int, *lt.Tensor, *lt.Tensor) (*lt.Tensor, *lt.Tensor, error) {
		return nil, nil, nil
	})
	wantError(t, err, lt.NullArgument, "init_state")
}

// Forgotten tensors are freed by the finalizer (the safety net): run under valgrind-free Go, this
// only checks that finalizers and explicit Close do not double-free.
func TestFinalizerSafetyNet(t *testing.T) {
	for i := 0; i < 100; i++ {
		x := must[*lt.Tensor](t)(lt.NewTensor(iota(4), []int64{4}, lt.LoD{}))
		if i%2 == 0 {
			x.Close()
		}
	}
	runtime.GC()
	runtime.GC()
}
