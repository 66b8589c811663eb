// recur::onnx_io::save of nn::RNN / LSTM / GRU stacks (ops/onnx/export_layers.hpp): the
// weights, gate order and attributes of every node equal those of PyTorch's own
// torch.onnx.export of the same layer (tests/fixtures/make_onnx_export_fixtures.py wrote
// them under tests/data/onnx_export/), and what those nodes compute under ONNX's semantics
// (by the ONNX project's NumPy reference of each operator, in the same script) is recur's
// layer output; every saved file passes onnx::checker and strict
// shape inference read back from disk; the graph's inputs, outputs and wiring for every
// option (layers, directions, batch_first, initial states, sequence_lens, no bias,
// float64, both GRU forms); a path that cannot be written.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <unistd.h>

#include <onnx/checker.h>
#include <onnx/defs/tensor_proto_util.h>
#include <onnx/shape_inference/implementation.h>

#include <recur/ops/onnx/export_layers.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

namespace fs = std::filesystem;
using nn::CellKind;

const fs::path kDir = fs::path(RECUR_TEST_DATA) / "onnx_export";

std::shared_ptr<nn::RecurrentLayer> make_layer(CellKind kind, const nn::RecurrentOptions& o) {
  Generator gen(5);
  if (kind == CellKind::lstm) return std::make_shared<nn::LSTM>(o, gen);
  if (kind == CellKind::gru) return std::make_shared<nn::GRU>(o, gen);
  return std::make_shared<nn::RNN>(o, gen);
}

// An initializer's values as a float64 tensor of its shape.
Tensor initializer(const ::onnx::GraphProto& g, const std::string& name) {
  for (const auto& t : g.initializer()) {
    if (t.name() != name) continue;
    Shape shape(t.dims().begin(), t.dims().end());
    if (t.data_type() == ::onnx::TensorProto::FLOAT) {  // ParseData reads raw_data and the typed fields
      const std::vector<float> v = ::onnx::ParseData<float>(&t);
      return from_vector(std::vector<double>(v.begin(), v.end()), shape);
    }
    return from_vector(::onnx::ParseData<double>(&t), shape);
  }
  ADD_FAILURE() << "no initializer " << name;
  return Tensor();
}

