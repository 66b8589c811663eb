#include <recur/ops/nn/recurrent.hpp>

#include <string>

#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/nn/direction.hpp>
#include <recur/ops/nn/sequence_lengths_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn {
namespace {

// PyTorch's parameter suffix: _l{layer}, and _reverse for the second direction.
std::string suffix(std::int64_t layer, std::int64_t direction) {
  return "_l" + std::to_string(layer) + (direction == 1 ? "_reverse" : "");
}

}  // namespace

RecurrentLayer::RecurrentLayer(CellKind kind, const RecurrentOptions& options, Generator& gen)
    : name_(describe(kind).layer), kind_(kind), options_(options) {
  check_recurrent_sizes(name_, options.input_size, options.hidden_size, options.num_layers, options.dtype);
  if (options.truncate_gradient < -1)
    fail<ValueError>(name_, "option 'truncate_gradient' = ", options.truncate_gradient,
                     " must be -1 (no truncation) or >= 0 (backpropagate through that many steps)");
  if (options.proj_size != 0 && (!describe(kind).projection || options.proj_size < 0 ||
                                  options.proj_size >= options.hidden_size))
    fail<ValueError>(name_, "option 'proj_size' = ", options.proj_size, describe(kind).projection
                         ? " must be 0 (no projection) or in [1, hidden_size = " + std::to_string(options.hidden_size) + ")"
                         : std::string(" must be 0: only an LSTM projects its hidden state"));
  for (std::int64_t layer = 0; layer < options.num_layers; ++layer)
    for (std::int64_t d = 0; d < num_directions(); ++d) {
      const std::int64_t input = layer == 0 ? options.input_size : num_directions() * h_size();
      weights_.push_back(add_cell_parameters(suffix(layer, d), kind, {input, options.hidden_size, options.proj_size},
                                             options.bias, gen, options.dtype));
    }
}

const CellParameters& RecurrentLayer::weights(std::int64_t layer, std::int64_t direction) const {
  if (layer < 0 || layer >= options_.num_layers || direction < 0 || direction >= num_directions())
    fail<IndexError>(name_, "no layer ", layer, " direction ", direction, " (", options_.num_layers, " layers, ",
                     num_directions(), " directions)");
  return weights_[static_cast<std::size_t>(layer * num_directions() + direction)];
}

std::vector<std::int64_t> RecurrentLayer::check(const Var& input, const RecurrentState& state,
                                                const SequenceLengths& lengths) const {
  if (!input.defined()) fail<ValueError>(name_, "argument 'input' is an undefined Var");
  const Shape& s = input.shape();
  const std::string layout = options_.batch_first ? "[B, T, " : "[T, B, ";
  if (s.size() != 3 || s[2] != options_.input_size)
    fail<ShapeError>(name_, "argument 'input' must have shape ", layout, options_.input_size, "] (input_size ",
                     options_.input_size, "), got ", to_string(s));
  const std::int64_t steps = s[options_.batch_first ? 1 : 0], batch = s[options_.batch_first ? 0 : 1];
  if (steps == 0) fail<ShapeError>(name_, "argument 'input' of shape ", to_string(s), " has no time steps");
  if (input.dtype() != options_.dtype)
    fail<DTypeError>(name_, "argument 'input' of shape ", to_string(s), " is ", input.dtype(), " but the layer is ",
                     options_.dtype);
  auto check_state = [&](const Var& v, std::string_view arg, std::int64_t size) {
    if (!v.defined()) return;
    const Shape state_shape{options_.num_layers * num_directions(), batch, size};
    if (v.shape() != state_shape)
      fail<ShapeError>(name_, "argument '", arg, "' must have shape ", to_string(state_shape),
                       " ([num_layers * num_directions, B, ", size == options_.hidden_size ? "hidden_size" : "proj_size",
                       "] for 'input' of shape ", to_string(s), "), got ", to_string(v.shape()));
    if (v.dtype() != options_.dtype)
      fail<DTypeError>(name_, "argument '", arg, "' of shape ", to_string(v.shape()), " is ", v.dtype(),
                       " but the layer is ", options_.dtype);
  };
  check_state(state.h, "h0", h_size());
  if (!describe(kind_).cell_state && state.c.defined())
    fail<ValueError>(name_, "argument 'c0' (RecurrentState::c) is given, but ", name_,
                     " has no cell state: leave it undefined");
  check_state(state.c, "c0", options_.hidden_size);
  if (lengths.given && options_.truncate_gradient >= 0)
    fail<ValueError>(name_, "argument 'lengths' with option 'truncate_gradient' = ", options_.truncate_gradient,
                     " is not supported: truncate whole chunks instead (nn::tbptt)");
  return detail::checked_lengths(name_, lengths, s, options_.batch_first ? 1 : 0, options_.batch_first ? 0 : 1);
}

RecurrentOutput RecurrentLayer::operator()(const Var& input, const RecurrentState& state,
                                           const SequenceLengths& given) const {
  const std::vector<std::int64_t> lengths = check(input, state, given);
  Tape& tape = input.tape();
  return transactional(tape, [&] {
    const Var x0 = options_.batch_first ? transpose(input, 0, 1) : input;
    auto or_zeros = [&](const Var& v, std::int64_t size) {
      const Shape zero_shape{options_.num_layers * num_directions(), x0.size(1), size};
      return v.defined() ? v : tape.constant(zeros(zero_shape, options_.dtype));
    };
    const Var h_init = or_zeros(state.h, h_size());
    const Var c_init = describe(kind_).cell_state ? or_zeros(state.c, options_.hidden_size) : Var();
    std::vector<Var> h_n, c_n;
    Var x = x0;
    for (std::int64_t layer = 0; layer < options_.num_layers; ++layer) {
      std::vector<Var> outputs;
      for (std::int64_t d = 0; d < num_directions(); ++d) {
        const std::int64_t k = layer * num_directions() + d;
        const Var c_k = c_init.defined() ? index(c_init, 0, k) : Var();
        const detail::DirectionOutput r = detail::run_direction(kind_, options_, x, weights(layer, d).read(tape),
                                                                index(h_init, 0, k), c_k, d == 1, lengths);
        outputs.push_back(r.outputs);
        h_n.push_back(r.h_n);
        if (r.c_n.defined()) c_n.push_back(r.c_n);
      }
      x = outputs.size() == 1 ? outputs[0] : concat(outputs, 2);
    }
    RecurrentOutput out;
    out.output = options_.batch_first ? transpose(x, 0, 1) : x;
    out.h_n = stack(h_n, 0);
    if (!c_n.empty()) out.c_n = stack(c_n, 0);
    return out;
  });
}

}  // namespace recur::nn
