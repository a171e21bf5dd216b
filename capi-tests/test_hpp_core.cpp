// test_hpp_core: the C++ layer (include/lodtensor.hpp) over the core: creating, reading (zero-copy
// spans), LoD access, share/copy/slice/split/merge/lod_reset, move-only ownership, and errors as
// lodtensor::Error with status and message. Expected values are the spec's worked examples.
#include <lodtensor.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "check.h"

namespace lt = lodtensor;

namespace {

static_assert(!std::is_copy_constructible<lt::Tensor>::value, "Tensor is move-only");
static_assert(!std::is_copy_assignable<lt::Tensor>::value, "Tensor is move-only");
static_assert(std::is_nothrow_move_constructible<lt::Tensor>::value, "Tensor moves without throwing");
static_assert(std::is_nothrow_move_constructible<lt::TensorArray>::value, "TensorArray moves");
static_assert(!std::is_copy_constructible<lt::RankTable>::value, "RankTable is move-only");
static_assert(sizeof(lt::Tensor) == sizeof(void *), "a Tensor is one pointer: no extra allocation");

// Runs f, which must throw lt::Error with `status` and a message containing `substring`.
template <typename F>
int expect_error(F &&f, lodtensor_status_t status, const char *substring, int line) {
    try {
        f();
    } catch (const lt::Error &e) {
        const std::string msg = e.what();
        if (e.status() == status && msg.find(substring) != std::string::npos) {
            return check_record(1);
        }
        fprintf(stderr, "%s:%d: got status %d \"%s\", expected %d with \"%s\"\n", __FILE__, line,
                static_cast<int>(e.status()), msg.c_str(), static_cast<int>(status), substring);
        return check_record(0);
    }
    fprintf(stderr, "%s:%d: no exception, expected status %d\n", __FILE__, line, static_cast<int>(status));
    return check_record(0);
}
#define EXPECT_ERROR(expr, status, substring) expect_error([&] { (void)(expr); }, status, substring, __LINE__)

template <typename T>
bool same(lt::Span<const T> got, std::initializer_list<T> want) {
    if (got.size() != want.size()) return false;
    std::size_t i = 0;
    for (const T &w : want) {
        if (!(got[i++] == w)) return false;
    }
    return true;
}

std::vector<float> iota(std::size_t n) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
    return v;
}

void test_create_and_read() {
    // Spec §1.2: lengths [[2,1],[2,2,3]] are offsets [[0,2,3],[0,2,4,7]], shape [7, 2].
    const std::vector<float> data = iota(14);
    const std::size_t sizes[] = {2, 3};
    const std::size_t lengths[] = {2, 1, 2, 2, 3};
    lt::Tensor t = lt::Tensor::create<float>(data, {7, 2}, lt::Lod::lengths(sizes, lengths));
    CHECK(t.dims() == (std::initializer_list<std::int64_t>{7, 2}));
    CHECK_EQ_SIZE(t.ndim(), 2);
    CHECK_EQ_SIZE(t.numel(), 14);
    CHECK_EQ_SIZE(t.nbytes(), 56);
    CHECK(t.rows() == 7);
    CHECK(lt::same_dtype(t.dtype(), lt::dtype_of<float>()));
    CHECK(t.place().device_type == LODTENSOR_DEVICE_CPU);
    CHECK_EQ_SIZE(t.lod_levels(), 2);
    CHECK(same<std::size_t>(t.lod_offsets(0), {0, 2, 3}));
    CHECK(same<std::size_t>(t.lod_offsets(1), {0, 2, 4, 7}));
    std::size_t buf[3] = {};
    CHECK_EQ_SIZE(t.lod_lengths(1, buf), 3);
    CHECK(buf[0] == 2 && buf[1] == 2 && buf[2] == 3);
    CHECK_EQ_SIZE(t.lod_lengths(1, {}), 3);
    CHECK_EQ_SIZE(t.num_sequences(0), 2);
    CHECK(t.sequence_rows(0, 1) == std::make_pair(std::size_t{4}, std::size_t{7}));
    lt::Span<const float> view = t.data<float>();
    CHECK_EQ_SIZE(view.size(), 14);
    CHECK(view[13] == 13.0f);
    CHECK(view.data() != data.data());  // create copies

    // Writes through mutable_data are seen by shares, not by copies.
    lt::Tensor shared = t.share();
    lt::Tensor copied = t.copy();
    t.mutable_data<float>()[0] = 42.0f;
    CHECK(shared.data<float>()[0] == 42.0f);
    CHECK(copied.data<float>()[0] == 0.0f);
    CHECK(shared.data<float>().data() == t.data<float>().data());

    // The LoD can be replaced and cleared.
    const std::size_t one[] = {1};
    const std::size_t all[] = {7};
    t.set_lod(lt::Lod::lengths(one, all));
    CHECK(same<std::size_t>(t.lod_offsets(0), {0, 7}));
    t.clear_lod();
    CHECK_EQ_SIZE(t.lod_levels(), 0);
    CHECK_EQ_SIZE(shared.lod_levels(), 2);  // a share has its own LoD

    // Other dtypes; a 0-d tensor has one element.
    const std::int64_t ints[] = {5, -6, 7};
    lt::Tensor i = lt::Tensor::create<std::int64_t>(ints, {3});
    CHECK(same<std::int64_t>(i.data<std::int64_t>(), {5, -6, 7}));
    const double scalar[] = {2.5};
    lt::Tensor s = lt::Tensor::create<double>(scalar, {});
    CHECK_EQ_SIZE(s.ndim(), 0);
    CHECK(s.rows() == 1 && s.data<double>()[0] == 2.5);
}

