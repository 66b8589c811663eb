#include "row_runs.hpp"

#include <cctype>
#include <cstring>
#include <typeinfo>

#include <boost/core/demangle.hpp>

namespace recur::testing {
namespace {

// Runs `body` (which returns the output Tensor) and records what it gave or threw.
template <class Body>
Outcome capture(Body&& body) {
  Outcome o;
  try {
    o.output = body();
  } catch (const Error& e) {
    o.error = boost::core::demangle(typeid(e).name());
    o.message = e.what();
    o.recur_error = true;
  } catch (const std::exception& e) {
    o.error = boost::core::demangle(typeid(e).name());
    o.message = e.what();
  }
  return o;
}

}  // namespace

Outcome run_on_tensors(const GradCase& c, const std::vector<Tensor>& inputs) {
  return capture([&] { return c.fn.on_tensors(inputs); });
}

Outcome run_on_vars(const GradCase& c, const std::vector<Tensor>& inputs) {
  Tape tape;
  std::vector<Var> vars;
  for (const auto& x : inputs) vars.push_back(tape.variable(x));
  const std::uint32_t before = tape.size();
  Outcome o = capture([&] { return c.fn.on_vars(vars).value(); });
  o.nodes_recorded = tape.size() - before;
  return o;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

std::string describe(const std::vector<Tensor>& inputs) {
  std::string s;
  for (const auto& x : inputs) {
    if (!s.empty()) s += ", ";
    s += to_string(x.shape()) + " " + std::string(name_of(x.dtype()));
  }
  return s;
}

std::vector<Tensor> converted(const std::vector<Tensor>& inputs, DType dtype) {
  std::vector<Tensor> out;
  for (const auto& x : inputs) out.push_back(x.to(dtype));
  return out;
}

std::string test_name_of_row(std::size_t row) {
  std::string n = grad_table()[row].name;
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

}  // namespace recur::testing
