// slice and index, and the scatter that is the gradient of both. take and gather are in
// take.cpp.
#include <recur/ops/indexing.hpp>

#include <recur/ops/indexing_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur {
namespace {

using detail::AxisBlocks;

// A NumPy slice resolved against an axis of size n: positions start + j * step for
// j < count, with 0 <= start <= stop <= n (so slicing again with them selects the same).
struct SliceRange {
  std::int64_t start, stop, step, count;
  std::int64_t operator()(std::int64_t j) const { return start + j * step; }
};

SliceRange resolve(const Shape& shape, std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step) {
  if (step < 1)
    fail<ValueError>("slice", "argument 'step' = ", step, " must be >= 1 (argument 'x' of shape ", to_string(shape),
                     ", axis ", axis, ")");
  const std::int64_t n = shape[axis];
  // Python's clamping: negative bounds count from the back, then everything lands in [0, n].
  auto clamp = [n](std::int64_t v) { return std::clamp<std::int64_t>(v < 0 ? v + n : v, 0, n); };
  SliceRange r{clamp(start), 0, step, 0};
  r.stop = std::max(clamp(stop), r.start);
  r.count = r.stop == r.start ? 0 : 1 + (r.stop - r.start - 1) / step;  // no overflow for a huge step
  return r;
}

// The gradient of slice (and of index): g placed at the sliced positions of zeros whose
// axis has size n. Its own gradient is slice again.
struct SliceScatter {
  static constexpr std::string_view name = "slice_backward";
  std::int64_t axis, n;  // axis is normalized
  SliceRange range;
  OpAttributes attributes() const {
    return {{"axis", axis}, {"size", n}, {"start", range.start}, {"stop", range.stop}, {"step", range.step}};
  }
  Tensor forward(const Tensor& g) const {
    Shape out = g.shape();
    out[axis] = n;
    return detail::scatter_add_rows(g, AxisBlocks(out, axis), range.count, out, range);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {slice(a.grad, axis, range.start, range.stop, range.step)};
  }
};

struct Slice {
  static constexpr std::string_view name = "slice";
  std::int64_t axis, start, stop, step;
  OpAttributes attributes() const { return {{"axis", axis}, {"start", start}, {"stop", stop}, {"step", step}}; }
  Tensor forward(const Tensor& x) const {
    const std::int64_t ax = normalize_axis(name, axis, x.shape());
    const SliceRange r = resolve(x.shape(), ax, start, stop, step);
    if (ax == 0 && r.step == 1) return x.rows(r.start, r.stop);  // a view: TBPTT windows, outputs
    Shape out = x.shape();
    out[ax] = r.count;
    return detail::select_rows(x, AxisBlocks(x.shape(), ax), r.count, out, r);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const Shape& in = a.inputs[0].shape();
    const std::int64_t ax = normalize_axis(name, axis, in);
    const SliceRange r = resolve(in, ax, start, stop, step);
    auto scatter = [&](Tensor& acc, bool fresh = false) {
      detail::scatter_add_rows_into(acc, value_of(a.grad), AxisBlocks(in, ax), r.count, r, fresh);
    };
    // A window of steps (rows of axis 0) writes its rows of a gradient no other window wrote.
    if (ax == 0 && r.step == 1 ? add_rows_in_place(a, 0, r.start, r.start + r.count, scatter) : add_in_place(a, 0, scatter))
      return {V()};
    return {apply_op(SliceScatter{ax, in[ax], r}, a.grad)};
  }
};

struct Index {
  static constexpr std::string_view name = "index";
  std::int64_t axis, i;
  OpAttributes attributes() const { return {{"axis", axis}, {"index", i}}; }
  bool backward_reads(std::size_t) const { return false; }  // the gradient goes to a position: shapes only
  Tensor forward(const Tensor& x) const {
    const std::int64_t ax = normalize_axis(name, axis, x.shape());
    const std::int64_t k = detail::checked_index(name, i, x.shape(), ax);
    if (ax == 0) return x[k];  // scan's x[t]: a view, no copy
    Shape out = x.shape();
    out.erase(out.begin() + ax);
    const AxisBlocks b(x.shape(), ax);
    if (b.outer == 1) return x.view({b.n, b.inner})[k].view(out);  // leading size-1 axes: still a view
    return detail::select_rows(x, b, 1, out, [k](std::int64_t) { return k; });
  }
  // The gradient, given back its axis of size 1, is a one-position slice's gradient.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    Shape kept = a.inputs[0].shape();
    const std::int64_t ax = normalize_axis(name, axis, kept);
    const std::int64_t n = kept[ax];
    const std::int64_t k = detail::wrap_index(i, n);
    auto scatter = [&](Tensor& acc, bool fresh = false) {
      detail::scatter_add_rows_into(acc, value_of(a.grad), AxisBlocks(acc.shape(), ax), 1,
                                    [k](std::int64_t) { return k; }, fresh);
    };
    // x[t] of a loop's sequence: each step writes its own row of the gradient.
    if (ax == 0 ? add_rows_in_place(a, 0, k, k + 1, scatter) : add_in_place(a, 0, scatter)) return {V()};
    kept[ax] = 1;
    return {apply_op(SliceScatter{ax, n, SliceRange{k, k + 1, 1, 1}}, reshape(a.grad, kept))};
  }
};

}  // namespace

Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step) {
  return Slice{axis, start, stop, step}.forward(x);
}
Var slice(const Var& x, std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step) {
  return record(Slice{axis, start, stop, step}, x);
}
detail::OpBox detail::slice_op(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step) {
  return OpBox::make<1>(Slice{axis, start, stop, step});
}
Tensor index(const Tensor& x, std::int64_t axis, std::int64_t i) { return Index{axis, i}.forward(x); }
Var index(const Var& x, std::int64_t axis, std::int64_t i) { return record(Index{axis, i}, x); }

}  // namespace recur
