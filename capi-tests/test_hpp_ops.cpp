// test_hpp_ops: the C++ layer (include/lodtensor.hpp) over the sequence operators, the rank table,
// the TensorArray (unpack/pack, read/write, to_tensor) and the dynamic-RNN driver with a C++ step
// function (a lambda; exceptions thrown by it come back out of dynamic_rnn unchanged). Expected
// values are the spec's worked examples or plain loops written here.
#include <lodtensor.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"

namespace lt = lodtensor;

namespace {

template <typename T>
bool same(lt::Span<const T> got, std::initializer_list<T> want) {
    if (got.size() != want.size()) return false;
    std::size_t i = 0;
    for (const T &w : want) {
        if (!(got[i++] == w)) return false;
    }
    return true;
}

void test_sequence_ops() {
    // Spec §2.1 case 1: X lod [[0,2,4]] = [a,b,c,d], Y lod [[0,2,4],[0,3,6,7,8]], ref_level 0.
    const float abcd[] = {1, 2, 3, 4};
    const std::size_t one[] = {3};
    const std::size_t x_off[] = {0, 2, 4};
    lt::Tensor x = lt::Tensor::create<float>(abcd, {4, 1}, lt::Lod::offsets(one, x_off));
    const float y_data[8] = {};
    const std::size_t y_sizes[] = {3, 5};
    const std::size_t y_off[] = {0, 2, 4, 0, 3, 6, 7, 8};
    lt::Tensor y = lt::Tensor::create<float>(y_data, {8, 1}, lt::Lod::offsets(y_sizes, y_off));
    lt::Tensor e = lt::sequence_expand(x, y, 0);
    CHECK(same<float>(e.data<float>(), {1, 2, 1, 2, 3, 4, 3, 4}));
    CHECK(same<std::size_t>(e.lod_offsets(0), {0, 2, 4, 6, 8}));

    // Spec §2.2: X [[a],[b],[c],[d]], Y lod [[0,3,6,7,8]].
    lt::Tensor plain = lt::Tensor::create<float>(abcd, {4, 1});
    const std::size_t two[] = {5};
    const std::size_t ea_off[] = {0, 3, 6, 7, 8};
    lt::Tensor y2 = lt::Tensor::create<float>(y_data, {8, 1}, lt::Lod::offsets(two, ea_off));
    lt::Tensor ea = lt::sequence_expand_as(plain, y2);
    CHECK(same<float>(ea.data<float>(), {1, 1, 1, 2, 2, 2, 3, 4}));

    // Spec §6 pool: lod [[0,2,5,7,7]], X [1,3,2,4,6,5,1].
    const float px[] = {1, 3, 2, 4, 6, 5, 1};
    const std::size_t p_off[] = {0, 2, 5, 7, 7};
    lt::Tensor p = lt::Tensor::create<float>(px, {7, 1}, lt::Lod::offsets(two, p_off));
    CHECK(same<float>(lt::sequence_pool(p, LODTENSOR_POOL_SUM).out.data<float>(), {4, 12, 6, 0}));
    CHECK(same<float>(lt::sequence_pool(p, LODTENSOR_POOL_AVERAGE).out.data<float>(), {2, 4, 3, 0}));
    lt::PoolResult mx = lt::sequence_pool(p, LODTENSOR_POOL_MAX);
    CHECK(same<float>(mx.out.data<float>(), {3, 6, 5, 0}));
    CHECK(same<std::int32_t>(mx.max_index.data<std::int32_t>(), {1, 4, 5, -1}));
    CHECK(!lt::sequence_pool(p, LODTENSOR_POOL_SUM).max_index);
    CHECK(same<float>(lt::sequence_first_step(p).data<float>(), {1, 2, 5, 0}));
    CHECK(same<float>(lt::sequence_last_step(p).data<float>(), {3, 6, 1, 0}));

    // pad then unpad (plain-loop expectations): 4 sequences of 2, 3, 2, 0 rows, width 1.
    const float zero[] = {0};
    lt::Tensor pad_value = lt::Tensor::create<float>(zero, {1});
    lt::PadResult padded = lt::sequence_pad(p, pad_value);
    CHECK(padded.padded.dims() == (std::initializer_list<std::int64_t>{4, 3, 1}));
    CHECK(same<float>(padded.padded.data<float>(), {1, 3, 0, 2, 4, 6, 5, 1, 0, 0, 0, 0}));
    CHECK(same<std::int64_t>(padded.length.data<std::int64_t>(), {2, 3, 2, 0}));
    lt::Tensor unpadded = lt::sequence_unpad(padded.padded, padded.length);
    CHECK(same<float>(unpadded.data<float>(), {1, 3, 2, 4, 6, 5, 1}));
    CHECK(same<std::size_t>(unpadded.lod_offsets(0), {0, 2, 5, 7, 7}));

    // scatter: out[i][ids[p]] += updates[p] on a [2, 3] x.
    const float xs[] = {0, 0, 0, 10, 10, 10};
    lt::Tensor sx = lt::Tensor::create<float>(xs, {2, 3});
    const std::int64_t ids[] = {0, 2, 1, 1};
    const std::size_t ones[] = {1};
    const std::size_t id_len[] = {2, 2};
    const std::size_t lvl[] = {2};
    lt::Tensor sids = lt::Tensor::create<std::int64_t>(ids, {4, 1}, lt::Lod::lengths(lvl, id_len));
    const float ups[] = {1, 2, 3, 4};
    lt::Tensor supd = lt::Tensor::create<float>(ups, {4, 1}, lt::Lod::lengths(lvl, id_len));
    CHECK(same<float>(lt::sequence_scatter(sx, sids, supd).data<float>(), {1, 0, 2, 10, 17, 10}));
    lt::sequence_scatter_inplace(sx, sids, supd);
    CHECK(same<float>(sx.data<float>(), {1, 0, 2, 10, 17, 10}));
    (void)ones;

    try {
        lt::sequence_pool(p, 99);
        CHECK(false);
    } catch (const lt::Error &err) {
        CHECK(err.status() == LODTENSOR_INVALID_ARGUMENT);
        CHECK(std::string(err.what()).find("pool_type") != std::string::npos);
    }
}

void test_tensor_array() {
    // Spec §5.3 level_0: lengths [[3,6,1]], values 0..9, ranked at level 0.
    std::vector<float> values(10);
    for (std::size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
    const std::size_t one[] = {3};
    const std::size_t lengths[] = {3, 6, 1};
    lt::Tensor x = lt::Tensor::create<float>(values, {10, 1}, lt::Lod::lengths(one, lengths));
    lt::RankTable table = lt::RankTable::create(x, 0);
    CHECK_EQ_SIZE(table.size(), 3);
    CHECK_EQ_SIZE(table.level(), 0);
    CHECK_EQ_SIZE(table.max_sequence_len(), 6);
    std::size_t idx[3] = {}, len[3] = {};
    CHECK_EQ_SIZE(table.items(idx, len), 3);
    CHECK(idx[0] == 1 && idx[1] == 0 && idx[2] == 2 && len[0] == 6 && len[1] == 3 && len[2] == 1);

    lt::TensorArray steps = lt::TensorArray::unpack(x, table);
    CHECK_EQ_SIZE(steps.size(), 6);
    CHECK(same<float>(steps.read(0).data<float>(), {3, 0, 9}));
    CHECK(same<float>(steps.read(1).data<float>(), {4, 1}));
    CHECK(same<float>(steps.read(2).data<float>(), {5, 2}));
    CHECK(same<float>(steps.read(5).data<float>(), {8}));
    lt::Tensor back = steps.pack(table);
    CHECK(same<float>(back.data<float>(), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    CHECK(same<std::size_t>(back.lod_offsets(0), {0, 3, 9, 10}));

    // shrink and reorder by rank.
    const float state[] = {100, 101, 102};
    lt::Tensor h = lt::Tensor::create<float>(state, {3, 1});
    lt::Tensor ranked = table.reorder(h);
    CHECK(same<float>(ranked.data<float>(), {101, 100, 102}));
    CHECK(same<float>(table.shrink_rnn_memory(ranked, 1).data<float>(), {101, 100}));

    // write/read/to_tensor/unstack.
    lt::TensorArray arr;
    arr.write(1, steps.read(1), true);
    CHECK_EQ_SIZE(arr.size(), 2);
    CHECK_EQ_SIZE(arr.read(0).numel(), 0);
    CHECK(same<float>(arr.to_tensor(0).data<float>(), {4, 1}));
    const float grid[] = {1, 2, 3, 4, 5, 6};
    lt::TensorArray cols = lt::TensorArray::unstack(lt::Tensor::create<float>(grid, {2, 3}), 1);
    CHECK_EQ_SIZE(cols.size(), 3);
    CHECK(same<float>(cols.read(2).data<float>(), {3, 6}));
    CHECK(same<float>(cols.to_tensor(0, true).data<float>(), {1, 4, 2, 5, 3, 6}));
    arr.clear();
    CHECK_EQ_SIZE(arr.size(), 0);
    try {
        arr.read(0);
        CHECK(false);
    } catch (const lt::Error &err) {
        CHECK(err.status() == LODTENSOR_OUT_OF_RANGE);
    }
}

void test_dynamic_rnn() {
    // h_t = h_(t-1) + x_t (width 2), output = h_t, over 5 sequences of 3, 0, 5, 1, 2 rows.
    const std::size_t lens[] = {3, 0, 5, 1, 2};
    const std::size_t one[] = {5};
    const std::size_t rows = 11, width = 2;
    std::vector<float> xs(rows * width), h0(5 * width);
    for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 7) - 2.0f;
    for (std::size_t i = 0; i < h0.size(); ++i) h0[i] = 10.0f * static_cast<float>(i);
    lt::Tensor x = lt::Tensor::create<float>(xs, {11, 2}, lt::Lod::lengths(one, lens));
    lt::Tensor init = lt::Tensor::create<float>(h0, {5, 2});

    // The reference: each sequence alone, in a plain loop.
    std::vector<float> expected(rows * width);
    for (std::size_t s = 0, r = 0; s < 5; ++s) {
        float h[2] = {h0[s * 2], h0[s * 2 + 1]};
        for (std::size_t t = 0; t < lens[s]; ++t, ++r) {
            for (std::size_t c = 0; c < width; ++c) expected[r * width + c] = h[c] += xs[r * width + c];
        }
    }

    std::size_t calls = 0;
    std::vector<float> scratch;
    lt::Tensor out = lt::dynamic_rnn(x, 0, init, [&](std::size_t step, lt::TensorRef in, lt::TensorRef prev) {
        CHECK_EQ_SIZE(step, calls);
        ++calls;
        lt::Span<const float> a = in.data<float>(), b = prev.data<float>();
        scratch.assign(a.begin(), a.end());
        for (std::size_t i = 0; i < scratch.size(); ++i) scratch[i] += b[i];
        lt::Dims d = in.dims();
        return lt::StepResult{lt::Tensor::create<float>(scratch, {d[0], d[1]}), lt::Tensor()};
    });
    CHECK_EQ_SIZE(calls, 5);
    lt::Span<const float> got = out.data<float>();
    CHECK_EQ_SIZE(got.size(), expected.size());
    bool equal = got.size() == expected.size();
    for (std::size_t i = 0; equal && i < got.size(); ++i) equal = got[i] == expected[i];
    CHECK(equal);
    CHECK(same<std::size_t>(out.lod_offsets(0), {0, 3, 3, 8, 9, 11}));

    // Separate output and state handles (the state is a share of the output).
    lt::Tensor out2 = lt::dynamic_rnn(x, 0, init, [&](std::size_t, lt::TensorRef in, lt::TensorRef prev) {
        lt::Span<const float> a = in.data<float>(), b = prev.data<float>();
        scratch.assign(a.begin(), a.end());
        for (std::size_t i = 0; i < scratch.size(); ++i) scratch[i] += b[i];
        lt::Tensor o = lt::Tensor::create<float>(scratch, {static_cast<std::int64_t>(scratch.size() / 2), 2});
        lt::Tensor st = o.share();
        return lt::StepResult{std::move(o), std::move(st)};
    });
    CHECK(out2.data<float>()[20] == expected[20]);

    // An exception in the step function stops the loop and comes out unchanged.
    calls = 0;
    try {
        lt::dynamic_rnn(x, 0, init, [&](std::size_t step, lt::TensorRef in, lt::TensorRef) -> lt::StepResult {
            ++calls;
            if (step == 1) throw std::logic_error("model failed at step 1");
            return lt::StepResult{in.share(), lt::Tensor()};
        });
        CHECK(false);
    } catch (const std::logic_error &err) {
        CHECK(std::string(err.what()) == "model failed at step 1");
    }
    CHECK_EQ_SIZE(calls, 2);

    // A library error from inside the step function propagates as lt::Error.
    try {
        lt::dynamic_rnn(x, 0, init, [&](std::size_t, lt::TensorRef in, lt::TensorRef) -> lt::StepResult {
            return lt::StepResult{in.slice(0, 0, 1), lt::Tensor()};  // in has no LoD: OUT_OF_RANGE
        });
        CHECK(false);
    } catch (const lt::Error &err) {
        CHECK(err.status() == LODTENSOR_OUT_OF_RANGE);
    }
    // The driver's own checks come back as lt::Error too.
    try {
        lt::dynamic_rnn(x, 3, init, [&](std::size_t, lt::TensorRef in, lt::TensorRef) {
            return lt::StepResult{in.share(), lt::Tensor()};
        });
        CHECK(false);
    } catch (const lt::Error &err) {
        CHECK(err.status() == LODTENSOR_INVALID_ARGUMENT);
        CHECK(std::string(err.what()).find("level") != std::string::npos);
    }
}

}  // namespace

int main() {
    try {
        test_sequence_ops();
        test_tensor_array();
        test_dynamic_rnn();
    } catch (const std::exception &e) {
        fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    return CHECK_RETURN();
}
