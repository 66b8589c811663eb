#pragma once
// Tensor: an n-dimensional, row-major, contiguous array with a runtime dtype. A Tensor is
// a value handle: copies share the buffer (cheap), `clone()` copies the elements. Views
// (`view`, `operator[]`) share the buffer as well. recur never writes into a buffer that
// another live Tensor can see, except through the explicit in-place calls of Shared.
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iosfwd>
#include <utility>

#include <recur/core/dtype.hpp>
#include <recur/core/error.hpp>
#include <recur/core/shape.hpp>
#include <recur/core/storage.hpp>

namespace recur {

class Tensor {
 public:
  Tensor() = default;
  Tensor(StoragePtr storage, std::int64_t offset, Shape shape, DType dtype);

  // Uninitialised elements from the buffer pool. MemoryError naming the shape and the bytes
  // when the system cannot provide them (std::bad_alloc never escapes).
  static Tensor empty(const Shape& shape, DType dtype = DType::float32);

  bool defined() const { return static_cast<bool>(storage_); }
  const Shape& shape() const { return shape_; }
  std::int64_t rank() const { return static_cast<std::int64_t>(shape_.size()); }
  std::int64_t numel() const { return numel_; }
  // Size of one axis; negative axes count from the back.
  std::int64_t size(std::int64_t axis) const {
    const auto n = static_cast<std::int64_t>(shape_.size());
    if (axis >= -n && axis < n) return shape_[static_cast<std::size_t>(axis < 0 ? axis + n : axis)];
    return size_out_of_range(axis);
  }
  DType dtype() const { return dtype_; }
  std::size_t nbytes() const { return static_cast<std::size_t>(numel_) * size_of(dtype_); }
  const StoragePtr& storage() const { return storage_; }

  // Typed element access; throws DTypeError when T does not match dtype().
  template <class T> T* data() {
    check_type(dtype_of<T>());
    return static_cast<T*>(raw_data());
  }
  template <class T> const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(raw_data());
  }
  void* raw_data() { return static_cast<char*>(storage_->data()) + offset_ * size_of(dtype_); }
  const void* raw_data() const {
    return static_cast<const char*>(storage_->data()) + offset_ * size_of(dtype_);
  }

  // The element at a multi-index (negative indices count from the back), as T.
  template <class T = double> T at(std::initializer_list<std::int64_t> index) const;
  // The only element of a one-element tensor, converted to T.
  template <class T = double> T item() const;

  Tensor clone() const;
  Tensor to(DType dtype) const;  // converts; returns *this when dtype already matches
  // Same elements, another shape of equal element count (no copy).
  Tensor view(const Shape& shape) const;
  // The sub-tensor at `index` along axis 0, negative from the back (no copy).
  Tensor operator[](std::int64_t index) const;
  // Elements [start, stop) along axis 0, 0 <= start <= stop <= size(0) (no copy).
  Tensor rows(std::int64_t start, std::int64_t stop) const;

 private:
  void check_type(DType requested) const {
    if (requested != dtype_ || !storage_) type_mismatch(requested);
  }
  [[noreturn]] void type_mismatch(DType requested) const;
  [[noreturn]] std::int64_t size_out_of_range(std::int64_t axis) const;
  std::int64_t flat_index(std::initializer_list<std::int64_t> index) const;
  // A view whose element count the caller knows (a part of a checked shape): no recount.
  struct KnownCount {};
  Tensor(KnownCount, const StoragePtr& storage, std::int64_t offset, std::int64_t numel, Shape shape, DType dtype)
      : storage_(storage), offset_(offset), numel_(numel), shape_(std::move(shape)), dtype_(dtype) {}

  StoragePtr storage_;
  std::int64_t offset_ = 0;  // in elements
  std::int64_t numel_ = 0;
  Shape shape_;
  DType dtype_ = DType::float32;
};

// Prints dtype, shape and values NumPy-style: nested brackets, one number format for all
// elements, "..." in place of the middle of each axis when there are more than 1000
// elements (core/print.cpp).
std::ostream& operator<<(std::ostream& o, const Tensor& t);

namespace detail {
// Values read on the host with item() or at(), counted per thread: a loop that captures its step
// (ops/scan/step_program_detail.hpp) does not capture a step that reads one.
inline thread_local std::uint64_t item_reads = 0;
}  // namespace detail

template <class T>
T Tensor::at(std::initializer_list<std::int64_t> index) const {
  ++detail::item_reads;
  const std::int64_t i = flat_index(index);
  return dispatch(dtype_, [&]<class E>() { return element_cast<T>(static_cast<const E*>(raw_data())[i], "at"); });
}

template <class T>
T Tensor::item() const {
  ++detail::item_reads;
  if (numel_ != 1)
    fail<ShapeError>("item", "expects a tensor of one element, got shape ", to_string(shape_));
  return dispatch(dtype_, [&]<class E>() { return element_cast<T>(*static_cast<const E*>(raw_data()), "item"); });
}

}  // namespace recur
