#include <recur/autodiff/gradcheck.hpp>

#include <cmath>
#include <random>
#include <sstream>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/tape.hpp>
#include <recur/core/creation.hpp>

namespace recur {
namespace {

Tensor random_like(const Tensor& t, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor out = Tensor::empty(t.shape(), DType::float64);
  for (std::int64_t i = 0; i < out.numel(); ++i) out.data<double>()[i] = u(rng);
  return out;
}

double dot(const Tensor& a, const Tensor& b) {
  const auto x = to_vector<double>(a), y = to_vector<double>(b);
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i) s += x[i] * y[i];
  return s;
}

std::vector<Var> leaves(Tape& tape, const std::vector<Tensor>& xs) {
  std::vector<Var> vars;
  for (const auto& x : xs) vars.push_back(tape.variable(x));
  return vars;
}

// <f(x), w>
double weighted_output(const GradCheckFn& f, const std::vector<Tensor>& xs, const Tensor& w) {
  NoGrad no_grad;
  Tape tape;
  std::vector<Var> vars;
  for (const auto& x : xs) vars.push_back(tape.constant(x));
  return dot(f(vars).value(), w);
}

// The analytic gradient of <f(x), w> with respect to every input.
std::vector<Tensor> analytic_gradient(const GradCheckFn& f, const std::vector<Tensor>& xs, const Tensor& w) {
  Tape tape;
  auto vars = leaves(tape, xs);
  const Var out = f(vars);
  std::vector<Tensor> gs;
  for (const auto& g : tape.grad(std::span<const Var>(&out, 1), vars, std::span<const Tensor>(&w, 1)))
    gs.push_back(g.value());
  return gs;
}

// <grad(x), v> summed over the inputs.
double gradient_along(const GradCheckFn& f, const std::vector<Tensor>& xs, const Tensor& w,
                      const std::vector<Tensor>& v) {
  const auto gs = analytic_gradient(f, xs, w);
  double s = 0;
  for (std::size_t k = 0; k < gs.size(); ++k) s += dot(gs[k], v[k]);
  return s;
}

// Central differences of `scalar` along each element of each input; compares with
// `analytic` and records the worst error and the first failure.
template <class Scalar>
void compare_with_differences(const std::vector<Tensor>& xs, const std::vector<Tensor>& analytic,
                              const GradCheckOptions& o, const char* order, Scalar scalar, double& max_error,
                              GradCheckReport& report) {
  for (std::size_t k = 0; k < xs.size(); ++k) {
    for (std::int64_t i = 0; i < xs[k].numel(); ++i) {
      std::vector<Tensor> plus = xs, minus = xs;
      plus[k] = xs[k].clone();
      minus[k] = xs[k].clone();
      plus[k].data<double>()[i] += o.eps;
      minus[k].data<double>()[i] -= o.eps;
      const double numeric = (scalar(plus) - scalar(minus)) / (2 * o.eps);
      const double a = analytic[k].data<double>()[i];
      const double err = std::abs(a - numeric);
      max_error = std::max(max_error, err);
      if (report.ok && !(err <= o.atol + o.rtol * std::abs(numeric))) {
        report.ok = false;
        std::ostringstream msg;
        msg << order << " derivative of input " << k << " (shape " << to_string(xs[k].shape())
            << ") at flat index " << i << ": analytic " << a << ", numeric " << numeric;
        report.failure = msg.str();
      }
    }
  }
}

}  // namespace

GradCheckReport check_gradients(const GradCheckFn& f, const std::vector<Tensor>& inputs,
                                const GradCheckOptions& o) {
  for (std::size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k].dtype() != DType::float64)
      fail<DTypeError>("check_gradients", "input ", k, " is ", inputs[k].dtype(), "; finite differences need float64");
  std::mt19937_64 rng(o.seed);
  Tensor out_shape_probe;
  {
    NoGrad no_grad;
    Tape tape;
    std::vector<Var> vars;
    for (const auto& x : inputs) vars.push_back(tape.constant(x));
    out_shape_probe = f(vars).value();
  }
  const Tensor w = random_like(out_shape_probe, rng);
  GradCheckReport report;

  const auto first = analytic_gradient(f, inputs, w);
  compare_with_differences(inputs, first, o, "first", [&](const std::vector<Tensor>& xs) {
    return weighted_output(f, xs, w);
  }, report.max_error_first, report);

  if (o.second_order) {
    std::vector<Tensor> v;
    for (const auto& x : inputs) v.push_back(random_like(x, rng));
    std::vector<Tensor> hv;
    {
      Tape tape;
      auto vars = leaves(tape, inputs);
      const Var out = f(vars);
      auto gs = tape.grad(std::span<const Var>(&out, 1), vars, std::span<const Tensor>(&w, 1), {.create_graph = true});
      for (const auto& h : tape.grad(gs, vars, v)) hv.push_back(h.value());
    }
    compare_with_differences(inputs, hv, o, "second", [&](const std::vector<Tensor>& xs) {
      return gradient_along(f, xs, w, v);
    }, report.max_error_second, report);
  }
  return report;
}

}  // namespace recur
