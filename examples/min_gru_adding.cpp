// A minGRU (Feng et al. 2024, "Were RNNs all we needed?") beside an LSTM on the adding
// problem (examples/adding_data.hpp: two channels, value and marker; the target is the
// sum of the two marked values; always answering 1 scores 1/6).
//
// A minGRU layer's gate and candidate depend on the input only,
//   z_t = sigmoid(W_z x_t + b_z),  c_t = W_h x_t + b_h,  h_t = (1 - z_t) h_{t-1} + z_t c_t,
// so its whole time loop is one elementwise linear recurrence h_t = a_t h_{t-1} + b_t
// (a = 1 - z, b = z c): recur::linear_recurrence runs it as one op, forward and backward,
// instead of T recorded steps. Two layers read the sequence, a Linear head the last step.
// Both models see the same batches; the table at the end gives their test error and time.
#include <recur/recur.hpp>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "adding_data.hpp"
#include "cli.hpp"

namespace {

using namespace recur;
namespace adding = examples::adding;

struct Options {
  long steps = 1500;
  long length = 50;
  long batch = 64;
  long hidden = 32;
  double lr = 3e-3;
  double clip = 1.0;
  double gate_bias = -3.0;  // minGRU's z starts near 0: a layer keeps its state by default
  std::string markers = "halves";
  long test = 1000;
  long eval_every = 250;
  long seed = 1;
};

// One minGRU layer: [T, B, in] -> [T, B, hidden], from h_{-1} = 0.
class MinGru : public Module {
 public:
  MinGru(std::int64_t in, std::int64_t hidden, double gate_bias, Generator& gen)
      : gate_(in, hidden, gen), candidate_(in, hidden, gen), hidden_(hidden) {
    register_module("gate", gate_);
    register_module("candidate", candidate_);
    Tensor b = parameter("gate.bias").mutable_value();
    for (std::int64_t j = 0; j < hidden; ++j) b.data<float>()[j] = static_cast<float>(gate_bias);
  }
  Var operator()(const Var& x) const {
    const Var z = sigmoid(gate_(x));
    const Var h0 = Var(zeros({x.shape()[1], hidden_}));
    return linear_recurrence(1.0 - z, z * candidate_(x), h0);
  }

 private:
  nn::Linear gate_, candidate_;
  std::int64_t hidden_;
};

class MinGruModel : public Module {
 public:
  MinGruModel(std::int64_t hidden, double gate_bias, Generator& gen)
      : first_(adding::kChannels, hidden, gate_bias, gen), second_(hidden, hidden, gate_bias, gen), head_(hidden, 1, gen) {
    register_module("first", first_);
    register_module("second", second_);
    register_module("head", head_);
  }
  // inputs [T, B, 2] -> predictions [B].
  Var operator()(const Var& inputs) const {
    const Var h = second_(first_(inputs));
    const std::int64_t last = inputs.shape()[0] - 1;
    return reshape(head_(index(h, 0, last)), {inputs.shape()[1]});
  }

 private:
  MinGru first_, second_;
  nn::Linear head_;
};

class LstmModel : public Module {
 public:
  LstmModel(std::int64_t hidden, Generator& gen)
      : lstm_({.input_size = adding::kChannels, .hidden_size = hidden}, gen), head_(hidden, 1, gen) {
    register_module("lstm", lstm_);
    register_module("head", head_);
  }
  Var operator()(const Var& inputs) const {
    const std::int64_t batch = inputs.shape()[1];
    const Var last = reshape(lstm_(inputs).h_n, {batch, lstm_.options().hidden_size});
    return reshape(head_(last), {batch});
  }

