#include <recur/ops/scan/associative.hpp>

#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/shape.hpp>

namespace recur::associative_detail {
namespace {

constexpr std::string_view op_name = "associative_scan";

// The leaves, each with its own normalized axis; all have the same length along it.
struct Leaves {
  std::vector<Var> vars;
  std::vector<std::int64_t> axes;
  std::int64_t length() const { return vars.front().value().size(axes.front()); }
};

Leaves sliced(const Leaves& in, std::int64_t start, std::int64_t stop, std::int64_t step = 1) {
  Leaves out{{}, in.axes};
  for (std::size_t k = 0; k < in.vars.size(); ++k) out.vars.push_back(slice(in.vars[k], in.axes[k], start, stop, step));
  return out;
}

// fn on two equally long Leaves, its result checked against the arguments' structure and shapes.
Leaves combine(const FlatFn& fn, const Leaves& x, const Leaves& y, std::span<const std::string> paths) {
  Leaves out{fn(x.vars, y.vars), x.axes};
  if (out.vars.size() != x.vars.size())
    fail<ShapeError>(op_name, "argument 'fn' returned ", out.vars.size(), " leaves; elems has ", x.vars.size());
  for (std::size_t k = 0; k < out.vars.size(); ++k) {
    if (!out.vars[k].defined())
      fail<ValueError>(op_name, "argument 'fn' returned an undefined Var for ", paths[k]);
    if (out.vars[k].value().shape() != x.vars[k].value().shape())
      fail<ShapeError>(op_name, "argument 'fn' returned shape ", to_string(out.vars[k].value().shape()), " for ", paths[k],
                       "; its arguments there have shape ", to_string(x.vars[k].value().shape()),
                       " (fn must combine elementwise along the axis)");
  }
  return out;
}

// Alternates the slices of `even` and `odd` along the axis: e0 o0 e1 o1 ... ; even has as
// many slices as odd or one more.
Leaves interleave(const Leaves& even, const Leaves& odd) {
  const std::int64_t pairs = odd.length();
  const bool extra = even.length() > pairs;
  Leaves out{{}, even.axes};
  for (std::size_t k = 0; k < even.vars.size(); ++k) {
    const std::int64_t ax = even.axes[k];
    const Var e = extra ? slice(even.vars[k], ax, 0, pairs) : even.vars[k];
    Shape merged = e.value().shape();
    merged[static_cast<std::size_t>(ax)] = 2 * pairs;
    Var both = reshape(stack({e, odd.vars[k]}, ax + 1), merged);
    if (extra) both = concat({both, slice(even.vars[k], ax, pairs, pairs + 1)}, ax);
    out.vars.push_back(both);
  }
  return out;
}

// The odd-even recursion: combine neighbouring pairs, scan the pairs (half as long), which
// gives every odd position; each even position is the odd one before it combined with
// its own element.
Leaves prefix(const FlatFn& fn, const Leaves& x, std::span<const std::string> paths) {
  const std::int64_t n = x.length();
  if (n < 2) return x;
  const Leaves odd = prefix(fn, combine(fn, sliced(x, 0, n - 1, 2), sliced(x, 1, n, 2), paths), paths);
  // Even positions 2, 4, ... (ceil(n/2) - 1 of them) follow odd positions 1, 3, ...
  const std::int64_t later_evens = (n + 1) / 2 - 1;
  Leaves even = sliced(x, 0, 1);
  if (later_evens > 0) {
    const Leaves rest = combine(fn, sliced(odd, 0, later_evens), sliced(x, 2, n, 2), paths);
    for (std::size_t k = 0; k < even.vars.size(); ++k)
      even.vars[k] = concat({even.vars[k], rest.vars[k]}, even.axes[k]);
  }
  return interleave(even, odd);
}

Leaves flipped(const Leaves& x) {
  const std::int64_t n = x.length();
  const Tensor backwards = arange(static_cast<double>(n - 1), -1.0, -1.0, DType::int64);
  Leaves out{{}, x.axes};
  for (std::size_t k = 0; k < x.vars.size(); ++k) out.vars.push_back(take(x.vars[k], backwards, x.axes[k]));
  return out;
}

Leaves checked_leaves(std::span<const Var> elems, std::span<const std::string> paths, std::int64_t axis) {
  if (elems.empty()) fail<ValueError>(op_name, "argument 'elems' has no leaves");
  Leaves out{{elems.begin(), elems.end()}, {}};
  for (std::size_t k = 0; k < elems.size(); ++k) {
    if (!elems[k].defined()) fail<ValueError>(op_name, "argument 'elems': ", paths[k], " is an undefined Var");
    const Shape& s = elems[k].value().shape();
    out.axes.push_back(normalize_axis(op_name, axis, s, "axis"));
    const std::int64_t n = s[static_cast<std::size_t>(out.axes.back())];
    if (n != out.length())
      fail<ShapeError>(op_name, "argument 'elems': ", paths[k], " has length ", n, " along axis ", axis, " (shape ", to_string(s),
                       ") but ", paths[0], " has ", out.length(), " (shape ", to_string(elems[0].value().shape()), ")");
  }
  return out;
}

}  // namespace

std::vector<Var> associative_scan(const FlatFn& fn, std::span<const Var> elems, std::span<const std::string> paths,
                                  const AssociativeScanOptions& options) {
  const Leaves x = checked_leaves(elems, paths, options.axis);
  return transactional(elems.front().tape(), [&] {
    if (!options.reverse) return prefix(fn, x, paths).vars;
    return flipped(prefix(fn, flipped(x), paths)).vars;
  });
}

}  // namespace recur::associative_detail

namespace recur {

std::vector<Var> associative_scan(const associative_detail::FlatFn& fn, std::span<const Var> elems,
                                  const AssociativeScanOptions& options) {
  std::vector<std::string> paths;
  for (std::size_t k = 0; k < elems.size(); ++k) paths.push_back("elems[" + std::to_string(k) + "]");
  return associative_detail::associative_scan(fn, elems, paths, options);
}

}  // namespace recur
