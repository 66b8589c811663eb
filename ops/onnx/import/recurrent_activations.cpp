// ONNX's list of recurrent activations (the RNN, GRU and LSTM operators' docs), each as
// recur's ops. Where a branch is cut (Elu's exponential), its argument is bounded first so
// that a masked-out branch never sends inf * 0 = NaN into the gradient.
#include <recur/ops/onnx/import/recurrent_activations_detail.hpp>

#include <algorithm>
#include <cctype>
#include <optional>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/unary.hpp>

namespace recur::onnx_io::detail {
namespace {

// What an activation reads of the alpha and beta lists, and its defaults (ONNX's ops').
struct Parameters {
  const char* name;
  bool uses_alpha, uses_beta;
  double alpha, beta;
};

constexpr Parameters known[] = {
    {"Relu", false, false, 0, 0},        {"Tanh", false, false, 0, 0},
    {"Sigmoid", false, false, 0, 0},     {"Affine", true, true, 1.0, 0.0},
    {"LeakyRelu", true, false, 0.01, 0}, {"ThresholdedRelu", true, false, 1.0, 0},
    {"ScaledTanh", true, true, 1.0, 1.0}, {"HardSigmoid", true, true, 0.2, 0.5},
    {"Elu", true, false, 1.0, 0},        {"Softsign", false, false, 0, 0},
    {"Softplus", false, false, 0, 0},
};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  return s;
}

const Parameters* find(const std::string& name) {
  for (const auto& p : known)
    if (lower(name) == lower(p.name)) return &p;
  return nullptr;
}

// Reads the next value of a float list attribute, or nothing past its end.
class FloatList {
 public:
  FloatList(const NodeContext& c, const char* name) : a_(c.attribute(name)) {}
  std::optional<double> next() {
    if (!a_ || at_ >= a_->floats_size()) return std::nullopt;
    return a_->floats(at_++);
  }

 private:
  const ::onnx::AttributeProto* a_;
  int at_ = 0;
};

}  // namespace

std::vector<Activation> node_activations(const NodeContext& c, const std::vector<std::string>& defaults,
                                         std::size_t directions) {
  std::vector<std::string> names;
  if (const auto* a = c.attribute("activations"); a && a->strings_size() > 0) {
    names.assign(a->strings().begin(), a->strings().end());
  } else {
    for (std::size_t d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * directions)
    c.invalid("activations names ", names.size(), " functions; the node needs ", defaults.size(), " per direction for ",
              directions, " direction(s)");
  FloatList alphas(c, "activation_alpha"), betas(c, "activation_beta");
  std::vector<Activation> out;
  for (const auto& name : names) {
    const Parameters* p = find(name);
    if (!p)
      c.unsupported("activation '", name, "' (ONNX's list: Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ",
                    "ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)");
    Activation f{p->name, p->alpha, p->beta};
    if (p->uses_alpha) f.alpha = alphas.next().value_or(p->alpha);
    if (p->uses_beta) f.beta = betas.next().value_or(p->beta);
    out.push_back(f);
  }
  return out;
}

Var apply_activation(const Activation& f, const Var& x) {
  const std::string& n = f.name;
  const Var zero = scalar_like(x, 0.0);
  if (n == "Relu") return relu(x);
  if (n == "Tanh") return tanh(x);
  if (n == "Sigmoid") return sigmoid(x);
  if (n == "Affine") return x * f.alpha + f.beta;
  if (n == "LeakyRelu") return where(greater_equal(x, zero), x, x * f.alpha);
  if (n == "ThresholdedRelu") return where(greater(x, scalar_like(x, f.alpha)), x, zero);  // ONNX's op: x > alpha
  if (n == "ScaledTanh") return tanh(x * f.beta) * f.alpha;
  if (n == "HardSigmoid") return clip(x * f.alpha + f.beta, 0.0, 1.0);
  if (n == "Elu") return where(greater_equal(x, zero), x, (exp(minimum(x, zero)) - 1.0) * f.alpha);
  if (n == "Softsign") return x / (abs(x) + 1.0);
  return softplus(x);  // the last of `known`
}

}  // namespace recur::onnx_io::detail
