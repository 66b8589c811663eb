#include <recur/ops/nn/cells.hpp>

#include <string_view>

#include <recur/autodiff/record.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/linalg.hpp>
#include <recur/ops/unary.hpp>

namespace recur::nn {
namespace {
std::string shape_of(const Var& v) { return v.defined() ? to_string(v.shape()) : "(none)"; }
}  // namespace

namespace detail {

void check_cell_arguments(std::string_view op, std::int64_t gates, const Var& x, const Var& h, const Var* c,
                          const CellWeights& w, const CellArgumentNames& names) {
  const std::string h_name(names.h), c_name(names.c);
  if (!x.defined() || !h.defined() || !w.w_ih.defined() || !w.w_hh.defined() || (c && !c->defined()))
    fail<ValueError>(op, "x, ", h_name, c ? ", " + c_name : std::string(), ", w_ih and w_hh must be defined Vars");
  const std::int64_t x_rank = names.sequence ? 3 : 2, batch_axis = names.sequence ? 1 : 0;
  const bool x_fits = x.rank() == x_rank && (!names.sequence || x.size(0) >= 1);
  const bool projected = w.w_hr.defined();
  if (projected && !c)
    fail<ValueError>(op, "argument 'w_hr' (a projection of h) is given, but only an LSTM projects its hidden state");
  // h is of size H, or with a projection w_hr [P, H] of size P (and c of size H).
  const std::int64_t h_size = h.rank() == 2 ? h.size(1) : -1;
  const std::int64_t hidden = !projected ? h_size : (w.w_hr.rank() == 2 ? w.w_hr.size(1) : -1);
  const Shape wih{gates * hidden, x_fits ? x.size(x_rank - 1) : -1}, whh{gates * hidden, h_size}, bias{gates * hidden};
  auto bad_bias = [&](const Var& b) { return b.defined() && b.shape() != bias; };
  const bool bad_projection = projected && (w.w_hr.shape() != Shape{h_size, hidden} || h_size >= hidden);
  if (!x_fits || h.rank() != 2 || h.size(0) != x.size(batch_axis) || (c && c->shape() != Shape{h.size(0), hidden}) ||
      w.w_ih.shape() != wih || w.w_hh.shape() != whh || bad_bias(w.b_ih) || bad_bias(w.b_hh) || bad_projection)
    fail<ShapeError>(op, "arguments do not fit: 'x' ", shape_of(x), ", '", h_name, "' ", shape_of(h),
                     c ? ", '" + c_name + "' " + shape_of(*c) : std::string(), ", 'w_ih' ", shape_of(w.w_ih),
                     ", 'w_hh' ", shape_of(w.w_hh), ", 'b_ih' ", shape_of(w.b_ih), ", 'b_hh' ", shape_of(w.b_hh),
                     projected ? ", 'w_hr' " + shape_of(w.w_hr) : std::string(), "; expected x ",
                     names.sequence ? "[T >= 1, B, I]" : "[B, I]", ", ", h_name,
                     c ? " and " + c_name : std::string(), " [B, H], w_ih [", gates, "*H, I], w_hh [", gates,
                     "*H, H], biases [", gates, "*H]",
                     projected ? "; with w_hr [P, H] (P < H): " + h_name + " [B, P] and w_hh [4*H, P]" : std::string());
  for (const Var* v : {&h, c, &w.w_ih, &w.w_hh, &w.b_ih, &w.b_hh, &w.w_hr})
    if (v && v->defined() && v->dtype() != x.dtype())
      fail<DTypeError>(op, "all arguments must have the dtype of 'x' (", x.dtype(), "), got ", v->dtype(),
                       " for one of shape ", to_string(v->shape()));
}

}  // namespace detail

Var project(const Var& x, const Var& w, const Var& b) {
  return transactional(x, [&] {
    Var p = matmul_t(x, w, false, true);
    return b.defined() ? p + b : p;
  });
}

Var rnn_step(const Var& xproj, const Var& h, const Var& w_hh, const Var& b_hh, Nonlinearity act) {
  return transactional(xproj, [&] { return rnn_pointwise(xproj, project(h, w_hh, b_hh), act); });
}

LstmState lstm_step(const Var& xproj, const Var& h, const Var& c, const Var& w_hh, const Var& b_hh, const Var& w_hr) {
  return transactional(xproj, [&] {
    const std::int64_t n = c.size(1);
    const Var out = lstm_pointwise(xproj + project(h, w_hh, b_hh), c);
    const Var m = slice(out, 1, 0, n);  // o * tanh(c')
    return LstmState{w_hr.defined() ? project(m, w_hr) : m, slice(out, 1, n, 2 * n)};
  });
}

Var gru_step(const Var& xproj, const Var& h, const Var& w_hh, const Var& b_hh, bool linear_before_reset) {
  if (linear_before_reset)
    return transactional(xproj, [&] { return gru_pointwise(xproj, project(h, w_hh, b_hh), h); });
  // ONNX's form, from ops: the candidate's product reads r h, so it follows the gates.
  return transactional(xproj, [&] {
    const std::int64_t n = h.size(1);
    auto rows = [](const Var& v, std::int64_t from, std::int64_t to) { return v.defined() ? slice(v, 0, from, to) : Var(); };
    const std::vector<Var> x = split(xproj, 1, 3), hp = split(project(h, rows(w_hh, 0, 2 * n), rows(b_hh, 0, 2 * n)), 1, 2);
    const Var r = sigmoid(x[0] + hp[0]), z = sigmoid(x[1] + hp[1]);
    const Var cand = tanh(x[2] + project(r * h, rows(w_hh, 2 * n, 3 * n), rows(b_hh, 2 * n, 3 * n)));
    return cand + z * (h - cand);
  });
}

Var rnn_cell(const Var& x, const Var& h, const CellWeights& w, Nonlinearity act) {
  detail::check_cell_arguments("rnn_cell", describe(CellKind::rnn).gate_count(), x, h, nullptr, w, {});
  return transactional(x, [&] { return rnn_step(project(x, w.w_ih, w.b_ih), h, w.w_hh, w.b_hh, act); });
}

LstmState lstm_cell(const Var& x, const Var& h, const Var& c, const CellWeights& w) {
  detail::check_cell_arguments("lstm_cell", describe(CellKind::lstm).gate_count(), x, h, &c, w, {});
  return transactional(x, [&] { return lstm_step(project(x, w.w_ih, w.b_ih), h, c, w.w_hh, w.b_hh, w.w_hr); });
}

Var gru_cell(const Var& x, const Var& h, const CellWeights& w, bool linear_before_reset) {
  detail::check_cell_arguments("gru_cell", describe(CellKind::gru).gate_count(), x, h, nullptr, w, {});
  return transactional(
      x, [&] { return gru_step(project(x, w.w_ih, w.b_ih), h, w.w_hh, w.b_hh, linear_before_reset); });
}

}  // namespace recur::nn
