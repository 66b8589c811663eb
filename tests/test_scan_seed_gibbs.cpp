// The Gibbs sampling example of Theano's scan guide (seed 002): an RBM whose W, bvis and
// bhid are shared variables passed as non_sequences, trng = RandomStreams(1234), ten steps
// of OneStep with two binomial draws each, values[-1]. The draws are checked against a
// hand loop on core/random's Generator.
#include <gtest/gtest.h>

#include <cstring>

#include "expect_error.hpp"

#include <recur/recur.hpp>

namespace recur {
namespace {

using S = std::span<const Var>;
constexpr DType f64 = DType::float64;
constexpr std::int64_t kVisible = 6, kHidden = 4, kSteps = 10;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.clone().raw_data(), b.clone().raw_data(), a.nbytes()) == 0;
}

struct Rbm {
  Generator init{2024};
  Shared W{uniform({kVisible, kHidden}, -1.0, 1.0, init, f64), "W"};
  Shared bvis{uniform({kVisible}, -0.5, 0.5, init, f64), "bvis"};
  Shared bhid{uniform({kHidden}, -0.5, 0.5, init, f64), "bhid"};
  Tensor sample = bernoulli({kVisible}, 0.5, init, f64);
  RandomStream trng{1234, "trng"};

  // OneStep(vsample, W, bvis, bhid) of the guide; extra arguments (the stream's state under
  // strict) are ignored.
  StepResult one_step(S a) {
    const Var &vsample = a[0], &w = a[1], &bv = a[2], &bh = a[3];
    Var hmean = sigmoid(matmul(vsample, w) + bh);
    Var hsample = trng.binomial(hmean);
    Var vmean = sigmoid(matmul(hsample, transpose(w)) + bv);
    return trng.binomial(vmean, f64);
  }

  // values, updates = scan(OneStep, outputs_info=sample, non_sequences=[W, bvis, bhid], n_steps=10)
  ScanResult gibbs10(bool strict = false, bool pass_stream = false) {
    std::vector<Var> non_sequences{Var(W), Var(bvis), Var(bhid)};
    if (pass_stream) non_sequences.push_back(Var(trng.state()));
    return scan([&](S a) { return one_step(a); },
                {.outputs_info = {Var(sample)}, .non_sequences = non_sequences, .n_steps = kSteps, .strict = strict});
  }

  // The same chain on Tensors with one Generator: 2 draws per step.
  std::vector<Tensor> hand_loop(Generator& g) const {
    std::vector<Tensor> values;
    Tensor v = sample;
    for (std::int64_t t = 0; t < kSteps; ++t) {
      Tensor h = bernoulli(sigmoid(matmul(v, W.value()) + bhid.value()), g);
      v = bernoulli(sigmoid(matmul(h, transpose(W.value())) + bvis.value()), g);
      values.push_back(v);
    }
    return values;
  }
};

void expect_chain(const Var& values, const std::vector<Tensor>& expected) {
  ASSERT_EQ(values.shape(), (Shape{kSteps, kVisible}));
  for (std::int64_t t = 0; t < kSteps; ++t)
    EXPECT_TRUE(same_bits(values.value()[t], expected[t])) << "step " << t << ": " << values.value()[t];
}

TEST(SeedTheano, GibbsSamplingWithSharedRandomStream) {
  Rbm rbm;
  Generator g(1234);
  const std::vector<Tensor> first = rbm.hand_loop(g);  // draws 1..20
  const std::vector<Tensor> second = rbm.hand_loop(g);  // draws 21..40

  // Without applying the updates the same 10 samples come again.
  for (int call = 0; call < 2; ++call) {
    Tape tape;
    auto [values, updates, steps, capture] = rbm.gibbs10();
    // Captured: the draws of steps 2..9 come from the program's replay, not the step function.
    // (Where capture is automatic, 10 steps of 24 elements are recorded: too small to pay.)
    if (default_capture() == Capture::required) {
      EXPECT_TRUE(capture.captured) << capture.reason;
    }
    expect_chain(values[0], first);
    EXPECT_TRUE(same_bits(index(values[0], 0, -1).value(), first.back()));  // gibbs10(sample) = values[-1]
    EXPECT_TRUE(same_bits(rbm.trng.state().value(), Generator(1234).state()));
  }
  // With the updates applied, new ones: the stream's state is that of 20 draws.
  {
    Tape tape;
    auto r = rbm.gibbs10();
    apply_updates(r.updates);
    Generator twenty(1234);
    rbm.hand_loop(twenty);
    EXPECT_TRUE(same_bits(rbm.trng.state().value(), twenty.state()));
  }
  Tape tape;
  auto r = rbm.gibbs10();
  expect_chain(r[0], second);
  bool differs = false;
  for (std::int64_t t = 0; t < kSteps; ++t) differs = differs || !same_bits(second[t], first[t]);
  EXPECT_TRUE(differs);
}

// strict=True with non_sequences=[W, bvis, bhid]: the stream's state is one more shared
// variable the step reads, so it must be passed too.
TEST(SeedTheano, GibbsSamplingStrict) {
  Rbm rbm;
  Tape tape;
  testing::expect_error<ValueError>([&] { rbm.gibbs10(true); }, {"strict", "'trng'"});
  EXPECT_TRUE(same_bits(rbm.trng.state().value(), Generator(1234).state()));
  auto r = rbm.gibbs10(true, true);
  Generator g(1234);
  expect_chain(r[0], rbm.hand_loop(g));
  // Leaving out W fails as the guide says.
  testing::expect_error<ValueError>(
      [&] {
        scan([&](S a) { return rbm.trng.binomial(sigmoid(matmul(a[0], Var(rbm.W)))); },
             {.outputs_info = {Var(rbm.sample)}, .non_sequences = {Var(rbm.trng.state())}, .n_steps = 2,
              .strict = true});
      },
      {"strict"});
}

}  // namespace
}  // namespace recur
