// test_hpp_beam: the C++ layer over beam search: beam_search_decode on the spec's worked example
// (§4.3), and the decoder driving a model written in C++ (a lambda step function, an edit
// function that bans a token, an exception stopping it). The decoder's results are checked
// against an exhaustive search written here: with a beam wider than every candidate set nothing
// is pruned, so the n best sentences are the n best of all sentences.
#include <lodtensor.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "check.h"

namespace lt = lodtensor;

namespace {

template <typename T>
bool same(lt::Span<const T> got, const std::vector<T> &want) {
    return got.size() == want.size() && std::equal(want.begin(), want.end(), got.begin());
}

void test_decode_worked_example() {
    // Spec §4.3: beam_size 2, end_id 1, 2 sources, 5 steps; scores equal the ids.
    struct Step {
        std::vector<std::size_t> l0, l1;
        std::vector<std::int64_t> ids;
    };
    const std::vector<Step> steps = {{{0, 1, 2}, {0, 1, 2}, {0, 0}},
                                     {{0, 1, 2}, {0, 2, 4}, {2, 3, 4, 5}},
                                     {{0, 2, 4}, {0, 2, 2, 4, 4}, {3, 1, 5, 4}},
                                     {{0, 2, 4}, {0, 1, 2, 3, 4}, {1, 1, 3, 5}},
                                     {{0, 2, 4}, {0, 0, 0, 2, 2}, {5, 1}}};
    lt::TensorArray ids, scores;
    for (std::size_t t = 0; t < steps.size(); ++t) {
        const Step &s = steps[t];
        std::vector<std::size_t> sizes{s.l0.size(), s.l1.size()}, flat(s.l0);
        flat.insert(flat.end(), s.l1.begin(), s.l1.end());
        const lt::Lod lod = lt::Lod::offsets(sizes, flat);
        const std::int64_t n = static_cast<std::int64_t>(s.ids.size());
        std::vector<float> f(s.ids.begin(), s.ids.end());
        ids.write(t, lt::Tensor::create<std::int64_t>(s.ids, {n, 1}, lod));
        scores.write(t, lt::Tensor::create<float>(f, {n, 1}, lod));
    }
    lt::DecodeResult r = lt::beam_search_decode(ids, scores, 2, 1);
    CHECK(same<std::size_t>(r.ids.lod_offsets(0), {0, 2, 4}));
    CHECK(same<std::size_t>(r.ids.lod_offsets(1), {0, 4, 7, 12, 17}));
    CHECK(same<std::int64_t>(r.ids.data<std::int64_t>(), {0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1}));
    CHECK(same<float>(r.scores.data<float>(), {0, 2, 3, 1, 0, 2, 1, 0, 4, 5, 3, 5, 0, 4, 5, 3, 1}));
}

// The toy model: tokens 0 = start, 1 = end, 2, 3; the log-probability of the next token depends
// on the source and the last token only. The start token is never produced.
constexpr std::size_t kVocab = 4;
const double kTable[2][4][4] = {
    // source 0, rows: last token 0 (start), 1 (unused), 2, 3
    {{-INFINITY, -1.2137, -0.4131, -0.9377},
     {0, 0, 0, 0},
     {-INFINITY, -0.7219, -1.1043, -0.8311},
     {-INFINITY, -0.5077, -1.3359, -1.6123}},
    // source 1
    {{-INFINITY, -0.3071, -1.5233, -1.1189},
     {0, 0, 0, 0},
     {-INFINITY, -0.9463, -0.6007, -1.4251},
     {-INFINITY, -1.0391, -0.2113, -2.0447}}};

struct Sentence {
    std::vector<std::int64_t> tokens;
    double score;
};

// Every sentence of at most max_length tokens (ending with 1, or cut at max_length) of source s
// without a banned token, best first, the first n.
std::vector<Sentence> exhaustive(std::size_t s, std::size_t max_length, std::int64_t banned, std::size_t n) {
    std::vector<Sentence> all, open{{{}, 0.0}};
    for (std::size_t len = 1; len <= max_length; ++len) {
        std::vector<Sentence> next;
        for (const Sentence &p : open) {
            const std::int64_t last = p.tokens.empty() ? 0 : p.tokens.back();
            for (std::int64_t tok = 1; tok < 4; ++tok) {
                if (tok == banned) continue;
                Sentence q{p.tokens, p.score + kTable[s][last][tok]};
                q.tokens.push_back(tok);
                (tok == 1 || len == max_length ? all : next).push_back(q);
            }
        }
        open = next;
    }
    std::stable_sort(all.begin(), all.end(), [](const Sentence &a, const Sentence &b) { return a.score > b.score; });
    all.resize(std::min(n, all.size()));
    return all;
}

void check_against_exhaustive(const lt::DecodeResult &r, std::int64_t banned, std::size_t n) {
    std::vector<std::int64_t> want_ids;
    std::vector<std::size_t> want_l0{0}, want_l1{0};
    std::vector<double> want_scores;
    for (std::size_t s = 0; s < 2; ++s) {
        for (const Sentence &sentence : exhaustive(s, 3, banned, n)) {
            want_ids.insert(want_ids.end(), sentence.tokens.begin(), sentence.tokens.end());
            want_l1.push_back(want_ids.size());
            want_scores.push_back(sentence.score);
        }
        want_l0.push_back(want_l1.size() - 1);
    }
    CHECK(same<std::size_t>(r.ids.lod_offsets(0), want_l0));
    CHECK(same<std::size_t>(r.ids.lod_offsets(1), want_l1));
    CHECK(same<std::int64_t>(r.ids.data<std::int64_t>(), want_ids));
    lt::Span<const float> got = r.scores.data<float>();
    bool close = got.size() == want_scores.size();
    for (std::size_t i = 0; close && i < got.size(); ++i) close = std::fabs(got[i] - want_scores[i]) < 1e-4;
    CHECK(close);
}

void test_decoder() {
    beam_search_decoder_options_t o = lt::decoder_options();
    o.vocab_size = kVocab;
    o.start_id = 0;
    o.end_id = 1;
    o.beam_size = 16;  // wider than any candidate set: nothing is pruned
    o.max_length = 3;
    o.num_hypotheses = 5;
    const lt::BeamSearchDecoder decoder(o);

    std::size_t steps = 0;
    auto model = [&](lt::BeamStep info, lt::Span<float> log_probs) {
        CHECK_EQ_SIZE(info.step(), steps);
        ++steps;
        CHECK_EQ_SIZE(info.vocab_size(), kVocab);
        CHECK_EQ_SIZE(info.num_sources(), 2);
        lt::Span<const std::size_t> off = info.source_offsets();
        CHECK_EQ_SIZE(off[2], info.num_prefixes());
        if (info.step() == 0) {  // one prefix per source, its parent the source index
            CHECK(off[1] == 1 && info.parent_idx()[0] == 0 && info.parent_idx()[1] == 1 && info.ids()[1] == 0);
        }
        for (std::size_t s = 0; s < 2; ++s) {
            for (std::size_t p = off[s]; p < off[s + 1]; ++p) {
                const std::int64_t last = info.ids()[p];
                for (std::size_t v = 0; v < kVocab; ++v) {
                    log_probs[p * kVocab + v] = static_cast<float>(kTable[s][last][v]);
                }
            }
        }
    };
    lt::DecodeResult r = decoder.run(2, model);
    CHECK_EQ_SIZE(steps, 3);
    check_against_exhaustive(r, -1, 5);

    // An edit function banning token 3: only sentences without it remain (4 per source).
    steps = 0;
    lt::DecodeResult banned = decoder.run(2, model, [](lt::BeamStep info, lt::Span<float> log_probs) {
        for (std::size_t p = 0; p < info.num_prefixes(); ++p) log_probs[p * info.vocab_size() + 3] = -INFINITY;
    });
    check_against_exhaustive(banned, 3, 5);

    // An exception from the model stops decoding and comes out unchanged.
    try {
        decoder.run(2, [](lt::BeamStep info, lt::Span<float>) {
            if (info.step() == 1) throw std::runtime_error("model failed");
        });
        CHECK(false);
    } catch (const std::runtime_error &e) {
        CHECK(std::string(e.what()) == "model failed");
    }
    try {
        decoder.run(0, model);
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_ARGUMENT);
    }
    o.vocab_size = 0;
    try {
        lt::BeamSearchDecoder bad(o);
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_ARGUMENT);
        CHECK(std::string(e.what()).find("vocab_size") != std::string::npos);
    }
}

}  // namespace

int main() {
    try {
        test_decode_worked_example();
        test_decoder();
    } catch (const std::exception &e) {
        fprintf(stderr, "unexpected exception: %s\n", e.what());
        return 1;
    }
    return CHECK_RETURN();
}
