// test_hpp_fill_on: lodtensor::fill_on, the C++ layer over lodtensor_fill_on: a host fill equal to
// lodtensor::fill, its errors as lt::Error, and on a usable CUDA device a fill on cuda:0 that
// comes back equal to the host fill.
#include <lodtensor.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "check.h"

namespace lt = lodtensor;

namespace {

bool cuda_usable() {
    try {
        return lt::cuda_device_count() > 0;
    } catch (const lt::Error &) {
        return false;
    }
}

void test_fill_on() {
    const lodtensor_dtype_t f32 = lt::dtype_of<float>(), i64 = lt::dtype_of<std::int64_t>();
    lt::Tensor x = lt::fill_on(lt::cpu_place(), f32, {2, 3}, -0.25);
    lt::Span<const float> v = x.data<float>();
    CHECK_EQ_SIZE(v.size(), 6);
    for (float e : v) CHECK(e == -0.25f);
    CHECK(x.place().device_type == LODTENSOR_DEVICE_CPU);
    try {
        lt::fill_on(lt::cpu_place(), i64, {1}, 0.5);
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("value") != std::string::npos);
    }
    if (!cuda_usable()) {
        try {
            lt::fill_on(lt::cuda_place(0), f32, {1}, 0.0);
            CHECK(false);
        } catch (const lt::Error &e) {
            CHECK(e.status() == LODTENSOR_UNSUPPORTED);
        }
        std::printf("test_hpp_fill_on: CUDA part skipped: no CUDA device\n");
        return;
    }
    lt::Tensor d = lt::fill_on(lt::cuda_place(0), i64, {5, 3}, -9);
    CHECK(d.place().device_type == LODTENSOR_DEVICE_CUDA && d.place().device_id == 0);
    lt::Tensor h = lt::to_place(d, lt::cpu_place());
    lt::Span<const std::int64_t> w = h.data<std::int64_t>();
    CHECK_EQ_SIZE(w.size(), 15);
    for (std::int64_t e : w) CHECK(e == -9);
}

}  // namespace

int main() {
    try {
        test_fill_on();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    return CHECK_RETURN();
}
