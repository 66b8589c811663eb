#pragma once
// Moving arrays between recur::Tensor and xtensor (element types float, double, int64_t).
//   from_xarray(xarray&&)     adopts the xarray's buffer: no copy, the Tensor owns it now.
//   from_xarray(const xarray&) copies.
//   as_xarray<T>(tensor)      a read-only xtensor view that ALIASES the tensor's buffer (no
//                             copy); it holds a reference to the buffer, so it stays valid
//                             after the tensor is gone.
//   to_xarray<T>(tensor)      copies into a new xarray, converting the element type.
#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include <xtensor/xadapt.hpp>
#include <xtensor/xarray.hpp>

#include <recur/core/tensor.hpp>

namespace recur {

namespace detail {
template <class T>
void delete_xarray(void* a) {
  delete static_cast<xt::xarray<T>*>(a);
}
// recur tensors are row-major and contiguous; so is an xarray with the default layout.
template <class T>
inline constexpr bool row_major_xarray = xt::xarray<T>::static_layout == xt::layout_type::row_major;
}  // namespace detail

template <class T>
Tensor from_xarray(xt::xarray<T>&& a) {
  static_assert(detail::row_major_xarray<T>, "recur needs row-major xarrays (XTENSOR_DEFAULT_LAYOUT)");
  Shape shape(a.shape().begin(), a.shape().end());
  if (a.size() == 0) return Tensor::empty(shape, dtype_of<T>());
  // The moved-to xarray keeps the buffer; the Storage deletes it with the last reference.
  auto holder = std::make_unique<xt::xarray<T>>(std::move(a));
  StoragePtr storage = Storage::adopt(holder->data(), holder->size() * sizeof(T), holder.get(), &detail::delete_xarray<T>);
  holder.release();
  return Tensor(std::move(storage), 0, std::move(shape), dtype_of<T>());
}

template <class T>
Tensor from_xarray(const xt::xarray<T>& a) {
  static_assert(detail::row_major_xarray<T>, "recur needs row-major xarrays (XTENSOR_DEFAULT_LAYOUT)");
  Tensor t = Tensor::empty(Shape(a.shape().begin(), a.shape().end()), dtype_of<T>());
  std::copy(a.data(), a.data() + a.size(), t.data<T>());
  return t;
}

// Throws DTypeError when T is not the tensor's element type. Writing through the view is
// not possible (const elements): other tensors may share the buffer.
template <class T>
auto as_xarray(const Tensor& t) {
  const T* data = t.data<T>();
  std::vector<std::size_t> shape(t.shape().begin(), t.shape().end());
  // xtensor's smart-pointer adaptor takes a shared_ptr; this one's deleter holds a
  // reference to the tensor's storage and drops it when the last copy of the view goes.
  std::shared_ptr<const Storage> keep(t.storage().get(), [s = t.storage()](const Storage*) {});
  return xt::adapt_smart_ptr(std::move(data), shape, std::move(keep));
}

template <class T>
xt::xarray<T> to_xarray(const Tensor& t) {
  if (!t.defined()) fail<ValueError>("to_xarray", "argument 't' is undefined (default-constructed)");
  const Tensor c = t.to(dtype_of<T>());
  std::vector<std::size_t> shape(c.shape().begin(), c.shape().end());
  xt::xarray<T> out = xt::xarray<T>::from_shape(shape);
  std::copy(c.data<T>(), c.data<T>() + c.numel(), out.data());
  return out;
}

}  // namespace recur
