// The small examples of Theano's scan guide (the seed's "scan – Looping in Theano"), run
// with recur's scan and printed with what each one shows: A^k with its gradient, the
// polynomial with the enumerate trick, powers of two with until, triangular numbers, and
// the shared counter with its updates applied or not. Every result is checked against the
// same thing computed by hand in plain C++; the exit code is 1 when one differs.
#include <recur/recur.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "example_main.hpp"

namespace {

using namespace recur;
using S = std::span<const Var>;
constexpr DType f64 = DType::float64;

struct Options {
  long k = 4;
  long n = 10;
  std::vector<double> coefficients{1, 0, 2};
  double x = 3;
  double limit = 45;
  long up_to = 15;
  long counter_steps = 10;
  long calls = 2;
};

int failures = 0;

std::string list(const std::vector<double>& values) {
  std::string s = "[";
  for (double v : values) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%s%g", s.size() > 1 ? " " : "", v);
    s += buf;
  }
  return s + "]";
}

void heading(const char* title, const char* what) { std::printf("\n== %s\n   %s\n", title, what); }

// Prints the comparison with the hand computation and counts a difference beyond `tolerance`.
void check(const char* what, double difference, double tolerance = 0) {
  const bool ok = difference <= tolerance;
  std::printf("   check: %s: %s (difference %.3g)\n", what, ok ? "ok" : "MISMATCH", difference);
  if (!ok) ++failures;
}

double max_difference(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(a[i] - b[i]));
  return d;
}

// result = scan(lambda prior, A: prior * A, outputs_info=ones_like(A), non_sequences=A,
// n_steps=k): A^1 ... A^k stacked, k x n.
Var powers(const Var& A, long k) {
  return scan([](S a) { return a[0] * a[1]; },
              {.outputs_info = {Var(ones_like(A.value()))}, .non_sequences = {A}, .n_steps = k})[0];
}

// sum(A^k) on its own tape, nothing recorded: what the finite difference evaluates.
double sum_of_power(const Tensor& A, long k) {
  Tape tape;
  NoGrad no_grad;
  return sum(index(powers(Var(A), k), 0, -1)).value().item();
}

void power_example(const Options& o) {
  heading("A^k elementwise (scan with outputs_info and non_sequences)",
          "prior * A repeated k times from ones_like(A); scan returns every step, A^k is result[-1].");
  Tape tape;
  const Tensor a_values = arange(0.0, static_cast<double>(o.n), 1.0, f64);
  Var A = tape.variable(a_values);
  Var all = powers(A, o.k);
  for (long step = 0; step < o.k; ++step)
    if (o.k <= 8 || step == o.k - 1)
      std::printf("   A^%-3ld = %s\n", step + 1, list(to_vector<double>(all.value()[step])).c_str());
  const std::vector<double> a = to_vector<double>(a_values);
  std::vector<double> by_hand(a.size()), derivative(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    by_hand[i] = std::pow(a[i], static_cast<double>(o.k));
    derivative[i] = static_cast<double>(o.k) * std::pow(a[i], static_cast<double>(o.k - 1));
  }
  check("A^k against std::pow", max_difference(to_vector<double>(all.value()[o.k - 1]), by_hand));

  std::printf("   gradient of sum(A^k) with respect to A, backpropagated through the k steps of the scan:\n");
  const Var g = grad(sum(index(all, 0, -1)), A);
  const std::vector<double> autodiff = to_vector<double>(g.value());
  std::printf("   d/dA   = %s\n", list(autodiff).c_str());
  // Central differences, one element at a time; h scaled to the element.
  std::vector<double> finite(a.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double h = 1e-5 * std::max(1.0, std::abs(a[i]));
    std::vector<double> plus = a, minus = a;
    plus[i] += h, minus[i] -= h;
    const Shape shape{static_cast<std::int64_t>(a.size())};
    finite[i] = (sum_of_power(from_vector(plus, shape), o.k) - sum_of_power(from_vector(minus, shape), o.k)) / (2 * h);
  }
  std::printf("   finite = %s\n", list(finite).c_str());
  // Relative to the largest component: a small one carries the rounding error of the whole sum.
  double largest = 1;
  for (double f : finite) largest = std::max(largest, std::abs(f));
  check("gradient against central finite differences (max difference / max |gradient|)",
        max_difference(autodiff, finite) / largest, 1e-6);
  check("gradient against k * A^(k-1)", max_difference(autodiff, derivative), 1e-9);
}

void polynomial_example(const Options& o) {
  heading("Polynomial with the enumerate trick (two sequences, no feedback)",
          "sequences = [coefficients, arange(10000)]: scan stops at the shorter one, the arange gives the power.");
  Tape tape;
  Var coefficients = tape.constant(from_vector(o.coefficients, {static_cast<std::int64_t>(o.coefficients.size())}));
  Var x = tape.variable(scalar(o.x, f64));
  auto r = scan([](S a) { return a[0] * pow(a[2], a[1]); },
                {.sequences = {coefficients, Var(arange(0.0, 10000.0, 1.0, f64))}, .non_sequences = {x}});
  Var polynomial = sum(r[0]);
  std::printf("   coefficients %s at x = %g: components %s, sum %g (%lld steps)\n", list(o.coefficients).c_str(), o.x,
              list(to_vector<double>(r[0].value())).c_str(), polynomial.value().item(),
              static_cast<long long>(r.steps));
  double value = 0, slope = 0;  // Horner's rule for p and p'
  for (auto c = o.coefficients.rbegin(); c != o.coefficients.rend(); ++c) {
    slope = slope * o.x + value;
    value = value * o.x + *c;
  }
  check("sum against Horner's rule", std::abs(polynomial.value().item() - value), 1e-9 * std::max(1.0, std::abs(value)));
  const double dp = grad(polynomial, x).value().item();
  std::printf("   dp/dx at x = %g, backpropagated through the scan: %g\n", o.x, dp);
  check("dp/dx against Horner's rule", std::abs(dp - slope), 1e-9 * std::max(1.0, std::abs(slope)));
}

