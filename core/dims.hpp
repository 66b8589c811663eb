#pragma once
// Dims: the list of int64 that Shape and Axes are. Most tensors have rank <= 4, so four
// sizes live inside the object and larger ranks spill to the heap. A tensor is copied and
// moved many times per op (into a node, a view, a gradient), so copying an inline list is
// a fixed-size copy the compiler inlines, not a call to memmove with a length it must test
// (boost's small_vector did that: about a tenth of a small training step).
#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <new>
#include <type_traits>

namespace recur {

class Dims {
 public:
  using value_type = std::int64_t;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = std::int64_t&;
  using const_reference = const std::int64_t&;
  using pointer = std::int64_t*;
  using const_pointer = const std::int64_t*;
  using iterator = std::int64_t*;
  using const_iterator = const std::int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  static constexpr size_type kInline = 4;

  Dims() noexcept = default;
  Dims(std::initializer_list<std::int64_t> values) { assign(values.begin(), values.end()); }
  explicit Dims(size_type n, std::int64_t value = 0) { assign(n, value); }
  template <std::input_iterator It>
  Dims(It first, It last) {
    assign(first, last);
  }
  Dims(const Dims& other) { copy_from(other); }
  Dims(Dims&& other) noexcept { take(other); }
  Dims& operator=(const Dims& other) {
    if (this != &other) {
      size_ = 0;
      copy_from(other);
    }
    return *this;
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  Dims& operator=(std::initializer_list<std::int64_t> values) {
    assign(values.begin(), values.end());
    return *this;
  }
  ~Dims() { release(); }

  std::int64_t* data() noexcept { return heap_ ? heap_ : inline_; }
  const std::int64_t* data() const noexcept { return heap_ ? heap_ : inline_; }
  size_type size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_type capacity() const noexcept { return heap_ ? capacity_ : kInline; }

  std::int64_t& operator[](size_type i) noexcept { return data()[i]; }
  const std::int64_t& operator[](size_type i) const noexcept { return data()[i]; }
  std::int64_t& front() noexcept { return data()[0]; }
  const std::int64_t& front() const noexcept { return data()[0]; }
  std::int64_t& back() noexcept { return data()[size_ - 1]; }
  const std::int64_t& back() const noexcept { return data()[size_ - 1]; }

  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  void reserve(size_type n) {
    if (n > capacity()) grow_to(n);
  }
  void clear() noexcept { size_ = 0; }
  void push_back(std::int64_t value) {
    if (size_ == capacity()) grow_to(2 * size_);
    data()[size_++] = value;
  }
  std::int64_t& emplace_back(std::int64_t value) {
    push_back(value);
    return back();
  }
  void pop_back() noexcept { --size_; }
  void resize(size_type n, std::int64_t value = 0) {
    reserve(n);
    if (n > size_) std::fill(data() + size_, data() + n, value);
    size_ = static_cast<std::uint32_t>(n);
  }
  void assign(size_type n, std::int64_t value) {
    size_ = 0;
    resize(n, value);
  }
  // The range may be part of this list (a shape's tail assigned to itself): it then starts at
  // or after data(), and copying front to back moves it down safely.
  template <std::input_iterator It>
  void assign(It first, It last) {
    if constexpr (std::forward_iterator<It>) {
      const auto n = static_cast<size_type>(std::distance(first, last));
      if (n > capacity()) {  // more than this list holds, so no part of it: built apart, then moved in
        Dims fresh;
        fresh.grow_to(n);
        std::copy(first, last, fresh.data());
        fresh.size_ = static_cast<std::uint32_t>(n);
        *this = std::move(fresh);
        return;
      }
      if constexpr (std::contiguous_iterator<It> && std::is_same_v<std::iter_value_t<It>, std::int64_t>) {
        if (n <= kInline) {
          copy_few(std::to_address(first), n, data());
          size_ = static_cast<std::uint32_t>(n);
          return;
        }
      }
      std::copy(first, last, data());
      size_ = static_cast<std::uint32_t>(n);
    } else {
      size_ = 0;
      for (; first != last; ++first) push_back(*first);
    }
  }
  void assign(std::initializer_list<std::int64_t> values) { assign(values.begin(), values.end()); }

  iterator insert(const_iterator pos, std::int64_t value) { return insert(pos, size_type{1}, value); }
  iterator insert(const_iterator pos, size_type n, std::int64_t value) {
    const auto at = static_cast<size_type>(pos - begin());
    open_gap(at, n);
    std::fill(data() + at, data() + at + n, value);
    return data() + at;
  }
  template <std::input_iterator It>
  iterator insert(const_iterator pos, It first, It last) {
    const auto at = static_cast<size_type>(pos - begin());
    const Dims values(first, last);  // a copy first: the range may be part of this list
    open_gap(at, values.size());
    std::copy(values.begin(), values.end(), data() + at);
    return data() + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<std::int64_t> values) {
    return insert(pos, values.begin(), values.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const auto at = static_cast<size_type>(first - begin());
    const auto n = static_cast<size_type>(last - first);
    std::copy(data() + at + n, end(), data() + at);
    size_ -= static_cast<std::uint32_t>(n);
    return data() + at;
  }

  friend bool operator==(const Dims& a, const Dims& b) noexcept {
    if (a.size_ != b.size_) return false;
    const std::int64_t *x = a.data(), *y = b.data();
    for (std::uint32_t i = 0; i < a.size_; ++i)  // a few sizes: no call to memcmp
      if (x[i] != y[i]) return false;
    return true;
  }
  friend std::strong_ordering operator<=>(const Dims& a, const Dims& b) noexcept {
    return std::lexicographical_compare_three_way(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // n <= kInline sizes, first to last (so a range of this list may move down onto itself),
  // without a call to memmove with a length it would test.
  static void copy_few(const std::int64_t* from, size_type n, std::int64_t* to) noexcept {
    if (n > 0) to[0] = from[0];
    if (n > 1) to[1] = from[1];
    if (n > 2) to[2] = from[2];
    if (n > 3) to[3] = from[3];
  }
  // An inline list is copied whole (a fixed size: no length to test); only its first size_ count.
  // (Another object: memcpy, which the compiler inlines, where copy_n would call memmove.)
  void copy_from(const Dims& other) {
    if (!other.heap_ && !heap_) {
      std::memcpy(inline_, other.inline_, sizeof inline_);
      size_ = other.size_;
      return;
    }
    reserve(other.size_);
    std::copy(other.begin(), other.end(), data());
    size_ = other.size_;
  }
  void take(Dims& other) noexcept {
    if (other.heap_) {
      heap_ = other.heap_;
      capacity_ = other.capacity_;
      other.heap_ = nullptr;
      other.capacity_ = 0;
    } else {
      std::memcpy(inline_, other.inline_, sizeof inline_);
    }
    size_ = other.size_;
    other.size_ = 0;
  }
  void release() noexcept {
    delete[] heap_;
    heap_ = nullptr;
    capacity_ = 0;
  }
  void grow_to(size_type n) {
    n = std::max(n, kInline + 1);
    auto* bigger = new std::int64_t[n];
    std::copy(begin(), end(), bigger);
    delete[] heap_;
    heap_ = bigger;
    capacity_ = static_cast<std::uint32_t>(n);
  }
  // Makes n elements' room at `at`, moving the later ones up.
  void open_gap(size_type at, size_type n) {
    reserve(size_ + n);
    std::copy_backward(data() + at, end(), end() + n);
    size_ += static_cast<std::uint32_t>(n);
  }

  std::int64_t inline_[kInline] = {};
  std::int64_t* heap_ = nullptr;
  std::uint32_t size_ = 0, capacity_ = 0;  // capacity_: of heap_ (while there is one)
};

}  // namespace recur
