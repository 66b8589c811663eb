// The adding problem (Hochreiter and Schmidhuber, 1997): what truncated backpropagation
// through time can and cannot learn.
//
// Each sequence has `length` steps of two channels, a value uniform in [0, 1) and a marker
// that is 1 at exactly two steps; the target is the sum of the two marked values, read
// from the LSTM's last output by a Linear head (examples/adding_data.hpp). Always answering
// 1 scores a mean squared error of 1/6 = 0.167. Two placements of the marks:
//   early:  both in the first half (as in the 1997 paper), so at least length/2 steps
//           before the end, where the loss is;
//   halves: one in each half (the usual formulation of later papers).
//
// The same model (same initial weights, same batches) is trained once per placement and
// truncation: "full" backpropagates through all `length` steps; a number k sets the
// layer's truncate_gradient = k (scan's Theano option), so the backward pass covers only
// the last k steps. The forward pass still reads the whole sequence. Before training each
// run measures where the loss's gradient with respect to the inputs is nonzero, and the
// gradient on the marker channel's input weights. What it shows (defaults, measured):
//   early, k = 10 < length/2: no mark is ever in reach of the gradient, the marker weights
//     get exactly zero gradient, and the model stays at the baseline, while full BPTT
//     learns the task (test MSE well below 0.01).
//   halves, k = 10: the later mark is in reach in about k / (length/2) of the sequences.
//     What the model learns there, to add a marked value into its cell, is done by the
//     same weights at every step, so it stores the earlier mark too: truncation slows
//     learning down but does not prevent it. Cutting the gradient off from the first mark
//     is not enough; every mark must be out of reach.
// The test error over training goes to an SVG picture, one chart per placement.
#include <recur/recur.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "adding_data.hpp"
#include "example_main.hpp"
#include "progress.hpp"
#include "svg.hpp"

namespace {

using namespace recur;
namespace adding = examples::adding;

struct Options {
  long steps = 3000;
  long length = 50;
  long batch = 64;
  long hidden = 32;
  double lr = 3e-3;
  double clip = 1.0;
  double forget_bias = 5.0;  // a long memory from the start: full BPTT then learns the early marks quickly
  std::vector<std::string> truncations{"full", "10"};
  std::vector<std::string> markers{"early", "halves"};
  long test = 1000;
  long eval_every = 250;
  long seed = 1;
  std::string svg = "adding_problem.svg";
};

// LSTM -> Linear on the last step's output: one number per sequence.
class AddingModel : public Module {
 public:
  AddingModel(std::int64_t hidden, std::int64_t truncate_gradient, double forget_bias, Generator& gen)
      : lstm_({.input_size = adding::kChannels, .hidden_size = hidden, .truncate_gradient = truncate_gradient}, gen),
        head_(hidden, 1, gen) {
    register_module("lstm", lstm_);
    register_module("head", head_);
    // The forget gate's rows of bias_ih (PyTorch's gate order i, f, g, o) start at
    // forget_bias instead of near 0: a cell then keeps its content by default.
    Shared bias = parameter("lstm.bias_ih_l0");
    Tensor b = bias.mutable_value();
    for (std::int64_t j = hidden; j < 2 * hidden; ++j) b.data<float>()[j] = static_cast<float>(forget_bias);
  }
  // inputs [T, B, 2] -> predictions [B].
  Var operator()(const Var& inputs) const {
    const std::int64_t batch = inputs.shape()[1];
    const nn::RecurrentOutput r = lstm_(inputs);
    const Var last = reshape(r.h_n, {batch, lstm_.options().hidden_size});  // = output at step T-1
    return reshape(head_(last), {batch});
  }

 private:
  nn::LSTM lstm_;
  nn::Linear head_;
};

Tensor inputs_of(const adding::Batch& b) { return from_vector(b.inputs, {b.length, b.batch, adding::kChannels}); }
Tensor targets_of(const adding::Batch& b) { return from_vector(b.targets, {b.batch}); }

// "full" -> -1 (scan's "no truncation"); a number k >= 1 -> k.
std::int64_t parse_truncation(const std::string& text) {
  if (text == "full") return -1;
  std::int64_t k = 0;
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, k);
  if (error != std::errc() || stop != end || k < 1)
    throw std::invalid_argument("\"" + text + "\" is neither \"full\" nor a number >= 1");
  return k;
}

std::string truncation_name(std::int64_t k) { return k < 0 ? "full" : std::to_string(k); }

double test_mse(const AddingModel& model, const Tensor& inputs, const Tensor& targets) {
  NoGrad no_grad;
  Tape tape;
  return mse(model(Var(inputs)).value(), targets).item();
}

