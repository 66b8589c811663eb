#include <recur/core/tensor.hpp>

#include <new>

namespace recur {
namespace {
// Elements in one row along axis 0 (none when that axis is empty: its rows hold nothing).
std::int64_t row_elements(const Tensor& t) {
  const std::int64_t n = t.shape()[0];
  return n == 0 ? 0 : t.numel() / n;
}
}  // namespace

Tensor::Tensor(StoragePtr storage, std::int64_t offset, Shape shape, DType dtype)
    : storage_(std::move(storage)), offset_(offset), numel_(recur::numel(shape)),
      shape_(std::move(shape)), dtype_(dtype) {}

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  Tensor t;
  t.numel_ = recur::numel(shape, "empty");  // ShapeError for a negative size or sizes past int64, zeros or not
  std::int64_t bytes = 0;
  if (__builtin_mul_overflow(t.numel_, static_cast<std::int64_t>(size_of(dtype)), &bytes))
    fail<ShapeError>("empty", "shape ", to_string(shape), " of ", dtype, " has more bytes than memory can address");
  try {
    t.storage_ = Storage::allocate(static_cast<std::size_t>(bytes));
  } catch (const std::bad_alloc&) {
    fail<MemoryError>("empty", "cannot allocate ", bytes, " bytes (", static_cast<double>(bytes) / (1 << 30),
                      " GiB) for a tensor of shape ", to_string(shape), " of ", dtype);
  }
  t.shape_ = shape;
  t.dtype_ = dtype;
  return t;
}

std::int64_t Tensor::size_out_of_range(std::int64_t axis) const {
  normalize_axis("size", axis, shape_);  // throws AxisError naming the axis and the shape
  fail<AxisError>("size", "axis ", axis, " is out of range for shape ", to_string(shape_));
}

void Tensor::type_mismatch(DType requested) const {
  if (!defined()) fail<ValueError>("data", "the tensor is undefined (default-constructed)");
  fail<DTypeError>("data", "requested ", requested, " elements of a ", dtype_, " tensor of shape ",
                     to_string(shape_));
}

std::int64_t Tensor::flat_index(std::initializer_list<std::int64_t> index) const {
  if (static_cast<std::int64_t>(index.size()) != rank())
    fail<IndexError>("at", index.size(), " indices given for a tensor of shape ", to_string(shape_));
  std::int64_t flat = 0, axis = 0;
  for (auto i : index) {
    const std::int64_t n = shape_[axis];
    if (i < -n || i >= n)
      fail<IndexError>("at", "index ", i, " is out of range for axis ", axis, " of shape ",
                       to_string(shape_));
    flat = flat * n + (i < 0 ? i + n : i);
    ++axis;
  }
  return flat;
}

Tensor Tensor::clone() const {
  if (!defined()) fail<ValueError>("clone", "the tensor is undefined (default-constructed)");
  Tensor out = empty(shape_, dtype_);
  if (numel_) std::memcpy(out.raw_data(), raw_data(), nbytes());
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (!defined()) fail<ValueError>("to", "the tensor is undefined (default-constructed)");
  if (dtype == dtype_) return *this;
  Tensor out = empty(shape_, dtype);
  dispatch(dtype_, [&]<class S>() {
    dispatch(dtype, [&]<class D>() {
      const S* src = static_cast<const S*>(raw_data());
      D* dst = static_cast<D*>(out.raw_data());
      for (std::int64_t i = 0; i < numel_; ++i) dst[i] = element_cast<D>(src[i], "to");
    });
  });
  return out;
}

Tensor Tensor::view(const Shape& shape) const {
  if (recur::numel(shape) != numel_)
    fail<ShapeError>("view", "cannot view a tensor of shape ", to_string(shape_), " as shape ",
                     to_string(shape));
  return Tensor(KnownCount{}, storage_, offset_, numel_, shape, dtype_);
}

Tensor Tensor::operator[](std::int64_t index) const {
  if (rank() == 0) fail<IndexError>("index", "cannot index a 0-d tensor");
  const std::int64_t n = shape_[0];
  if (index < -n || index >= n)
    fail<IndexError>("index", "index ", index, " is out of range for axis 0 of shape ",
                     to_string(shape_));
  if (index < 0) index += n;
  const std::int64_t row = row_elements(*this);
  return Tensor(KnownCount{}, storage_, offset_ + index * row, row, Shape(shape_.begin() + 1, shape_.end()), dtype_);
}

Tensor Tensor::rows(std::int64_t start, std::int64_t stop) const {
  if (rank() == 0 || start < 0 || stop < start || stop > shape_[0])
    fail<IndexError>("rows", "rows [", start, ", ", stop, ") are out of range for shape ", to_string(shape_));
  Shape out = shape_;
  out[0] = stop - start;
  const std::int64_t row = row_elements(*this);
  return Tensor(KnownCount{}, storage_, offset_ + start * row, row * (stop - start), std::move(out), dtype_);
}

}  // namespace recur
