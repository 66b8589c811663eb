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
  const onnx::Model model = onnx::load((dir / "model.onnx").string());
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

TEST(TorchOnnxModel, EveryFixtureIsThere) {
  // A missing directory would make the parameterized test above vanish, not fail.
  EXPECT_EQ(fixture_cases().size(), 8u);
}

}  // namespace
}  // namespace recur