void test_views_and_pieces() {
    // Spec §1.5: slicing paragraph 1 of a 3-level LoD shares memory from row 10.
    const std::vector<float> data = iota(20);
    const std::size_t sizes[] = {2, 3, 7};
    const std::size_t lengths[] = {2, 1, 2, 2, 3, 2, 3, 2, 3, 2, 3, 5};
    lt::Tensor t = lt::Tensor::create<float>(data, {20, 1}, lt::Lod::lengths(sizes, lengths));
    lt::Tensor s = t.slice(0, 1, 2);
    CHECK(same<std::size_t>(s.lod_offsets(0), {0, 1}));
    CHECK(same<std::size_t>(s.lod_offsets(1), {0, 3}));
    CHECK(same<std::size_t>(s.lod_offsets(2), {0, 2, 5, 10}));
    CHECK(s.data<float>().data() == t.data<float>().data() + 10);

    // Spec §1.8: split into 2 pieces and merge back.
    const std::size_t bsizes[] = {4, 6};
    const std::size_t blengths[] = {2, 2, 1, 1, 1, 5, 2, 5, 2, 5};
    lt::Tensor batch = lt::Tensor::create<float>(data, {20, 1}, lt::Lod::lengths(bsizes, blengths));
    std::vector<lt::Tensor> pieces = batch.split(2);
    CHECK_EQ_SIZE(pieces.size(), 2);
    CHECK(same<std::size_t>(pieces[0].lod_offsets(0), {0, 2, 4}));
    CHECK(same<std::size_t>(pieces[0].lod_offsets(1), {0, 1, 6, 8, 13}));
    CHECK(same<std::size_t>(pieces[1].lod_offsets(0), {0, 1, 2}));
    CHECK(same<std::size_t>(pieces[1].lod_offsets(1), {0, 2, 7}));
    lt::Tensor merged = lt::merge({pieces[0], pieces[1]});
    CHECK(same<std::size_t>(merged.lod_offsets(0), {0, 2, 4, 5, 6}));
    CHECK(merged.data<float>()[19] == 19.0f);

    // Spec §1.11: lod_reset with target offsets, and with another tensor's LoD.
    lt::Tensor x = lt::Tensor::create<float>(lt::Span<const float>(data.data(), 10), {10, 1});
    lt::Tensor r = x.lod_reset({0, 7, 10});
    CHECK(same<std::size_t>(r.lod_offsets(0), {0, 7, 10}));
    lt::Tensor r2 = lt::lod_reset(x, r);
    CHECK(same<std::size_t>(r2.lod_offsets(0), {0, 7, 10}));
}

