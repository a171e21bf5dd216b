// test_hpp_ops2: the C++ layer over the second batch of operators (sequence softmax, concat,
// slice, reverse, mask, enumerate, erase, reshape, conv; fill, cast, gather_rows, scatter_rows, log_softmax,
// topk) and the beam-search building blocks (step, fused step, gather_state, gather_tree).
// Expected values are worked by hand here or are the spec's worked examples.
#include <lodtensor.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "check.h"

namespace lt = lodtensor;

namespace {

template <typename T>
bool same(lt::Span<const T> got, const std::vector<T> &want) {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (!(got[i] == want[i])) return false;
    }
    return true;
}

bool near(lt::Span<const float> got, const std::vector<double> &want) {
    if (got.size() != want.size()) return false;
    for (std::size_t i = 0; i < want.size(); ++i) {
        if (std::fabs(got[i] - want[i]) > 1e-5) return false;
    }
    return true;
}

const std::size_t kThree[] = {3};  // one LoD level of 3 offsets
const std::size_t kTwo[] = {2};    // one LoD level of 2 offsets

void test_sequence_ops() {
    const float five[] = {1, 2, 3, 4, 5};
    const std::size_t off35[] = {0, 3, 5};
    lt::Tensor x = lt::Tensor::create<float>(five, {5, 1}, lt::Lod::offsets(kThree, off35));

    const float flat[] = {1, 1, 1, 2, 2};
    lt::Tensor xs = lt::Tensor::create<float>(flat, {5, 1}, lt::Lod::offsets(kThree, off35));
    CHECK(near(lt::sequence_softmax(xs).data<float>(), {1 / 3.0, 1 / 3.0, 1 / 3.0, 0.5, 0.5}));

    const float a[] = {1, 2, 3}, b[] = {10, 20, 30};
    const std::size_t a_off[] = {0, 1, 3}, b_off[] = {0, 2, 3};
    lt::Tensor ta = lt::Tensor::create<float>(a, {3, 1}, lt::Lod::offsets(kThree, a_off));
    lt::Tensor tb = lt::Tensor::create<float>(b, {3, 1}, lt::Lod::offsets(kThree, b_off));
    lt::Tensor cat = lt::sequence_concat({ta, tb});
    CHECK(same<float>(cat.data<float>(), {1, 10, 20, 2, 3, 30}));
    CHECK(same<std::size_t>(cat.lod_offsets(0), {0, 3, 6}));

    const std::int64_t offset[] = {1, 0}, length[] = {2, 1};
    lt::Tensor sl = lt::sequence_slice(x, lt::Tensor::create<std::int64_t>(offset, {2, 1}),
                                       lt::Tensor::create<std::int64_t>(length, {2, 1}));
    CHECK(same<float>(sl.data<float>(), {2, 3, 4}));
    CHECK(same<std::size_t>(sl.lod_offsets(0), {0, 2, 3}));

    CHECK(same<float>(lt::sequence_reverse(x).data<float>(), {3, 2, 1, 5, 4}));

    const std::int64_t lens[] = {2, 0, 3};
    lt::Tensor mask = lt::sequence_mask(lt::Tensor::create<std::int64_t>(lens, {3}), -1, lt::dtype_of<std::int32_t>());
    CHECK(mask.dims() == (std::initializer_list<std::int64_t>{3, 3}));
    CHECK(same<std::int32_t>(mask.data<std::int32_t>(), {1, 1, 0, 0, 0, 0, 1, 1, 1}));

    const std::int64_t tokens[] = {1, 2, 3, 2, 5};
    lt::Tensor tok = lt::Tensor::create<std::int64_t>(tokens, {5, 1}, lt::Lod::offsets(kThree, off35));
    lt::Tensor en = lt::sequence_enumerate(tok, 2, 0);
    CHECK(same<std::int64_t>(en.data<std::int64_t>(), {1, 2, 2, 3, 3, 0, 2, 5, 5, 0}));
    lt::Tensor er = lt::sequence_erase(tok, {2});
    CHECK(same<std::int64_t>(er.data<std::int64_t>(), {1, 3, 5}));
    CHECK(same<std::size_t>(er.lod_offsets(0), {0, 2, 3}));

    const float eight[] = {1, 2, 3, 4, 5, 6, 7, 8};
    const std::size_t off22[] = {0, 2, 4};
    lt::Tensor r = lt::sequence_reshape(lt::Tensor::create<float>(eight, {4, 2}, lt::Lod::offsets(kThree, off22)), 4);
    CHECK(r.dims() == (std::initializer_list<std::int64_t>{2, 4}));
    CHECK(same<std::size_t>(r.lod_offsets(0), {0, 1, 2}));

    // A context of 1 row with an identity filter is the identity.
    const float six[] = {1, 2, 3, 4, 5, 6};
    const std::size_t off3[] = {0, 3};
    lt::Tensor cx = lt::Tensor::create<float>(six, {3, 2}, lt::Lod::offsets(kTwo, off3));
    const float eye[] = {1, 0, 0, 1};
    lt::Tensor conv = lt::sequence_conv(cx, lt::Tensor::create<float>(eye, {2, 2}), lt::TensorRef(), 1, 0);
    CHECK(same<float>(conv.data<float>(), {1, 2, 3, 4, 5, 6}));
    // A context of rows (t-1, t) with the filter summing both: out[t] = x[t-1] + x[t] (zero before).
    const float sum2[] = {1, 0, 0, 1, 1, 0, 0, 1};
    lt::Tensor conv2 = lt::sequence_conv(cx, lt::Tensor::create<float>(sum2, {4, 2}), lt::TensorRef(), 2, -1);
    CHECK(same<float>(conv2.data<float>(), {1, 2, 4, 6, 8, 10}));
}