 private:
  nn::LSTM lstm_;
  nn::Linear head_;
};

Tensor inputs_of(const adding::Batch& b) { return from_vector(b.inputs, {b.length, b.batch, adding::kChannels}); }
Tensor targets_of(const adding::Batch& b) { return from_vector(b.targets, {b.batch}); }

struct Result {
  std::string model;
  double test_mse = 0, seconds = 0;
};

template <class Model>
Result train(const std::string& name, const Model& model, const Options& o, adding::Placement placement,
             const adding::Batch& test_set) {
  Generator data_gen(static_cast<std::uint64_t>(o.seed) + 1);  // the same batches for every model
  optim::Adam adam(model.named_parameters(), {.lr = o.lr});
  const Tensor test_inputs = inputs_of(test_set), test_targets = targets_of(test_set);
  auto test_mse = [&] {
    NoGrad no_grad;
    Tape tape;
    return mse(model(Var(test_inputs)).value(), test_targets).item();
  };
  std::printf("\n== %s\nstep %5d  test MSE %.4f\n", name.c_str(), 0, test_mse());
  const auto start = std::chrono::steady_clock::now();
  for (long step = 1; step <= o.steps; ++step) {
    const adding::Batch b = adding::make_batch(o.length, o.batch, data_gen, placement);
    Tape tape;
    const Var loss = mse(model(Var(inputs_of(b))), Var(targets_of(b)));
    tape.backward(loss);
    if (o.clip > 0) optim::clip_grad_norm(model.named_parameters(), o.clip);
    adam.step();
    adam.zero_grad();
    if (step % o.eval_every == 0 || step == o.steps) {
      std::printf("step %5ld  test MSE %.4f  (train batch %.4f)\n", step, test_mse(), loss.value().item());
      std::fflush(stdout);
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {name, test_mse(), seconds};
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  examples::Cli cli("recur_min_gru_adding",
                    "Trains a two-layer minGRU, whose time loop is one linear_recurrence op, and an LSTM on the "
                    "adding problem, on the same batches, and compares their test error with the 0.167 of always "
                    "predicting 1.");
  cli.option("--steps", o.steps, "training steps (one fresh batch each)");
  cli.option("--length", o.length, "sequence length T");
  cli.option("--batch", o.batch, "sequences per step");
  cli.option("--hidden", o.hidden, "hidden size of both models");
  cli.option("--lr", o.lr, "Adam learning rate");
  cli.option("--clip", o.clip, "clip gradients to this global norm (0: off)");
  cli.option("--gate-bias", o.gate_bias, "initial bias of minGRU's update gate z (negative: keep the state)");
  cli.option("--markers", o.markers, "\"halves\" (one mark per half) or \"early\" (both in the first half)");
  cli.option("--test", o.test, "test sequences");
  cli.option("--eval-every", o.eval_every, "test every N steps");
  cli.option("--seed", o.seed, "random seed");
  cli.parse(argc, argv);

  adding::Placement placement{};
  try {
    if (o.steps < 1 || o.length < 4 || o.batch < 1 || o.hidden < 1 || o.test < 1 || o.eval_every < 1)
      throw std::invalid_argument("--steps, --batch, --hidden, --test, --eval-every must be >= 1 and --length >= 4");
    placement = adding::parse_placement(o.markers);
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "recur_min_gru_adding: %s\n", e.what());
    return 2;
  }

  Generator test_gen(static_cast<std::uint64_t>(o.seed) + 1000);
  const adding::Batch test_set = adding::make_batch(o.length, o.test, test_gen, placement);
  const double baseline = adding::constant_mse(test_set.targets, 1.0);
  std::printf("recur minGRU vs LSTM on the adding problem: T = %ld, markers %s, hidden %ld, batch %ld, %ld steps; "
              "baseline (predict 1) test MSE %.4f\n",
              o.length, adding::placement_name(placement), o.hidden, o.batch, o.steps, baseline);

  Generator init_gen(static_cast<std::uint64_t>(o.seed));
  std::vector<Result> results;
  results.push_back(train("minGRU x2 (linear_recurrence)", MinGruModel(o.hidden, o.gate_bias, init_gen), o,
                          placement, test_set));
  results.push_back(train("LSTM", LstmModel(o.hidden, init_gen), o, placement, test_set));

  std::printf("\n%-30s %-15s %-10s %s\n", "model", "final test MSE", "x baseline", "time");
  for (const Result& r : results)
    std::printf("%-30s %-15.4f %-10.3f %.1f s\n", r.model.c_str(), r.test_mse, r.test_mse / baseline, r.seconds);
  return 0;
}
