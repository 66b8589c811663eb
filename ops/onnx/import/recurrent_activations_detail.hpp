#pragma once
// The activation functions of ONNX's RNN, GRU and LSTM nodes (`activations`,
// `activation_alpha`, `activation_beta`), as recur's differentiable ops.
#include <string>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/ops/onnx/import/node_context_detail.hpp>

namespace recur::onnx_io::detail {

struct Activation {
  std::string name;  // as ONNX spells it: "Tanh", "HardSigmoid", ...
  double alpha = 0, beta = 0;
};

// The node's activations, `per_direction` of them (f; f, g; f, g, h) for each of
// `directions`; the defaults (`defaults`, repeated per direction) when the node names none.
// Names match case-insensitively, as in ONNX Runtime. activation_alpha and _beta are taken
// in order by the activations that use them (Affine, LeakyRelu, ThresholdedRelu,
// ScaledTanh, HardSigmoid, Elu), an activation past the end of a list taking the ONNX op's
// default. UnsupportedError for a name outside ONNX's list, ValueError for a list of the
// wrong length.
std::vector<Activation> node_activations(const NodeContext& c, const std::vector<std::string>& defaults,
                                         std::size_t directions);

// f(x) with recur's ops (exactly differentiable, float64 or float32).
Var apply_activation(const Activation& f, const Var& x);

}  // namespace recur::onnx_io::detail