void test_dense_ops() {
    lt::Tensor f = lt::fill(lt::dtype_of<float>(), {2, 2}, 1.5);
    CHECK(same<float>(f.data<float>(), {1.5f, 1.5f, 1.5f, 1.5f}));
    try {
        lt::fill(lt::dtype_of<std::int32_t>(), {1}, 0.5);
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_ARGUMENT);
    }
    const std::int32_t ints[] = {1, -2, 3};
    lt::Tensor c = lt::cast(lt::Tensor::create<std::int32_t>(ints, {3}), lt::dtype_of<double>());
    CHECK(same<double>(c.data<double>(), {1.0, -2.0, 3.0}));
    const float rows[] = {1, 2, 3};
    const std::int64_t index[] = {2, 0};
    lt::Tensor g = lt::gather_rows(lt::Tensor::create<float>(rows, {3, 1}), lt::Tensor::create<std::int64_t>(index, {2}));
    CHECK(same<float>(g.data<float>(), {3, 1}));
    // Paddle's scatter example: x [[1,1],[2,2],[3,3]], index [2,1,0,1], updates [[1,1],[2,2],[3,3],[4,4]]:
    // overwrite (last wins) [[3,3],[4,4],[1,1]]; add [[1+3,1+3],[2+2+4,2+2+4],[3+1,3+1]].
    const float sx[] = {1, 1, 2, 2, 3, 3}, su[] = {1, 1, 2, 2, 3, 3, 4, 4};
    const std::int64_t si[] = {2, 1, 0, 1};
    lt::Tensor sxt = lt::Tensor::create<float>(sx, {3, 2}), sit = lt::Tensor::create<std::int64_t>(si, {4});
    lt::Tensor sut = lt::Tensor::create<float>(su, {4, 2});
    CHECK(same<float>(lt::scatter_rows(sxt, sit, sut, LODTENSOR_SCATTER_OVERWRITE).data<float>(), {3, 3, 4, 4, 1, 1}));
    CHECK(same<float>(lt::scatter_rows(sxt, sit, sut, LODTENSOR_SCATTER_ADD).data<float>(), {4, 4, 8, 8, 4, 4}));
    try {
        lt::scatter_rows(sxt, sit, sut, 2);
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_ARGUMENT);
    }
    const float zeros[] = {0, 0};
    CHECK(near(lt::log_softmax(lt::Tensor::create<float>(zeros, {1, 2})).data<float>(), {-std::log(2.0), -std::log(2.0)}));
    const float row[] = {1, 3, 2};
    lt::TopK top = lt::topk(lt::Tensor::create<float>(row, {1, 3}), 2);
    CHECK(same<float>(top.values.data<float>(), {3, 2}));
    CHECK(same<std::int64_t>(top.indices.data<std::int64_t>(), {1, 2}));
    lt::TopK bottom = lt::topk(lt::Tensor::create<float>(row, {1, 3}), 1, false);
    CHECK(same<float>(bottom.values.data<float>(), {1}));
}

