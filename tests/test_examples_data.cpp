// The data and baselines of two example programs: the adding problem
// (examples/adding_data.hpp) and the noisy oscillators of the sequence regression
// (examples/oscillator_data.hpp). Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "../examples/adding_data.hpp"
#include "../examples/oscillator_data.hpp"

namespace {

namespace adding = examples::adding;
namespace osc = examples::oscillator;

// Marker count, marked steps and target of every sequence, read back from the inputs.
void expect_two_markers_and_their_sum(const adding::Batch& b) {
  for (std::int64_t s = 0; s < b.batch; ++s) {
    std::vector<std::int64_t> marked;
    for (std::int64_t t = 0; t < b.length; ++t) {
      const float m = b.marker(t, s);
      ASSERT_TRUE(m == 0.0f || m == 1.0f) << "sequence " << s << " step " << t;
      if (m == 1.0f) marked.push_back(t);
      EXPECT_GE(b.value(t, s), 0.0f);
      EXPECT_LT(b.value(t, s), 1.0f);
    }
    ASSERT_EQ(marked.size(), 2u) << "sequence " << s;
    const auto i = static_cast<std::size_t>(s);
    EXPECT_EQ(marked[0], b.first[i]);
    EXPECT_EQ(marked[1], b.second[i]);
    EXPECT_EQ(b.targets[i], b.value(marked[0], s) + b.value(marked[1], s)) << "sequence " << s;
  }
}

TEST(ExamplesAddingData, HalvesMarkOneStepInEachHalfAndTheTargetIsTheirSum) {
  recur::Generator gen(3);
  // T = 13: halves [0, 6) and [6, 13).
  const adding::Batch b = adding::make_batch(13, 200, gen, adding::Placement::halves);
  ASSERT_EQ(b.inputs.size(), 13u * 200u * 2u);
  ASSERT_EQ(b.targets.size(), 200u);
  expect_two_markers_and_their_sum(b);
  std::vector<int> first_seen(6), second_seen(13);
  for (std::size_t s = 0; s < 200; ++s) {
    ASSERT_GE(b.first[s], 0);
    ASSERT_LT(b.first[s], 6);
    ASSERT_GE(b.second[s], 6);
    ASSERT_LT(b.second[s], 13);
    ++first_seen[static_cast<std::size_t>(b.first[s])];
    ++second_seen[static_cast<std::size_t>(b.second[s])];
  }
  // 200 draws over 6 and 7 places: every place is hit (each missed with probability < 1e-12).
  for (int n : first_seen) EXPECT_GT(n, 0);
  for (std::size_t t = 6; t < 13; ++t) EXPECT_GT(second_seen[t], 0) << t;
}

TEST(ExamplesAddingData, EarlyMarksTwoStepsOfTheFirstHalfOneOfThemAmongTheFirstTen) {
  recur::Generator gen(4);
  // T = 40: both marks in [0, 20), at least one in [0, 10).
  const adding::Batch b = adding::make_batch(40, 300, gen, adding::Placement::early);
  expect_two_markers_and_their_sum(b);
  std::int64_t latest = 0;
  for (std::size_t s = 0; s < 300; ++s) {
    EXPECT_LT(b.first[s], b.second[s]);  // two different steps
    EXPECT_LT(b.first[s], 10);
    EXPECT_LT(b.second[s], 20);
    latest = std::max(latest, b.second[s]);
  }
  EXPECT_GE(latest, 10);  // the second mark is not confined to the first ten
  // T = 4: half = 2, so the marks are exactly steps 0 and 1.
  const adding::Batch tiny = adding::make_batch(4, 5, gen, adding::Placement::early);
  for (std::size_t s = 0; s < 5; ++s) {
    EXPECT_EQ(tiny.first[s], 0);
    EXPECT_EQ(tiny.second[s], 1);
  }
}

TEST(ExamplesAddingData, SameSeedSameBatch) {
  recur::Generator a(9), b(9);
  const adding::Batch x = adding::make_batch(20, 4, a), y = adding::make_batch(20, 4, b);
  EXPECT_EQ(x.inputs, y.inputs);
  EXPECT_EQ(x.targets, y.targets);
  const adding::Batch z = adding::make_batch(20, 4, a);  // the generator moved on
  EXPECT_NE(x.inputs, z.inputs);
}

TEST(ExamplesAddingData, ConstantBaseline) {
  // (0.5-1)^2 + (1-1)^2 + (1.5-1)^2 + (2-1)^2 = 0.25 + 0 + 0.25 + 1 = 1.5; / 4 = 0.375.
  EXPECT_DOUBLE_EQ(adding::constant_mse({0.5f, 1.0f, 1.5f, 2.0f}, 1.0), 0.375);
  // Around 0: 0.25 + 1 + 2.25 + 4 = 7.5; / 4 = 1.875.
  EXPECT_DOUBLE_EQ(adding::constant_mse({0.5f, 1.0f, 1.5f, 2.0f}, 0.0), 1.875);
  // On many sequences, predicting 1 scores the variance of U(0,1) + U(0,1): 1/6. The
  // estimate over 20000 targets has a standard deviation of sqrt((1/15 - 1/36) / 20000) =
  // 0.0014, so 0.006 is over four of them.
  recur::Generator gen(5);
  for (adding::Placement p : {adding::Placement::halves, adding::Placement::early}) {
    const adding::Batch b = adding::make_batch(24, 20000, gen, p);
    EXPECT_NEAR(adding::constant_mse(b.targets, 1.0), adding::kConstantBaseline, 0.006) << adding::placement_name(p);
  }
}

TEST(ExamplesAddingData, RejectsBadArguments) {
  recur::Generator gen(1);
  EXPECT_THROW(adding::make_batch(1, 4, gen), std::invalid_argument);
  EXPECT_THROW(adding::make_batch(3, 4, gen, adding::Placement::early), std::invalid_argument);
  EXPECT_THROW(adding::make_batch(10, 0, gen), std::invalid_argument);
  EXPECT_EQ(adding::parse_placement("halves"), adding::Placement::halves);
  EXPECT_EQ(adding::parse_placement("early"), adding::Placement::early);
  EXPECT_THROW(adding::parse_placement("middle"), std::invalid_argument);
}

// Two steps of one sequence, made by hand:
//   noisy inputs  x~_0 = 0.5, x~_1 = 1.0;  clean x_0 = 0, x_1 = 0.8, x_2 = 0.6
// Targets are x_1 = 0.8 and x_2 = 0.6.
osc::Sequences hand_made() {
  osc::Sequences s;
  s.length = 2;
  s.count = 1;
  s.noisy = {0.5f, 1.0f};
  s.clean = {0.0f, 0.8f, 0.6f};
  return s;
}

TEST(ExamplesOscillatorData, BaselinesOnAHandMadeSequence) {
  const osc::Sequences s = hand_made();
  EXPECT_EQ(s.targets(), (std::vector<float>{0.8f, 0.6f}));
  // Last value: (0.5 - 0.8)^2 + (1.0 - 0.6)^2 = 0.09 + 0.16 = 0.25; / 2 = 0.125.
  EXPECT_NEAR(osc::last_value_mse(s), 0.125, 1e-6);
  // Zero: 0.64 + 0.36 = 1; / 2 = 0.5.
  EXPECT_NEAR(osc::zero_mse(s), 0.5, 1e-6);
  // Predictions 0.7 and 0.7: 0.01 + 0.01 = 0.02; / 2 = 0.01.
  EXPECT_NEAR(osc::mse_against_targets(s, {0.7f, 0.7f}), 0.01, 1e-6);
  EXPECT_THROW(osc::mse_against_targets(s, {0.7f}), std::invalid_argument);
}

TEST(ExamplesOscillatorData, TimeMajorLayout) {
  // Two sequences of two steps: index t * count + b. Sequence 1's targets are clean[3], clean[5].
  osc::Sequences s;
  s.length = 2;
  s.count = 2;
  s.noisy = {1, 2, 3, 4};
  s.clean = {10, 20, 30, 40, 50, 60};
  EXPECT_EQ(s.input(1, 0), 3.0f);
  EXPECT_EQ(s.target(0, 1), 40.0f);
  EXPECT_EQ(s.target(1, 1), 60.0f);
  // Last value: (1-30)^2 + (2-40)^2 + (3-50)^2 + (4-60)^2 = 841 + 1444 + 2209 + 3136 = 7630; / 4.
  EXPECT_NEAR(osc::last_value_mse(s), 1907.5, 1e-9);
}

TEST(ExamplesOscillatorData, CleanValuesFollowTheFormulaAndNoNoiseMeansNoisyEqualsClean) {
  recur::Generator gen(2);
  const osc::Ranges r;
  const osc::Sequences s = osc::make_sequences(30, 8, 0.0, gen, r);
  ASSERT_EQ(s.noisy.size(), 30u * 8u);
  ASSERT_EQ(s.clean.size(), 31u * 8u);
  ASSERT_EQ(s.oscillators.size(), 8u);
  for (std::int64_t b = 0; b < 8; ++b) {
    const osc::Oscillator& o = s.oscillators[static_cast<std::size_t>(b)];
    EXPECT_GE(o.amplitude, r.amplitude_lo);
    EXPECT_LT(o.amplitude, r.amplitude_hi);
    EXPECT_GE(o.decay, r.decay_lo);
    EXPECT_LT(o.decay, r.decay_hi);
    EXPECT_GE(o.frequency, r.frequency_lo);
    EXPECT_LT(o.frequency, r.frequency_hi);
    for (std::int64_t t = 0; t <= 30; ++t) {
      const double expected = o.amplitude * std::exp(-o.decay * static_cast<double>(t)) *
                              std::sin(o.frequency * static_cast<double>(t) + o.phase);
      EXPECT_NEAR(s.clean[static_cast<std::size_t>(t * 8 + b)], expected, 1e-6);
      if (t < 30) {
        EXPECT_EQ(s.input(t, b), s.clean[static_cast<std::size_t>(t * 8 + b)]);
      }
    }
  }
}

TEST(ExamplesOscillatorData, LastValueBaselineOfAConstantSignalIsTheNoiseVariance) {
  // w = 0 and d = 0: x_t = A sin(phi) at every step, so x~_t - x_{t+1} is the noise alone
  // and its mean square is sigma^2 = 0.04. Over 40000 draws the estimate's standard
  // deviation is 0.04 * sqrt(2 / 40000) = 0.0003.
  osc::Ranges constant;
  constant.decay_hi = 0;
  constant.frequency_lo = constant.frequency_hi = 0;
  recur::Generator gen(6);
  const osc::Sequences s = osc::make_sequences(40, 1000, 0.2, gen, constant);
  EXPECT_NEAR(osc::last_value_mse(s), 0.04, 0.0015);
  // Zero baseline: the mean of A^2 sin^2(phi): E[A^2] = (1.5^3 - 0.5^3) / 3 = 13/12 for A
  // in U(0.5, 1.5), E[sin^2] = 1/2: 13/24 = 0.5417, up to the spread of 1000 sequences.
  EXPECT_NEAR(osc::zero_mse(s), 13.0 / 24.0, 0.05);
}

TEST(ExamplesOscillatorData, RejectsBadArguments) {
  recur::Generator gen(1);
  EXPECT_THROW(osc::make_sequences(0, 4, 0.1, gen), std::invalid_argument);
  EXPECT_THROW(osc::make_sequences(5, 0, 0.1, gen), std::invalid_argument);
  EXPECT_THROW(osc::make_sequences(5, 4, -0.1, gen), std::invalid_argument);
}

}  // namespace
