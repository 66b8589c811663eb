#include <recur/ops/scan/theano.hpp>

#include <recur/ops/scan/engine.hpp>

namespace recur {

ScanResult scan(const StepFn& fn, const ScanOptions& o) {
  scan_engine::ScanProgram p;
  p.face = "scan";
  for (const auto& s : o.sequences) p.sequences.push_back({s.input, s.taps, 0, false});
  for (const auto& out : o.outputs_info) {
    scan_engine::OutputSpec spec;
    spec.initial = out.initial;
    spec.taps = out.taps;
    spec.initial_has_tap_axis = out.tap_axis;
    spec.keep = o.keep;
    p.outputs.push_back(spec);
  }
  p.infer_extra_outputs = o.outputs_info.empty();
  p.extra_outputs.keep = o.keep;
  p.non_sequences = o.non_sequences;
  p.n_steps = o.n_steps;
  p.backwards = o.go_backwards;
  p.truncate_gradient = o.truncate_gradient;
  p.strict = o.strict;
  p.checkpoint = o.checkpoint;
  auto run = scan_engine::run(fn, p);
  return {std::move(run.outputs), std::move(run.updates), run.steps};
}

ScanResult map(const StepFn& fn, std::vector<Sequence> sequences, std::vector<Var> non_sequences,
               std::int64_t truncate_gradient, bool go_backwards) {
  return scan(fn, {.sequences = std::move(sequences), .non_sequences = std::move(non_sequences),
                   .truncate_gradient = truncate_gradient, .go_backwards = go_backwards});
}

ScanResult reduce(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info,
                  std::vector<Var> non_sequences, bool go_backwards) {
  return scan(fn, {.sequences = std::move(sequences), .outputs_info = std::move(outputs_info),
                   .non_sequences = std::move(non_sequences), .go_backwards = go_backwards, .keep = Keep::last});
}

ScanResult foldl(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info,
                 std::vector<Var> non_sequences) {
  return reduce(fn, std::move(sequences), std::move(outputs_info), std::move(non_sequences), false);
}

ScanResult foldr(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info,
                 std::vector<Var> non_sequences) {
  return reduce(fn, std::move(sequences), std::move(outputs_info), std::move(non_sequences), true);
}

}  // namespace recur
