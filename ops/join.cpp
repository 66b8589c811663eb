// concat and stack share one copy (joined); stack is one node, not an unsqueeze per input
// and a concat (a scan stacks every step's output with it). split's pieces are slices.
#include <recur/ops/join.hpp>

#include <recur/core/small_vector.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/indexing_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur {
namespace {

// Checks that xs can be joined: a non-empty list of one dtype, whose shapes agree on every
// axis but `axis` (concat) or on all axes (stack, whose new axis may also be rank).
// Returns the axis normalized.
template <class V>
std::int64_t check_joinable(std::string_view op, std::span<const V> xs, std::int64_t axis, bool new_axis) {
  if (xs.empty()) fail<ValueError>(op, "argument 'xs' is an empty list: there is nothing to join");
  const Shape& first = xs[0].shape();
  const std::int64_t ax = normalize_axis(op, axis, first, "axis", new_axis ? 1 : 0);
  for (std::size_t k = 1; k < xs.size(); ++k) {
    const Shape& s = xs[k].shape();
    if (xs[k].dtype() != xs[0].dtype())
      fail<DTypeError>(op, "input ", k, " of shape ", to_string(s), " has dtype ", xs[k].dtype(),
                       " but input 0 of shape ", to_string(first), " has dtype ", xs[0].dtype());
    bool same = s.size() == first.size();
    for (std::size_t d = 0; same && d < s.size(); ++d)
      same = s[d] == first[d] || (!new_axis && static_cast<std::int64_t>(d) == ax);
    if (!same) {
      if (new_axis)
        fail<ShapeError>(op, "input ", k, " of shape ", to_string(s), " differs from input 0 of shape ",
                         to_string(first), ": stacked tensors must have one shape");
      fail<ShapeError>(op, "input ", k, " of shape ", to_string(s), " does not match input 0 of shape ",
                       to_string(first), " on the axes other than axis ", ax);
    }
  }
  return ax;
}

// The inputs as one tensor of shape `out` without a copy, when they already lie one after
// the other in one buffer and the axis is outermost (a loop that wrote its steps' values
// into the rows of its stacked result); undefined otherwise.
Tensor joined_in_place(std::span<const Tensor> xs, const Shape& out, const detail::AxisBlocks& b) {
  if (b.outer != 1 || !xs[0].storage()) return {};
  for (std::size_t k = 1; k < xs.size(); ++k)
    if (xs[k].storage() != xs[0].storage() ||
        xs[k].raw_data() != static_cast<const char*>(xs[k - 1].raw_data()) + xs[k - 1].nbytes())
      return {};
  const auto start = static_cast<const char*>(xs[0].raw_data()) - static_cast<const char*>(xs[0].storage()->data());
  return Tensor(xs[0].storage(), start / static_cast<std::ptrdiff_t>(size_of(xs[0].dtype())), out, xs[0].dtype());
}

// The inputs joined into one tensor of shape `out` along axis `ax` of it: each outer block
// of the output is every input's block one after the other (concat: its size along the
// axis times the inner size; stack: the inner size). `may_view`: a recorded op, whose
// inputs are never written after they are made, may return a view (joined_in_place).
Tensor joined(std::span<const Tensor> xs, const Shape& out, std::int64_t ax, bool may_view) {
  const detail::AxisBlocks b(out, ax);
  if (may_view)
    if (Tensor in_place = joined_in_place(xs, out, b); in_place.defined()) return in_place;
  Tensor y = Tensor::empty(out, xs[0].dtype());
  if (b.outer == 0) return y;
  dispatch(y.dtype(), [&]<class T>() {
    boost::container::small_vector<const T*, 8> src;
    for (const auto& x : xs) src.push_back(x.data<T>());
    T* dst = y.data<T>();
    for (std::int64_t o = 0; o < b.outer; ++o)
      for (std::size_t k = 0; k < xs.size(); ++k) {
        const std::int64_t row = xs[k].numel() / b.outer;
        dst = std::copy_n(src[k] + o * row, row, dst);
      }
  });
  return y;
}

struct Concat {
  static constexpr std::string_view name = "concat";
  std::int64_t axis;
  bool may_view = false;  // recorded: see joined
  OpAttributes attributes() const { return {{"axis", axis}}; }
  bool backward_reads(std::size_t) const { return false; }  // the gradient goes to positions: shapes only
  Tensor forward(std::span<const Tensor> xs) const {
    const std::int64_t ax = check_joinable(name, xs, axis, false);
    Shape out = xs[0].shape();
    out[ax] = 0;
    for (const auto& x : xs)
      if (__builtin_add_overflow(out[ax], x.shape()[ax], &out[ax]))
        fail<ShapeError>(name, "the inputs' sizes along axis ", ax, " add up past int64");
    return joined(xs, out, ax, may_view);
  }
  // Each input's gradient is its slice of the output's gradient.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const std::int64_t ax = normalize_axis(name, axis, a.grad.shape());
    Grads<V> g(a.inputs.size());
    std::int64_t offset = 0;
    for (std::size_t k = 0; k < a.inputs.size(); ++k) {
      const std::int64_t n = a.inputs[k].shape()[ax];
      if (a.needs_grad(k)) g[k] = slice(a.grad, ax, offset, offset + n);
      offset += n;
    }
    return g;
  }
};

