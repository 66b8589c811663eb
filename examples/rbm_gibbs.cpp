// A restricted Boltzmann machine learns 8x8 "bars and stripes" with contrastive divergence,
// the Gibbs chain of Theano's scan guide put to work.
//
// The data: every 8x8 binary image whose rows are each all on or all off (stripes), or whose
// columns are (bars): 510 patterns, made here. The model: 64 binary visible units, H binary
// hidden units, weights W and biases bvis, bhid as Shared variables.
//
// Each training step runs CD-k: k Gibbs steps v -> h -> v as one scan whose step function is
// the guide's OneStep (W, bvis, bhid passed as non_sequences, two RandomStream draws per
// step). The stream's state is a Shared variable the scan updates each iteration; applying
// the scan's updates after the step moves the stream on, so the next step draws new numbers.
// The gradient is that of mean F(data) - mean F(chain end), F the free energy, with the
// chain end detached (Theano's consider_constant): backward gives the CD-k update.
// After training, long chains from random noise show what the model generates; everything
// goes into one SVG picture with the reconstruction-error curve.
#include <recur/recur.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "svg.hpp"

namespace {

using namespace recur;
using S = std::span<const Var>;
constexpr std::int64_t kSide = 8, kVisible = kSide * kSide;

struct Options {
  long epochs = 60;
  long hidden = 32;
  long k = 5;
  long batch = 17;
  double lr = 0.1;
  double momentum = 0.8;
  long chain_steps = 1000;
  long chains = 6;
  long seed = 1;
  std::string out = "rbm_gibbs.svg";
};

// All bars-and-stripes patterns: pattern m of an orientation has row (or column) i on when
// bit i of m is set. The blank and the full image are both bars and stripes: kept once.
Tensor bars_and_stripes() {
  std::vector<float> pixels;
  std::int64_t count = 0;
  for (int rows_on : {1, 0})
    for (int m = 0; m < (1 << kSide); ++m) {
      if (!rows_on && (m == 0 || m == (1 << kSide) - 1)) continue;
      for (std::int64_t r = 0; r < kSide; ++r)
        for (std::int64_t c = 0; c < kSide; ++c) pixels.push_back(static_cast<float>((m >> (rows_on ? r : c)) & 1));
      ++count;
    }
  return from_vector(pixels, {count, kVisible});
}

// True when every row is constant or every column is.
bool is_bars_or_stripes(const std::vector<float>& v) {
  bool rows = true, cols = true;
  for (std::int64_t i = 0; i < kSide; ++i)
    for (std::int64_t j = 1; j < kSide; ++j) {
      rows = rows && v[i * kSide + j] == v[i * kSide];
      cols = cols && v[j * kSide + i] == v[i];
    }
  return rows || cols;
}

struct Rbm {
  Shared W, bvis, bhid;
  RandomStream trng;

  Rbm(std::int64_t hidden, Generator& init, std::uint64_t stream_seed)
      : W(normal({kVisible, hidden}, 0.0, 0.01, init), "W"),
        bvis(zeros({kVisible}), "bvis"),
        bhid(zeros({hidden}), "bhid"),
        trng(stream_seed, "trng") {}

  // The guide's OneStep(vsample, W, bvis, bhid), also returning p(v | h) for reconstructions.
  StepResult one_step(S a) {
    const Var &vsample = a[0], &w = a[1], &bv = a[2], &bh = a[3];
    Var hmean = sigmoid(matmul(vsample, w) + bh);
    Var hsample = trng.binomial(hmean);
    Var vmean = sigmoid(matmul_t(hsample, w, false, true) + bv);
    return {trng.binomial(vmean), vmean};
  }

  // n Gibbs steps from v0: outputs[0] the visible samples, outputs[1] p(v | h), each n x batch x 64.
  ScanResult gibbs(const Var& v0, std::int64_t n) {
    return scan([this](S a) { return one_step(a); },
                {.outputs_info = {v0, OutputInfo()}, .non_sequences = {Var(W), Var(bvis), Var(bhid)}, .n_steps = n});
  }

  // F(v) = -v . bvis - sum_j softplus(v W + bhid)_j, one per row.
  Var free_energy(const Var& v) {
    return neg(sum(v * Var(bvis), {1})) - sum(softplus(matmul(v, Var(W)) + Var(bhid)), {1});
  }
};

// Plain momentum SGD: velocity = momentum * velocity - lr * grad; p += velocity.
struct Momentum {
  std::vector<Shared> parameters;
  std::vector<Tensor> velocity;
  double lr, momentum;