void powers_of_two_example(const Options& o) {
  heading("Powers of two with until (a while loop)",
          "previous * 2 until it exceeds the limit; n_steps = 1024 is only the maximum.");
  Tape tape;
  Var max_value = tape.constant(scalar(o.limit, f64));
  auto r = scan(
      [](S a) {
        Var next = a[0] * 2.0;
        return StepResult({next}, {}, until(greater(next, a[1])));
      },
      {.outputs_info = {Var(scalar(1.0, f64))}, .non_sequences = {max_value}, .n_steps = 1024});
  const std::vector<double> got = to_vector<double>(r[0].value());
  std::printf("   f(%g) = %s  (%lld of at most 1024 steps)\n", o.limit, list(got).c_str(),
              static_cast<long long>(r.steps));
  std::vector<double> by_hand;
  for (double p = 2; by_hand.size() < 1024; p *= 2) {
    by_hand.push_back(p);
    if (p > o.limit) break;
  }
  check("against a plain do-while loop", max_difference(got, by_hand));
}

void triangular_example(const Options& o) {
  heading("Triangular numbers (accumulating into a scalar)",
          "sum_to_date + arange_val over arange(up_to), starting from 0 of the sequence's dtype.");
  Tape tape;
  auto r = scan([](S a) { return a[1] + a[0]; },
                {.sequences = {Var(arange(0.0, static_cast<double>(o.up_to), 1.0, f64))},
                 .outputs_info = {Var(scalar(0.0, f64))}});
  const std::vector<double> got = to_vector<double>(r[0].value());
  std::printf("   triangular_sequence(%ld) = %s\n", o.up_to, list(got).c_str());
  std::vector<double> by_hand;
  for (long n = 0; n < o.up_to; ++n) by_hand.push_back(static_cast<double>(n * (n + 1) / 2));
  check("against n (n + 1) / 2", max_difference(got, by_hand));
}

void counter_example(const Options& o) {
  heading("Shared counter: updates are returned, and applied only when asked",
          "scan(lambda: {a: a + 1}, n_steps); b = a + 1 reads a, c = updates[a] + 1 reads the update.");
  const double steps = static_cast<double>(o.counter_steps);
  for (bool apply : {true, false}) {
    std::printf("   %s:\n", apply ? "with the updates applied after each call" : "without applying them");
    Shared a(scalar(1.0, f64), "a");
    double diff = 0;
    for (long call = 1; call <= o.calls; ++call) {
      Tape tape;
      auto r = scan([&](S) { return Updates{{a, Var(a) + 1.0}}; }, {.n_steps = o.counter_steps});
      const double b = (Var(a) + 1.0).value().item(), c = (r.updates[a] + 1.0).value().item();
      if (apply) apply_updates(r.updates);
      std::printf("     call %ld: b = %g, c = %g, a = %g\n", call, b, c, a.value().item());
      // By hand: a starts at 1 and grows by `steps` per applied call.
      const double before = 1 + (apply ? steps * static_cast<double>(call - 1) : 0);
      diff = std::max({diff, std::abs(b - (before + 1)), std::abs(c - (before + steps + 1)),
                       std::abs(a.value().item() - (apply ? before + steps : 1))});
    }
    check(apply ? "b, c, a against 1 + steps per call" : "b, c, a stay 2, steps + 2, 1", diff);
  }
}

void declare_options(CLI::App& app, Options& o) {
  const auto positive = examples::at_least(1L);
  app.add_option("--k", o.k, "A^k: the power, the number of scan steps")->check(positive);
  app.add_option("--n", o.n, "A^k: A = arange(n)")->check(positive);
  app.add_option("--coefficients", o.coefficients, "polynomial coefficients, constant term first")->delimiter(',');
  app.add_option("--x", o.x, "polynomial: where it is evaluated");
  app.add_option("--limit", o.limit, "powers of two: stop after exceeding this");
  app.add_option("--up-to", o.up_to, "triangular numbers: how many")->check(positive);
  app.add_option("--counter-steps", o.counter_steps, "shared counter: n_steps of each scan")->check(positive);
  app.add_option("--calls", o.calls, "shared counter: how many times the scan is called")->check(positive);
  app.final_callback([&o] {
    if (o.coefficients.empty()) throw CLI::ValidationError("--coefficients", "needs at least one coefficient");
  });
}

int run(const Options& o) {
  power_example(o);
  polynomial_example(o);
  powers_of_two_example(o);
  triangular_example(o);
  counter_example(o);
  std::printf("\n%s\n", failures == 0 ? "all examples agree with the hand computations"
                                      : "some examples differ from the hand computations");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main(argc, argv, "recur_seed_examples",
                                "the small examples of Theano's scan guide run with recur's scan, each printed with "
                                "what it shows and checked against a hand computation.",
                                declare_options, run);
}
