// lodtensor.hpp: a header-only C++17 layer over the C API of lodtensor.h.
//
// - Owning handles (Tensor, TensorArray, RankTable) are move-only and destroy their C handle in
//   their destructor; TensorRef is a non-owning view of a tensor (what step functions receive).
// - A failing C call throws lodtensor::Error, carrying the status code and the thread's last error
//   message (read on the same thread, right after the call).
// - Element data and LoD offsets are returned as Span views of the library's memory, no copy.
//   Element data stays valid while any handle on that memory lives; LoD offsets belong to the
//   handle they were read from, valid until that handle's LoD is changed or it is destroyed (as
//   the C API says). The heap allocations of this layer are lists of handles, names and results
//   (for the calls that take or return several) and the std::string of an Error; element data is
//   never copied except where the C function copies it. The list for a call's results is made
//   before the call, so an allocation that throws leaves nothing of the call's behind.
// - Thread rules are those of the C API: many readers of one handle, one writer.
#ifndef LODTENSOR_HPP
#define LODTENSOR_HPP

#include <lodtensor.h>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace lodtensor {

// ---- errors -----------------------------------------------------------------------------------

// A failed C call: status() is the lodtensor_status_t, what() the library's message.
class Error : public std::runtime_error {
  public:
    Error(lodtensor_status_t status, const std::string &message)
        : std::runtime_error(message), status_(status) {}
    lodtensor_status_t status() const noexcept { return status_; }
    // The static name of the status ("invalid LoD", ...).
    const char *status_name() const noexcept { return lodtensor_status_str(static_cast<std::int32_t>(status_)); }

  private:
    lodtensor_status_t status_;
};

// Throws Error for any status but LODTENSOR_OK. Call it right after the C call, on the same thread.
inline void check(lodtensor_status_t status) {
    if (status != LODTENSOR_OK) {
        throw Error(status, lodtensor_last_error_message());
    }
}

// ---- spans and dtypes -------------------------------------------------------------------------

// A pointer and a length (C++17 has no std::span). Converts from any contiguous container with
// data()/size() and from an initializer list (the list must outlive the call it is passed to).
template <typename T>
class Span {
  public:
    constexpr Span() noexcept = default;
    constexpr Span(T *data, std::size_t size) noexcept : data_(data), size_(size) {}
    template <std::size_t N>
    constexpr Span(T (&array)[N]) noexcept : data_(array), size_(N) {}
    // Only for Span<const X>; the list's array lives until the end of the full expression.
    constexpr Span(const std::initializer_list<std::remove_const_t<T>> &list) noexcept {
        data_ = list.begin();
        size_ = list.size();
    }
    template <typename C, typename = std::enable_if_t<std::is_convertible<
                              decltype(std::declval<C &>().data()), T *>::value>,
              typename = decltype(std::declval<C &>().size())>
    constexpr Span(C &container) noexcept : data_(container.data()), size_(container.size()) {}

    constexpr T *data() const noexcept { return data_; }
    constexpr std::size_t size() const noexcept { return size_; }
    constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr T *begin() const noexcept { return data_; }
    constexpr T *end() const noexcept { return data_ + size_; }
    constexpr T &operator[](std::size_t i) const noexcept { return data_[i]; }

  private:
    T *data_ = nullptr;
    std::size_t size_ = 0;
};

// Element types with a fixed dtype; dtype_of<T>() gives it.
template <typename T>
struct DTypeOf;
#define LODTENSOR_HPP_DTYPE(T, CODE, BITS)                                                          \
    template <>                                                                                     \
    struct DTypeOf<T> {                                                                             \
        static constexpr lodtensor_dtype_t value{CODE, BITS, 1};                                    \
    };
LODTENSOR_HPP_DTYPE(bool, LODTENSOR_DTYPE_CODE_BOOL, 8)
LODTENSOR_HPP_DTYPE(std::uint8_t, LODTENSOR_DTYPE_CODE_UINT, 8)
LODTENSOR_HPP_DTYPE(std::int8_t, LODTENSOR_DTYPE_CODE_INT, 8)
LODTENSOR_HPP_DTYPE(std::int16_t, LODTENSOR_DTYPE_CODE_INT, 16)
LODTENSOR_HPP_DTYPE(std::int32_t, LODTENSOR_DTYPE_CODE_INT, 32)
LODTENSOR_HPP_DTYPE(std::int64_t, LODTENSOR_DTYPE_CODE_INT, 64)
LODTENSOR_HPP_DTYPE(float, LODTENSOR_DTYPE_CODE_FLOAT, 32)
LODTENSOR_HPP_DTYPE(double, LODTENSOR_DTYPE_CODE_FLOAT, 64)
#undef LODTENSOR_HPP_DTYPE

template <typename T>
constexpr lodtensor_dtype_t dtype_of() noexcept {
    return DTypeOf<std::remove_cv_t<T>>::value;
}

inline bool same_dtype(const lodtensor_dtype_t &a, const lodtensor_dtype_t &b) noexcept {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}

// A LoD as the C API takes it: `kind` LODTENSOR_LOD_LENGTHS or LODTENSOR_LOD_OFFSETS,
// `level_sizes[i]` values of level i, all levels' values concatenated in `values`. Borrowed.
struct Lod {
    std::int32_t kind = LODTENSOR_LOD_LENGTHS;
    Span<const std::size_t> level_sizes;
    Span<const std::size_t> values;

    static Lod none() noexcept { return Lod{}; }
    static Lod lengths(Span<const std::size_t> level_sizes, Span<const std::size_t> values) noexcept {
        return Lod{LODTENSOR_LOD_LENGTHS, level_sizes, values};
    }
    static Lod offsets(Span<const std::size_t> level_sizes, Span<const std::size_t> values) noexcept {
        return Lod{LODTENSOR_LOD_OFFSETS, level_sizes, values};
    }
};

// A tensor's shape, held inline (no allocation).
class Dims {
  public:
    const std::int64_t *data() const noexcept { return dims_; }
    std::size_t size() const noexcept { return ndim_; }
    const std::int64_t *begin() const noexcept { return dims_; }
    const std::int64_t *end() const noexcept { return dims_ + ndim_; }
    std::int64_t operator[](std::size_t i) const noexcept { return dims_[i]; }
    bool operator==(std::initializer_list<std::int64_t> other) const noexcept {
        if (other.size() != ndim_) return false;
        std::size_t i = 0;
        for (std::int64_t d : other) {
            if (dims_[i++] != d) return false;
        }
        return true;
    }

  private:
    friend struct DimsAccess;
    std::int64_t dims_[LODTENSOR_MAX_DIMS] = {};
    std::size_t ndim_ = 0;
};

struct DimsAccess {
    static Dims read(const lodtensor_t *t) {
        Dims d;
        check(lodtensor_dims(t, d.dims_, LODTENSOR_MAX_DIMS, &d.ndim_));
        return d;
    }
};

class Tensor;