  Momentum(std::vector<Shared> ps, double learning_rate, double mu)
      : parameters(std::move(ps)), lr(learning_rate), momentum(mu) {
    for (const Shared& p : parameters) velocity.push_back(zeros_like(p.value()));
  }
  void step() {
    for (std::size_t i = 0; i < parameters.size(); ++i) {
      velocity[i] = velocity[i] * momentum - parameters[i].grad() * lr;
      parameters[i].assign(parameters[i].value() + velocity[i]);
      parameters[i].zero_grad();
    }
  }
};

// One CD-k step on a batch; returns the batch's reconstruction error (mean squared
// difference between the data and p(v | h) after the first step of the chain).
double cd_step(Rbm& rbm, Momentum& sgd, const Tensor& batch, std::int64_t k) {
  double error = 0;
  {
    Tape tape;
    Var v0 = tape.constant(batch);
    ScanResult chain = rbm.gibbs(v0, k);
    Var vk = detach(index(chain[0], 0, -1));  // the chain's end is data for the gradient
    Var cost = mean(rbm.free_energy(v0)) - mean(rbm.free_energy(vk));
    tape.backward(cost);
    apply_updates(chain.updates);  // the random stream moves on
    error = mse(batch, chain[1].value()[0]).item();
  }
  sgd.step();
  return error;
}

// Fisher-Yates with the raw draws of `gen`: the order of the patterns for one epoch.
Tensor shuffled(std::int64_t n, Generator& gen) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) order[i] = i;
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(order[i], order[gen.next_u64() % static_cast<std::uint64_t>(i + 1)]);
  return from_vector(order, {n});
}

void draw_picture(const Options& o, const Tensor& data, const Tensor& reconstructions, const Tensor& samples,
                  const std::vector<std::int64_t>& snapshot_steps, const std::vector<double>& errors) {
  namespace svg = examples::svg;
  const std::int64_t shown = reconstructions.shape()[0];
  svg::ImageGrid original{.title = "training patterns", .columns = shown, .pixel = 4};
  svg::ImageGrid reconstructed{.title = "their reconstructions p(v | h), h sampled from p(h | v)", .columns = shown,
                               .pixel = 4};
  for (std::int64_t i = 0; i < shown; ++i) {
    original.add(to_vector<double>(data[i]));
    reconstructed.add(to_vector<double>(reconstructions[i]));
  }
  std::string steps;  // "100, 200, ..., 1000"
  for (std::size_t i = 0; i < snapshot_steps.size(); ++i)
    if (i < 2 || i + 1 == snapshot_steps.size())
      steps += (i ? (i + 1 == snapshot_steps.size() && i > 2 ? ", ..., " : ", ") : "") + std::to_string(snapshot_steps[i]);
  svg::ImageGrid chains{.title = "Gibbs chains from noise, one per row: samples after " + steps + " steps",
                        .columns = static_cast<std::int64_t>(snapshot_steps.size()),
                        .pixel = 4};
  for (std::int64_t c = 0; c < samples.shape()[1]; ++c)
    for (auto s : snapshot_steps) chains.add(to_vector<double>(samples[s - 1][c]));

  svg::LineChart curve{.title = "reconstruction error per epoch (CD-" + std::to_string(o.k) + ")",
                       .x_label = "epoch",
                       .y_label = "mean squared error",
                       .width = 720,
                       .height = 300};
  curve.add_series("training patterns", errors, 1.0);

  const double margin = 20, width = 720 + 2 * margin;
  double y = margin;
  const double height = margin + original.height() + reconstructed.height() + chains.height() + curve.height + 4 * 20;
  svg::Document doc(width, height);
  for (const svg::ImageGrid* grid : {&original, &reconstructed, &chains}) {
    grid->draw(doc, margin, y);
    y += grid->height() + 20;
  }
  curve.draw(doc, {margin, y, curve.width, curve.height});
  doc.write(o.out);
}