void test_ownership() {
    const std::vector<float> data = iota(4);
    lt::Tensor a = lt::Tensor::create<float>(data, {4, 1});
    const lodtensor_t *raw = a.get();
    lt::Tensor b = std::move(a);
    CHECK(!a && b.get() == raw);  // NOLINT(bugprone-use-after-move): moved-from is empty
    lt::Tensor c;
    c = std::move(b);
    CHECK(!b && c.get() == raw);
    c = lt::Tensor::create<float>(data, {2, 2});  // the old handle is destroyed (valgrind checks)
    CHECK(c.dims() == (std::initializer_list<std::int64_t>{2, 2}));
    lodtensor_t *released = c.release();
    CHECK(!c);
    lt::Tensor again(released);  // adopt it back
    CHECK_EQ_SIZE(again.numel(), 4);
    lt::TensorRef ref = again;
    CHECK(ref.get() == again.get() && ref.numel() == 4);
}

void test_zero_copy_buffers() {
    // adopt: the vector's elements become the tensor's memory (no copy) and are freed with it.
    std::vector<double> v{1.5, 2.5, 3.5, 4.5};
    const double *elements = v.data();
    const std::size_t one[] = {2};
    const std::size_t lengths[] = {3, 1};
    lt::Tensor t = lt::Tensor::adopt(std::move(v), {4, 1}, lt::Lod::lengths(one, lengths));
    CHECK(t.data<double>().data() == elements);
    CHECK(same<std::size_t>(t.lod_offsets(0), {0, 3, 4}));
    lt::Tensor s = t.slice(0, 1, 2);
    t = lt::Tensor();                   // the slice keeps the vector alive (valgrind checks)
    CHECK(s.data<double>()[0] == 4.5);

    // A failed adopt gives the elements back.
    std::vector<float> w{1, 2, 3};
    const std::size_t bad[] = {5};
    const std::size_t lvl[] = {1};
    try {
        lt::Tensor::adopt(std::move(w), {3}, lt::Lod::lengths(lvl, bad));
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_INVALID_LOD);
    }
    CHECK_EQ_SIZE(w.size(), 3);
    CHECK(w[2] == 3.0f);

    // from_buffer with a caller-managed buffer and no release callback.
    static std::int32_t buffer[6] = {1, 2, 3, 4, 5, 6};
    lt::Tensor b = lt::Tensor::from_buffer(lt::dtype_of<std::int32_t>(), {2, 3}, buffer, sizeof buffer,
                                           lt::Lod::none(), nullptr, nullptr);
    b.mutable_data<std::int32_t>()[5] = 60;
    CHECK(buffer[5] == 60);
}

