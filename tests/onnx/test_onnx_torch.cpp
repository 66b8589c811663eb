// PyTorch's own ONNX exports imported and differentiated: nn.LSTM, nn.GRU and nn.RNN (2
// layers, bidirectional, initial states) and a TorchScript loop (an ONNX Loop with the
// sequence ops), exported with their weights as graph inputs by
// tests/fixtures/make_onnx_torch_fixtures.py (tests/data/onnx_torch/). Every output, and the
// gradient of PyTorch's loss sum(output * R) with respect to every graph input (data,
// initial states, every weight), equals what PyTorch computed: within 1e-10 relative in
// float64, 1e-5 in float32.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "file_helpers.hpp"

namespace recur {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(RECUR_TEST_DATA) / "onnx_torch";

std::vector<std::string> fixture_cases() { return fs::is_directory(kDir) ? testing::listing(kDir) : std::vector<std::string>{}; }

// |got - want| <= rtol * max|want| elementwise: relative to the tensor's scale, so that
// elements near zero are held to the same absolute accuracy as the rest.
void expect_close(const Tensor& got, const Tensor& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  ASSERT_EQ(got.shape(), want.shape()) << what;
  const Tensor g = got.to(DType::float64), w = want.to(DType::float64);
  double scale = 0;
  for (std::int64_t i = 0; i < w.numel(); ++i) scale = std::max(scale, std::abs(w.data<double>()[i]));
  for (std::int64_t i = 0; i < w.numel(); ++i)
    ASSERT_NEAR(g.data<double>()[i], w.data<double>()[i], rtol * scale) << what << ", element " << i;
}

class TorchOnnxModel : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchOnnxModel, OutputsAndEveryGradientEqualPyTorchs) {
  const fs::path dir = kDir / GetParam();
  const onnx_io::Model model = onnx_io::load((dir / "model.onnx").string());
  ASSERT_TRUE(model.parameters().empty()) << "the weights should be graph inputs";
  const double rtol = GetParam().ends_with("float64") ? 1e-10 : 1e-5;

  Tape tape;
  std::map<std::string, Var> feed;
  for (const std::string& name : model.input_names()) feed.emplace(name, tape.variable(load_npy(dir / (name + ".npy"))));
  ASSERT_GE(feed.size(), 5u);
  const auto outputs = model.run(feed);
  Var loss;
  for (const auto& [name, out] : outputs) {
    expect_close(out.value(), load_npy(dir / ("out_" + name + ".npy")), rtol, "output " + name);
    const Var term = sum(out * tape.constant(load_npy(dir / ("R_" + name + ".npy"))));
    loss = loss.defined() ? loss + term : term;
  }
  tape.backward(loss);
  for (const auto& [name, input] : feed)
    expect_close(input.grad(), load_npy(dir / ("grad_" + name + ".npy")), rtol, "gradient of " + name);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchOnnxModel, ::testing::ValuesIn(fixture_cases()),
                         [](const auto& info) { return info.param; });

// The scripted loop carries a sequence it only appends h_t to (SequenceInsert), so it runs
// on the scan engine: truncation and recomputation apply to it.
struct ScriptedLoopRun {
  std::map<std::string, Tensor> grads;
  std::size_t scans = 0;
  std::int64_t steps = 0;
};

ScriptedLoopRun run_scripted_loop(const onnx_io::RunOptions& options) {
  const fs::path dir = kDir / "scripted_loop_float64";
  const onnx_io::Model model = onnx_io::load((dir / "model.onnx").string());
  Tape tape;
  std::map<std::string, Var> feed;
  for (const std::string& name : model.input_names()) feed.emplace(name, tape.variable(load_npy(dir / (name + ".npy"))));
  const auto out = model.run(feed, options);
  ScriptedLoopRun r;
  const auto report = tape.memory_report();
  r.scans = report.regions.size();
  if (r.scans) r.steps = report.regions[0].steps;
  tape.backward(sum(out.at("hs") * tape.constant(load_npy(dir / "R_hs.npy"))) +
                sum(out.at("h") * tape.constant(load_npy(dir / "R_h.npy"))));
  for (const auto& [name, v] : feed) r.grads[name] = v.grad();
  return r;
}

TEST(TorchOnnxModel, ScriptedLoopRunsOnTheEngineWithTruncationAndCheckpoints) {
  const auto full = run_scripted_loop({});
  EXPECT_EQ(full.scans, 1u);  // one scan of the tape, not four recorded bodies
  EXPECT_EQ(full.steps, 4);
  for (const Checkpoint& c : {Checkpoint::every_k(2), Checkpoint::snapshots(2)}) {
    const auto got = run_scripted_loop({.checkpoint = c});
    for (const auto& [name, g] : full.grads) expect_close(got.grads.at(name), g, 1e-12, "checkpointed gradient of " + name);
  }
  // Truncated to the last iteration, against the Elman recurrence by hand: the first three
  // steps as constants, the last one recorded (the loss still reads every h_t).
  const auto got = run_scripted_loop({.truncate_gradient = 1});
  const fs::path dir = kDir / "scripted_loop_float64";
  const Tensor x = load_npy(dir / "x.npy"), R = load_npy(dir / "R_hs.npy");
  Tape tape;
  const Var vx = tape.variable(x), h0 = tape.variable(load_npy(dir / "h0.npy")), w = tape.variable(load_npy(dir / "w.npy"));
  const Var u = tape.variable(load_npy(dir / "u.npy")), b = tape.variable(load_npy(dir / "b.npy"));
  Tensor early = h0.value();
  for (std::int64_t t = 0; t < 3; ++t) early = tanh(add(add(matmul(x[t], w.value()), matmul(early, u.value())), b.value()));
  const Var h = tanh(matmul(index(vx, 0, 3), w) + matmul(tape.constant(early), u) + b);
  tape.backward(sum(h * tape.constant(R[3])) + sum(h * tape.constant(load_npy(dir / "R_h.npy"))));
  const std::map<std::string, Var> by_name{{"x", vx}, {"h0", h0}, {"w", w}, {"u", u}, {"b", b}};
  for (const auto& [name, v] : by_name) {
    const Tensor want = v.grad().defined() ? v.grad() : zeros(v.shape(), DType::float64);
    expect_close(got.grads.at(name), want, 1e-12, "truncated gradient of " + name);
  }
}

TEST(TorchOnnxModel, EveryFixtureIsThere) {
  // A missing directory would make the parameterized test above vanish, not fail.
  EXPECT_EQ(fixture_cases().size(), 8u);
}

}  // namespace
}  // namespace recur