int run(const Options& o) {
  const Tensor data = bars_and_stripes();
  const std::int64_t n = data.shape()[0];
  Generator gen(static_cast<std::uint64_t>(o.seed));
  Rbm rbm(o.hidden, gen, static_cast<std::uint64_t>(o.seed) + 1000);
  Momentum sgd({rbm.W, rbm.bvis, rbm.bhid}, o.lr, o.momentum);

  std::printf("recur RBM: %lld bars-and-stripes patterns of 8x8, %ld hidden units, CD-%ld, batch %ld, lr %g, "
              "momentum %g\n",
              static_cast<long long>(n), o.hidden, o.k, o.batch, o.lr, o.momentum);
  std::printf("(reconstruction error: mean squared difference between a pattern and p(v | h), h ~ p(h | v))\n\n");
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  std::vector<double> errors;
  for (long epoch = 1; epoch <= o.epochs; ++epoch) {
    const Tensor order = shuffled(n, gen);
    double total = 0;
    std::int64_t batches = 0;
    for (std::int64_t from = 0; from < n; from += o.batch, ++batches) {
      const Tensor idx = slice(order, 0, from, std::min(n, from + o.batch));
      total += cd_step(rbm, sgd, take(data, idx), o.k);
    }
    errors.push_back(total / static_cast<double>(batches));
    std::printf("epoch %3ld  reconstruction error %.4f  (%.1f s)\n", epoch, errors.back(), seconds());
  }

  // Reconstructions of a few patterns and long chains from noise; nothing to differentiate.
  NoGrad no_grad;
  Tape tape;
  const std::int64_t shown = 16;
  const Tensor some = take(data, arange(0.0, static_cast<double>(n), static_cast<double>(n / shown), DType::int64));
  const Tensor reconstructions = rbm.gibbs(Var(slice(some, 0, 0, shown)), 1)[1].value()[0];
  ScanResult chain = rbm.gibbs(Var(bernoulli({o.chains, kVisible}, 0.5, gen)), o.chain_steps);
  apply_updates(chain.updates);
  const Tensor samples = chain[0].value();  // chain_steps x chains x 64

  // How often the chains are in the data distribution: exact bars or stripes, second half.
  std::int64_t valid = 0, counted = 0;
  for (std::int64_t t = o.chain_steps / 2; t < o.chain_steps; ++t)
    for (std::int64_t c = 0; c < o.chains; ++c, ++counted) valid += is_bars_or_stripes(to_vector<float>(samples[t][c]));
  std::printf("\n%ld Gibbs chains of %ld steps from noise: %lld of %lld samples in the second half (%.1f%%) are exact "
              "bars or stripes (of 2^64 images, 510 are)\n",
              o.chains, o.chain_steps, static_cast<long long>(valid), static_cast<long long>(counted),
              100.0 * static_cast<double>(valid) / static_cast<double>(std::max<std::int64_t>(counted, 1)));

  std::vector<std::int64_t> snapshots;
  const std::int64_t columns = std::min<std::int64_t>(10, o.chain_steps);
  for (std::int64_t i = 1; i <= columns; ++i) snapshots.push_back(std::max<std::int64_t>(1, o.chain_steps * i / columns));
  draw_picture(o, some, reconstructions, samples, snapshots, errors);
  std::printf("reconstruction error %.4f -> %.4f over %ld epochs (%.1f s); picture in %s\n", errors.front(),
              errors.back(), o.epochs, seconds(), o.out.c_str());
  return errors.back() < errors.front() ? 0 : 1;
}

void declare_options(CLI::App& app, Options& o) {
  const auto positive = examples::at_least(1L);
  app.add_option("--epochs", o.epochs, "passes over the 510 patterns")->check(positive);
  app.add_option("--hidden", o.hidden, "hidden units")->check(positive);
  app.add_option("--k", o.k, "Gibbs steps per CD update")->check(positive);
  app.add_option("--batch", o.batch, "patterns per update")->check(positive);
  app.add_option("--lr", o.lr, "learning rate");
  app.add_option("--momentum", o.momentum, "momentum of the updates");
  app.add_option("--chain-steps", o.chain_steps, "length of the Gibbs chains run after training")->check(positive);
  app.add_option("--chains", o.chains, "number of chains run after training")->check(positive);
  app.add_option("--seed", o.seed, "random seed (data order, initial weights, the random stream)");
  app.add_option("--out", o.out, "SVG picture to write");
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main(
      argc, argv, "recur_rbm_gibbs",
      "trains an RBM on 8x8 bars and stripes with CD-k (the k Gibbs steps are a scan with a shared random stream), "
      "runs long Gibbs chains, and draws data, reconstructions, chain samples and the error curve into an SVG.",
      declare_options, run);
}