// Where the loss's gradient goes on one batch, before training.
struct Reach {
  std::int64_t first_step = 0;  // the gradient w.r.t. the inputs is nonzero at steps [first_step, T)
  double marker_weights = 0;    // the norm of the gradient on the marker channel's input weights
};
Reach gradient_reach(const AddingModel& model, const adding::Batch& b) {
  Tape tape;
  const Var x = tape.variable(inputs_of(b));
  tape.backward(mse(model(x), Var(targets_of(b))));
  const Tensor g = x.grad();
  Reach r{.first_step = b.length};
  for (std::int64_t t = b.length - 1; t >= 0; --t) {
    if (sum(g[t] * g[t]).item() == 0.0) break;
    r.first_step = t;
  }
  const Tensor marker_column = index(model.parameter("lstm.weight_ih_l0").grad(), 1, 1);  // [4H]
  r.marker_weights = std::sqrt(sum(marker_column * marker_column).item());
  model.zero_grad();
  return r;
}

struct Run {
  adding::Placement placement = adding::Placement::halves;
  std::int64_t truncation = -1;
  std::vector<double> eval_steps, test_errors;
  double baseline = 0;  // predicting 1 on the same test set
  double seconds = 0;
};

Run train(const Options& o, adding::Placement placement, std::int64_t truncation, const adding::Batch& test_set) {
  const Tensor test_inputs = inputs_of(test_set), test_targets = targets_of(test_set);
  // Every run starts from the same weights and sees the same batches.
  Generator init_gen(static_cast<std::uint64_t>(o.seed));
  Generator data_gen(static_cast<std::uint64_t>(o.seed) + 1);
  const AddingModel model(o.hidden, truncation, o.forget_bias, init_gen);
  optim::Adam adam(model.named_parameters(), {.lr = o.lr});

  Run run;
  run.placement = placement;
  run.truncation = truncation;
  Generator probe_gen(static_cast<std::uint64_t>(o.seed) + 2);
  const Reach probe = gradient_reach(model, adding::make_batch(o.length, 64, probe_gen, placement));
  const std::int64_t reach = probe.first_step;
  long first_in_reach = 0, second_in_reach = 0;
  for (std::int64_t b = 0; b < test_set.batch; ++b) {
    first_in_reach += test_set.first[static_cast<std::size_t>(b)] >= reach;
    second_in_reach += test_set.second[static_cast<std::size_t>(b)] >= reach;
  }
  std::printf("\n== markers %s, truncation %s: the loss's gradient reaches input steps %lld..%ld of 0..%ld, and "
              "%.3g on the marker's input weights\n   in reach in the test set: the earlier mark in %.0f%% of "
              "sequences, the later in %.0f%%\n",
              adding::placement_name(placement), truncation_name(truncation).c_str(), static_cast<long long>(reach),
              o.length - 1, o.length - 1, probe.marker_weights,
              100.0 * static_cast<double>(first_in_reach) / static_cast<double>(test_set.batch),
              100.0 * static_cast<double>(second_in_reach) / static_cast<double>(test_set.batch));

  auto evaluate = [&](long step) {
    const double e = test_mse(model, test_inputs, test_targets);
    run.eval_steps.push_back(static_cast<double>(step));
    run.test_errors.push_back(e);
    return e;
  };
  std::printf("step %5d  test MSE %.4f\n", 0, evaluate(0));
  examples::Progress progress(o.steps, "seq", o.steps + 1);  // the bar only on a terminal
  double train_sum = 0;
  long train_count = 0;
  for (long step = 1; step <= o.steps; ++step) {
    const adding::Batch b = adding::make_batch(o.length, o.batch, data_gen, placement);
    Tape tape;  // one tape per step
    const Var loss = mse(model(Var(inputs_of(b))), Var(targets_of(b)));
    tape.backward(loss);
    if (o.clip > 0) optim::clip_grad_norm(model.named_parameters(), o.clip);
    adam.step();
    adam.zero_grad();
    const double l = loss.value().item();
    train_sum += l;
    ++train_count;
    progress.update(step, l, static_cast<double>(o.batch));
    if (step % o.eval_every == 0 || step == o.steps) {
      progress.interrupt();
      const double e = evaluate(step);
      std::printf("step %5ld  test MSE %.4f  (train MSE %.4f over the last %ld steps)\n", step, e,
                  train_sum / static_cast<double>(train_count), train_count);
      std::fflush(stdout);
      train_sum = 0;
      train_count = 0;
    }
  }
  run.seconds = progress.seconds();
  return run;
}

