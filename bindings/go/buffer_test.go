package lodtensor_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	lt "lodtensor.dev/lodtensor"
)

// A host tensor over another tensor's memory: zero copy both ways, and release runs once, when the
// last handle over the memory (the tensor, a share, a slice) is closed.
func TestFromBufferHost(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(6), []int64{3, 2}, lt.Lengths([]int{2, 1})))
	defer x.Close()
	addr := must[uintptr](t)(x.Address())
	released := 0
	y := must[*lt.Tensor](t)(lt.FromBuffer(lt.CPU, lt.Float32, []int64{3, 2}, addr, 24, lt.Lengths([]int{2, 1}),
		func() { released++ }))
	eq(t, "the same address", must[uintptr](t)(y.Address()), addr)
	eq(t, "its elements", floats(t, y), iota(6))
	eq(t, "its LoD", must[[]int](t)(y.LoDOffsets(0)), []int{0, 2, 3})
	must[[]float32](t)(lt.MutableView[float32](y))[1] = 9
	eq(t, "a write through the new tensor, seen by the old", floats(t, x)[1], float32(9))
	must[[]float32](t)(lt.MutableView[float32](x))[5] = 7
	eq(t, "and the other way", floats(t, y)[5], float32(7))
	share := must[*lt.Tensor](t)(y.Share())
	slice := must[*lt.Tensor](t)(y.Slice(0, 1, 2))
	ok(t, y.Close())
	ok(t, share.Close())
	eq(t, "released with a slice still open", released, 0)
	eq(t, "the slice's rows", floats(t, slice), []float32{4, 7})
	ok(t, slice.Close())
	eq(t, "released at the last close", released, 1)
	ok(t, slice.Close())
	eq(t, "and only once", released, 1)

	// Without a release function: the memory is the caller's to keep alive.
	z := must[*lt.Tensor](t)(lt.FromBuffer(lt.CPU, lt.Float32, []int64{6}, addr, 24, lt.LoD{}, nil))
	eq(t, "no release function", floats(t, z)[5], float32(7))
	ok(t, z.Close())
}

func TestFromBufferErrors(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(8), []int64{8}, lt.LoD{}))
	defer x.Close()
	addr := must[uintptr](t)(x.Address())
	released := 0
	release := func() { released++ }
	_, err := lt.FromBuffer(lt.CPU, lt.Float32, []int64{4}, addr+1, 16, lt.LoD{}, release)
	wantError(t, err, lt.InvalidArgument, "aligned")
	_, err = lt.FromBuffer(lt.CPU, lt.Float32, []int64{4}, addr, 12, lt.LoD{}, release)
	wantError(t, err, lt.InvalidArgument, "")
	_, err = lt.FromBuffer(lt.CPU, lt.Float32, []int64{4}, addr, 16, lt.Lengths([]int{5}), release)
	wantError(t, err, lt.InvalidLoD, "")
	_, err = lt.FromBuffer(lt.Place{DeviceType: 7}, lt.Float32, []int64{4}, addr, 16, lt.LoD{}, release)
	wantError(t, err, lt.InvalidArgument, "place")
	_, err = lt.FromBuffer(lt.CPU, lt.Float32, []int64{4}, 0, 16, lt.LoD{}, release)
	wantError(t, err, lt.NullArgument, "data")
	_, err = lt.FromBuffer(lt.CPU, lt.Float32, []int64{4}, addr, -1, lt.LoD{}, release)
	wantError(t, err, lt.InvalidArgument, "data_len: -1 is negative")
	_, err = lt.FromBuffer(lt.CPU, lt.Float32, []int64{4}, addr, 16, lt.Lengths([]int{5, -1}), release)
	wantError(t, err, lt.InvalidArgument, "LoD level 0: -1 is negative")
	if _, err := lt.CUDADeviceCount(); err != nil {
		_, err = lt.FromBuffer(lt.CUDA(0), lt.Float32, []int64{4}, addr, 16, lt.LoD{}, release)
		wantError(t, err, lt.Unsupported, "")
	}
	eq(t, "no failure releases", released, 0)
	_, err = (*lt.Tensor)(nil).Address()
	wantError(t, err, lt.NullArgument, "")
}

// A CUDA device's memory (another tensor's) wrapped as a tensor on that device: its ops and copies
// read it; Go cannot, so View refuses it and Data copies through the host; memory of cuda:0 said
// to be on cuda:1 is refused.
func TestFromBufferDevice(t *testing.T) {
	devices, err := lt.CUDADeviceCount()
	if err != nil {
		t.Skip("no CUDA device")
	}
	x := must[*lt.Tensor](t)(lt.NewTensor(iota(6), []int64{3, 2}, lt.LoD{}))
	defer x.Close()
	d := must[*lt.Tensor](t)(x.ToPlace(lt.CUDA(0)))
	addr := must[uintptr](t)(d.Address())
	released := 0
	y := must[*lt.Tensor](t)(lt.FromBuffer(lt.CUDA(0), lt.Float32, []int64{3, 2}, addr, 24, lt.Lengths([]int{1, 2}),
		func() { released++; d.Close() }))
	eq(t, "its place", must[lt.Place](t)(y.Place()), lt.CUDA(0))
	eq(t, "its elements, through the host", floats(t, y), iota(6))
	_, err = lt.View[float32](y)
	wantError(t, err, lt.InvalidArgument, "cuda:0")
	_, err = lt.MutableView[float32](y)
	wantError(t, err, lt.InvalidArgument, "cuda:0")
	reversed := must[*lt.Tensor](t)(lt.SequenceReverse(y))
	eq(t, "an op on it", floats(t, reversed), []float32{0, 1, 4, 5, 2, 3})
	ok(t, reversed.Close())
	if devices > 1 {
		_, err = lt.FromBuffer(lt.CUDA(1), lt.Float32, []int64{3, 2}, addr, 24, lt.LoD{}, func() { released += 10 })
		wantError(t, err, lt.InvalidArgument, "cuda:1")
	}
	ok(t, y.Close())
	eq(t, "released at the close", released, 1)
}

// A panic in a release function cannot reach the caller of Close through the library: it ends
// the program. The test runs itself in a child process that does that.
func TestFromBufferReleasePanicEndsTheProgram(t *testing.T) {
	const child = "LODTENSOR_GO_RELEASE_PANIC"
	if os.Getenv(child) == "1" {
		x := must[*lt.Tensor](t)(lt.NewTensor(iota(2), []int64{2}, lt.LoD{}))
		addr := must[uintptr](t)(x.Address())
		y := must[*lt.Tensor](t)(lt.FromBuffer(lt.CPU, lt.Float32, []int64{2}, addr, 8, lt.LoD{},
			func() { panic("a release function that panics") }))
		ok(t, y.Close())
		time.Sleep(10 * time.Second) // the panic ends the program first
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFromBufferReleasePanicEndsTheProgram$")
	cmd.Env = append(os.Environ(), child+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("the child ended with %v, want exit status 2 (a panic); output:\n%s", err, out)
	}
	if !strings.Contains(string(out), "panic: a release function that panics") {
		t.Errorf("the child's output does not show the panic:\n%s", out)
	}
}