const ::onnx::AttributeProto* attribute(const ::onnx::NodeProto& node, const std::string& name) {
  for (const auto& a : node.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::vector<const ::onnx::NodeProto*> recurrent_nodes(const ::onnx::GraphProto& g) {
  std::vector<const ::onnx::NodeProto*> nodes;
  for (const auto& n : g.node())
    if (n.op_type() == "RNN" || n.op_type() == "LSTM" || n.op_type() == "GRU") nodes.push_back(&n);
  return nodes;
}

std::vector<std::string> fixture_cases() {
  std::vector<std::string> names;
  if (fs::is_directory(kDir))
    for (const auto& e : fs::directory_iterator(kDir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

class TorchOnnxExport : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchOnnxExport, NodesEqualPyTorchsExport) {
  const fs::path dir = kDir / GetParam();
  auto load = [&](const std::string& name) { return load_npy(dir / (name + ".npy")); };
  const auto c = to_vector<std::int64_t>(load("config"));  // kind, layers, bidirectional, relu, I, H
  const CellKind kind = c[0] == 0 ? CellKind::rnn : (c[0] == 1 ? CellKind::lstm : CellKind::gru);
  nn::RecurrentOptions o;
  o.num_layers = c[1];
  o.bidirectional = c[2] != 0;
  o.nonlinearity = c[3] ? nn::Nonlinearity::relu : nn::Nonlinearity::tanh;
  o.input_size = c[4];
  o.hidden_size = c[5];
  const auto layer = make_layer(kind, o);
  for (const auto& [name, p] : layer->named_parameters()) Shared(p).assign(load(name));

  const ::onnx::ModelProto model = onnx_io::layer_model(*layer);
  const auto nodes = recurrent_nodes(model.graph());
  ASSERT_EQ(static_cast<std::int64_t>(nodes.size()), o.num_layers);
  for (std::size_t k = 0; k < nodes.size(); ++k) {
    const ::onnx::NodeProto& node = *nodes[k];
    const std::string at = "node" + std::to_string(k);
    EXPECT_EQ(node.op_type(), kind == CellKind::lstm ? "LSTM" : (kind == CellKind::gru ? "GRU" : "RNN"));
    const char* keys[] = {"W", "R", "B"};
    for (int slot = 1; slot <= 3; ++slot) {
      const Tensor ours = initializer(model.graph(), node.input(slot));
      const Tensor torch = load(at + "_" + keys[slot - 1]).to(DType::float64);
      ASSERT_EQ(ours.shape(), torch.shape()) << at << " " << keys[slot - 1];
      EXPECT_EQ(max_abs_diff(ours, torch), 0.0) << at << " " << keys[slot - 1];  // a reordering: exact
    }
    const auto attrs = to_vector<std::int64_t>(load(at + "_attrs"));  // hidden_size, bidirectional, lbr
    EXPECT_EQ(attribute(node, "hidden_size")->i(), attrs[0]) << at;
    EXPECT_EQ(attribute(node, "direction")->s(), attrs[1] ? "bidirectional" : "forward") << at;
    if (kind == CellKind::gru) {
      EXPECT_EQ(attribute(node, "linear_before_reset")->i(), attrs[2]) << at;
    }
  }
  // The exported function, evaluated by ONNX's reference on those nodes, is the layer's.
  Tape tape;
  const Tensor output = (*layer)(tape.constant(load("input"))).output.value().to(DType::float64);
  const Tensor reference = load("onnx_output");
  ASSERT_EQ(output.shape(), reference.shape());
  EXPECT_LE(max_abs_diff(output, reference), 1e-5 * std::max(1.0, max_abs_diff(reference, zeros_like(reference))));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TorchOnnxExport, ::testing::ValuesIn(fixture_cases()),
                         [](const auto& info) { return info.param; });

TEST(TorchOnnxExportFixtures, AreThere) { EXPECT_EQ(fixture_cases().size(), 5u); }

struct Case {
  CellKind kind;
  nn::RecurrentOptions options;
  onnx_io::LayerExportOptions save{};
};

std::vector<Case> option_cases() {
  auto opts = [](std::int64_t layers, bool bi, bool batch_first, bool bias, DType dtype) {
    nn::RecurrentOptions o;
    o.input_size = 3;
    o.hidden_size = 4;
    o.num_layers = layers;
    o.bidirectional = bi;
    o.batch_first = batch_first;
    o.bias = bias;
    o.dtype = dtype;
    return o;
  };
  nn::RecurrentOptions onnx_gru = opts(2, true, false, true, DType::float32);
  onnx_gru.linear_before_reset = false;
  nn::RecurrentOptions relu = opts(1, false, true, false, DType::float64);
  relu.nonlinearity = nn::Nonlinearity::relu;
  return {
      {CellKind::lstm, opts(1, false, false, true, DType::float32)},
      {CellKind::lstm, opts(2, true, true, true, DType::float64), {.initial_state = true, .sequence_lens = true}},
      {CellKind::lstm, opts(3, false, false, false, DType::float32), {.initial_state = true}},
      {CellKind::gru, onnx_gru, {.sequence_lens = true}},
      {CellKind::gru, opts(1, true, true, true, DType::float64), {.initial_state = true}},
      {CellKind::rnn, relu, {.initial_state = true, .sequence_lens = true}},
      {CellKind::rnn, opts(2, true, false, true, DType::float32)},
  };
}

// The graph's input or output of that name, or null.
const ::onnx::ValueInfoProto* value(const google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>& list,
                                    const std::string& name) {
  for (const auto& v : list)
    if (v.name() == name) return &v;
  return nullptr;
}

std::string dims(const ::onnx::ValueInfoProto& v) {
  std::string s;
  for (const auto& d : v.type().tensor_type().shape().dim())
    s += (s.empty() ? "" : ",") + (d.has_dim_param() ? d.dim_param() : std::to_string(d.dim_value()));
  return s;
}

TEST(OnnxExportLayers, SavedFilesPassTheCheckerAndDescribeTheLayer) {
  const fs::path folder = fs::temp_directory_path() / ("recur_onnx_export_" + std::to_string(::getpid()));
  fs::create_directories(folder);
  int i = 0;
  for (const Case& c : option_cases()) {
    const auto layer = make_layer(c.kind, c.options);
    const fs::path path = folder / ("model" + std::to_string(i++) + ".onnx");
    SCOPED_TRACE(path.string());
    onnx_io::save(path, *layer, c.save);

    // Read back from disk, independently of the writer: parses, passes the checker (by
    // path and as a proto) and strict shape inference.
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    ::onnx::ModelProto model;
    ASSERT_TRUE(model.ParseFromString(bytes.str()));
    EXPECT_NO_THROW(::onnx::checker::check_model(path.string()));
    EXPECT_NO_THROW(::onnx::checker::check_model(model));
    ::onnx::ModelProto inferred = model;
    EXPECT_NO_THROW(::onnx::shape_inference::InferShapes(inferred, ::onnx::OpSchemaRegistry::Instance(),
                                                         ::onnx::ShapeInferenceOptions(true, 1, true)));
    ASSERT_EQ(model.opset_import_size(), 1);
    EXPECT_EQ(model.opset_import(0).version(), 14);

    const auto& g = model.graph();
    const nn::RecurrentOptions& o = c.options;
    const std::int64_t d = o.bidirectional ? 2 : 1, states = d * o.num_layers;
    const int type = o.dtype == DType::float64 ? ::onnx::TensorProto_DataType_DOUBLE : ::onnx::TensorProto_DataType_FLOAT;
    const bool lstm = c.kind == CellKind::lstm;
    ASSERT_NE(value(g.input(), "input"), nullptr);
    EXPECT_EQ(value(g.input(), "input")->type().tensor_type().elem_type(), type);
    EXPECT_EQ(dims(*value(g.input(), "input")), o.batch_first ? "B,T,3" : "T,B,3");
    EXPECT_EQ(dims(*value(g.output(), "output")), o.batch_first ? "B,T," + std::to_string(4 * d)
                                                                : "T,B," + std::to_string(4 * d));
    EXPECT_EQ(dims(*value(g.output(), "h_n")), std::to_string(states) + ",B,4");
    EXPECT_EQ(value(g.output(), "c_n") != nullptr, lstm);
    EXPECT_EQ(value(g.input(), "h0") != nullptr, c.save.initial_state);
    EXPECT_EQ(value(g.input(), "c0") != nullptr, c.save.initial_state && lstm);
    if (c.save.initial_state) {
      EXPECT_EQ(dims(*value(g.input(), "h0")), std::to_string(states) + ",B,4");
    }
    ASSERT_EQ(value(g.input(), "sequence_lens") != nullptr, c.save.sequence_lens);
    if (c.save.sequence_lens) {
      EXPECT_EQ(value(g.input(), "sequence_lens")->type().tensor_type().elem_type(),
                ::onnx::TensorProto_DataType_INT32);
    }

    const auto nodes = recurrent_nodes(g);
    ASSERT_EQ(static_cast<std::int64_t>(nodes.size()), o.num_layers);
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      const ::onnx::NodeProto& node = *nodes[k];
      EXPECT_EQ(node.input_size() > 3 && !node.input(3).empty(), o.bias) << "B";
      EXPECT_EQ(node.input_size() > 4 && node.input(4) == "sequence_lens", c.save.sequence_lens);
      EXPECT_EQ(node.input_size() > 5 && !node.input(5).empty(), c.save.initial_state) << "initial_h";
      EXPECT_EQ(attribute(node, "direction")->s(), o.bidirectional ? "bidirectional" : "forward");
      // Layer k reads [T, B, I_k]: its W's last axis.
      EXPECT_EQ(initializer(g, node.input(1)).shape(),
                (Shape{d, (lstm ? 4 : (c.kind == CellKind::gru ? 3 : 1)) * 4, k == 0 ? 3 : 4 * d}));
      if (c.kind == CellKind::gru) {
        EXPECT_EQ(attribute(node, "linear_before_reset")->i(), o.linear_before_reset ? 1 : 0);
      }
      if (c.kind == CellKind::rnn) {
        const auto* act = attribute(node, "activations");
        ASSERT_NE(act, nullptr);
        ASSERT_EQ(act->strings_size(), d);
        EXPECT_EQ(act->strings(0), o.nonlinearity == nn::Nonlinearity::relu ? "Relu" : "Tanh");
      }
    }
  }
  fs::remove_all(folder);
}

TEST(OnnxExportLayers, BiasesAreInputThenRecurrentInOnnxGateOrder) {
  // Biases with distinct values per gate block: B's blocks must come out as
  // (b_ih, b_hh) each in ONNX's order, LSTM i o f c from PyTorch's i f g o.
  nn::RecurrentOptions o;
  o.input_size = 2;
  o.hidden_size = 1;
  const auto lstm = make_layer(CellKind::lstm, o);
  lstm->parameter("bias_ih_l0").assign(from_vector(std::vector<float>{1, 2, 3, 4}, {4}));      // i f g o
  lstm->parameter("bias_hh_l0").assign(from_vector(std::vector<float>{10, 20, 30, 40}, {4}));  // i f g o
  const ::onnx::ModelProto model = onnx_io::layer_model(*lstm);
  const Tensor b = initializer(model.graph(), recurrent_nodes(model.graph())[0]->input(3));
  EXPECT_EQ(to_vector<double>(b), (std::vector<double>{1, 4, 2, 3, 10, 40, 20, 30}));
}

TEST(OnnxExportLayers, AnUnwritablePathIsAnIOErrorNamingIt) {
  nn::RecurrentOptions o;
  o.input_size = 2;
  o.hidden_size = 3;
  const auto gru = make_layer(CellKind::gru, o);
  const fs::path bad = fs::path("/nonexistent_recur_dir") / "gru.onnx";
  testing::expect_error<IOError>([&] { onnx_io::save(bad, *gru); }, {"onnx_io::save", "nonexistent_recur_dir"});
}

}  // namespace
}  // namespace recur
