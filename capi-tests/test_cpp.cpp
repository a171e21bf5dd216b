// test_cpp: the public header from C++17 (-Wall -Wextra -Wpedantic -Werror): RAII handles with
// std::unique_ptr and a custom deleter, std::vector buffers, a captureless lambda as the release
// callback, the status enum as a C++ type, and the main operations end to end.
#include <lodtensor.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "check.h"

namespace {

// The status enum is a real, 32-bit C++ enum type.
static_assert(std::is_enum<lodtensor_status_t>::value, "lodtensor_status_t is an enum in C++");
static_assert(sizeof(lodtensor_status_t) == sizeof(std::int32_t), "status is int32_t-sized");
static_assert(std::is_same<std::underlying_type<lodtensor_status_t>::type, std::int32_t>::value,
              "status has int32_t as its underlying type");
static_assert(std::is_standard_layout<lodtensor_dtype_t>::value && sizeof(lodtensor_dtype_t) == 4,
              "lodtensor_dtype_t is DLDataType-shaped");
static_assert(std::is_standard_layout<lodtensor_place_t>::value && sizeof(lodtensor_place_t) == 8,
              "lodtensor_place_t is DLDevice-shaped");

struct Destroy {
    void operator()(lodtensor_t *t) const noexcept { lodtensor_destroy(t); }
};
using Tensor = std::unique_ptr<lodtensor_t, Destroy>;

// Creates a float32 [rows, width] tensor from a vector, with a LoD given as lengths.
lodtensor_status_t make(const std::vector<float> &data, std::int64_t rows, std::int64_t width,
                        const std::vector<std::vector<std::size_t>> &lengths, Tensor &out) {
    std::vector<std::size_t> sizes, flat;
    for (const auto &level : lengths) {
        sizes.push_back(level.size());
        flat.insert(flat.end(), level.begin(), level.end());
    }
    const std::array<std::int64_t, 2> dims{rows, width};
    const lodtensor_dtype_t f32{LODTENSOR_DTYPE_CODE_FLOAT, 32, 1};
    lodtensor_t *raw = nullptr;
    lodtensor_status_t s = lodtensor_create(f32, dims.data(), dims.size(), data.data(), data.size() * sizeof(float),
                                            LODTENSOR_LOD_LENGTHS, sizes.data(), sizes.size(), flat.data(),
                                            flat.size(), &raw);
    if (s == LODTENSOR_OK) {
        out.reset(raw);
    }
    return s;
}

std::vector<std::size_t> offsets(const lodtensor_t *t, std::size_t level) {
    const std::size_t *p = nullptr;
    std::size_t n = 0;
    if (lodtensor_lod_offsets(t, level, &p, &n) != LODTENSOR_OK) {
        return {};
    }
    return std::vector<std::size_t>(p, p + n);
}

std::vector<std::size_t> lengths(const lodtensor_t *t, std::size_t level) {
    std::size_t n = 0;
    if (lodtensor_lod_lengths(t, level, nullptr, 0, &n) != LODTENSOR_OK) {
        return {};
    }
    std::vector<std::size_t> out(n);
    if (lodtensor_lod_lengths(t, level, out.data(), out.size(), &n) != LODTENSOR_OK) {
        return {};
    }
    return out;
}

std::vector<std::int64_t> dims(const lodtensor_t *t) {
    std::size_t n = 0;
    lodtensor_dims(t, nullptr, 0, &n);
    std::vector<std::int64_t> out(n);
    lodtensor_dims(t, out.data(), out.size(), &n);
    return out;
}

std::vector<float> elements(const lodtensor_t *t) {
    const void *p = nullptr;
    std::size_t numel = 0;
    if (lodtensor_data(t, &p) != LODTENSOR_OK || lodtensor_numel(t, &numel) != LODTENSOR_OK) {
        return {};
    }
    const float *f = static_cast<const float *>(p);
    return std::vector<float>(f, f + numel);
}

std::vector<float> iota(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) {
        v[i] = static_cast<float>(i);
    }
    return v;
}

void test_build_and_read() {
    // Spec §1.2: lengths [[2,1],[2,2,3]] are offsets [[0,2,3],[0,2,4,7]], shape [7, 2].
    Tensor t;
    if (!CHECK_OK(make(iota(14), 7, 2, {{2, 1}, {2, 2, 3}}, t))) {
        return;
    }
    CHECK(offsets(t.get(), 0) == (std::vector<std::size_t>{0, 2, 3}));
    CHECK(offsets(t.get(), 1) == (std::vector<std::size_t>{0, 2, 4, 7}));
    CHECK(lengths(t.get(), 1) == (std::vector<std::size_t>{2, 2, 3}));
    CHECK(dims(t.get()) == (std::vector<std::int64_t>{7, 2}));
    CHECK(elements(t.get()) == iota(14));
    lodtensor_dtype_t dt{};
    CHECK_OK(lodtensor_dtype(t.get(), &dt));
    CHECK(dt.code == LODTENSOR_DTYPE_CODE_FLOAT && dt.bits == 32 && dt.lanes == 1);
}

