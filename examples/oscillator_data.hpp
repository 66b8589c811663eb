#pragma once
// The data of the sequence-regression example, as plain vectors so that it can be checked
// by hand (tests/test_examples_data.cpp): noisy damped oscillators
//
//   clean x_t = A exp(-d t) sin(w t + phi),   noisy x~_t = x_t + noise_t,  noise_t ~ N(0, sigma^2)
//
// with A, d, w, phi drawn per sequence. At step t the model has read x~_0 .. x~_t and
// predicts the next clean value x_{t+1}. Two baselines that need no training:
//   last value: predict x~_t (the newest noisy reading) for x_{t+1}
//   zero:       predict 0 (the mean of the signal over the random phase)
#include <cmath>
#include <cstdint>
#include <numbers>
#include <stdexcept>
#include <string>
#include <vector>

#include <recur/core/random.hpp>

namespace examples::oscillator {

// Where A, d, w (radians per step) and phi are drawn from, uniformly.
struct Ranges {
  double amplitude_lo = 0.5, amplitude_hi = 1.5;
  double decay_lo = 0.0, decay_hi = 0.04;
  double frequency_lo = 0.15, frequency_hi = 0.6;
  double phase_lo = 0.0, phase_hi = 2 * std::numbers::pi;
};

struct Oscillator {
  double amplitude = 1, decay = 0, frequency = 1, phase = 0;
  double at(double t) const { return amplitude * std::exp(-decay * t) * std::sin(frequency * t + phase); }
};

// `count` sequences, time-major as the LSTM reads them.
struct Sequences {
  std::int64_t length = 0, count = 0;
  std::vector<float> noisy;  // [length, count]: x~_t for t = 0 .. length-1, the inputs
  std::vector<float> clean;  // [length + 1, count]: x_t for t = 0 .. length
  std::vector<Oscillator> oscillators;

  float input(std::int64_t t, std::int64_t b) const { return noisy[static_cast<std::size_t>(t * count + b)]; }
  // What step t is asked to predict: the clean x_{t+1}.
  float target(std::int64_t t, std::int64_t b) const { return clean[static_cast<std::size_t>((t + 1) * count + b)]; }
  // The targets of every step, [length, count].
  std::vector<float> targets() const {
    return {clean.begin() + static_cast<std::ptrdiff_t>(count), clean.end()};
  }
};

// length >= 1, count >= 1, noise >= 0 (std::invalid_argument otherwise). Draws per
// sequence, in this order: A, d, w, phi, then the noise of steps 0 .. length-1.
inline Sequences make_sequences(std::int64_t length, std::int64_t count, double noise, recur::Generator& gen,
                                const Ranges& r = {}) {
  if (length < 1) throw std::invalid_argument("oscillator: length must be >= 1, got " + std::to_string(length));
  if (count < 1) throw std::invalid_argument("oscillator: count must be >= 1, got " + std::to_string(count));
  if (!(noise >= 0)) throw std::invalid_argument("oscillator: noise must be >= 0, got " + std::to_string(noise));
  auto draw = [&gen](double lo, double hi) { return lo + (hi - lo) * gen.next_double(); };
  Sequences s;
  s.length = length;
  s.count = count;
  s.noisy.resize(static_cast<std::size_t>(length * count));
  s.clean.resize(static_cast<std::size_t>((length + 1) * count));
  for (std::int64_t b = 0; b < count; ++b) {
    Oscillator o;
    o.amplitude = draw(r.amplitude_lo, r.amplitude_hi);
    o.decay = draw(r.decay_lo, r.decay_hi);
    o.frequency = draw(r.frequency_lo, r.frequency_hi);
    o.phase = draw(r.phase_lo, r.phase_hi);
    s.oscillators.push_back(o);
    for (std::int64_t t = 0; t <= length; ++t)
      s.clean[static_cast<std::size_t>(t * count + b)] = static_cast<float>(o.at(static_cast<double>(t)));
    const recur::Tensor noises = recur::normal({length}, 0.0, noise, gen, recur::DType::float64);
    const double* e = noises.data<double>();
    for (std::int64_t t = 0; t < length; ++t)
      s.noisy[static_cast<std::size_t>(t * count + b)] = static_cast<float>(o.at(static_cast<double>(t)) + e[t]);
  }
  return s;
}

// The mean over every step of every sequence of (prediction - x_{t+1})^2; predictions are
// [length, count] like the inputs (std::invalid_argument when the size differs).
inline double mse_against_targets(const Sequences& s, const std::vector<float>& predictions) {
  if (predictions.size() != s.noisy.size())
    throw std::invalid_argument("oscillator: " + std::to_string(predictions.size()) + " predictions for " +
                                std::to_string(s.noisy.size()) + " targets");
  double sum = 0;
  for (std::int64_t t = 0; t < s.length; ++t)
    for (std::int64_t b = 0; b < s.count; ++b) {
      const double e = predictions[static_cast<std::size_t>(t * s.count + b)] - static_cast<double>(s.target(t, b));
      sum += e * e;
    }
  return sum / static_cast<double>(s.length * s.count);
}

// Baseline: x_{t+1} predicted by the newest noisy reading x~_t.
inline double last_value_mse(const Sequences& s) { return mse_against_targets(s, s.noisy); }

// Baseline: x_{t+1} predicted by 0.
inline double zero_mse(const Sequences& s) {
  return mse_against_targets(s, std::vector<float>(s.noisy.size(), 0.0f));
}

}  // namespace examples::oscillator
