// ONNX's RNN, GRU and LSTM equations (the operators' docs, opset 14), one step at a time
// on recur's scan. x W^T + Wb is made for all steps at once, as the fused ops do.
#include <recur/ops/onnx/import/recurrent_cells_detail.hpp>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/scan/jax.hpp>
#include <recur/ops/shape.hpp>
#include <recur/ops/unary.hpp>

namespace recur::onnx_io::detail {
namespace {

// Block g of `hidden` entries along `axis` (a gate of a projection, a peephole vector).
Var block(const Var& v, std::int64_t axis, std::int64_t g, std::int64_t hidden) {
  return slice(v, axis, g * hidden, (g + 1) * hidden);
}
Var block_or_none(const Var& v, std::int64_t g, std::int64_t hidden) {
  return v.defined() ? block(v, 0, g, hidden) : Var();
}

class Step {
 public:
  Step(const OnnxCell& cell, const DirectionWeights& w, std::int64_t hidden) : cell_(cell), w_(w), hidden_(hidden) {}

  // The new carry {h} (LSTM: {h, c}) from xproj [B, G*H] = x W^T + Wb.
  std::vector<Var> operator()(const std::vector<Var>& carry, const Var& xproj) const {
    switch (cell_.kind) {
      case nn::CellKind::rnn: return {activate(0, xproj + nn::project(carry[0], w_.r, w_.rb))};
      case nn::CellKind::gru: return {gru(carry[0], xproj)};
      case nn::CellKind::lstm: break;
    }
    return lstm(carry[0], carry[1], xproj);
  }

 private:
  // Activation k (f, g, h) of the clipped pre-activation.
  Var activate(std::size_t k, const Var& pre) const {
    return apply_activation(cell_.activations[k], cell_.clip ? clip(pre, -*cell_.clip, *cell_.clip) : pre);
  }
  Var gate(const Var& v, std::int64_t g) const { return block(v, 1, g, hidden_); }
  // Gate g of h R^T + Rb.
  Var recurrent(const Var& h, std::int64_t g) const {
    return nn::project(h, block(w_.r, 0, g, hidden_), block_or_none(w_.rb, g, hidden_));
  }

  Var gru(const Var& h, const Var& xproj) const {
    const Var z = activate(0, gate(xproj, 0) + recurrent(h, 0));
    const Var r = activate(0, gate(xproj, 1) + recurrent(h, 1));
    const Var candidate = cell_.linear_before_reset ? gate(xproj, 2) + r * recurrent(h, 2)
                                                    : gate(xproj, 2) + recurrent(r * h, 2);
    const Var n = activate(1, candidate);
    return (1.0 - z) * n + z * h;
  }

  std::vector<Var> lstm(const Var& h, const Var& c, const Var& xproj) const {
    const Var pre = xproj + nn::project(h, w_.r, w_.rb);  // gates i o f c
    // Gate g's pre-activation plus its peephole (P's block k) times `state`.
    const auto with_peephole = [&](std::int64_t g, std::int64_t k, const Var& state) {
      return w_.p.defined() ? gate(pre, g) + block(w_.p, 0, k, hidden_) * state : gate(pre, g);
    };
    const Var i = activate(0, with_peephole(0, 0, c));
    const Var f = cell_.input_forget ? 1.0 - i : activate(0, with_peephole(2, 2, c));
    const Var c_new = f * c + i * activate(1, gate(pre, 3));
    const Var o = activate(0, with_peephole(1, 1, c_new));
    return {o * activate(2, c_new), c_new};
  }

  const OnnxCell& cell_;
  const DirectionWeights& w_;
  std::int64_t hidden_;
};

}  // namespace

DirectionStates scan_direction(const OnnxCell& cell, const Var& x, const DirectionWeights& w, const Var& h0,
                               const Var& c0, bool reverse, const SequenceLengths& lengths) {
  const std::int64_t steps = x.size(0), batch = x.size(1), gates = w.w.size(0);
  const Var xproj = reshape(nn::project(reshape(x, {steps * batch, x.size(2)}), w.w, w.wb), {steps, batch, gates});
  const Step step(cell, w, h0.size(1));
  std::vector<Var> init{h0};
  if (cell.kind == nn::CellKind::lstm) init.push_back(c0);
  const auto f = [&step](const std::vector<Var>& carry, const Var& xp) {
    std::vector<Var> next = step(carry, xp);
    const Var y = next[0];
    return std::pair{std::move(next), y};
  };
  auto [carry, ys] = jax::scan(f, init, xproj, {.reverse = reverse, .lengths = lengths});
  return {ys, carry[0], cell.kind == nn::CellKind::lstm ? carry[1] : Var()};
}

}  // namespace recur::onnx_io::detail
