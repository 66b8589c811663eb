#include <recur/ops/scan/theano.hpp>

#include <string_view>

#include <recur/ops/scan/engine.hpp>

namespace recur {
namespace {

// scan as the entry point `face` (which names it in error messages).
ScanResult run_scan(std::string_view face, const StepFn& fn, const ScanOptions& o) {
  scan_engine::ScanProgram p;
  p.face = face;
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
  p.capture = o.capture;
  p.batch_lengths = o.lengths;
  auto run = scan_engine::run(fn, p);
  return {std::move(run.outputs), std::move(run.updates), run.steps, std::move(run.capture)};
}

ScanOptions map_options(std::vector<Sequence> sequences, std::vector<Var> non_sequences,
                        std::int64_t truncate_gradient, bool go_backwards) {
  ScanOptions o;
  o.sequences = std::move(sequences);
  o.non_sequences = std::move(non_sequences);
  o.truncate_gradient = truncate_gradient;
  o.go_backwards = go_backwards;
  return o;
}

ScanOptions reduce_options(std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info,
                           std::vector<Var> non_sequences, bool go_backwards) {
  ScanOptions o;
  o.sequences = std::move(sequences);
  o.outputs_info = std::move(outputs_info);
  o.non_sequences = std::move(non_sequences);
  o.go_backwards = go_backwards;
  o.keep = Keep::last;
  return o;
}

}  // namespace

// The entry points, defined in recur::theano and as short forms in recur: each passes its
// own name ("theano::map", "map") for the messages.
#define RECUR_DEFINE_THEANO_FACE(prefix)                                                                 \
  ScanResult scan(const StepFn& fn, const ScanOptions& o) { return run_scan(prefix "scan", fn, o); }     \
  ScanResult map(const StepFn& fn, std::vector<Sequence> sequences, std::vector<Var> non_sequences,      \
                 std::int64_t truncate_gradient, bool go_backwards) {                                    \
    return run_scan(prefix "map", fn,                                                                    \
                    map_options(std::move(sequences), std::move(non_sequences), truncate_gradient, go_backwards)); \
  }                                                                                                      \
  ScanResult reduce(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info, \
                    std::vector<Var> non_sequences, bool go_backwards) {                                 \
    return run_scan(prefix "reduce", fn, reduce_options(std::move(sequences), std::move(outputs_info),   \
                                                        std::move(non_sequences), go_backwards));        \
  }                                                                                                      \
  ScanResult foldl(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info, \
                   std::vector<Var> non_sequences) {                                                     \
    return run_scan(prefix "foldl", fn, reduce_options(std::move(sequences), std::move(outputs_info),    \
                                                       std::move(non_sequences), false));                \
  }                                                                                                      \
  ScanResult foldr(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info, \
                   std::vector<Var> non_sequences) {                                                     \
    return run_scan(prefix "foldr", fn, reduce_options(std::move(sequences), std::move(outputs_info),    \
                                                       std::move(non_sequences), true));                 \
  }

namespace theano {
RECUR_DEFINE_THEANO_FACE("theano::")
}  // namespace theano
RECUR_DEFINE_THEANO_FACE("")
#undef RECUR_DEFINE_THEANO_FACE

}  // namespace recur