void test_beam_blocks() {
    // Spec §4.4 gather_tree.
    const std::int64_t ids[] = {2, 2, 6, 1, 3, 9, 6, 1, 0, 1, 9, 0};
    const std::int64_t parents[] = {0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 0, 1};
    lt::Tensor tree = lt::beam_search_gather_tree(lt::Tensor::create<std::int64_t>(ids, {3, 2, 2}),
                                                  lt::Tensor::create<std::int64_t>(parents, {3, 2, 2}));
    CHECK(same<std::int64_t>(tree.data<std::int64_t>(), {2, 2, 1, 6, 3, 3, 6, 1, 0, 1, 9, 0}));

    // One source with one prefix (token 5, score 0) and log-probs [-1, -0.2, -3]: a beam of 2
    // keeps tokens 1 (-0.2) and 0 (-1), both extending prefix row 0.
    const std::size_t sizes[] = {2, 2};
    const std::size_t first[] = {0, 1, 0, 1};
    const std::int64_t pre_id[] = {5};
    const float pre_score[] = {0};
    lt::Tensor pre_ids = lt::Tensor::create<std::int64_t>(pre_id, {1, 1}, lt::Lod::offsets(sizes, first));
    lt::Tensor pre_scores = lt::Tensor::create<float>(pre_score, {1, 1}, lt::Lod::offsets(sizes, first));
    auto check_selection = [](const lt::BeamSelection &sel) {
        lt::Span<const std::int64_t> got = sel.ids.data<std::int64_t>();
        lt::Span<const float> sc = sel.scores.data<float>();
        CHECK_EQ_SIZE(got.size(), 2);
        if (got.size() != 2) return;
        const std::size_t i1 = got[0] == 1 ? 0 : 1;  // the order within a prefix is the library's
        CHECK(got[i1] == 1 && got[1 - i1] == 0);
        CHECK(std::fabs(sc[i1] + 0.2f) < 1e-6f && std::fabs(sc[1 - i1] + 1.0f) < 1e-6f);
        CHECK(same<std::int32_t>(sel.parent_idx.data<std::int32_t>(), {0, 0}));
    };
    const float lp[] = {-1.0f, -0.2f, -3.0f};
    check_selection(lt::beam_search_fused_step(pre_ids, pre_scores, lt::Tensor::create<float>(lp, {1, 3}), 2, 9));
    const std::int64_t cand[] = {1, 0};
    const float cand_scores[] = {-0.2f, -1.0f};
    check_selection(lt::beam_search_step(
        pre_ids, pre_scores, lt::Tensor::create<std::int64_t>(cand, {1, 2}, lt::Lod::offsets(sizes, first)),
        lt::Tensor::create<float>(cand_scores, {1, 2}, lt::Lod::offsets(sizes, first)), 0, 2, 9, true));

    const float state[] = {10, 20};
    const std::int64_t parent[] = {1, 1, 0};
    lt::Tensor gathered = lt::beam_search_gather_state(lt::Tensor::create<float>(state, {2, 1}),
                                                       lt::Tensor::create<std::int64_t>(parent, {3}));
    CHECK(same<float>(gathered.data<float>(), {20, 20, 10}));
    // gather_states: both states by one index; a parent outside the second's rows names it.
    const std::int32_t codes[] = {7, 8, 9};
    lt::Tensor a = lt::Tensor::create<float>(state, {2, 1}), b = lt::Tensor::create<std::int32_t>(codes, {3});
    lt::Tensor by = lt::Tensor::create<std::int64_t>(parent, {3});
    std::vector<lt::Tensor> both = lt::beam_search_gather_states({a, b}, by);
    CHECK(both.size() == 2);
    CHECK(same<float>(both[0].data<float>(), {20, 20, 10}));
    CHECK(same<std::int32_t>(both[1].data<std::int32_t>(), {8, 8, 7}));
    const std::int64_t two[] = {2};
    try {
        lt::beam_search_gather_states({b, a}, lt::Tensor::create<std::int64_t>(two, {1}));
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_OUT_OF_RANGE && std::string(e.what()).find("states[1]") != std::string::npos);
    }
}

}  // namespace

int main() {
    try {
        test_sequence_ops();
        test_dense_ops();
        test_beam_blocks();
    } catch (const std::exception &e) {
        fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    return CHECK_RETURN();
}