void test_places() {
    const std::vector<float> data = iota(6);
    const std::size_t two[] = {2};
    const std::size_t lengths[] = {4, 2};
    lt::Tensor x = lt::Tensor::create<float>(data, {6, 1}, lt::Lod::lengths(two, lengths));
    lt::Tensor c = lt::to_place(x, lt::cpu_place());
    CHECK(c.data<float>().data() != x.data<float>().data());  // always a copy
    CHECK(c.data<float>()[5] == 5.0f);
    CHECK(same<std::size_t>(c.lod_offsets(0), {0, 4, 6}));
    lt::synchronize(lt::cpu_place());
    bool have_cuda = true;
    try {
        lt::cuda_device_count();
    } catch (const lt::Error &e) {
        CHECK(e.status() == LODTENSOR_UNSUPPORTED);
        have_cuda = false;
    }
    if (!have_cuda) {  // without CUDA a device place is UNSUPPORTED, not a crash
        EXPECT_ERROR(lt::to_place(x, lt::cuda_place(0)), LODTENSOR_UNSUPPORTED, "");
        EXPECT_ERROR(lt::synchronize(lt::cuda_place(0)), LODTENSOR_UNSUPPORTED, "");
        EXPECT_ERROR(lt::cuda_memory_info(0), LODTENSOR_UNSUPPORTED, "cuda:0");
        EXPECT_ERROR(lt::cuda_empty_cache(0), LODTENSOR_UNSUPPORTED, "cuda:0");
        EXPECT_ERROR(lt::cuda_free_memory(0), LODTENSOR_UNSUPPORTED, "cuda:0");
        EXPECT_ERROR(lt::cuda_set_cache_limit(0, 0), LODTENSOR_UNSUPPORTED, "cuda:0");
        EXPECT_ERROR(lt::cuda_cache_limit(0), LODTENSOR_UNSUPPORTED, "cuda:0");
        EXPECT_ERROR(lt::cuda_load_kernels(0), LODTENSOR_UNSUPPORTED, "cuda:0");
        EXPECT_ERROR(lt::cuda_counters(0), LODTENSOR_UNSUPPORTED, "cuda:0");
        EXPECT_ERROR(lt::cuda_stream(0), LODTENSOR_UNSUPPORTED, "cuda:0");
        float host[6] = {0};
        EXPECT_ERROR(lt::Tensor::from_buffer(lt::cuda_place(0), lt::dtype_of<float>(), {6, 1}, host, sizeof host,
                                             lt::Lod::none(), nullptr, nullptr),
                     LODTENSOR_UNSUPPORTED, "cuda:0");
    } else {  // a tensor on the device holds device memory, and emptying the cache leaves it
        std::vector<std::uint64_t> before = lt::cuda_counters(0);
        lt::Tensor d = lt::to_place(x, lt::cuda_place(0));
        std::vector<std::uint64_t> after = lt::cuda_counters(0);
        CHECK(after.size() == LODTENSOR_CUDA_COUNTERS);
        CHECK(after[LODTENSOR_CUDA_COUNTER_UPLOADS] == before[LODTENSOR_CUDA_COUNTER_UPLOADS] + 1);
        CHECK(after[LODTENSOR_CUDA_COUNTER_UPLOAD_BYTES] == before[LODTENSOR_CUDA_COUNTER_UPLOAD_BYTES] + 24);
        CHECK(lt::cuda_memory_info(0).in_use >= 6 * sizeof(float));
        lt::cuda_empty_cache(0);
        CHECK(lt::cuda_memory_info(0).kept == 0);
        lt::cuda_set_cache_limit(0, 1 << 20);
        CHECK(lt::cuda_cache_limit(0) == 1 << 20);
        lt::cuda_set_cache_limit(0, SIZE_MAX);
        CHECK(lt::cuda_cache_limit(0) == SIZE_MAX);
        lt::CudaFreeMemory m = lt::cuda_free_memory(0);
        CHECK(m.free > 0 && m.free <= m.total);
        lt::cuda_load_kernels(0);
        void *stream = lt::cuda_stream(0);
        CHECK(stream != nullptr && lt::cuda_stream(0) == stream);
        // The device tensor's memory wrapped as a tensor on cuda:0 (not read on the host here).
        void *p = d.mutable_data<float>().data();
        lt::Tensor w = lt::Tensor::from_buffer(lt::cuda_place(0), lt::dtype_of<float>(), {6, 1}, p,
                                               6 * sizeof(float), lt::Lod::none(), nullptr, nullptr);
        CHECK(w.place().device_type == LODTENSOR_DEVICE_CUDA);
        lt::Tensor back = lt::to_place(w, lt::cpu_place());
        lt::Span<const float> got = back.data<float>();
        bool equal = got.size() == data.size();
        for (std::size_t i = 0; equal && i < got.size(); ++i) equal = got[i] == data[i];
        CHECK(equal);
    }
    EXPECT_ERROR(lt::cuda_free_memory(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    EXPECT_ERROR(lt::cuda_memory_info(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    EXPECT_ERROR(lt::cuda_empty_cache(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    EXPECT_ERROR(lt::cuda_set_cache_limit(-1, 0), LODTENSOR_INVALID_ARGUMENT, "device");
    EXPECT_ERROR(lt::cuda_cache_limit(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    EXPECT_ERROR(lt::cuda_load_kernels(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    EXPECT_ERROR(lt::cuda_counters(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    EXPECT_ERROR(lt::cuda_stream(-1), LODTENSOR_INVALID_ARGUMENT, "device");
    std::int32_t buffer[6] = {0};
    EXPECT_ERROR(lt::Tensor::from_buffer(lodtensor_place_t{7, 0}, lt::dtype_of<std::int32_t>(), {6}, buffer,
                                         sizeof buffer, lt::Lod::none(), nullptr, nullptr),
                 LODTENSOR_INVALID_ARGUMENT, "place");
    EXPECT_ERROR(lt::to_place(x, lodtensor_place_t{7, 0}), LODTENSOR_INVALID_ARGUMENT, "place");
}

// Paddle's format: the spec's worked example (float32 [5,1], LoD [[0,2,5]]) as a save_combine
// file of two records, read back record by record; a partial load.
void test_serialize() {
    const float values[] = {1.5f, -2.0f, 3.0f, 0.25f, 8.0f};
    const std::size_t one[] = {3}, offsets[] = {0, 2, 5};
    lt::Tensor x = lt::Tensor::create<float>(values, {5, 1}, lt::Lod::offsets(one, offsets));
    std::vector<std::uint8_t> file = lt::serialize(x);
    CHECK_EQ_SIZE(file.size(), 78);
    const std::uint8_t desc[] = {6, 0, 0, 0, 0x08, 0x05, 0x10, 0x05, 0x10, 0x01};
    CHECK(std::equal(desc, desc + sizeof desc, file.begin() + 48));
    const std::vector<std::uint8_t> second = lt::serialize(x.slice(0, 1, 2));
    file.insert(file.end(), second.begin(), second.end());
    lt::Deserialized a = lt::deserialize(file);
    CHECK_EQ_SIZE(a.consumed, 78);
    CHECK(same<float>(a.tensor.data<float>(), {1.5f, -2.0f, 3.0f, 0.25f, 8.0f}));
    CHECK(same<std::size_t>(a.tensor.lod_offsets(0), {0, 2, 5}));
    const lt::Span<const std::uint8_t> rest(file.data() + a.consumed, file.size() - a.consumed);
    lt::Deserialized b = lt::deserialize(rest);
    CHECK_EQ_SIZE(a.consumed + b.consumed, file.size());
    CHECK(same<float>(b.tensor.data<float>(), {3.0f, 0.25f, 8.0f}));
    CHECK(same<std::size_t>(b.tensor.lod_offsets(0), {0, 3}));
    EXPECT_ERROR(lt::deserialize(lt::Span<const std::uint8_t>(file.data(), 77)), LODTENSOR_INVALID_ARGUMENT,
                 "the bytes end inside");
    // A partial load: elements 2..5 of a record without LoD as [2, 2].
    const std::int64_t ids[] = {7, -1, 9, 4, 4, 0};
    const std::vector<std::uint8_t> plain = lt::serialize(lt::Tensor::create<std::int64_t>(ids, {6}));
    lt::Deserialized c = lt::deserialize_slice(plain, 2, {2, 2});
    CHECK_EQ_SIZE(c.consumed, plain.size());
    CHECK(c.tensor.dims() == (std::initializer_list<std::int64_t>{2, 2}));
    CHECK(same<std::int64_t>(c.tensor.data<std::int64_t>(), {9, 4, 4, 0}));
    EXPECT_ERROR(lt::deserialize_slice(file, 0, {1}), LODTENSOR_INVALID_ARGUMENT, "without LoD");
}

// DLPack: a round trip lends and takes back the same memory; a managed tensor that cannot be
// taken stays the caller's (its deleter, called here, frees it).
void test_dlpack() {
    const std::int64_t values[] = {4, 5, 6, 7};
    const std::size_t three[] = {3}, offsets[] = {0, 1, 2}, too_long[] = {0, 1, 3};
    lt::Tensor x = lt::Tensor::create<std::int64_t>(values, {2, 2});
    DLManagedTensorVersioned *m = lt::to_dlpack(x);
    EXPECT_ERROR(lt::from_dlpack(m, lt::Lod::offsets(three, too_long)), LODTENSOR_INVALID_LOD, "rows");
    lt::Tensor y = lt::from_dlpack(m, lt::Lod::offsets(three, offsets));
    CHECK(y.data<std::int64_t>().data() == x.data<std::int64_t>().data());
    x = lt::Tensor();
    CHECK(same<std::int64_t>(y.data<std::int64_t>(), {4, 5, 6, 7}));
    CHECK(same<std::size_t>(y.lod_offsets(0), {0, 1, 2}));
    // The same in the form before DLPack 1.0.
    DLManagedTensor *legacy = lt::to_dlpack_legacy(y);
    EXPECT_ERROR(lt::from_dlpack_legacy(legacy, lt::Lod::offsets(three, too_long)), LODTENSOR_INVALID_LOD, "rows");
    lt::Tensor z = lt::from_dlpack_legacy(legacy, lt::Lod::offsets(three, offsets));
    CHECK(z.data<std::int64_t>().data() == y.data<std::int64_t>().data());
    y = lt::Tensor();
    CHECK(same<std::int64_t>(z.data<std::int64_t>(), {4, 5, 6, 7}));
}

// The exporter's release callback, wrapped to count its calls.
int arrow_releases = 0;
void (*arrow_release)(ArrowArray *) = nullptr;
void counting_arrow_release(ArrowArray *a) {
    ++arrow_releases;
    arrow_release(a);
}

// Arrow: float [5, 2] rows under one LoD level go out as large_list<fixed_size_list<float, 2>>
// over the tensor's memory and come back as the same memory and LoD, the array moved and released
// once, at the last handle; an array that does not match its schema is refused and left alone.
void test_arrow() {
    const std::vector<float> data = iota(10);
    const std::size_t one[] = {3}, offsets[] = {0, 2, 5};
    lt::Tensor x = lt::Tensor::create<float>(data, {5, 2}, lt::Lod::offsets(one, offsets));
    ArrowSchema schema{};
    ArrowArray array{};
    lt::to_arrow(x, &schema, &array);

    CHECK(std::string(schema.format) == "+L" && std::string(schema.name).empty());
    CHECK(schema.flags == 0 && schema.n_children == 1 && schema.dictionary == nullptr);
    const ArrowSchema *rows = schema.children[0];
    CHECK(std::string(rows->format) == "+w:2" && std::string(rows->name) == "item" && rows->n_children == 1);
    const ArrowSchema *elements = rows->children[0];
    CHECK(std::string(elements->format) == "f" && elements->n_children == 0);

    CHECK(array.length == 2 && array.null_count == 0 && array.offset == 0);
    CHECK(array.n_buffers == 2 && array.n_children == 1 && array.buffers[0] == nullptr);
    const auto *list_offsets = static_cast<const std::int64_t *>(array.buffers[1]);
    CHECK(list_offsets[0] == 0 && list_offsets[1] == 2 && list_offsets[2] == 5);
    const ArrowArray *fixed = array.children[0];
    CHECK(fixed->length == 5 && fixed->n_buffers == 1 && fixed->n_children == 1 && fixed->buffers[0] == nullptr);
    const ArrowArray *values = fixed->children[0];
    CHECK(values->length == 10 && values->n_buffers == 2 && values->n_children == 0);
    CHECK(values->buffers[1] == x.data<float>().data());
    CHECK(std::equal(data.begin(), data.end(), static_cast<const float *>(values->buffers[1])));

    EXPECT_ERROR(lt::from_arrow(elements, &array), LODTENSOR_INVALID_ARGUMENT, "child(ren)");
    CHECK(array.release != nullptr);

    arrow_release = array.release;
    array.release = counting_arrow_release;
    lt::Tensor y = lt::from_arrow(&schema, &array);
    CHECK(array.release == nullptr);
    EXPECT_ERROR(lt::from_arrow(&schema, &array), LODTENSOR_INVALID_ARGUMENT, "released");
    schema.release(&schema);
    CHECK(schema.release == nullptr);
    CHECK(y.data<float>().data() == x.data<float>().data());
    CHECK(y.dims() == (std::initializer_list<std::int64_t>{5, 2}));
    CHECK(y.lod_levels() == 1 && same<std::size_t>(y.lod_offsets(0), {0, 2, 5}));
    x = lt::Tensor();
    lt::Tensor share = y.share();
    y = lt::Tensor();
    CHECK(same<float>(share.data<float>(), {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
    CHECK(arrow_releases == 0);
    share = lt::Tensor();
    CHECK(arrow_releases == 1);

    // The device export of a host tensor: the same chain, on the CPU.
    lt::Tensor z = lt::Tensor::create<float>(data, {5, 2}, lt::Lod::offsets(one, offsets));
    ArrowDeviceArray device{};
    lt::to_arrow_device(z, &schema, &device);
    CHECK(device.device_type == ARROW_DEVICE_CPU && device.device_id == -1 && device.sync_event == nullptr);
    CHECK(device.array.length == 2 && device.array.children[0]->children[0]->buffers[1] == z.data<float>().data());
    lt::Tensor w = lt::from_arrow_device(&schema, &device);
    CHECK(device.array.release == nullptr && w.data<float>().data() == z.data<float>().data());
    CHECK(w.lod_levels() == 1 && same<std::size_t>(w.lod_offsets(0), {0, 2, 5}));
    schema.release(&schema);
    EXPECT_ERROR(lt::to_arrow_device(z, nullptr, &device), LODTENSOR_NULL_ARGUMENT, "out_schema");

    // Text as Arrow strings, over the tensor's bytes, and back.
    const std::size_t three[] = {3}, ends[] = {0, 3, 5};
    lt::Tensor words = lt::Tensor::create<std::uint8_t>({'t', 'o', 'k', 'y', 'o'}, {5}, lt::Lod::offsets(three, ends));
    lt::to_arrow_strings(words, LODTENSOR_ARROW_UTF8, &schema, &array);
    CHECK(std::string(schema.format) == "U" && array.length == 2 && array.n_buffers == 3);
    CHECK(array.buffers[2] == words.data<std::uint8_t>().data());
    lt::Tensor back = lt::from_arrow(&schema, &array);
    CHECK(same<std::size_t>(back.lod_offsets(0), {0, 3, 5}) && back.data<std::uint8_t>().data() == words.data<std::uint8_t>().data());
    schema.release(&schema);
    lt::to_arrow_device_strings(words, LODTENSOR_ARROW_BINARY, &schema, &device);
    CHECK(std::string(schema.format) == "Z" && device.device_type == ARROW_DEVICE_CPU);
    schema.release(&schema);
    device.array.release(&device.array);
    EXPECT_ERROR(lt::to_arrow_strings(z, LODTENSOR_ARROW_UTF8, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                 "strings are uint8 bytes");
    EXPECT_ERROR(lt::to_arrow_device_strings(words, 7, &schema, &device), LODTENSOR_INVALID_ARGUMENT, "encoding: 7");
}

// Arrow record batches: a LoD column and a plain one lent as one struct, named, over the
// tensors' memory, and taken back as two tensors that share the array, released once at the last
// of them; a column of another length is refused; a text column lent as strings.
void test_arrow_record_batch() {
    const std::size_t one[] = {3}, offsets[] = {0, 2, 5};
    lt::Tensor ids = lt::Tensor::create<std::int64_t>({1, 2, 3, 4, 5}, {5}, lt::Lod::offsets(one, offsets));
    lt::Tensor scores = lt::Tensor::create<float>({0.5f, 1.5f}, {2});
    ArrowSchema schema{};
    ArrowArray array{};
    lt::to_arrow_record_batch({{ids, "ids"}, {scores, "scores"}}, &schema, &array);
    CHECK(std::string(schema.format) == "+s" && schema.n_children == 2 && array.length == 2);
    CHECK(std::string(schema.children[0]->name) == "ids" && std::string(schema.children[1]->name) == "scores");
    CHECK(array.children[0]->children[0]->buffers[1] == ids.data<std::int64_t>().data());
    CHECK(array.children[1]->buffers[1] == scores.data<float>().data());

    arrow_releases = 0;
    arrow_release = array.release;
    array.release = counting_arrow_release;
    std::vector<lt::Tensor> back = lt::from_arrow_record_batch(&schema, &array);
    CHECK(array.release == nullptr && back.size() == 2);
    schema.release(&schema);
    CHECK(back[0].data<std::int64_t>().data() == ids.data<std::int64_t>().data());
    CHECK(back[0].lod_levels() == 1 && same<std::size_t>(back[0].lod_offsets(0), {0, 2, 5}));
    CHECK(same<float>(back[1].data<float>(), {0.5f, 1.5f}));
    back[0] = lt::Tensor();
    CHECK(arrow_releases == 0);
    back.clear();
    CHECK(arrow_releases == 1);

    lt::Tensor three = lt::Tensor::create<float>({1, 2, 3}, {3});
    EXPECT_ERROR(lt::to_arrow_record_batch({{ids, "ids"}, {three, "x"}}, &schema, &array),
                 LODTENSOR_INVALID_ARGUMENT, "columns[1]: 3 entries, columns[0] 2");
    ArrowDeviceArray device{};
    lt::to_arrow_device_record_batch({{scores, "scores"}}, &schema, &device);
    CHECK(device.device_type == ARROW_DEVICE_CPU && device.array.n_children == 1);
    std::vector<lt::Tensor> taken = lt::from_arrow_device_record_batch(&schema, &device);
    CHECK(taken.size() == 1 && taken[0].data<float>().data() == scores.data<float>().data());
    schema.release(&schema);
    EXPECT_ERROR(lt::from_arrow_record_batch(nullptr, &array), LODTENSOR_NULL_ARGUMENT, "schema");
    EXPECT_ERROR(lt::from_arrow_record_batch(&schema, &array), LODTENSOR_INVALID_ARGUMENT, "schema: has been released");

    // A text column beside its scores: large_utf8 over the tensor's bytes; broken text refused.
    const std::size_t ends[] = {0, 3, 5};
    lt::Tensor words = lt::Tensor::create<std::uint8_t>({'t', 'o', 'k', 'y', 'o'}, {5}, lt::Lod::offsets(one, ends));
    lt::to_arrow_record_batch({{words, "text", LODTENSOR_ARROW_UTF8}, {scores, "scores"}}, &schema, &array);
    CHECK(std::string(schema.children[0]->format) == "U" && std::string(schema.children[1]->format) == "f");
    CHECK(array.children[0]->buffers[2] == words.data<std::uint8_t>().data());
    schema.release(&schema);
    array.release(&array);
    const std::size_t split_ends[] = {0, 1, 2};
    lt::Tensor split = lt::Tensor::create<std::uint8_t>({0xc3, 0xbc}, {2}, lt::Lod::offsets(one, split_ends));
    EXPECT_ERROR(lt::to_arrow_device_record_batch({{split, "text", LODTENSOR_ARROW_UTF8}, {scores, "s"}}, &schema,
                                                  &device),
                 LODTENSOR_INVALID_ARGUMENT, "columns[0]: sequence 0 of LoD level 0 (bytes 0..1)");
    EXPECT_ERROR(lt::to_arrow_record_batch({{scores, "s", 9}}, &schema, &array), LODTENSOR_INVALID_ARGUMENT,
                 "encodings[0]: 9 is not");
}

void test_errors() {
    const std::vector<float> data = iota(10);
    const std::size_t sizes[] = {1};
    const std::size_t bad_lengths[] = {3, 2, 4};  // 9 rows, not 10
    const std::size_t one[] = {3};
    EXPECT_ERROR(lt::Tensor::create<float>(data, {10, 1}, lt::Lod::lengths(one, bad_lengths)),
                 LODTENSOR_INVALID_LOD, "10");
    EXPECT_ERROR(lt::Tensor::create<float>(data, {5, 1}), LODTENSOR_INVALID_ARGUMENT, "data_len");
    const std::size_t lengths[] = {3, 2, 5};
    const std::size_t three[] = {3};
    lt::Tensor x = lt::Tensor::create<float>(data, {10, 1}, lt::Lod::lengths(three, lengths));
    EXPECT_ERROR(x.slice(0, 2, 2), LODTENSOR_OUT_OF_RANGE, "begin");
    EXPECT_ERROR(x.lod_offsets(1), LODTENSOR_OUT_OF_RANGE, "level");
    EXPECT_ERROR(x.data<double>(), LODTENSOR_INVALID_ARGUMENT, "dtype");
    EXPECT_ERROR(x.lod_reset({0, 7, 9}), LODTENSOR_INVALID_LOD, "rows");
    EXPECT_ERROR(lt::check(lodtensor_selftest_panic()), LODTENSOR_INTERNAL, "panic");
    lt::TensorRef null_ref;
    EXPECT_ERROR(null_ref.numel(), LODTENSOR_NULL_ARGUMENT, "t");
    try {
        x.slice(0, 5, 6);
        CHECK(false);
    } catch (const lt::Error &e) {
        CHECK(std::string(e.status_name()) == lodtensor_status_str(LODTENSOR_OUT_OF_RANGE));
        CHECK(static_cast<const std::runtime_error &>(e).what() != nullptr);
    }
    (void)sizes;
    CHECK(std::string(lt::version()) == LODTENSOR_VERSION_STRING);
    lt::set_num_threads(2);
    CHECK_EQ_SIZE(lt::num_threads(), 2);
    lt::set_num_threads(0);
    lt::set_host_cache_limit(5u << 20);
    CHECK_EQ_SIZE(lt::host_cache_info().limit, 5u << 20);
    lt::set_host_cache_limit(0);
    CHECK_EQ_SIZE(lt::host_cache_info().kept, 0);
    lt::set_host_cache_limit(256u << 20);
}

}  // namespace

int main() {
    try {
        test_create_and_read();
        test_views_and_pieces();
        test_ownership();
        test_zero_copy_buffers();
        test_places();
        test_serialize();
        test_dlpack();
        test_arrow();
        test_arrow_record_batch();
        test_errors();
    } catch (const lt::Error &e) {
        fprintf(stderr, "unexpected lodtensor::Error %d: %s\n", static_cast<int>(e.status()), e.what());
        return 1;
    }
    return CHECK_RETURN();
}