namespace detail {

// The read-only operations shared by Tensor (owning) and TensorRef (borrowed).
template <typename Derived>
class TensorReader {
  public:
    lodtensor_dtype_t dtype() const {
        lodtensor_dtype_t d{};
        check(lodtensor_dtype(h(), &d));
        return d;
    }
    lodtensor_place_t place() const {
        lodtensor_place_t p{};
        check(lodtensor_place(h(), &p));
        return p;
    }
    std::size_t ndim() const { return get_size(lodtensor_ndim); }
    Dims dims() const { return DimsAccess::read(h()); }
    std::size_t numel() const { return get_size(lodtensor_numel); }
    std::size_t nbytes() const { return get_size(lodtensor_nbytes); }
    // The number of rows (dims[0]; 1 for a 0-d tensor, whose only "row" is its element).
    std::int64_t rows() const {
        Dims d = dims();
        return d.size() == 0 ? 1 : d[0];
    }

    // The elements as T (which must be the tensor's dtype; else INVALID_ARGUMENT), zero copy. For a
    // tensor on a CUDA device the span holds device addresses, for CUDA code (as lodtensor_data's):
    // read it on the host from a copy there (to_place with LODTENSOR_DEVICE_CPU) instead.
    template <typename T>
    Span<const T> data() const {
        require_dtype<T>();
        const void *p = nullptr;
        check(lodtensor_data(h(), &p));
        return Span<const T>(static_cast<const T *>(p), numel());
    }

    std::size_t lod_levels() const { return get_size(lodtensor_lod_num_levels); }
    // Offsets of one LoD level, zero copy: valid until this handle's LoD changes or this handle is
    // destroyed (other handles on the same memory do not keep them).
    Span<const std::size_t> lod_offsets(std::size_t level) const {
        const std::size_t *p = nullptr;
        std::size_t n = 0;
        check(lodtensor_lod_offsets(h(), level, &p, &n));
        return Span<const std::size_t>(p, n);
    }
    // Copies the lengths of one level into `buf`; returns how many there are. With an empty `buf`
    // only the count is returned.
    std::size_t lod_lengths(std::size_t level, Span<std::size_t> buf) const {
        std::size_t n = 0;
        check(lodtensor_lod_lengths(h(), level, buf.empty() ? nullptr : buf.data(), buf.size(), &n));
        return n;
    }
    std::size_t num_sequences(std::size_t level) const { return lod_offsets(level).size() - 1; }
    std::pair<std::size_t, std::size_t> sequence_rows(std::size_t level, std::size_t index) const {
        std::size_t b = 0, e = 0;
        check(lodtensor_sequence_rows(h(), level, index, &b, &e));
        return {b, e};
    }

    inline Tensor share() const;
    inline Tensor copy() const;
    inline Tensor slice(std::size_t level, std::size_t begin, std::size_t end) const;
    // Pieces of whole top-level sequences sharing this tensor's memory.
    inline std::vector<Tensor> split(std::size_t num_pieces) const;
    // lod_reset with target offsets (a new handle on the same memory).
    inline Tensor lod_reset(Span<const std::int64_t> target_offsets, bool append = false) const;

  private:
    const lodtensor_t *h() const noexcept { return static_cast<const Derived *>(this)->get(); }
    std::size_t get_size(lodtensor_status_t (*f)(const lodtensor_t *, std::size_t *)) const {
        std::size_t n = 0;
        check(f(h(), &n));
        return n;
    }
    template <typename T>
    void require_dtype() const {
        if (!same_dtype(dtype(), dtype_of<T>())) {
            throw Error(LODTENSOR_INVALID_ARGUMENT, "data<T>(): T is not the tensor's dtype");
        }
    }
};

}  // namespace detail

// A borrowed tensor: no ownership, valid as long as whoever lent it says (for a step function:
// during the call).
class TensorRef : public detail::TensorReader<TensorRef> {
  public:
    constexpr TensorRef() noexcept = default;
    constexpr explicit TensorRef(const lodtensor_t *h) noexcept : h_(h) {}
    constexpr const lodtensor_t *get() const noexcept { return h_; }
    explicit operator bool() const noexcept { return h_ != nullptr; }

  private:
    const lodtensor_t *h_ = nullptr;
};