void test_slice_split_merge() {
    // Spec §1.5 and §1.8 through RAII handles.
    Tensor t;
    if (!CHECK_OK(make(iota(20), 20, 1, {{2, 1}, {2, 2, 3}, {2, 3, 2, 3, 2, 3, 5}}, t))) {
        return;
    }
    lodtensor_t *raw = nullptr;
    if (CHECK_OK(lodtensor_slice(t.get(), 0, 1, 2, &raw))) {
        Tensor s(raw);
        CHECK(offsets(s.get(), 0) == (std::vector<std::size_t>{0, 1}));
        CHECK(offsets(s.get(), 1) == (std::vector<std::size_t>{0, 3}));
        CHECK(offsets(s.get(), 2) == (std::vector<std::size_t>{0, 2, 5, 10}));
        const void *a = nullptr, *b = nullptr;
        lodtensor_data(s.get(), &a);
        lodtensor_data(t.get(), &b);
        CHECK(a == static_cast<const float *>(b) + 10);
    }

    Tensor batch;
    if (!CHECK_OK(make(iota(20), 20, 1, {{2, 2, 1, 1}, {1, 5, 2, 5, 2, 5}}, batch))) {
        return;
    }
    std::vector<lodtensor_t *> raw_pieces(2, nullptr);
    std::size_t count = 0;
    if (!CHECK_OK(lodtensor_split(batch.get(), 2, raw_pieces.data(), raw_pieces.size(), &count))) {
        return;
    }
    std::vector<Tensor> pieces;
    for (std::size_t i = 0; i < count; ++i) {
        pieces.emplace_back(raw_pieces[i]);
    }
    CHECK_EQ_SIZE(pieces.size(), 2);
    CHECK(offsets(pieces[0].get(), 0) == (std::vector<std::size_t>{0, 2, 4}));
    CHECK(offsets(pieces[0].get(), 1) == (std::vector<std::size_t>{0, 1, 6, 8, 13}));
    CHECK(offsets(pieces[1].get(), 0) == (std::vector<std::size_t>{0, 1, 2}));
    CHECK(offsets(pieces[1].get(), 1) == (std::vector<std::size_t>{0, 2, 7}));

    std::vector<const lodtensor_t *> parts;
    for (const auto &p : pieces) {
        parts.push_back(p.get());
    }
    if (CHECK_OK(lodtensor_merge(parts.data(), parts.size(), &raw))) {
        Tensor merged(raw);
        CHECK(offsets(merged.get(), 0) == (std::vector<std::size_t>{0, 2, 4, 5, 6}));
        CHECK(offsets(merged.get(), 1) == (std::vector<std::size_t>{0, 1, 6, 8, 13, 15, 20}));
        CHECK(elements(merged.get()) == iota(20));
    }
}

void test_lod_reset_and_errors() {
    Tensor x;
    if (!CHECK_OK(make(iota(10), 10, 1, {{3, 2, 5}}, x))) {
        return;
    }
    const std::vector<std::int64_t> target{0, 7, 10};
    lodtensor_t *raw = nullptr;
    if (CHECK_OK(lodtensor_lod_reset(x.get(), nullptr, target.data(), target.size(), false, &raw))) {
        Tensor out(raw);
        CHECK(offsets(out.get(), 0) == (std::vector<std::size_t>{0, 7, 10}));
    }
    // Errors come back as the enum, with a message; the out handle is untouched.
    raw = nullptr;
    const std::vector<std::int64_t> bad{0, 7, 9};
    lodtensor_status_t s = lodtensor_lod_reset(x.get(), nullptr, bad.data(), bad.size(), false, &raw);
    CHECK(s == LODTENSOR_INVALID_LOD);
    CHECK(raw == nullptr);
    CHECK(std::string(lodtensor_last_error_message()).find("rows") != std::string::npos);
    switch (s) {
    case LODTENSOR_INVALID_LOD:
        CHECK(std::string(lodtensor_status_str(s)) == "invalid LoD");
        break;
    default:
        CHECK(false);
        break;
    }
    CHECK_STATUS_MSG(lodtensor_slice(x.get(), 0, 2, 2, &raw), LODTENSOR_OUT_OF_RANGE, "begin");
    CHECK_STATUS_MSG(lodtensor_selftest_panic(), LODTENSOR_INTERNAL, "panic");
    CHECK(std::string(lodtensor_version()) == LODTENSOR_VERSION_STRING);
}

void test_from_buffer_with_lambda() {
    // A vector owned by the caller, released through a captureless lambda.
    static int releases = 0;
    auto buffer = std::make_unique<std::vector<double>>(6, 0.5);
    const std::array<std::int64_t, 2> dims{3, 2};
    const lodtensor_dtype_t f64{LODTENSOR_DTYPE_CODE_FLOAT, 64, 1};
    const lodtensor_place_t cpu{LODTENSOR_DEVICE_CPU, 0};
    lodtensor_release_fn release = [](void *, void *user_data) {
        delete static_cast<std::vector<double> *>(user_data);
        ++releases;
    };
    std::vector<double> *vec = buffer.get();
    lodtensor_t *raw = nullptr;
    if (!CHECK_OK(lodtensor_from_buffer(cpu, f64, dims.data(), dims.size(), vec->data(), vec->size() * sizeof(double),
                                        LODTENSOR_LOD_OFFSETS, nullptr, 0, nullptr, 0, release, vec, &raw))) {
        return;
    }
    buffer.release();  // the library owns it now
    Tensor t(raw);
    Tensor copy;
    if (CHECK_OK(lodtensor_copy(t.get(), &raw))) {
        copy.reset(raw);
    }
    const void *p = nullptr;
    lodtensor_data(t.get(), &p);
    CHECK(p == vec->data());
    CHECK(releases == 0);
    t.reset();
    CHECK(releases == 1);
    lodtensor_data(copy.get(), &p);
    CHECK(static_cast<const double *>(p)[5] == 0.5);
}

}  // namespace

int main() {
    test_build_and_read();
    test_slice_split_merge();
    test_lod_reset_and_errors();
    test_from_buffer_with_lambda();
    return CHECK_RETURN();
}
