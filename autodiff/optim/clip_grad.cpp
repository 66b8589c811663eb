#include <recur/autodiff/optim/clip_grad.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include <recur/autodiff/optim/check_argument.hpp>
#include <recur/autodiff/optim/for_each_element.hpp>

namespace recur::optim {
namespace {

std::vector<Shared> handles(const NamedShared& named) {
  std::vector<Shared> out;
  out.reserve(named.size());
  for (const auto& [name, p] : named) out.push_back(p);
  return out;
}

// combine(... combine(init, term(x[0])) ..., term(x[n-1])) in eight interleaved partial
// results, so that consecutive additions do not wait on each other.
template <class T, class Term, class Combine>
double reduce(const T* x, std::int64_t n, Term term, Combine combine) {
  constexpr int kWays = 8;
  double part[kWays] = {};
  std::int64_t i = 0;
  for (; i + kWays <= n; i += kWays)
    for (int k = 0; k < kWays; ++k) part[k] = combine(part[k], term(x[i + k]));
  for (; i < n; ++i) part[0] = combine(part[0], term(x[i]));
  double out = part[0];
  for (int k = 1; k < kWays; ++k) out = combine(out, part[k]);
  return out;
}

// The p-norm of all gradients together; the largest magnitude when p is infinite. NaN
// propagates (as torch.max does). `first_nonfinite` gets the index of the first parameter
// whose gradient makes the norm infinite or NaN (parameters.size() when none does).
double gradient_norm(const std::vector<Shared>& parameters, double p, std::size_t& first_nonfinite) {
  const auto add = [](double a, double b) { return a + b; };
  // NaN sticks: once a is NaN, b > a is false and a stays; a NaN b compares unequal to itself.
  const auto larger = [](double a, double b) { return ((b > a) | (b != b)) ? b : a; };
  double acc = 0;
  first_nonfinite = parameters.size();
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const Shared& s = parameters[i];
    if (!s.has_grad()) continue;
    const Tensor g = s.grad();
    acc = dispatch_floating("clip_grad_norm", g.dtype(), [&]<class T>() {
      const T* x = g.data<T>();
      const auto magnitude = [](T v) { return std::fabs(static_cast<double>(v)); };
      if (std::isinf(p)) return larger(acc, reduce(x, g.numel(), magnitude, larger));
      if (p == 2) return acc + reduce(x, g.numel(), [](T v) { return static_cast<double>(v) * v; }, add);
      return acc + reduce(x, g.numel(), [&](T v) { return std::pow(magnitude(v), p); }, add);
    });
    if (first_nonfinite == parameters.size() && !std::isfinite(acc)) first_nonfinite = i;
  }
  if (std::isinf(p)) return acc;
  return p == 2 ? std::sqrt(acc) : std::pow(acc, 1 / p);
}

// Applies f to every gradient element in place.
template <class F>
void update_gradients(const std::vector<Shared>& parameters, F f) {
  for (Shared s : parameters)
    s.update_grad([&](Tensor& g) { detail::for_each_element("clip_grad", f, g); });
}

// clip_grad_norm on `parameters`, called `names` in messages.
double clip_norm(const std::vector<Shared>& parameters, const std::vector<std::string>& names, double max_norm,
                 double norm_type, bool error_if_nonfinite) {
  check_argument("clip_grad_norm", "max_norm", max_norm >= 0, ">= 0", max_norm);
  check_argument("clip_grad_norm", "norm_type", norm_type > 0, "> 0 (or infinity)", norm_type);
  std::size_t culprit = 0;
  const double norm = gradient_norm(parameters, norm_type, culprit);
  // A non-finite norm has no meaningful scale: PyTorch's max_norm / inf = 0 would zero the
  // finite entries and make the infinite ones NaN. The gradients stay as they are.
  if (!std::isfinite(norm)) {
    if (error_if_nonfinite)
      fail<ValueError>("clip_grad_norm", "the total norm of order ", norm_type, " of the gradients is ", norm,
                       ", first from parameter '", names[culprit], "' of shape ",
                       to_string(parameters[culprit].shape()),
                       " (error_if_nonfinite); the gradients are left unchanged");
    return norm;
  }
  const double coef = max_norm / (norm + 1e-6);
  // PyTorch multiplies by min(coef, 1) always; by 1 changes nothing.
  if (coef < 1)
    update_gradients(parameters, [coef](auto& x) { x *= static_cast<std::remove_cvref_t<decltype(x)>>(coef); });
  return norm;
}

}  // namespace

double clip_grad_norm(const std::vector<Shared>& parameters, double max_norm, double norm_type,
                      bool error_if_nonfinite) {
  std::vector<std::string> names;
  for (const Shared& s : parameters) names.push_back(s.defined() ? s.name() : "");
  return clip_norm(parameters, names, max_norm, norm_type, error_if_nonfinite);
}

double clip_grad_norm(const NamedShared& parameters, double max_norm, double norm_type, bool error_if_nonfinite) {
  std::vector<std::string> names;
  for (const auto& [name, s] : parameters) names.push_back(name);
  return clip_norm(handles(parameters), names, max_norm, norm_type, error_if_nonfinite);
}

void clip_grad_value(const std::vector<Shared>& parameters, double clip) {
  check_argument("clip_grad_value", "clip", clip >= 0, ">= 0", clip);
  update_gradients(parameters, [clip](auto& x) {
    using T = std::remove_cvref_t<decltype(x)>;
    x = std::clamp(x, T(-clip), T(clip));
  });
}

void clip_grad_value(const NamedShared& parameters, double clip) { clip_grad_value(handles(parameters), clip); }

}  // namespace recur::optim