// The inputs joined along a new axis `axis` of the output.
struct Stack {
  static constexpr std::string_view name = "stack";
  std::int64_t axis;
  bool may_view = false;  // recorded: see joined
  OpAttributes attributes() const { return {{"axis", axis}}; }
  bool backward_reads(std::size_t) const { return false; }  // the gradient goes to positions: shapes only
  Tensor forward(std::span<const Tensor> xs) const {
    const std::int64_t ax = check_joinable(name, xs, axis, true);
    Shape out = xs[0].shape();
    out.insert(out.begin() + ax, static_cast<std::int64_t>(xs.size()));
    return joined(xs, out, ax, may_view);
  }
  // Input k's gradient is position k of the output's gradient along the new axis (a view
  // when the axis is the first).
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const std::int64_t ax = normalize_axis(name, axis, a.grad.shape());
    Grads<V> g(a.inputs.size());
    for (std::size_t k = 0; k < a.inputs.size(); ++k)
      if (a.needs_grad(k)) g[k] = index(a.grad, ax, static_cast<std::int64_t>(k));
    return g;
  }
};

template <class V>
std::vector<V> split_of(const V& x, std::int64_t axis, std::span<const std::int64_t> sizes) {
  const std::int64_t ax = normalize_axis("split", axis, x.shape());
  std::int64_t total = 0;
  for (auto s : sizes) {
    if (s < 0)
      fail<ValueError>("split", "argument 'sizes' holds the negative size ", s, " (argument 'x' of shape ",
                       to_string(x.shape()), ")");
    // Stop adding once past the axis: the sum of huge sizes must not overflow.
    if (total <= x.shape()[ax]) total += std::min(s, x.shape()[ax] + 1);
  }
  if (total != x.shape()[ax])
    fail<ShapeError>("split", "argument 'sizes' adds up to ", total > x.shape()[ax] ? "more than the axis" : std::to_string(total), " but axis ", ax, " of argument 'x' of shape ",
                     to_string(x.shape()), " has size ", x.shape()[ax]);
  return transactional(x, [&] {
    std::vector<V> pieces;
    pieces.reserve(sizes.size());
    std::int64_t offset = 0;
    for (auto s : sizes) {
      pieces.push_back(slice(x, ax, offset, offset + s));
      offset += s;
    }
    return pieces;
  });
}

template <class V>
std::vector<V> split_equal(const V& x, std::int64_t axis, std::int64_t n_equal) {
  const std::int64_t ax = normalize_axis("split", axis, x.shape());
  const std::int64_t n = x.shape()[ax];
  if (n_equal < 1 || n % n_equal != 0)
    fail<ValueError>("split", "argument 'n_equal' = ", n_equal, " does not divide axis ", ax, " of size ", n,
                     " of argument 'x' of shape ", to_string(x.shape()), " into equal pieces");
  const std::vector<std::int64_t> sizes(static_cast<std::size_t>(n_equal), n / n_equal);
  return split_of(x, ax, sizes);
}

}  // namespace

Tensor concat(std::span<const Tensor> xs, std::int64_t axis) { return Concat{axis}.forward(xs); }
Var concat(std::span<const Var> xs, std::int64_t axis) {
  // record_list needs a tape, which an empty list has not: say what is wrong instead.
  if (xs.empty()) check_joinable(Concat::name, xs, axis, false);
  return record_list(Concat{axis, true}, xs);
}
Tensor concat(std::initializer_list<Tensor> xs, std::int64_t axis) { return concat(std::span(xs), axis); }
Var concat(std::initializer_list<Var> xs, std::int64_t axis) { return concat(std::span(xs), axis); }

Tensor stack(std::span<const Tensor> xs, std::int64_t axis) { return Stack{axis}.forward(xs); }
Var stack(std::span<const Var> xs, std::int64_t axis) {
  if (xs.empty()) check_joinable(Stack::name, xs, axis, true);  // as concat: no tape to record on
  return record_list(Stack{axis, true}, xs);
}
Tensor stack(std::initializer_list<Tensor> xs, std::int64_t axis) { return stack(std::span(xs), axis); }
Var stack(std::initializer_list<Var> xs, std::int64_t axis) { return stack(std::span(xs), axis); }

std::vector<Tensor> split(const Tensor& x, std::int64_t axis, std::span<const std::int64_t> sizes) {
  return split_of(x, axis, sizes);
}
std::vector<Var> split(const Var& x, std::int64_t axis, std::span<const std::int64_t> sizes) {
  return split_of(x, axis, sizes);
}
std::vector<Tensor> split(const Tensor& x, std::int64_t axis, std::initializer_list<std::int64_t> sizes) {
  return split_of(x, axis, std::span(sizes));
}
std::vector<Var> split(const Var& x, std::int64_t axis, std::initializer_list<std::int64_t> sizes) {
  return split_of(x, axis, std::span(sizes));
}
std::vector<Tensor> split(const Tensor& x, std::int64_t axis, std::int64_t n_equal) {
  return split_equal(x, axis, n_equal);
}
std::vector<Var> split(const Var& x, std::int64_t axis, std::int64_t n_equal) {
  return split_equal(x, axis, n_equal);
}

}  // namespace recur
