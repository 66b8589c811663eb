// RNN, LSTM and GRU against PyTorch 1.13 (tests/fixtures/make_rnn_fixtures.py wrote the
// references under tests/data/rnn/): with PyTorch's weights loaded by name, outputs, final
// states and the gradients of a fixed loss with respect to the input, the initial states
// and every parameter agree to 1e-10 (float64) and 1e-5 (float32) relative. The cases under
// tests/data/rnn_packed/ ran PyTorch on pack_padded_sequence(input, lengths) and run ours
// with the same `lengths`. Those under tests/data/rnn_proj/ are LSTMs with a projection
// (proj_size), run both fused and, with recomputation asked for, as a scan of cells.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <set>

#include <recur/recur.hpp>

namespace recur::nn {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(RECUR_TEST_DATA) / "rnn";
const fs::path kPackedDir = fs::path(RECUR_TEST_DATA) / "rnn_packed";
const fs::path kProjDir = fs::path(RECUR_TEST_DATA) / "rnn_proj";

std::vector<std::string> case_names(const fs::path& root = kDir) {
  std::vector<std::string> names;
  if (fs::is_directory(root))
    for (const auto& e : fs::directory_iterator(root)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// max |a - b| / max |b|: the error relative to the reference's scale.
double relative_error(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return 1.0;
  const auto x = to_vector<double>(a), y = to_vector<double>(b);
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    diff = std::max(diff, std::abs(x[i] - y[i]));
    scale = std::max(scale, std::abs(y[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

enum Config { kKind, kLayers, kBidirectional, kBatchFirst, kRelu, kBias, kGivenState, kInput, kHidden, kProj };

struct Layer {
  std::shared_ptr<const RecurrentLayer> module;  // a shared_ptr deletes the derived type
  std::function<RecurrentOutput(const Var&, const Var&, const Var&, const SequenceLengths&)> call;
};

Layer make_layer(const std::vector<std::int64_t>& c, DType dtype, Checkpoint checkpoint) {
  RecurrentOptions o;
  if (c.size() > kProj) o.proj_size = c[kProj];
  o.checkpoint = checkpoint;
  o.input_size = c[kInput];
  o.hidden_size = c[kHidden];
  o.num_layers = c[kLayers];
  o.bias = c[kBias] != 0;
  o.batch_first = c[kBatchFirst] != 0;
  o.bidirectional = c[kBidirectional] != 0;
  o.nonlinearity = c[kRelu] ? Nonlinearity::relu : Nonlinearity::tanh;
  o.dtype = dtype;
  Generator gen(0);
  Layer l;
  if (c[kKind] == 0) {
    auto m = std::make_shared<RNN>(o, gen);
    l.call = [m](const Var& x, const Var& h0, const Var&, const SequenceLengths& n) { return (*m)(x, {h0, Var()}, n); };
    l.module = m;
  } else if (c[kKind] == 1) {
    auto m = std::make_shared<LSTM>(o, gen);
    l.call = [m](const Var& x, const Var& h0, const Var& c0, const SequenceLengths& n) { return (*m)(x, {h0, c0}, n); };
    l.module = m;
  } else {
    auto m = std::make_shared<GRU>(o, gen);
    l.call = [m](const Var& x, const Var& h0, const Var&, const SequenceLengths& n) { return (*m)(x, {h0, Var()}, n); };
    l.module = m;
  }
  return l;
}

// One case folder: the layer with PyTorch's weights, its outputs and gradients against
// PyTorch's (with the folder's lengths.npy, if any, as the layer's lengths).
void expect_matches_torch(const fs::path& dir, Checkpoint checkpoint = {}) {
  const bool f64 = dir.filename().string().ends_with("float64");
  const DType dtype = f64 ? DType::float64 : DType::float32;
  const double tol = f64 ? 1e-10 : 1e-5;
  auto load = [&](const std::string& name) { return load_npy(dir / (name + ".npy")); };
  const auto config = to_vector<std::int64_t>(load("config"));
  const bool given = config[kGivenState] != 0, lstm = config[kKind] == 1;
  const Layer layer = make_layer(config, dtype, checkpoint);

  // Our parameter names are exactly PyTorch's, and each takes PyTorch's value.
  std::set<std::string> torch_names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string stem = e.path().stem().string();
    if (stem.starts_with("weight_") || stem.starts_with("bias_")) torch_names.insert(stem);
  }
  std::set<std::string> ours;
  for (const auto& [name, p] : layer.module->named_parameters()) {
    ours.insert(name);
    Shared(p).assign(load(name));
  }
  EXPECT_EQ(ours, torch_names);

  Tape tape;
  const Var x = tape.variable(load("input"));
  const Var h0 = given ? tape.variable(load("h0")) : Var();
  const Var c0 = given && lstm ? tape.variable(load("c0")) : Var();
  const SequenceLengths lengths = fs::exists(dir / "lengths.npy") ? SequenceLengths(load("lengths")) : SequenceLengths();
  const RecurrentOutput out = layer.call(x, h0, c0, lengths);
  Var loss = sum(out.output * Var(load("R"))) + sum(out.h_n * Var(load("S")));
  if (lstm) loss = loss + sum(out.c_n * Var(load("Sc")));
  layer.module->zero_grad();
  tape.backward(loss);

  EXPECT_LT(relative_error(out.output.value(), load("output")), tol) << "output";
  EXPECT_LT(relative_error(out.h_n.value(), load("h_n")), tol) << "h_n";
  if (lstm) {
    EXPECT_LT(relative_error(out.c_n.value(), load("c_n")), tol) << "c_n";
  }
  EXPECT_FALSE(lstm && !out.c_n.defined());
  EXPECT_LT(relative_error(x.grad(), load("grad_input")), tol) << "grad_input";
  if (given) {
    EXPECT_LT(relative_error(h0.grad(), load("grad_h0")), tol) << "grad_h0";
  }
  if (given && lstm) {
    EXPECT_LT(relative_error(c0.grad(), load("grad_c0")), tol) << "grad_c0";
  }
  for (const auto& [name, p] : layer.module->named_parameters())
    EXPECT_LT(relative_error(p.grad(), load("grad_" + name)), tol) << "grad_" << name;
}

class TorchRecurrent : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchRecurrent, OutputsAndEveryGradientMatch) { expect_matches_torch(kDir / GetParam()); }

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchRecurrent, ::testing::ValuesIn(case_names()),
                         [](const auto& info) { return info.param; });

class TorchPackedRecurrent : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchPackedRecurrent, OutputsAndEveryGradientMatch) { expect_matches_torch(kPackedDir / GetParam()); }

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchPackedRecurrent, ::testing::ValuesIn(case_names(kPackedDir)),
                         [](const auto& info) { return info.param; });

class TorchProjectedLstm : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchProjectedLstm, FusedOutputsAndEveryGradientMatch) { expect_matches_torch(kProjDir / GetParam()); }
TEST_P(TorchProjectedLstm, ScanOutputsAndEveryGradientMatch) {
  expect_matches_torch(kProjDir / GetParam(), Checkpoint::every_k(2));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchProjectedLstm, ::testing::ValuesIn(case_names(kProjDir)),
                         [](const auto& info) { return info.param; });

TEST(TorchRecurrentFixtures, AreThere) {
  // 4 projected LSTMs (1 and 2 layers, bidirectional, batch-first without biases, lengths).
  EXPECT_EQ(case_names(kProjDir).size(), 8u);
  // 9 configurations in two dtypes: a missing folder would silently skip its case.
  EXPECT_EQ(case_names().size(), 18u);
  // 5 packed-sequence configurations (LSTM and GRU, stacked and bidirectional) in two dtypes.
  EXPECT_EQ(case_names(kPackedDir).size(), 10u);
}

}  // namespace
}  // namespace recur::nn