void declare_options(CLI::App& app, Options& o) {
  const auto positive = examples::at_least(1L);
  app.add_option("--steps", o.steps, "training steps per truncation (one fresh batch each)")->check(positive);
  app.add_option("--length", o.length, "sequence length T")->check(examples::at_least(4L));
  app.add_option("--batch", o.batch, "sequences per step")->check(positive);
  app.add_option("--hidden", o.hidden, "LSTM hidden size")->check(positive);
  app.add_option("--lr", o.lr, "Adam learning rate");
  app.add_option("--clip", o.clip, "clip gradients to this global norm (0: off)");
  app.add_option("--forget-bias", o.forget_bias, "initial bias of the LSTM's forget gate (bias_ih rows H..2H)");
  app.add_option("--truncations", o.truncations, "runs: \"full\" or k (backpropagate through the last k steps)")
      ->delimiter(',')
      ->check(examples::parses_with(parse_truncation, "full|K"));
  app.add_option("--markers", o.markers,
                 "marker placements, each trained with every truncation: \"halves\" (one per half) or \"early\" "
                 "(both in the first half, as in the 1997 paper)")
      ->delimiter(',')
      ->check(examples::parses_with(adding::parse_placement, "halves|early"));
  app.add_option("--test", o.test, "test sequences")->check(positive);
  app.add_option("--eval-every", o.eval_every, "test every N steps")->check(positive);
  app.add_option("--seed", o.seed, "random seed");
  app.add_option("--svg", o.svg, "test-error curves written here (\"\": none)");
}

int run(const Options& o) {
  std::vector<std::int64_t> truncations;
  std::vector<adding::Placement> placements;
  for (const std::string& t : o.truncations) truncations.push_back(parse_truncation(t));
  for (const std::string& m : o.markers) placements.push_back(adding::parse_placement(m));

  std::printf("recur adding problem: T = %ld, LSTM %ld, Adam lr %g, batch %ld, %ld steps per run, %ld test sequences\n",
              o.length, o.hidden, o.lr, o.batch, o.steps, o.test);
  std::vector<Run> runs;
  std::vector<double> baselines;
  for (adding::Placement placement : placements) {
    Generator test_gen(static_cast<std::uint64_t>(o.seed) + 1000);
    const adding::Batch test_set = adding::make_batch(o.length, o.test, test_gen, placement);
    baselines.push_back(adding::constant_mse(test_set.targets, 1.0));
    std::printf("\n==== markers %s: baseline (always predict 1) test MSE %.4f (expected 1/6 = %.4f)\n",
                adding::placement_name(placement), baselines.back(), adding::kConstantBaseline);
    for (std::int64_t k : truncations) {
      runs.push_back(train(o, placement, k, test_set));
      runs.back().baseline = baselines.back();
    }
  }

  std::printf("\n%-8s %-11s %-15s %-15s %-15s %s\n", "markers", "truncation", "backprop steps", "final test MSE",
              "baseline", "time");
  for (const Run& r : runs) {
    const long through = r.truncation < 0 ? o.length : std::min<long>(r.truncation, o.length);
    std::printf("%-8s %-11s %-15ld %-15.4f %.4f (x%.2f)  %.1f s\n", adding::placement_name(r.placement),
                truncation_name(r.truncation).c_str(), through, r.test_errors.back(), r.baseline,
                r.test_errors.back() / r.baseline, r.seconds);
  }
  if (std::any_of(truncations.begin(), truncations.end(), [](std::int64_t k) { return k > 0; }))
    std::printf("early: a truncation k <= T/2 never reaches a mark, so nothing about the marks can be learned.\n"
                "halves: the later mark is within the last k steps in about k/(T/2) of the sequences; what is "
                "learned there\n(add a marked value into the cell) is done by the same weights at every step and "
                "stores the earlier mark too.\n");

  if (!o.svg.empty()) {
    // One chart per marker placement, one above the other.
    constexpr double width = 640, height = 360;
    examples::svg::Document doc(width, height * static_cast<double>(placements.size()));
    for (std::size_t p = 0; p < placements.size(); ++p) {
      examples::svg::LineChart chart;
      chart.title = "adding problem, T = " + std::to_string(o.length) + ", markers " +
                    adding::placement_name(placements[p]) + ": test MSE";
      chart.x_label = "training step";
      chart.y_label = "test MSE";
      for (const Run& r : runs)
        if (r.placement == placements[p] && r.eval_steps.size() > 1)  // from the first evaluation after step 0,
          chart.add_series("truncation " + truncation_name(r.truncation),  // whose error is far above the rest
                           {r.eval_steps.begin() + 1, r.eval_steps.end()},
                           {r.test_errors.begin() + 1, r.test_errors.end()});
      chart.add_series("predict 1", {0.0, static_cast<double>(o.steps)}, {baselines[p], baselines[p]});
      chart.draw(doc, {0, height * static_cast<double>(p), width, height});
    }
    doc.write(o.svg);
    std::printf("\ntest-error curves in %s\n", o.svg.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main(
      argc, argv, "recur_adding_problem",
      "Trains an LSTM on the adding problem (Hochreiter and Schmidhuber 1997) with full BPTT and with truncated BPTT, "
      "and compares their test error with the 0.167 of always predicting 1. With both marks early, a truncation that "
      "reaches neither cannot learn the task; with one mark per half, the later mark is sometimes in reach and "
      "truncated BPTT learns anyway, more slowly.",
      declare_options, run);
}
