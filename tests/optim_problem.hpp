#pragma once
// The test problem of the optimizer tests (tests/fixtures/make_optim_fixtures.py spells the
// same formula): loss sum(a (p - c)^2 / 2 + b (p - c)^4 / 4), gradient a d + b d^3 with
// d = p - c, computed in the parameter's dtype in the order the fixture computes it.
#include <vector>

#include <recur/recur.hpp>

namespace recur::testing {

inline Tensor quartic_grad(const Tensor& p, const Tensor& a, const Tensor& b, const Tensor& c) {
  Tensor g = Tensor::empty(p.shape(), p.dtype());
  dispatch_floating("quartic_grad", p.dtype(), [&]<class T>() {
    const Tensor at = a.to(p.dtype()), bt = b.to(p.dtype()), ct = c.to(p.dtype());
    const T *x = p.data<T>(), *av = at.data<T>(), *bv = bt.data<T>(), *cv = ct.data<T>();
    T* out = g.data<T>();
    for (std::int64_t i = 0; i < p.numel(); ++i) {
      const T d = x[i] - cv[i];
      out[i] = av[i] * d + bv[i] * (d * d * d);
    }
  });
  return g;
}

// Every parameter's value, flattened and concatenated, as float64.
inline std::vector<double> flat_values(const NamedShared& parameters) {
  std::vector<double> out;
  for (const auto& [name, p] : parameters) {
    const auto v = to_vector<double>(p.value());
    out.insert(out.end(), v.begin(), v.end());
  }
  return out;
}

}  // namespace recur::testing
