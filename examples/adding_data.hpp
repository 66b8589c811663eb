#pragma once
// The data of the adding problem (Hochreiter and Schmidhuber, 1997), as plain vectors so
// that it can be checked by hand (tests/test_examples_data.cpp):
//
//   a sequence of `length` steps with two channels per step: a value uniform in [0, 1)
//   and a marker that is 1 at exactly two steps, 0 elsewhere. The target is the sum of
//   the two marked values.
//
// Where the two marked steps lie (Placement):
//   halves: one uniform in the first half [0, length/2), one in the second half
//           [length/2, length): the usual formulation of later papers.
//   early:  both in the first half, as in Hochreiter and Schmidhuber's own experiment: one
//           among the first 10 steps (the first length/2 when that is fewer), the other
//           anywhere else in [0, length/2). (Their values were in [-1, 1] and their target
//           0.5 + sum/4; here both placements keep values in [0, 1) and the plain sum.)
//
// Predicting the constant 1 (the mean of the target) has an expected squared error of the
// variance of a sum of two independent U(0, 1): 2 / 12 = 1/6 = 0.1667.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <recur/core/random.hpp>

namespace examples::adding {

inline constexpr std::int64_t kChannels = 2;  // channel 0: value, 1: marker
inline constexpr double kConstantBaseline = 1.0 / 6.0;

enum class Placement { halves, early };

// "halves" / "early"; std::invalid_argument for anything else.
inline Placement parse_placement(std::string_view name) {
  if (name == "halves") return Placement::halves;
  if (name == "early") return Placement::early;
  throw std::invalid_argument("adding problem: marker placement \"" + std::string(name) +
                              "\" is neither \"halves\" nor \"early\"");
}
inline const char* placement_name(Placement p) { return p == Placement::halves ? "halves" : "early"; }

// A batch in time-major layout, as the LSTM reads it: inputs[(t * batch + b) * 2 + c].
struct Batch {
  std::int64_t length = 0, batch = 0;
  std::vector<float> inputs;          // [length, batch, 2]
  std::vector<float> targets;         // [batch]
  std::vector<std::int64_t> first;    // per sequence: the earlier marked step
  std::vector<std::int64_t> second;   // per sequence: the later marked step

  float value(std::int64_t t, std::int64_t b) const {
    return inputs[static_cast<std::size_t>((t * batch + b) * kChannels)];
  }
  float marker(std::int64_t t, std::int64_t b) const {
    return inputs[static_cast<std::size_t>((t * batch + b) * kChannels + 1)];
  }
};

// A step uniform in [lo, hi) (hi > lo).
inline std::int64_t uniform_step(std::int64_t lo, std::int64_t hi, recur::Generator& gen) {
  const auto n = static_cast<std::uint64_t>(hi - lo);
  return lo + static_cast<std::int64_t>(gen.next_u64() % n);  // bias of n / 2^64: none that matters
}

// `batch` sequences of `length` steps (length >= 2 for halves, >= 4 for early; batch >= 1;
// std::invalid_argument otherwise). Draws per sequence, in this order: the two marked
// steps, then the values of steps 0 .. length-1.
inline Batch make_batch(std::int64_t length, std::int64_t batch, recur::Generator& gen,
                        Placement placement = Placement::halves) {
  const std::int64_t min_length = placement == Placement::halves ? 2 : 4;
  if (length < min_length)
    throw std::invalid_argument(std::string("adding problem: length must be >= ") + std::to_string(min_length) +
                                " for placement " + placement_name(placement) + ", got " + std::to_string(length));
  if (batch < 1) throw std::invalid_argument("adding problem: batch must be >= 1, got " + std::to_string(batch));
  Batch out;
  out.length = length;
  out.batch = batch;
  out.inputs.assign(static_cast<std::size_t>(length * batch * kChannels), 0.0f);
  out.targets.resize(static_cast<std::size_t>(batch));
  out.first.resize(static_cast<std::size_t>(batch));
  out.second.resize(static_cast<std::size_t>(batch));
  const std::int64_t half = length / 2;
  for (std::int64_t b = 0; b < batch; ++b) {
    const auto i = static_cast<std::size_t>(b);
    std::int64_t a = 0, c = 0;
    if (placement == Placement::halves) {
      a = uniform_step(0, half, gen);
      c = uniform_step(half, length, gen);
    } else {
      a = uniform_step(0, std::min<std::int64_t>(10, half), gen);
      c = uniform_step(0, half - 1, gen);  // one of the other half - 1 steps of [0, half)
      if (c >= a) ++c;
    }
    out.first[i] = std::min(a, c);
    out.second[i] = std::max(a, c);
    for (std::int64_t t = 0; t < length; ++t) {
      const auto at = static_cast<std::size_t>((t * batch + b) * kChannels);
      out.inputs[at] = gen.next_float();
      out.inputs[at + 1] = (t == out.first[i] || t == out.second[i]) ? 1.0f : 0.0f;
    }
    out.targets[i] = out.value(out.first[i], b) + out.value(out.second[i], b);
  }
  return out;
}

// The mean squared error of predicting `constant` for every target.
inline double constant_mse(const std::vector<float>& targets, double constant) {
  if (targets.empty()) return 0.0;
  double sum = 0;
  for (float y : targets) sum += (y - constant) * (y - constant);
  return sum / static_cast<double>(targets.size());
}

}  // namespace examples::adding