// An owning tensor handle (move-only); destroys the C handle when it goes.
class Tensor : public detail::TensorReader<Tensor> {
  public:
    Tensor() noexcept = default;
    // Takes ownership of a handle from the C API.
    explicit Tensor(lodtensor_t *h) noexcept : h_(h) {}
    Tensor(Tensor &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Tensor &operator=(Tensor &&o) noexcept {
        if (this != &o) {
            lodtensor_destroy(h_);
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    Tensor(const Tensor &) = delete;
    Tensor &operator=(const Tensor &) = delete;
    ~Tensor() { lodtensor_destroy(h_); }

    // A host tensor holding a copy of `data`, with shape `dims` and an optional LoD.
    template <typename T>
    static Tensor create(Span<const T> data, Span<const std::int64_t> dims, const Lod &lod = Lod::none()) {
        return create_raw(dtype_of<T>(), dims, data.data(), data.size() * sizeof(T), lod);
    }
    static Tensor create_raw(lodtensor_dtype_t dtype, Span<const std::int64_t> dims, const void *data,
                             std::size_t nbytes, const Lod &lod = Lod::none()) {
        lodtensor_t *out = nullptr;
        check(lodtensor_create(dtype, dims.data(), dims.size(), data, nbytes, lod.kind, lod.level_sizes.data(),
                               lod.level_sizes.size(), lod.values.data(), lod.values.size(), &out));
        return Tensor(out);
    }

    // A host tensor over the caller's buffer, without copying it: `release(data, user_data)` runs
    // exactly once, when the last handle using the buffer goes (never when this throws: the buffer
    // then stays the caller's). `release` may be null if the buffer outlives every such handle.
    static Tensor from_buffer(lodtensor_dtype_t dtype, Span<const std::int64_t> dims, void *data, std::size_t nbytes,
                              const Lod &lod, lodtensor_release_fn release, void *user_data) {
        return from_buffer(lodtensor_place_t{LODTENSOR_DEVICE_CPU, 0}, dtype, dims, data, nbytes, lod, release,
                           user_data);
    }
    // The same over a buffer on `place`: host memory, or a CUDA device's memory (a model's output,
    // say; lodtensor_from_buffer says what is checked, lodtensor_cuda_stream how to order the
    // model's kernels with the library's).
    static Tensor from_buffer(lodtensor_place_t place, lodtensor_dtype_t dtype, Span<const std::int64_t> dims,
                              void *data, std::size_t nbytes, const Lod &lod, lodtensor_release_fn release,
                              void *user_data) {
        lodtensor_t *out = nullptr;
        check(lodtensor_from_buffer(place, dtype, dims.data(), dims.size(), data, nbytes, lod.kind,
                                    lod.level_sizes.data(), lod.level_sizes.size(), lod.values.data(),
                                    lod.values.size(), release, user_data, &out));
        return Tensor(out);
    }

    // A tensor that takes over a std::vector's elements (moved in, never copied); the vector is
    // freed when the last handle using it goes.
    template <typename T>
    static Tensor adopt(std::vector<T> &&values, Span<const std::int64_t> dims, const Lod &lod = Lod::none()) {
        static_assert(!std::is_same<T, bool>::value, "std::vector<bool> has no contiguous bool elements");
        auto *owned = new std::vector<T>(std::move(values));
        lodtensor_release_fn release = [](void *, void *user_data) { delete static_cast<std::vector<T> *>(user_data); };
        try {
            return from_buffer(dtype_of<T>(), dims, owned->data(), owned->size() * sizeof(T), lod, release, owned);
        } catch (...) {
            values = std::move(*owned);  // nothing was taken: give the elements back
            delete owned;
            throw;
        }
    }

    const lodtensor_t *get() const noexcept { return h_; }
    lodtensor_t *get() noexcept { return h_; }
    // Gives up ownership (for C functions that take it, e.g. a step function's outputs).
    lodtensor_t *release() noexcept { return std::exchange(h_, nullptr); }
    explicit operator bool() const noexcept { return h_ != nullptr; }
    TensorRef ref() const noexcept { return TensorRef(h_); }
    operator TensorRef() const noexcept { return TensorRef(h_); }

    // Writable elements, zero copy; writes are seen by every handle sharing the memory. Device
    // addresses for a tensor on a CUDA device, as data()'s.
    template <typename T>
    Span<T> mutable_data() {
        if (!same_dtype(dtype(), dtype_of<T>())) {
            throw Error(LODTENSOR_INVALID_ARGUMENT, "mutable_data<T>(): T is not the tensor's dtype");
        }
        void *p = nullptr;
        check(lodtensor_data_mut(h_, &p));
        return Span<T>(static_cast<T *>(p), numel());
    }
    void set_lod(const Lod &lod) {
        check(lodtensor_set_lod(h_, lod.kind, lod.level_sizes.data(), lod.level_sizes.size(), lod.values.data(),
                                lod.values.size()));
    }
    void clear_lod() { check(lodtensor_clear_lod(h_)); }

  private:
    lodtensor_t *h_ = nullptr;
};

namespace detail {

template <typename D>
Tensor TensorReader<D>::share() const {
    lodtensor_t *out = nullptr;
    check(lodtensor_share(h(), &out));
    return Tensor(out);
}
template <typename D>
Tensor TensorReader<D>::copy() const {
    lodtensor_t *out = nullptr;
    check(lodtensor_copy(h(), &out));
    return Tensor(out);
}
template <typename D>
Tensor TensorReader<D>::slice(std::size_t level, std::size_t begin, std::size_t end) const {
    lodtensor_t *out = nullptr;
    check(lodtensor_slice(h(), level, begin, end, &out));
    return Tensor(out);
}
template <typename D>
std::vector<Tensor> TensorReader<D>::split(std::size_t num_pieces) const {
    std::vector<lodtensor_t *> raw(num_pieces, nullptr);
    std::vector<Tensor> pieces;
    pieces.reserve(num_pieces);  // before the call: after it, nothing may throw
    std::size_t count = 0;
    check(lodtensor_split(h(), num_pieces, raw.data(), raw.size(), &count));
    for (std::size_t i = 0; i < count; ++i) pieces.emplace_back(raw[i]);
    return pieces;
}
template <typename D>
Tensor TensorReader<D>::lod_reset(Span<const std::int64_t> target_offsets, bool append) const {
    lodtensor_t *out = nullptr;
    check(lodtensor_lod_reset(h(), nullptr, target_offsets.data(), target_offsets.size(), append, &out));
    return Tensor(out);
}

}  // namespace detail

// Concatenates tensors along rows (LoD levels appended) into a new tensor.
inline Tensor merge(Span<const TensorRef> tensors) {
    std::vector<const lodtensor_t *> raw;
    raw.reserve(tensors.size());
    for (const TensorRef &t : tensors) raw.push_back(t.get());
    lodtensor_t *out = nullptr;
    check(lodtensor_merge(raw.data(), raw.size(), &out));
    return Tensor(out);
}

// lod_reset taking the target level from `y` (its LoD, or its int32/int64 elements).
inline Tensor lod_reset(TensorRef x, TensorRef y, bool append = false) {
    lodtensor_t *out = nullptr;
    check(lodtensor_lod_reset(x.get(), y.get(), nullptr, 0, append, &out));
    return Tensor(out);
}

// x as a record of Paddle's tensor file format (lodtensor_serialize): the bytes Paddle's `save` op
// writes for it; a save_combine file is such records back to back. A CUDA tensor's elements are
// copied from the device.
inline std::vector<std::uint8_t> serialize(TensorRef x) {
    std::size_t n = 0;
    check(lodtensor_serialize(x.get(), nullptr, 0, &n));
    std::vector<std::uint8_t> bytes(n);
    check(lodtensor_serialize(x.get(), bytes.data(), bytes.size(), &n));
    return bytes;
}
// The record at the start of `bytes` (lodtensor_deserialize): a host tensor, and the record's
// length, where the next record of a save_combine file starts.
struct Deserialized {
    Tensor tensor;
    std::size_t consumed;
};
inline Deserialized deserialize(Span<const std::uint8_t> bytes) {
    lodtensor_t *out = nullptr;
    std::size_t consumed = 0;
    check(lodtensor_deserialize(bytes.data(), bytes.size(), &consumed, &out));
    return Deserialized{Tensor(out), consumed};
}
// Paddle's partial load (lodtensor_deserialize_slice): from the record at the start of `bytes`,
// which has no LoD, a host tensor of `dims` holding a copy of the elements from element `seek` on,
// and the whole record's length.
inline Deserialized deserialize_slice(Span<const std::uint8_t> bytes, std::int64_t seek,
                                      Span<const std::int64_t> dims) {
    lodtensor_t *out = nullptr;
    std::size_t consumed = 0;
    check(lodtensor_deserialize_slice(bytes.data(), bytes.size(), seek, dims.data(), dims.size(), &consumed, &out));
    return Deserialized{Tensor(out), consumed};
}

// x's elements lent as a DLPack managed tensor (lodtensor_to_dlpack), zero copy: the consumer
// calls its deleter once when done (include your dlpack.h to read it). DLPack has no LoD.
inline DLManagedTensorVersioned *to_dlpack(TensorRef x) {
    DLManagedTensorVersioned *out = nullptr;
    check(lodtensor_to_dlpack(x.get(), &out));
    return out;
}
// A tensor that takes over a DLPack managed tensor (lodtensor_from_dlpack), zero copy, with `lod`:
// the library calls its deleter once, when the last handle over the memory goes. When this
// throws, nothing was taken: `managed` is still the caller's.
inline Tensor from_dlpack(DLManagedTensorVersioned *managed, const Lod &lod = Lod::none()) {
    lodtensor_t *out = nullptr;
    check(lodtensor_from_dlpack(managed, lod.kind, lod.level_sizes.data(), lod.level_sizes.size(), lod.values.data(),
                                lod.values.size(), &out));
    return Tensor(out);
}
// to_dlpack and from_dlpack in the form of DLPack before 1.0, DLManagedTensor
// (lodtensor_to_dlpack_legacy, lodtensor_from_dlpack_legacy), for frameworks that have only it.
inline DLManagedTensor *to_dlpack_legacy(TensorRef x) {
    DLManagedTensor *out = nullptr;
    check(lodtensor_to_dlpack_legacy(x.get(), &out));
    return out;
}
inline Tensor from_dlpack_legacy(DLManagedTensor *managed, const Lod &lod = Lod::none()) {
    lodtensor_t *out = nullptr;
    check(lodtensor_from_dlpack_legacy(managed, lod.kind, lod.level_sizes.data(), lod.level_sizes.size(),
                                       lod.values.data(), lod.values.size(), &out));
    return Tensor(out);
}

// x lent to Arrow through the C data interface (lodtensor_to_arrow), zero copy (bool elements
// are packed into a copy): fills the caller's structs with one large_list per LoD level, one
// fixed_size_list per dim after the first, then the elements. The caller releases each struct
// once with its `release` callback; the memory stays until the array is released, also after x
// is gone. When this throws, neither struct was written.
inline void to_arrow(TensorRef x, ArrowSchema *out_schema, ArrowArray *out_array) {
    check(lodtensor_to_arrow(x.get(), out_schema, out_array));
}
// x lent through Arrow's C device data interface (lodtensor_to_arrow_device), zero copy: as
// to_arrow for a host tensor (ARROW_DEVICE_CPU); for a CUDA tensor (ARROW_DEVICE_CUDA, its device
// id) the elements and LoD offsets are device memory, ready to read (sync_event NULL). The caller
// releases the schema and `out_array->array` once each. When this throws, nothing was written.
inline void to_arrow_device(TensorRef x, ArrowSchema *out_schema, ArrowDeviceArray *out_array) {
    check(lodtensor_to_arrow_device(x.get(), out_schema, out_array));
}
// x, a 1-d uint8 tensor with a LoD, lent as Arrow strings (lodtensor_to_arrow_strings), zero
// copy: its last LoD level's sequences as one large_utf8 (`encoding` LODTENSOR_ARROW_UTF8, each
// string checked to be UTF-8) or large_binary (LODTENSOR_ARROW_BINARY) array, the levels above it
// large lists. Released as to_arrow's structs. When this throws, neither struct was written.
inline void to_arrow_strings(TensorRef x, std::int32_t encoding, ArrowSchema *out_schema, ArrowArray *out_array) {
    check(lodtensor_to_arrow_strings(x.get(), encoding, out_schema, out_array));
}
// to_arrow_strings through Arrow's C device data interface (lodtensor_to_arrow_device_strings),
// as to_arrow_device lends a tensor; UTF-8 on a device is checked there.
inline void to_arrow_device_strings(TensorRef x, std::int32_t encoding, ArrowSchema *out_schema,
                                    ArrowDeviceArray *out_array) {
    check(lodtensor_to_arrow_device_strings(x.get(), encoding, out_schema, out_array));
}
// A tensor that takes the Arrow array `*array` of type `*schema` (lodtensor_from_arrow), zero
// copy (bool elements are unpacked into a copy): the array is moved (`array->release` becomes
// NULL) and released once, when the last handle over its memory goes. `*schema` is only read and
// stays the caller's to release. When this throws, nothing was taken: `*array` is untouched.
inline Tensor from_arrow(const ArrowSchema *schema, ArrowArray *array) {
    lodtensor_t *out = nullptr;
    check(lodtensor_from_arrow(schema, array, &out));
    return Tensor(out);
}

// A tensor that takes the Arrow device array `*array` of type `*schema`
// (lodtensor_from_arrow_device), zero copy: on the CPU (ARROW_DEVICE_CPU, ARROW_DEVICE_CUDA_HOST)
// or on CUDA device `device_id` (ARROW_DEVICE_CUDA), after waiting for a non-NULL `sync_event`.
// `array->array` is moved; `*schema` stays the caller's. When this throws, nothing was taken.
inline Tensor from_arrow_device(const ArrowSchema *schema, ArrowDeviceArray *array) {
    lodtensor_t *out = nullptr;
    check(lodtensor_from_arrow_device(schema, array, &out));
    return Tensor(out);
}

// A column of an Arrow record batch: a tensor, its field name (UTF-8) and its form:
// LODTENSOR_ARROW_VALUES (as to_arrow lends a tensor) or, for text, LODTENSOR_ARROW_UTF8 or
// LODTENSOR_ARROW_BINARY (as to_arrow_strings lends it).
struct ArrowColumn {
    TensorRef tensor;
    const char *name;
    std::int32_t encoding = LODTENSOR_ARROW_VALUES;
};

namespace detail {
template <typename A>
void to_record_batch(lodtensor_status_t (*lend)(const lodtensor_t *const *, const char *const *,
                                                const std::int32_t *, std::size_t, ArrowSchema *, A *),
                     Span<const ArrowColumn> columns, ArrowSchema *out_schema, A *out_array) {
    std::vector<const lodtensor_t *> tensors;
    std::vector<const char *> names;
    std::vector<std::int32_t> encodings;
    tensors.reserve(columns.size());
    names.reserve(columns.size());
    encodings.reserve(columns.size());
    for (const ArrowColumn &c : columns) {
        tensors.push_back(c.tensor.get());
        names.push_back(c.name);
        encodings.push_back(c.encoding);
    }
    check(lend(tensors.data(), names.data(), encodings.data(), columns.size(), out_schema, out_array));
}
template <typename A>
std::vector<Tensor> from_record_batch(lodtensor_status_t (*take)(const ArrowSchema *, A *, lodtensor_t **,
                                                                 std::size_t, std::size_t *),
                                      const ArrowSchema *schema, A *array) {
    // Room for the columns the schema says, unless it is released; the call checks the schema.
    const bool readable = schema != nullptr && schema->release != nullptr && schema->n_children > 0;
    const std::size_t room = readable ? std::size_t(schema->n_children) : 0;
    std::vector<lodtensor_t *> raw(room, nullptr);
    std::vector<Tensor> columns;
    columns.reserve(room);  // before the call: after it, nothing may throw
    std::size_t count = 0;
    check(take(schema, array, raw.data(), raw.size(), &count));
    for (std::size_t i = 0; i < count; ++i) columns.emplace_back(raw[i]);
    return columns;
}
}  // namespace detail

// The columns lent to Arrow as one record batch (lodtensor_to_arrow_record_batch_encoded), zero
// copy: a struct array whose children are the columns, each in its form (as to_arrow lends a
// tensor, or text as to_arrow_strings does), each with one entry per row (its sequences at LoD
// level 0, or its rows). The caller releases each struct once. When this throws, neither struct
// was written.
inline void to_arrow_record_batch(Span<const ArrowColumn> columns, ArrowSchema *out_schema,
                                  ArrowArray *out_array) {
    detail::to_record_batch(::lodtensor_to_arrow_record_batch_encoded, columns, out_schema, out_array);
}
// The same through the C device data interface (lodtensor_to_arrow_device_record_batch_encoded):
// every column on one place.
inline void to_arrow_device_record_batch(Span<const ArrowColumn> columns, ArrowSchema *out_schema,
                                         ArrowDeviceArray *out_array) {
    detail::to_record_batch(::lodtensor_to_arrow_device_record_batch_encoded, columns, out_schema, out_array);
}
// One tensor a column of the Arrow record batch `*array` (lodtensor_from_arrow_record_batch), zero
// copy: the columns share the array, which is moved and released once, when the last handle over
// its memory goes. `*schema` stays the caller's. When this throws, nothing was taken.
inline std::vector<Tensor> from_arrow_record_batch(const ArrowSchema *schema, ArrowArray *array) {
    return detail::from_record_batch(::lodtensor_from_arrow_record_batch, schema, array);
}
// The same for a device record batch (lodtensor_from_arrow_device_record_batch).
inline std::vector<Tensor> from_arrow_device_record_batch(const ArrowSchema *schema, ArrowDeviceArray *array) {
    return detail::from_record_batch(::lodtensor_from_arrow_device_record_batch, schema, array);
}

// Places: the host, or CUDA device `id`.
inline lodtensor_place_t cpu_place() noexcept { return lodtensor_place_t{LODTENSOR_DEVICE_CPU, 0}; }
inline lodtensor_place_t cuda_place(std::int32_t id) noexcept { return lodtensor_place_t{LODTENSOR_DEVICE_CUDA, id}; }

// A copy of x (elements and LoD) on `place`, always with its own memory.
inline Tensor to_place(TensorRef x, lodtensor_place_t place) {
    lodtensor_t *out = nullptr;
    check(lodtensor_to_place(x.get(), place, &out));
    return Tensor(out);
}
// Waits until the work queued on `place` has finished (the CPU returns at once).
inline void synchronize(lodtensor_place_t place) { check(lodtensor_synchronize(place)); }
// The number of CUDA devices; throws UNSUPPORTED in a build without CUDA or without a device.
inline std::size_t cuda_device_count() {
    std::size_t n = 0;
    check(lodtensor_cuda_device_count(&n));
    return n;
}
// Compiles and loads every kernel file for a CUDA device now rather than at first use
// (lodtensor_cuda_load_kernels): for a server's start-up.
inline void cuda_load_kernels(std::int32_t device) { check(lodtensor_cuda_load_kernels(device)); }
// The stream all the library's work on a CUDA device goes to (lodtensor_cuda_stream: a CUstream /
// cudaStream_t owned by the library, never destroyed): queue a model's kernels on it, and its
// tensors go to the library's ops with no wait between.
inline void *cuda_stream(std::int32_t device) {
    void *stream = nullptr;
    check(lodtensor_cuda_stream(device, &stream));
    return stream;
}
// The device memory the library holds on a CUDA device (lodtensor_cuda_memory_info), and giving
// the freed blocks its cache keeps back to the driver (lodtensor_cuda_empty_cache).
struct CudaMemoryInfo {
    std::size_t in_use;
    std::size_t kept;
};
inline CudaMemoryInfo cuda_memory_info(std::int32_t device) {
    CudaMemoryInfo info{0, 0};
    check(lodtensor_cuda_memory_info(device, &info.in_use, &info.kept));
    return info;
}
inline void cuda_empty_cache(std::int32_t device) { check(lodtensor_cuda_empty_cache(device)); }
// The bound on the freed blocks a CUDA device's cache keeps (lodtensor_cuda_set_cache_limit;
// SIZE_MAX, the initial value, is none).
inline void cuda_set_cache_limit(std::int32_t device, std::size_t bytes) {
    check(lodtensor_cuda_set_cache_limit(device, bytes));
}
inline std::size_t cuda_cache_limit(std::int32_t device) {
    std::size_t limit = 0;
    check(lodtensor_cuda_cache_limit(device, &limit));
    return limit;
}
// What the library has asked of a CUDA device so far (lodtensor_cuda_counters): every counter,
// indexed by the LODTENSOR_CUDA_COUNTER_* values. Subtract two readings to see what a call asked.
inline std::vector<std::uint64_t> cuda_counters(std::int32_t device) {
    std::vector<std::uint64_t> values(LODTENSOR_CUDA_COUNTERS, 0);
    check(lodtensor_cuda_counters(device, values.data(), values.size()));
    return values;
}
// A CUDA device's free and total memory as the driver reports them (lodtensor_cuda_free_memory).
struct CudaFreeMemory {
    std::size_t free;
    std::size_t total;
};
inline CudaFreeMemory cuda_free_memory(std::int32_t device) {
    CudaFreeMemory info{0, 0};
    check(lodtensor_cuda_free_memory(device, &info.free, &info.total));
    return info;
}

inline const char *version() noexcept { return lodtensor_version(); }
inline void set_num_threads(std::size_t n) { check(lodtensor_set_num_threads(n)); }
inline std::size_t num_threads() {
    std::size_t n = 0;
    check(lodtensor_num_threads(&n));
    return n;
}

// The bound on freed host memory kept for reuse (lodtensor_set_host_cache_limit) and what is
// kept now.
inline void set_host_cache_limit(std::size_t bytes) { check(lodtensor_set_host_cache_limit(bytes)); }
struct HostCacheInfo {
    std::size_t kept;
    std::size_t limit;
};
inline HostCacheInfo host_cache_info() {
    HostCacheInfo info{0, 0};
    check(lodtensor_host_cache_info(&info.kept, &info.limit));
    return info;
}

// ---- sequence operators -----------------------------------------------------------------------

inline Tensor sequence_expand(TensorRef x, TensorRef y, std::int64_t ref_level = -1) {
    lodtensor_t *out = nullptr;
    check(::sequence_expand(x.get(), y.get(), ref_level, &out));
    return Tensor(out);
}
inline Tensor sequence_expand_as(TensorRef x, TensorRef y) {
    lodtensor_t *out = nullptr;
    check(::sequence_expand_as(x.get(), y.get(), &out));
    return Tensor(out);
}

struct PadResult {
    Tensor padded;  // [sequences, padded_length, ...]
    Tensor length;  // int64 [sequences]
};
inline PadResult sequence_pad(TensorRef x, TensorRef pad_value, std::int64_t padded_length = -1) {
    lodtensor_t *out = nullptr, *length = nullptr;
    check(::sequence_pad(x.get(), pad_value.get(), padded_length, &out, &length));
    return PadResult{Tensor(out), Tensor(length)};
}
inline Tensor sequence_unpad(TensorRef x, TensorRef length) {
    lodtensor_t *out = nullptr;
    check(::sequence_unpad(x.get(), length.get(), &out));
    return Tensor(out);
}

struct PoolResult {
    Tensor out;
    Tensor max_index;  // int32 argmax/argmin rows for LODTENSOR_POOL_MAX/MIN, else empty
};
inline PoolResult sequence_pool(TensorRef x, std::int32_t pool_type, double pad_value = 0.0) {
    lodtensor_t *out = nullptr, *index = nullptr;
    check(::sequence_pool(x.get(), pool_type, pad_value, &out, &index));
    return PoolResult{Tensor(out), Tensor(index)};
}
inline Tensor sequence_first_step(TensorRef x) {
    lodtensor_t *out = nullptr;
    check(::sequence_first_step(x.get(), &out));
    return Tensor(out);
}
inline Tensor sequence_last_step(TensorRef x) {
    lodtensor_t *out = nullptr;
    check(::sequence_last_step(x.get(), &out));
    return Tensor(out);
}
inline Tensor sequence_scatter(TensorRef x, TensorRef ids, TensorRef updates) {
    lodtensor_t *out = nullptr;
    check(::sequence_scatter(x.get(), ids.get(), updates.get(), &out));
    return Tensor(out);
}
inline void sequence_scatter_inplace(Tensor &x, TensorRef ids, TensorRef updates) {
    check(::sequence_scatter_inplace(x.get(), ids.get(), updates.get()));
}

inline Tensor sequence_softmax(TensorRef x) {
    lodtensor_t *out = nullptr;
    check(::sequence_softmax(x.get(), &out));
    return Tensor(out);
}
// Concatenates the i-th sequences of every input (at least 2).
inline Tensor sequence_concat(Span<const TensorRef> xs) {
    std::vector<const lodtensor_t *> raw;
    raw.reserve(xs.size());
    for (const TensorRef &t : xs) raw.push_back(t.get());
    lodtensor_t *out = nullptr;
    check(::sequence_concat(raw.data(), raw.size(), &out));
    return Tensor(out);
}
inline Tensor sequence_slice(TensorRef x, TensorRef offset, TensorRef length) {
    lodtensor_t *out = nullptr;
    check(::sequence_slice(x.get(), offset.get(), length.get(), &out));
    return Tensor(out);
}
inline Tensor sequence_reverse(TensorRef x) {
    lodtensor_t *out = nullptr;
    check(::sequence_reverse(x.get(), &out));
    return Tensor(out);
}
inline Tensor sequence_mask(TensorRef x, std::int64_t maxlen, lodtensor_dtype_t out_dtype) {
    lodtensor_t *out = nullptr;
    check(::sequence_mask(x.get(), maxlen, out_dtype, &out));
    return Tensor(out);
}
inline Tensor sequence_enumerate(TensorRef x, std::int64_t win_size, std::int64_t pad_value) {
    lodtensor_t *out = nullptr;
    check(::sequence_enumerate(x.get(), win_size, pad_value, &out));
    return Tensor(out);
}
inline Tensor sequence_erase(TensorRef x, Span<const std::int64_t> tokens) {
    lodtensor_t *out = nullptr;
    check(::sequence_erase(x.get(), tokens.data(), tokens.size(), &out));
    return Tensor(out);
}
inline Tensor sequence_reshape(TensorRef x, std::int64_t new_dim) {
    lodtensor_t *out = nullptr;
    check(::sequence_reshape(x.get(), new_dim, &out));
    return Tensor(out);
}
// padding_data may be empty unless padding_trainable.
inline Tensor sequence_conv(TensorRef x, TensorRef filter, TensorRef padding_data, std::int64_t context_length,
                            std::int64_t context_start, std::int64_t context_stride = 1,
                            bool padding_trainable = false) {
    lodtensor_t *out = nullptr;
    check(::sequence_conv(x.get(), filter.get(), padding_data.get(), context_length, context_start, context_stride,
                          padding_trainable, &out));
    return Tensor(out);
}

// ---- dense operations ---------------------------------------------------------------------------

inline Tensor fill(lodtensor_dtype_t dtype, Span<const std::int64_t> dims, double value) {
    lodtensor_t *out = nullptr;
    check(lodtensor_fill(dtype, dims.data(), dims.size(), value, &out));
    return Tensor(out);
}
// fill directly on `place` (lodtensor_fill_on): on a CUDA device the elements are written there.
inline Tensor fill_on(lodtensor_place_t place, lodtensor_dtype_t dtype, Span<const std::int64_t> dims, double value) {
    lodtensor_t *out = nullptr;
    check(lodtensor_fill_on(place, dtype, dims.data(), dims.size(), value, &out));
    return Tensor(out);
}
inline Tensor cast(TensorRef x, lodtensor_dtype_t dtype) {
    lodtensor_t *out = nullptr;
    check(lodtensor_cast(x.get(), dtype, &out));
    return Tensor(out);
}
inline Tensor gather_rows(TensorRef x, TensorRef index) {
    lodtensor_t *out = nullptr;
    check(lodtensor_gather_rows(x.get(), index.get(), &out));
    return Tensor(out);
}
// Row scatter: a copy of x whose rows index[i] are replaced by (LODTENSOR_SCATTER_OVERWRITE, the
// last of repeated indices wins) or increased by (LODTENSOR_SCATTER_ADD) the rows updates[i].
inline Tensor scatter_rows(TensorRef x, TensorRef index, TensorRef updates, std::int32_t mode) {
    lodtensor_t *out = nullptr;
    check(lodtensor_scatter_rows(x.get(), index.get(), updates.get(), mode, &out));
    return Tensor(out);
}
inline Tensor log_softmax(TensorRef x) {
    lodtensor_t *out = nullptr;
    check(lodtensor_log_softmax(x.get(), &out));
    return Tensor(out);
}
struct TopK {
    Tensor values;
    Tensor indices;  // int64
};
inline TopK topk(TensorRef x, std::size_t k, bool largest = true) {
    lodtensor_t *values = nullptr, *indices = nullptr;
    check(lodtensor_topk(x.get(), k, largest, &values, &indices));
    return TopK{Tensor(values), Tensor(indices)};
}

// ---- rank table and tensor array --------------------------------------------------------------

class RankTable {
  public:
    RankTable() noexcept = default;
    explicit RankTable(rank_table_t *h) noexcept : h_(h) {}
    RankTable(RankTable &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    RankTable &operator=(RankTable &&o) noexcept {
        if (this != &o) {
            rank_table_destroy(h_);
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    RankTable(const RankTable &) = delete;
    RankTable &operator=(const RankTable &) = delete;
    ~RankTable() { rank_table_destroy(h_); }

    // Ranks the sequences of LoD level `level` of `x` by length, longest first.
    static RankTable create(TensorRef x, std::size_t level) {
        rank_table_t *out = nullptr;
        check(rank_table_create(x.get(), level, &out));
        return RankTable(out);
    }
    const rank_table_t *get() const noexcept { return h_; }
    std::size_t size() const { return get_size(rank_table_size); }
    std::size_t level() const { return get_size(rank_table_level); }
    std::size_t max_sequence_len() const { return get_size(rank_table_max_sequence_len); }
    // Copies the items in rank order into the buffers that are not empty (each must hold size()
    // values); returns size().
    std::size_t items(Span<std::size_t> indices, Span<std::size_t> lengths) const {
        std::size_t n = 0;
        std::size_t len = indices.empty() ? lengths.size()
                          : lengths.empty() ? indices.size()
                                            : (indices.size() < lengths.size() ? indices.size() : lengths.size());
        check(rank_table_items(h_, indices.empty() ? nullptr : indices.data(),
                               lengths.empty() ? nullptr : lengths.data(), len, &n));
        return n;
    }
    Tensor shrink_rnn_memory(TensorRef x, std::size_t step) const {
        lodtensor_t *out = nullptr;
        check(rank_table_shrink_rnn_memory(h_, x.get(), step, &out));
        return Tensor(out);
    }
    Tensor reorder(TensorRef x) const {
        lodtensor_t *out = nullptr;
        check(rank_table_reorder(h_, x.get(), &out));
        return Tensor(out);
    }

  private:
    std::size_t get_size(lodtensor_status_t (*f)(const rank_table_t *, std::size_t *)) const {
        std::size_t n = 0;
        check(f(h_, &n));
        return n;
    }
    rank_table_t *h_ = nullptr;
};

class TensorArray {
  public:
    explicit TensorArray(tensor_array_t *h) noexcept : h_(h) {}
    // An empty array.
    TensorArray() {
        check(tensor_array_create(&h_));
    }
    TensorArray(TensorArray &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    TensorArray &operator=(TensorArray &&o) noexcept {
        if (this != &o) {
            tensor_array_destroy(h_);
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    TensorArray(const TensorArray &) = delete;
    TensorArray &operator=(const TensorArray &) = delete;
    ~TensorArray() { tensor_array_destroy(h_); }

    const tensor_array_t *get() const noexcept { return h_; }
    std::size_t size() const {
        std::size_t n = 0;
        check(tensor_array_size(h_, &n));
        return n;
    }
    // Element `index`, sharing its memory (copy = false) or as a private copy.
    Tensor read(std::size_t index, bool copy = false) const {
        lodtensor_t *out = nullptr;
        check(tensor_array_read(h_, index, copy, &out));
        return Tensor(out);
    }
    void write(std::size_t index, TensorRef t, bool copy = false) { check(tensor_array_write(h_, index, t.get(), copy)); }
    void clear() { check(tensor_array_clear(h_)); }
    // Concatenates (stack = false) or stacks the elements along `axis`.
    Tensor to_tensor(std::int64_t axis, bool stack = false) const {
        lodtensor_t *out = nullptr;
        check(tensor_array_to_tensor(h_, axis, stack, &out, nullptr, 0));
        return Tensor(out);
    }
    static TensorArray unstack(TensorRef x, std::int64_t axis) {
        tensor_array_t *out = nullptr;
        check(tensor_array_unstack(x.get(), axis, &out));
        return TensorArray(out);
    }
    // Splits `x` into time steps by `table` (Paddle's lod_tensor_to_array).
    static TensorArray unpack(TensorRef x, const RankTable &table) {
        tensor_array_t *out = nullptr;
        check(tensor_array_unpack(x.get(), table.get(), &out));
        return TensorArray(out);
    }
    // Puts the time steps back in the original order (Paddle's array_to_lod_tensor).
    Tensor pack(const RankTable &table) const {
        lodtensor_t *out = nullptr;
        check(tensor_array_pack(h_, table.get(), &out));
        return Tensor(out);
    }

  private:
    tensor_array_t *h_ = nullptr;
};

// ---- the dynamic-RNN driver -------------------------------------------------------------------

// What a step function returns: the step's output and the new state. An empty `state` means "the
// output is also the new state".
struct StepResult {
    Tensor output;
    Tensor state;
};

namespace detail {

template <typename F>
struct StepContext {
    F *fn;
    std::exception_ptr error;
};

// The C callback: calls the C++ step function, hands its tensors to the driver, and turns an
// exception into a non-zero status (an exception must not unwind through the library's frames);
// dynamic_rnn rethrows it.
template <typename F>
std::int32_t step_trampoline(std::size_t step, const lodtensor_t *input, const lodtensor_t *prev,
                             lodtensor_t **output, lodtensor_t **state, void *user_data) noexcept {
    auto *ctx = static_cast<StepContext<F> *>(user_data);
    try {
        StepResult r = (*ctx->fn)(step, TensorRef(input), TensorRef(prev));
        if (!r.state) {
            *output = r.output.release();
            *state = *output;
        } else {
            *output = r.output.release();
            *state = r.state.release();
        }
        return 0;
    } catch (...) {
        ctx->error = std::current_exception();
        return -1;
    }
}

}  // namespace detail

// Runs a dynamic RNN over the sequences of LoD level `level` of `x` (see tensor_array_dynamic_rnn):
// `step(std::size_t step, TensorRef step_input, TensorRef prev_state) -> StepResult` is called
// for each time step with borrowed inputs. An exception from `step` stops the loop and is
// rethrown here unchanged; a library error throws Error.
template <typename F>
Tensor dynamic_rnn(TensorRef x, std::size_t level, TensorRef init_state, F &&step) {
    using Fn = std::remove_reference_t<F>;
    detail::StepContext<Fn> ctx{&step, nullptr};
    lodtensor_t *out = nullptr;
    lodtensor_status_t s =
        tensor_array_dynamic_rnn(x.get(), level, init_state.get(), &detail::step_trampoline<Fn>, &ctx, &out);
    if (ctx.error) std::rethrow_exception(ctx.error);
    check(s);
    return Tensor(out);
}

// ---- beam search --------------------------------------------------------------------------------

struct DecodeResult {
    Tensor ids;     // int64, LoD [source -> sentences, sentence -> tokens]
    Tensor scores;  // one score per sentence
};

// Paddle's beam_search_decode: backtracks the steps' ids and scores arrays into beam_size
// sentences per source.
inline DecodeResult beam_search_decode(const TensorArray &ids, const TensorArray &scores, std::size_t beam_size,
                                       std::int64_t end_id) {
    lodtensor_t *out_ids = nullptr, *out_scores = nullptr;
    check(::beam_search_decode(ids.get(), scores.get(), beam_size, end_id, &out_ids, &out_scores));
    return DecodeResult{Tensor(out_ids), Tensor(out_scores)};
}

// One beam-search step's selection: the selected ids and scores (LoD [source -> prefix rows,
// prefix -> selected]) and, for each, the prefix row it extends.
struct BeamSelection {
    Tensor ids;
    Tensor scores;
    Tensor parent_idx;
};
inline BeamSelection beam_search_step(TensorRef pre_ids, TensorRef pre_scores, TensorRef ids, TensorRef scores,
                                      std::size_t level, std::size_t beam_size, std::int64_t end_id,
                                      bool is_accumulated) {
    lodtensor_t *a = nullptr, *b = nullptr, *c = nullptr;
    check(::beam_search_step(pre_ids.get(), pre_scores.get(), ids.get(), scores.get(), level, beam_size, end_id,
                             is_accumulated, &a, &b, &c));
    return BeamSelection{Tensor(a), Tensor(b), Tensor(c)};
}
inline BeamSelection beam_search_fused_step(TensorRef pre_ids, TensorRef pre_scores, TensorRef log_probs,
                                            std::size_t beam_size, std::int64_t end_id) {
    lodtensor_t *a = nullptr, *b = nullptr, *c = nullptr;
    check(::beam_search_fused_step(pre_ids.get(), pre_scores.get(), log_probs.get(), beam_size, end_id, &a, &b, &c));
    return BeamSelection{Tensor(a), Tensor(b), Tensor(c)};
}
inline Tensor beam_search_gather_state(TensorRef state, TensorRef parent_idx) {
    lodtensor_t *out = nullptr;
    check(::beam_search_gather_state(state.get(), parent_idx.get(), &out));
    return Tensor(out);
}
// Reorders every tensor of a model's state by one parent_idx: on a CUDA device one wait for all.
inline std::vector<Tensor> beam_search_gather_states(Span<const TensorRef> states, TensorRef parent_idx) {
    std::vector<const lodtensor_t *> raw;
    raw.reserve(states.size());
    for (const TensorRef &t : states) raw.push_back(t.get());
    std::vector<lodtensor_t *> outs(raw.size(), nullptr);
    std::vector<Tensor> result;
    result.reserve(outs.size());  // before the call: after it, nothing may throw
    check(::beam_search_gather_states(raw.data(), raw.size(), parent_idx.get(), outs.data()));
    for (lodtensor_t *out : outs) result.emplace_back(out);
    return result;
}
inline Tensor beam_search_gather_tree(TensorRef ids, TensorRef parents) {
    lodtensor_t *out = nullptr;
    check(::beam_search_gather_tree(ids.get(), parents.get(), &out));
    return Tensor(out);
}

// The default decoder options (vocab_size must still be set).
inline beam_search_decoder_options_t decoder_options() {
    beam_search_decoder_options_t o{};
    check(beam_search_decoder_options_init(&o));
    return o;
}

// What a decoder callback sees at one step (borrowed: valid during the call only).
class BeamStep {
  public:
    explicit BeamStep(const beam_search_step_info_t *info) noexcept : info_(info) {}
    std::size_t step() const noexcept { return info_->step; }
    std::size_t num_sources() const noexcept { return info_->num_sources; }
    std::size_t num_prefixes() const noexcept { return info_->num_prefixes; }
    std::size_t vocab_size() const noexcept { return info_->vocab_size; }
    // num_sources + 1 offsets: source s owns prefixes [source_offsets[s], source_offsets[s+1]).
    Span<const std::size_t> source_offsets() const noexcept {
        return Span<const std::size_t>(info_->source_offsets, info_->num_sources + 1);
    }
    Span<const std::int64_t> ids() const noexcept { return Span<const std::int64_t>(info_->ids, info_->num_prefixes); }
    Span<const std::int64_t> parent_idx() const noexcept {
        return Span<const std::int64_t>(info_->parent_idx, info_->num_prefixes);
    }
    Span<const float> scores() const noexcept { return Span<const float>(info_->scores, info_->num_prefixes); }
    // decoder_run_tensors, after a step on a CUDA device: parent_idx as an int32 tensor there
    // (borrowed; for beam_search_gather_states without an upload); empty (false) otherwise.
    TensorRef parent_idx_tensor() const noexcept { return TensorRef(info_->parent_idx_tensor); }
    const beam_search_step_info_t *get() const noexcept { return info_; }

  private:
    const beam_search_step_info_t *info_;
};

namespace detail {

template <typename Step, typename Edit>
struct DecoderContext {
    Step *step;
    Edit *edit;
    std::exception_ptr error;
};

// The C callbacks: call the C++ function with the step and the writable log-probs; an exception
// becomes a non-zero status (it must not unwind through the library) and is rethrown by run().
template <typename Ctx, bool IsEdit>
std::int32_t decoder_trampoline(const beam_search_step_info_t *info, float *log_probs, void *user_data) noexcept {
    auto *ctx = static_cast<Ctx *>(user_data);
    try {
        Span<float> lp(log_probs, info->num_prefixes * info->vocab_size);
        if constexpr (IsEdit) {
            (*ctx->edit)(BeamStep(info), lp);
        } else {
            (*ctx->step)(BeamStep(info), lp);
        }
        return 0;
    } catch (...) {
        ctx->error = std::current_exception();
        return -1;
    }
}

struct NoEdit {
    void operator()(BeamStep, Span<float>) const noexcept {}
};

template <typename Step>
struct TensorDecoderContext {
    Step *step;
    std::exception_ptr error;
};

// What a tensor step function returns, as a handle the decoder takes over: an owned Tensor is
// released to it; a TensorRef (the model keeps its tensor) is shared first.
inline lodtensor_t *hand_over(Tensor &&t) noexcept { return t.release(); }
inline lodtensor_t *hand_over(TensorRef t) {
    lodtensor_t *out = nullptr;
    check(lodtensor_share(t.get(), &out));
    return out;
}

// The C callback of run_tensors: calls the C++ function and hands its tensor to the decoder; an
// exception becomes a non-zero status (it must not unwind through the library) and is rethrown
// by run_tensors().
template <typename Ctx>
std::int32_t decoder_tensor_trampoline(const beam_search_step_info_t *info, lodtensor_t **out_log_probs,
                                       void *user_data) noexcept {
    auto *ctx = static_cast<Ctx *>(user_data);
    try {
        *out_log_probs = hand_over((*ctx->step)(BeamStep(info)));
        return 0;
    } catch (...) {
        ctx->error = std::current_exception();
        return -1;
    }
}

}  // namespace detail

// A beam-search decoder around the caller's model (beam_search_decoder_*). Immutable: any number
// of threads may run one decoder at once.
class BeamSearchDecoder {
  public:
    explicit BeamSearchDecoder(const beam_search_decoder_options_t &options) {
        check(beam_search_decoder_create(&options, &h_));
    }
    BeamSearchDecoder(BeamSearchDecoder &&o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    BeamSearchDecoder &operator=(BeamSearchDecoder &&o) noexcept {
        if (this != &o) {
            beam_search_decoder_destroy(h_);
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    BeamSearchDecoder(const BeamSearchDecoder &) = delete;
    BeamSearchDecoder &operator=(const BeamSearchDecoder &) = delete;
    ~BeamSearchDecoder() { beam_search_decoder_destroy(h_); }
    const beam_search_decoder_t *get() const noexcept { return h_; }

    // Decodes num_sources sentences: `step(BeamStep, Span<float> log_probs)` fills the
    // next-token log-probabilities of the live prefixes (num_prefixes x vocab_size, row-major);
    // `edit` (same signature) may then change them. An exception from either is rethrown here.
    template <typename Step, typename Edit = detail::NoEdit>
    DecodeResult run(std::size_t num_sources, Step &&step, Edit &&edit = Edit()) const {
        using S = std::remove_reference_t<Step>;
        using E = std::remove_reference_t<Edit>;
        using Ctx = detail::DecoderContext<S, E>;
        Ctx ctx{&step, &edit, nullptr};
        beam_search_step_fn edit_fn = nullptr;
        if constexpr (!std::is_same<std::decay_t<Edit>, detail::NoEdit>::value) {
            edit_fn = &detail::decoder_trampoline<Ctx, true>;
        }
        lodtensor_t *ids = nullptr, *scores = nullptr;
        lodtensor_status_t s = beam_search_decoder_run(h_, num_sources, &detail::decoder_trampoline<Ctx, false>,
                                                       edit_fn, &ctx, &ids, &scores);
        if (ctx.error) std::rethrow_exception(ctx.error);
        check(s);
        return DecodeResult{Tensor(ids), Tensor(scores)};
    }

    // Decodes num_sources sentences around a model that returns its log-probs as a tensor
    // (beam_search_decoder_run_tensors): `step(BeamStep) -> Tensor` (or TensorRef, which is
    // shared) gives the num_prefixes x vocab_size log-probs, float32, float16 or bfloat16, on the
    // host or on a CUDA device; on a device the step's selection runs there. An exception from
    // `step` is rethrown here; a library error (wrong dims or dtype, ...) throws Error.
    template <typename Step>
    DecodeResult run_tensors(std::size_t num_sources, Step &&step) const {
        using Ctx = detail::TensorDecoderContext<std::remove_reference_t<Step>>;
        Ctx ctx{&step, nullptr};
        lodtensor_t *ids = nullptr, *scores = nullptr;
        lodtensor_status_t s = beam_search_decoder_run_tensors(h_, num_sources, &detail::decoder_tensor_trampoline<Ctx>,
                                                               &ctx, &ids, &scores);
        if (ctx.error) std::rethrow_exception(ctx.error);
        check(s);
        return DecodeResult{Tensor(ids), Tensor(scores)};
    }

  private:
    beam_search_decoder_t *h_ = nullptr;
};

}  // namespace lodtensor

#endif  // LODTENSOR_HPP
