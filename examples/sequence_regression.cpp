// Sequence regression: an LSTM learns to predict the next clean value of a noisy damped
// oscillator, x_t = A exp(-d t) sin(w t + phi) + noise, with A, d, w and phi different in
// every sequence (examples/oscillator_data.hpp).
//
// At every step the model (LSTM -> Linear on each step's output) has read the noisy values
// so far and predicts the clean value of the next step, so it must both filter the noise
// and infer the sequence's own frequency, decay and phase from what it has seen. It is
// trained with Adam on minibatches of a fixed training set (one tape per step, the mean
// squared error over all steps of the batch, full BPTT), and its train and test errors
// over training are compared with two baselines computed here: predicting the newest noisy
// value, and predicting zero. At the end an SVG shows one test sequence: the noisy input,
// the clean signal and the model's predictions.
#include <recur/recur.hpp>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "oscillator_data.hpp"
#include "progress.hpp"
#include "svg.hpp"

namespace {

using namespace recur;
namespace osc = examples::oscillator;

struct Options {
  long steps = 1000;
  long batch = 32;
  long length = 50;
  long hidden = 32;
  double lr = 1e-2;
  double noise = 0.1;
  double clip = 1.0;
  long train = 2048;
  long test = 512;
  long eval_every = 100;
  long seed = 1;
  std::string svg = "sequence_regression.svg";
};

// LSTM -> Linear on every step: one prediction per step and sequence.
class NextValueModel : public Module {
 public:
  NextValueModel(std::int64_t hidden, Generator& gen)
      : lstm_({.input_size = 1, .hidden_size = hidden}, gen), head_(hidden, 1, gen) {
    register_module("lstm", lstm_);
    register_module("head", head_);
  }
  // noisy inputs [T, B] -> predictions of the next clean values [T, B].
  Var operator()(const Tensor& inputs) const {
    const std::int64_t length = inputs.shape()[0], batch = inputs.shape()[1];
    const nn::RecurrentOutput r = lstm_(Var(reshape(inputs, {length, batch, 1})));
    return reshape(head_(r.output), {length, batch});
  }

