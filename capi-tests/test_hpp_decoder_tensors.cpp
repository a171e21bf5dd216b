// test_hpp_decoder_tensors: BeamSearchDecoder::run_tensors, the C++ layer over
// beam_search_decoder_run_tensors. A model written here returns its log-probs as a Tensor (or as
// a TensorRef to a tensor it keeps, which the layer shares); the results must equal
// BeamSearchDecoder::run fed the same values (float32, and bfloat16 through the same rounding),
// an exception from the model comes out unchanged, a library error throws lt::Error, and on a
// usable CUDA device the model's tensor on cuda:0 gives the same results again.
#include <lodtensor.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"

namespace lt = lodtensor;

namespace {

constexpr std::size_t kVocab = 9;
constexpr std::int64_t kEnd = 2;

// A deterministic toy model: the log-prob of token v after prefix p depends on its last token,
// its parent and the step; end_id is attractive for some prefixes, so branches finish early.
std::vector<float> model_values(const lt::BeamStep &info) {
    std::vector<float> lp(info.num_prefixes() * kVocab);
    for (std::size_t p = 0; p < info.num_prefixes(); ++p) {
        for (std::size_t v = 0; v < kVocab; ++v) {
            std::uint64_t h = static_cast<std::uint64_t>(info.ids()[p]) * 2654435761u +
                              static_cast<std::uint64_t>(info.parent_idx()[p]) * 40503u + v * 9973u +
                              info.step() * 131u;
            h ^= h >> 13;
            h = (h * 0x5bd1e995u) & 0xffffffffu;
            h ^= h >> 15;
            lp[p * kVocab + v] = (v == static_cast<std::size_t>(kEnd) && h % 3u == 0u)
                                     ? -0.05f * static_cast<float>(h % 5u)
                                     : -static_cast<float>(h % 777u) / 101.0f;
        }
    }
    return lp;
}

lt::Tensor model_tensor(const lt::BeamStep &info, lodtensor_dtype_t dtype) {
    std::vector<float> lp = model_values(info);
    const std::int64_t dims[2] = {static_cast<std::int64_t>(info.num_prefixes()), static_cast<std::int64_t>(kVocab)};
    lt::Tensor t = lt::Tensor::create<float>(lp, dims);
    if (lt::same_dtype(dtype, lt::dtype_of<float>())) return t;
    return lt::cast(t, dtype);
}

// The host decoder's model: the same values through the same rounding, as float32.
auto host_model(lodtensor_dtype_t dtype) {
    return [dtype](lt::BeamStep info, lt::Span<float> log_probs) {
        lt::Tensor back = lt::cast(model_tensor(info, dtype), lt::dtype_of<float>());
        lt::Span<const float> v = back.data<float>();
        std::copy(v.begin(), v.end(), log_probs.begin());
    };
}

bool same_result(const lt::DecodeResult &got, const lt::DecodeResult &want) {
    auto same_bytes = [](const lt::Tensor &a, const lt::Tensor &b) {
        if (a.nbytes() != b.nbytes() || !lt::same_dtype(a.dtype(), b.dtype()) || a.lod_levels() != b.lod_levels())
            return false;
        for (std::size_t l = 0; l < a.lod_levels(); ++l) {
            lt::Span<const std::size_t> x = a.lod_offsets(l), y = b.lod_offsets(l);
            if (x.size() != y.size() || !std::equal(x.begin(), x.end(), y.begin())) return false;
        }
        const void *pa = nullptr, *pb = nullptr;
        lt::check(lodtensor_data(a.get(), &pa));
        lt::check(lodtensor_data(b.get(), &pb));
        return a.nbytes() == 0 || std::memcmp(pa, pb, a.nbytes()) == 0;
    };
    return same_bytes(got.ids, want.ids) && same_bytes(got.scores, want.scores);
}

beam_search_decoder_options_t options() {
    beam_search_decoder_options_t o = lt::decoder_options();
    o.vocab_size = kVocab;
    o.start_id = 0;
    o.end_id = kEnd;
    o.beam_size = 4;
    o.num_hypotheses = 3;
    o.min_length = 2;
    o.max_length = 6;
    return o;
}

bool cuda_usable() {
    try {
        return lt::cuda_device_count() > 0;
    } catch (const lt::Error &) {
        return false;
    }
}

void test_same_as_run() {
    const lt::BeamSearchDecoder decoder(options());
    const lodtensor_dtype_t f32 = lt::dtype_of<float>(), bf16{LODTENSOR_DTYPE_CODE_BFLOAT, 16, 1};
    for (lodtensor_dtype_t dtype : {f32, bf16}) {
        lt::DecodeResult want = decoder.run(3, host_model(dtype));
        CHECK_EQ_SIZE(want.scores.numel(), 9);

        std::size_t steps = 0;
        lt::DecodeResult got = decoder.run_tensors(3, [&](lt::BeamStep info) {
            CHECK_EQ_SIZE(info.step(), steps++);
            CHECK(!info.parent_idx_tensor());  // host log-probs: the parents stay on the host
            return model_tensor(info, dtype);
        });
        CHECK(same_result(got, want));

        // A TensorRef to a tensor the model keeps: the layer shares it, the model's copy lives on.
        lt::Tensor kept;
        lt::DecodeResult shared = decoder.run_tensors(3, [&](lt::BeamStep info) {
            kept = model_tensor(info, dtype);
            return kept.ref();
        });
        CHECK(same_result(shared, want));
        CHECK(static_cast<bool>(kept) && kept.dims()[1] == static_cast<std::int64_t>(kVocab));

        if (cuda_usable()) {
            // After the first step the parents come on the device, a state there is reordered by them.
            lt::DecodeResult on_device = decoder.run_tensors(3, [&](lt::BeamStep info) {
                CHECK(static_cast<bool>(info.parent_idx_tensor()) == (info.step() > 0));
                if (info.parent_idx_tensor()) {
                    std::size_t previous = 0;  // rows of the previous step's state
                    for (std::size_t i = 0; i < info.num_prefixes(); ++i) {
                        previous = std::max(previous, static_cast<std::size_t>(info.parent_idx()[i]) + 1);
                    }
                    const std::vector<float> rows(previous, 1.0f);
                    const std::int64_t n = static_cast<std::int64_t>(rows.size());
                    lt::Tensor state = lt::to_place(lt::Tensor::create<float>(rows, {n}), lt::cuda_place(0));
                    std::vector<lt::Tensor> moved = lt::beam_search_gather_states({state}, info.parent_idx_tensor());
                    CHECK(moved.size() == 1 && moved[0].dims()[0] == static_cast<std::int64_t>(info.num_prefixes()));
                }
                return lt::to_place(model_tensor(info, dtype), lt::cuda_place(0));
            });
            CHECK(same_result(on_device, want));
        } else {
            std::printf("test_hpp_decoder_tensors: CUDA part skipped: no CUDA device\n");
        }
    }
}

void test_errors() {
    const lt::BeamSearchDecoder decoder(options());
    try {
        decoder.run_tensors(2, [](lt::BeamStep info) -> lt::Tensor {
            if (info.step() == 1) throw std::runtime_error("model failed");
            return model_tensor(info, lt::dtype_of<float>());
        });
        CHECK(false);
    } catch (const std::runtime_error &e) {
        CHECK(std::string(e.what()) == "model failed");
    }
    try {
        decoder.run_tensors(2, [](lt::BeamStep info) {
            const std::vector<double> wrong(info.num_prefixes() * kVocab, -1.0);
            const std::int64_t dims[2] = {static_cast<std::int64_t>(info.num_prefixes()),
                                          static_cast<std::int64_t>(kVocab)};
            return lt::Tensor::create<double>(wrong, dims);
        });
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_UNSUPPORTED);
        CHECK(std::string(e.what()).find("log_probs") != std::string::npos);
    }
    try {
        decoder.run_tensors(2, [](lt::BeamStep info) {
            const std::vector<float> flat(info.num_prefixes() * kVocab, -1.0f);
            const std::int64_t dims[1] = {static_cast<std::int64_t>(flat.size())};
            return lt::Tensor::create<float>(flat, dims);
        });
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("dims") != std::string::npos);
    }
    try {
        decoder.run_tensors(0, [](lt::BeamStep info) { return model_tensor(info, lt::dtype_of<float>()); });
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_ARGUMENT);
    }
}

}  // namespace

int main() {
    try {
        test_same_as_run();
        test_errors();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    return CHECK_RETURN();
}
