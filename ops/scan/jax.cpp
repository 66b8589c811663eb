// JAX's face on the engine: xs leaves are sequences (axis 0), carry leaves are fed-back
// outputs of which only the last value is kept, y leaves are inferred outputs kept at every
// step (stacked last step first under reverse, so that ys[t] belongs to xs[t]).
#include <recur/ops/scan/jax.hpp>

#include <tuple>

#include <recur/ops/scan/engine.hpp>

namespace recur::jax_detail {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

FlatResult scan(const FlatStep& f, const FlatScan& in, const JaxScanOptions& o) {
  const std::string_view face = in.face;
  const std::size_t n_carry = in.init.size(), n_xs = in.xs.size();
  for (std::size_t i = 0; i < n_carry; ++i)
    if (!in.init[i].defined()) fail<ValueError>(face, in.init_paths[i], " of init is an undefined Var");

  scan_engine::ScanProgram p;
  p.face = face;
  // Every leaf of xs has one length, which `length` must match: the engine checks.
  p.lengths = scan_engine::Lengths::equal;
  p.sequences_name = in.has_xs ? "xs leaves" : "xs";
  p.sequence_name = [&](std::size_t i) { return in.xs_paths[i]; };
  p.n_steps_name = "length";
  for (const auto& x : in.xs) p.sequences.push_back({x, {0}, 0, false});
  scan_engine::add_carried_outputs(p, in.init);
  p.n_steps = o.length;
  p.backwards = o.reverse;
  p.truncate_gradient = o.truncate_gradient;
  p.checkpoint = o.checkpoint;
  p.capture = o.capture;
  p.batch_lengths = o.lengths;
  p.infer_extra_outputs = true;
  p.extra_outputs.keep = Keep::all;
  p.extra_outputs.reverse_stack = o.reverse;
  p.output_name = [&](std::size_t j) {
    if (j < n_carry) return in.init_paths[j];
    const std::size_t k = j - n_carry;
    return in.ys_paths && k < in.ys_paths->size() ? (*in.ys_paths)[k] : "leaf " + std::to_string(k) + " of ys";
  };

  std::optional<std::size_t> n_ys;
  auto step = [&](std::span<const Var> args) {
    // The engine passes the slices of xs first, then the carry.
    FlatOut out = f(args.subspan(n_xs, n_carry), args.first(n_xs));
    if (out.carry.size() != n_carry)
      fail<ValueError>(face, "f returned a carry of ", out.carry.size(), " leaves; init has ", n_carry, " (",
                       joined(in.init_paths), ")");
    if (!n_ys) n_ys = out.ys.size();
    if (out.ys.size() != *n_ys)
      fail<ValueError>(face, "f returned ", out.ys.size(), " leaves of y; its first call returned ", *n_ys);
    std::vector<Var> outputs = std::move(out.carry);
    outputs.insert(outputs.end(), out.ys.begin(), out.ys.end());
    return StepResult(std::move(outputs));
  };
  FlatResult r;
  std::tie(r.carry, r.ys) = scan_engine::split_outputs(scan_engine::run(step, p), n_carry);
  return r;
}

}  // namespace recur::jax_detail
