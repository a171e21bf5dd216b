package lodtensor_test

import (
	"testing"

	lt "lodtensor.dev/lodtensor"
)

func TestFillOn(t *testing.T) {
	x := must[*lt.Tensor](t)(lt.FillOn(lt.CPU, lt.Float32, []int64{2, 3}, -0.5))
	defer x.Close()
	eq(t, "fill on the CPU", floats(t, x), []float32{-0.5, -0.5, -0.5, -0.5, -0.5, -0.5})
	_, err := lt.FillOn(lt.CPU, lt.Int32, []int64{1}, 0.5)
	wantError(t, err, lt.InvalidArgument, "value")
	_, err = lt.FillOn(lt.Place{DeviceType: 1, DeviceID: 3}, lt.Float32, []int64{1}, 0)
	wantError(t, err, lt.InvalidArgument, "device_id")
	if n, err := lt.CUDADeviceCount(); err != nil || n == 0 {
		_, err = lt.FillOn(lt.CUDA(0), lt.Float32, []int64{1}, 0)
		wantError(t, err, lt.Unsupported, "cuda:0")
		t.Log("CUDA part skipped: no CUDA device")
		return
	}
	d := must[*lt.Tensor](t)(lt.FillOn(lt.CUDA(0), lt.Int16, []int64{3, 5}, -7))
	defer d.Close()
	eq(t, "place", must[lt.Place](t)(d.Place()), lt.CUDA(0))
	h := must[*lt.Tensor](t)(d.ToPlace(lt.CPU))
	defer h.Close()
	want := make([]int16, 15)
	for i := range want {
		want[i] = -7
	}
	eq(t, "fill on cuda:0", must[[]int16](t)(lt.Data[int16](h)), want)
}
