module lodtensor.dev/lodtensor

go 1.19
