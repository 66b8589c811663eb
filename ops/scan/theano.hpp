#pragma once
// Theano's face of scan: theano::scan(fn, {.sequences, .outputs_info, .non_sequences,
// .n_steps, .truncate_gradient, .go_backwards, .strict}) -> outputs and updates;
// theano::map, reduce, foldl, foldr. The seed's reference is the specification; the guide
// is docs/scan.md.
//
// The Theano and JAX faces live in namespaces with the same verb (theano::scan, jax::scan;
// ONNX's is onnx_scan and onnx_loop, ops/scan/onnx.hpp); recur::scan, map, reduce, foldl and foldr are the short forms, the same
// functions except that error messages name the short form called. The argument types are
// declared in recur itself and named in recur::theano too: were they declared in the
// nested namespace, an unqualified scan(fn, options) would find theano::scan as well
// through argument-dependent lookup, and the call would be ambiguous.
//
// fn receives, in order: every tap of every sequence, every tap of every fed-back output,
// then the non-sequences; it returns a StepResult (outputs, updates, until).
#include <cstdint>
#include <optional>
#include <vector>

#include <recur/ops/scan/types.hpp>

namespace recur {

// A sequence and the taps fn reads from it: tap k at step t is element t + k, where the
// first step is placed so that every tap (and tap 0) is inside the sequence.
struct Sequence {
  Var input;
  std::vector<std::int64_t> taps{0};
  Sequence(Var v) : input(std::move(v)) {}  // NOLINT: a plain Var means taps {0}
  Sequence(Var v, std::vector<std::int64_t> t) : input(std::move(v)), taps(std::move(t)) {}
};

// How an output is fed back. OutputInfo() (Theano's None): not fed back. OutputInfo(x0):
// fed back at tap -1, x0 shaped like the output. OutputInfo(x0, taps): with several (or
// other) past taps x0 has a leading axis covering them: x0[0] is output[-k_max].
struct OutputInfo {
  Var initial;
  std::vector<std::int64_t> taps;
  bool tap_axis = false;
  OutputInfo() = default;
  OutputInfo(Var init) : initial(std::move(init)), taps{-1} {}  // NOLINT
  OutputInfo(Var init, std::vector<std::int64_t> t)
      : initial(std::move(init)), taps(std::move(t)), tap_axis(!(taps.size() == 1 && taps[0] == -1)) {}
};

// Every member has a default (`{}` at least): designated initializers may leave any out
// without GCC's -Wmissing-field-initializers.
struct ScanOptions {
  std::vector<Sequence> sequences{};
  // Empty: every output fn returns is not fed back (their number comes from fn).
  std::vector<OutputInfo> outputs_info{};
  std::vector<Var> non_sequences{};
  std::optional<std::int64_t> n_steps{};  // negative: run backwards; with until: the maximum
  std::int64_t truncate_gradient = -1;  // k >= 0: backpropagate through the last k steps only
  bool go_backwards = false;
  bool strict = false;                  // fn may use only what is passed to scan
  Keep keep = Keep::all;                // Keep::last: return only each output's last value
  Checkpoint checkpoint{};              // recompute instead of keeping every step
  std::optional<Capture> capture{};     // record the step once, replay it (types.hpp); unset: the default
  SequenceLengths lengths{};            // per batch element: steps it runs (types.hpp)
};

struct ScanResult {
  std::vector<Var> outputs;  // per output: all steps stacked on a new axis 0 (or the last)
  Updates updates;           // final values of the shared variables fn updated
  std::int64_t steps = 0;    // iterations run (fewer than n_steps when until stopped it)
  StepCapture capture{};     // whether the step was captured, and if not, why
  const Var& operator[](std::size_t i) const { return outputs.at(i); }
};

// The entry points, declared twice: in recur::theano and, as short forms, in recur.
#define RECUR_DECLARE_THEANO_FACE                                                                          \
  ScanResult scan(const StepFn& fn, const ScanOptions& options);                                           \
  /* map: fn over the sequences, no feedback. */                                                           \
  ScanResult map(const StepFn& fn, std::vector<Sequence> sequences, std::vector<Var> non_sequences = {},   \
                 std::int64_t truncate_gradient = -1, bool go_backwards = false);                          \
  /* reduce/foldl/foldr: like scan, returning only the last value of each output. */                       \
  ScanResult reduce(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info, \
                    std::vector<Var> non_sequences = {}, bool go_backwards = false);                       \
  ScanResult foldl(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info, \
                   std::vector<Var> non_sequences = {});                                                   \
  ScanResult foldr(const StepFn& fn, std::vector<Sequence> sequences, std::vector<OutputInfo> outputs_info, \
                   std::vector<Var> non_sequences = {});

namespace theano {
using recur::OutputInfo;
using recur::ScanOptions;
using recur::ScanResult;
using recur::Sequence;
RECUR_DECLARE_THEANO_FACE
}  // namespace theano

RECUR_DECLARE_THEANO_FACE
#undef RECUR_DECLARE_THEANO_FACE

}  // namespace recur