 private:
  nn::LSTM lstm_;
  nn::Linear head_;
};

// Columns `which` of a [T, N] array, as a [T, which.size()] tensor.
Tensor columns(const std::vector<float>& values, std::int64_t rows, std::int64_t count,
               const std::vector<std::int64_t>& which) {
  const auto n = static_cast<std::int64_t>(which.size());
  std::vector<float> out(static_cast<std::size_t>(rows * n));
  for (std::int64_t t = 0; t < rows; ++t)
    for (std::int64_t j = 0; j < n; ++j)
      out[static_cast<std::size_t>(t * n + j)] =
          values[static_cast<std::size_t>(t * count + which[static_cast<std::size_t>(j)])];
  return from_vector(out, {rows, n});
}

// The model's predictions for every sequence of `s`, [length, count] as the inputs.
std::vector<float> predict(const NextValueModel& model, const osc::Sequences& s) {
  NoGrad no_grad;
  Tape tape;
  return to_vector<float>(model(from_vector(s.noisy, {s.length, s.count})).value());
}

void declare_options(CLI::App& app, Options& o) {
  const auto positive = examples::at_least(1L);
  app.add_option("--steps", o.steps, "training steps (one minibatch each)")->check(positive);
  app.add_option("--batch", o.batch, "sequences per minibatch")->check(positive);
  app.add_option("--length", o.length, "steps per sequence")->check(positive);
  app.add_option("--hidden", o.hidden, "LSTM hidden size")->check(positive);
  app.add_option("--lr", o.lr, "Adam learning rate");
  app.add_option("--noise", o.noise, "standard deviation of the noise added to the inputs")->check(examples::at_least(0.0));
  app.add_option("--clip", o.clip, "clip gradients to this global norm (0: off)");
  app.add_option("--train", o.train, "training sequences (>= --batch)");
  app.add_option("--test", o.test, "test sequences")->check(positive);
  app.add_option("--eval-every", o.eval_every, "evaluate train and test error every N steps")->check(positive);
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("--svg", o.svg, "picture of one test sequence (\"\": none)");
  app.final_callback([&o] {
    if (o.train < o.batch) throw CLI::ValidationError("--train", "must be >= --batch (" + std::to_string(o.batch) + ")");
  });
}

int run(const Options& o) {
  Generator data_gen(static_cast<std::uint64_t>(o.seed));
  const osc::Sequences train = osc::make_sequences(o.length, o.train, o.noise, data_gen);
  const osc::Sequences test = osc::make_sequences(o.length, o.test, o.noise, data_gen);
  const std::vector<float> train_targets = train.targets();

  Generator init_gen(static_cast<std::uint64_t>(o.seed) + 1), shuffle_gen(static_cast<std::uint64_t>(o.seed) + 2);
  const NextValueModel model(o.hidden, init_gen);
  optim::Adam adam(model.named_parameters(), {.lr = o.lr});

  const double last_train = osc::last_value_mse(train), last_test = osc::last_value_mse(test);
  const double zero_train = osc::zero_mse(train), zero_test = osc::zero_mse(test);
  std::printf("recur sequence regression: %ld train / %ld test noisy damped oscillators of %ld steps, noise %g\n",
              o.train, o.test, o.length, o.noise);
  std::printf("model: LSTM %ld -> Linear on every step; Adam lr %g, batch %ld, %ld steps\n", o.hidden, o.lr, o.batch,
              o.steps);
  std::printf("baselines (train / test MSE): last noisy value %.4f / %.4f, zero %.4f / %.4f\n\n", last_train,
              last_test, zero_train, zero_test);

  std::vector<double> eval_steps, train_curve, test_curve;
  auto evaluate = [&](long step) {
    eval_steps.push_back(static_cast<double>(step));
    train_curve.push_back(osc::mse_against_targets(train, predict(model, train)));
    test_curve.push_back(osc::mse_against_targets(test, predict(model, test)));
    std::printf("step %5ld  train MSE %.4f  test MSE %.4f\n", step, train_curve.back(), test_curve.back());
    std::fflush(stdout);
  };
  evaluate(0);

  // Minibatches walk through a fresh random order of the training set every epoch.
  std::vector<std::int64_t> order(static_cast<std::size_t>(o.train));
  std::iota(order.begin(), order.end(), 0);
  std::size_t next = order.size();
  examples::Progress progress(o.steps, "seq", o.steps + 1);  // the bar only on a terminal
  for (long step = 1; step <= o.steps; ++step) {
    if (next + static_cast<std::size_t>(o.batch) > order.size()) {
      for (std::size_t i = order.size() - 1; i > 0; --i)  // Fisher-Yates
        std::swap(order[i], order[static_cast<std::size_t>(shuffle_gen.next_u64() % (i + 1))]);
      next = 0;
    }
    const std::vector<std::int64_t> which(order.begin() + static_cast<std::ptrdiff_t>(next),
                                          order.begin() + static_cast<std::ptrdiff_t>(next) + o.batch);
    next += static_cast<std::size_t>(o.batch);

    Tape tape;  // one tape per step
    const Var prediction = model(columns(train.noisy, o.length, o.train, which));
    const Var loss = mse(prediction, Var(columns(train_targets, o.length, o.train, which)));
    tape.backward(loss);
    if (o.clip > 0) optim::clip_grad_norm(model.named_parameters(), o.clip);
    adam.step();
    adam.zero_grad();
    progress.update(step, loss.value().item(), static_cast<double>(o.batch));
    if (step % o.eval_every == 0 || step == o.steps) {
      progress.interrupt();
      evaluate(step);
    }
  }
  const double seconds = progress.seconds();

  std::printf("\n%-24s %10s %10s\n", "predictor of x[t+1]", "train MSE", "test MSE");
  std::printf("%-24s %10.4f %10.4f\n", "zero", zero_train, zero_test);
  std::printf("%-24s %10.4f %10.4f\n", "last noisy value x~[t]", last_train, last_test);
  std::printf("%-24s %10.4f %10.4f\n", "LSTM", train_curve.back(), test_curve.back());
  std::printf("LSTM test MSE = %.2f x the last-value baseline, %.2f x the zero baseline (%.1f s of training)\n",
              test_curve.back() / last_test, test_curve.back() / zero_test, seconds);

  if (!o.svg.empty()) {
    // Test sequence 0: the input x~_t at t, the clean x_t, the prediction of x_{t+1} at t + 1.
    const std::vector<float> predictions = predict(model, test);
    std::vector<double> noisy, clean, predicted;
    for (std::int64_t t = 0; t < o.length; ++t) {
      noisy.push_back(test.input(t, 0));
      predicted.push_back(predictions[static_cast<std::size_t>(t * o.test)]);
    }
    for (std::int64_t t = 0; t <= o.length; ++t) clean.push_back(test.clean[static_cast<std::size_t>(t * o.test)]);
    examples::svg::LineChart chart;
    chart.title = "recur sequence regression: a test sequence and the LSTM's predictions";
    chart.x_label = "step t";
    chart.y_label = "x";
    chart.width = 800;
    chart.add_series("noisy input", noisy, 0.0);
    chart.add_series("clean signal", clean, 0.0);
    chart.add_series("prediction of x[t+1]", predicted, 1.0);
    chart.write(o.svg);
    std::printf("test sequence 0 with the predictions in %s\n", o.svg.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main(
      argc, argv, "recur_sequence_regression",
      "Trains an LSTM to predict the next clean value of noisy damped oscillators with random amplitude, decay, "
      "frequency and phase, compares it with the last-noisy-value and zero baselines, and draws one test sequence "
      "with the predictions as an SVG.",
      declare_options, run);
}
