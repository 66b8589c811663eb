// The demo: a two-layer tanh network learns y = sin(3x) from noisy samples with plain SGD.
// Everything it needs is generated here; it prints the loss falling and a few predictions.
#include <recur/recur.hpp>

#include <cmath>
#include <iomanip>
#include <iostream>
#include <string>

#include "example_main.hpp"

namespace {

struct Options {
  int steps = 2000;
  int hidden = 32;
  double lr = 0.1;
  std::uint64_t seed = 7;
};

// p -= lr * grad(p), in place: an SGD step is a shared-variable update.
void sgd_step(recur::Shared& p, double lr) {
  recur::Tensor v = p.mutable_value();
  const recur::Tensor g = p.grad();
  float* pv = v.data<float>();
  const float* pg = g.data<float>();
  for (std::int64_t i = 0; i < v.numel(); ++i) pv[i] -= static_cast<float>(lr) * pg[i];
}

void declare_options(CLI::App& app, Options& o) {
  app.add_option("--steps", o.steps, "training steps");
  app.add_option("--hidden", o.hidden, "hidden units");
  app.add_option("--lr", o.lr, "learning rate");
  app.add_option("--seed", o.seed, "random seed")->check(examples::at_least(std::uint64_t{0}));
}

int run(const Options& o) {
  using namespace recur;
  Generator gen(o.seed);

  // 256 samples of x in [-1, 1] and y = sin(3x) + noise, made here: no download.
  constexpr std::int64_t n = 256;
  const Tensor x = reshape(arange(-1.0, 1.0, 2.0 / n), {n, 1});
  const Tensor noise = normal({n, 1}, 0.0, 0.05, gen);
  Tensor y = Tensor::empty({n, 1});
  for (std::int64_t i = 0; i < n; ++i)
    y.data<float>()[i] = std::sin(3.0f * x.data<float>()[i]) + noise.data<float>()[i];

  // Parameters are shared variables: they outlive each step's tape.
  const double scale1 = 1.0, scale2 = 1.0 / std::sqrt(static_cast<double>(o.hidden));
  Shared w1(normal({1, o.hidden}, 0.0, scale1, gen), "w1"), b1(zeros({o.hidden}), "b1");
  Shared w2(normal({o.hidden, 1}, 0.0, scale2, gen), "w2"), b2(zeros({1}), "b2");
  Shared* params[] = {&w1, &b1, &w2, &b2};

  std::cout << "recur demo: fitting y = sin(3x) with a 1-" << o.hidden << "-1 tanh network, SGD lr " << o.lr
            << "\n";
  double first = 0, last = 0;
  for (int step = 0; step <= o.steps; ++step) {
    Tape tape;  // one tape per step: the graph of this step only
    Var h = tanh(matmul(Var(x), Var(w1)) + Var(b1));
    Var prediction = matmul(h, Var(w2)) + Var(b2);
    Var loss = mse(prediction, Var(y));
    for (auto* p : params) p->zero_grad();
    tape.backward(loss);
    for (auto* p : params) sgd_step(*p, o.lr);
    last = loss.value().item();
    if (step == 0) first = last;
    if (step % (o.steps / 10 == 0 ? 1 : o.steps / 10) == 0)
      std::cout << "step " << std::setw(5) << step << "  loss " << std::fixed << std::setprecision(5) << last << "\n";
  }

  std::cout << "\n   x     sin(3x)   prediction\n";
  NoGrad no_grad;
  Tape tape;
  for (double xv : {-0.9, -0.5, 0.0, 0.4, 0.8}) {
    const Tensor xi = full({1, 1}, xv);
    const double p = (matmul(tanh(matmul(Var(xi), Var(w1)) + Var(b1)), Var(w2)) + Var(b2)).value().item();
    std::cout << std::setw(6) << std::setprecision(2) << xv << std::setw(10) << std::setprecision(4)
              << std::sin(3 * xv) << std::setw(12) << p << "\n";
  }
  std::cout << "\nloss fell from " << std::setprecision(5) << first << " to " << last << "\n";
  return last < first ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return examples::example_main(argc, argv, "recur_demo", "fits y = sin(3x) with a 1-H-1 tanh network trained by SGD.",
                                declare_options, run);
}
