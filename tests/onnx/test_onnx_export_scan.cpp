// recur::onnx_io::save of a scan (ops/onnx/export_scan.hpp): the step written as an ONNX Scan
// body passes onnx::checker and strict shape inference read back from disk, and the saved
// model, loaded with recur's own importer and run, gives the outputs of onnx_scan
// with the same step (float64 to 1e-12, float32 to 1e-6): an Elman RNN, an LSTM-like step
// with two states and two scan outputs along different axes, reverse directions over a
// batch-first sequence, a step without state, every mapped op, a nested scan; the imported
// parameters get the scan's gradients; steps that cannot be one ONNX body are errors naming
// the op, and nothing is written.
#include <gtest/gtest.h>

#include <filesystem>
#include <ranges>
#include <set>

#include <unistd.h>

#include <onnx/checker.h>

#include <recur/ops/onnx/export_scan.hpp>
#include <recur/ops/onnx/model.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

namespace fs = std::filesystem;

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() / ("recur_scan_export_" + std::to_string(getpid()) + "_" + name + ".onnx");
}

Shared parameter(const Shape& shape, DType dtype, Generator& gen, const std::string& name) {
  return Shared(normal(shape, 0.0, 0.5, gen, dtype), name);
}

struct ScanCase {
  OnnxBody body;
  std::vector<Tensor> states, sequences;
  recur::onnx_io::ScanExportOptions options{};
  // Parameters whose gradients the model's must equal, by the initializer's name.
  std::vector<std::pair<std::string, Shared>> trained{};
  // Inputs to run the scan and the model on (at another batch size); empty: the examples.
  std::vector<Tensor> run_states{}, run_sequences{};
};

// Saves the case's scan, checks the file, loads it with recur's importer, runs it on the
// same inputs as onnx_scan, and compares every output within `tolerance`.
void expect_round_trip(const ScanCase& c, const std::string& name, double tolerance) {
  const fs::path path = temp_path(name);
  recur::onnx_io::save(path, c.body, c.states, c.sequences, c.options);
  ::onnx::checker::check_model(path.string());
  const recur::onnx_io::Model model = recur::onnx_io::load(path.string());
  fs::remove(path);

  Tape tape;
  std::vector<Var> states, sequences;
  for (const Tensor& s : c.run_states.empty() ? c.states : c.run_states) states.push_back(tape.constant(s));
  for (const Tensor& x : c.run_sequences.empty() ? c.sequences : c.run_sequences) sequences.push_back(tape.constant(x));
  const auto expected = onnx_scan(c.body, states, sequences, c.options.scan);
  std::vector<Var> want = expected.final_states;
  want.insert(want.end(), expected.scan_outputs.begin(), expected.scan_outputs.end());

  const std::vector<std::string> inputs = model.input_names(), outputs = model.output_names();
  ASSERT_EQ(inputs.size(), states.size() + sequences.size());
  ASSERT_EQ(outputs.size(), want.size());
  std::map<std::string, Var> feed;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    feed.emplace(inputs[i], i < states.size() ? states[i] : sequences[i - states.size()]);
  const auto got = model.run(feed);
  Var loss_scan, loss_model;  // every output summed: what the gradients are of
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const Tensor& g = got.at(outputs[k]).value();
    ASSERT_EQ(g.shape(), want[k].shape()) << outputs[k];
    ASSERT_EQ(g.dtype(), want[k].dtype()) << outputs[k];
    EXPECT_LE(max_abs_diff(g, want[k].value()), tolerance) << outputs[k];
    EXPECT_GT(max_abs_diff(want[k].value(), zeros_like(want[k].value())), 0.0) << outputs[k] << " is all zeros";
    loss_scan = k == 0 ? sum(want[k]) : loss_scan + sum(want[k]);
    loss_model = k == 0 ? sum(got.at(outputs[k])) : loss_model + sum(got.at(outputs[k]));
  }
  if (c.trained.empty()) return;
  for (Shared p : c.trained | std::views::values) p.zero_grad();  // a case may reuse an earlier one's
  tape.backward(loss_scan + loss_model);                         // the two graphs share no parameter
  for (const auto& [name, p] : c.trained) {
    const Tensor want_grad = p.grad(), got_grad = model.parameter(name).grad();
    EXPECT_GT(max_abs_diff(want_grad, zeros_like(want_grad)), 0.0) << name;
    EXPECT_LE(max_abs_diff(got_grad, want_grad), tolerance) << name;
  }
}

ScanCase elman(DType dtype, std::int64_t t = 5) {
  Generator gen(1);
  const std::int64_t b = 2, in = 3, h = 4;
  const Shared w = parameter({in, h}, dtype, gen, "W"), u = parameter({h, h}, dtype, gen, "U"),
               bias = parameter({h}, dtype, gen, "b");
  ScanCase c;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var next = tanh(matmul(s[1], w) + matmul(s[0], u) + Var(bias));
    return {next, next};
  };
  c.states = {normal({b, h}, 0.0, 1.0, gen, dtype)};
  c.sequences = {normal({t, b, in}, 0.0, 1.0, gen, dtype)};
  return c;
}

TEST(OnnxExportScan, ElmanRnnRoundTripsInFloat64AndFloat32) {
  expect_round_trip(elman(DType::float64), "elman64", 1e-12);
  expect_round_trip(elman(DType::float32), "elman32", 1e-6);
}

// The re-imported model trains like the scan: its parameters get the same gradients.
TEST(OnnxExportScan, ImportedParametersGetTheScansGradients) {
  Generator gen(5);
  const DType f64 = DType::float64;
  const Shared w = parameter({3, 4}, f64, gen, "W"), u = parameter({4, 4}, f64, gen, "U");
  const OnnxBody step = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var next = tanh(matmul(s[1], w) + matmul(s[0], u));
    return {next, next};
  };
  const Tensor h0 = normal({2, 4}, 0.0, 1.0, gen, f64), xs = normal({4, 2, 3}, 0.0, 1.0, gen, f64);
  const fs::path path = temp_path("gradients");
  recur::onnx_io::save(path, step, {h0}, {xs});
  const recur::onnx_io::Model model = recur::onnx_io::load(path.string());
  fs::remove(path);
  {
    Tape tape;
    tape.backward(sum(onnx_scan(step, {Var(h0)}, {Var(xs)}).scan_outputs[0]));
  }
  {
    Tape tape;
    tape.backward(sum(model.run({{"initial_state_0", h0}, {"scan_input_0", xs}}).at("scan_output_0")));
  }
  for (const auto& [name, original] : {std::pair{"W", w}, std::pair{"U", u}}) {
    EXPECT_GT(max_abs_diff(original.grad(), zeros_like(original.grad())), 0.0) << name;
    EXPECT_LE(max_abs_diff(model.parameter(name).grad(), original.grad()), 1e-12) << name;
  }
}

TEST(OnnxExportScan, ParametersAreNamedInitializersReadByTheBody) {
  const ScanCase c = elman(DType::float64);
  const ::onnx::ModelProto model = recur::onnx_io::scan_model(c.body, c.states, c.sequences);
  const ::onnx::GraphProto& g = model.graph();
  std::vector<std::string> initializers;
  for (const auto& t : g.initializer()) initializers.push_back(t.name());
  std::sort(initializers.begin(), initializers.end());
  EXPECT_EQ(initializers, (std::vector<std::string>{"U", "W", "b"}));
  ASSERT_EQ(g.node_size(), 1);
  EXPECT_EQ(g.node(0).op_type(), "Scan");
  EXPECT_EQ(g.input(1).type().tensor_type().shape().dim(0).dim_param(), "T");
  const ::onnx::GraphProto& body = g.node(0).attribute(0).g();
  std::vector<std::string> ops;
  for (const auto& n : body.node()) ops.push_back(n.op_type());
  for (const char* op : {"MatMul", "Add", "Tanh"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
}

// Gates from one matmul sliced four ways, two states, the hidden state stacked along
// axis 1 (batch first) and a per-step sum stacked along axis 0.
TEST(OnnxExportScan, LstmLikeStepWithTwoStatesRoundTrips) {
  Generator gen(2);
  const DType f64 = DType::float64;
  const std::int64_t b = 2, in = 3, h = 3;
  const Shared w = parameter({in, 4 * h}, f64, gen, "W"), u = parameter({h, 4 * h}, f64, gen, "U"),
               bias = parameter({4 * h}, f64, gen, "bias");
  ScanCase c;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var gates = matmul(concat({s[2], s[0]}, 1), concat({Var(w), Var(u)}, 0)) + Var(bias);
    auto gate = [&](std::int64_t k) { return slice(gates, 1, k * h, (k + 1) * h); };
    const Var c_next = sigmoid(gate(1)) * s[1] + sigmoid(gate(0)) * tanh(gate(2));
    const Var h_next = sigmoid(gate(3)) * tanh(c_next);
    return {h_next, c_next, h_next, mean(c_next, {1})};
  };
  c.states = {normal({b, h}, 0.0, 1.0, gen, f64), normal({b, h}, 0.0, 1.0, gen, f64)};
  c.sequences = {normal({4, b, in}, 0.0, 1.0, gen, f64)};
  c.options.scan.scan_output_axes = {1, 0};
  c.options.final_state_names = {"h_n", "c_n"};
  expect_round_trip(c, "lstm", 1e-12);
}

// A step that stacks values along a new axis (recur's stack is one op; ONNX has none: the
// body unsqueezes and joins).
TEST(OnnxExportScan, StepThatStacksRoundTrips) {
  Generator gen(4);
  const DType f64 = DType::float64;
  const Shared u = parameter({3, 3}, f64, gen, "U");
  ScanCase c;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var a = tanh(matmul(s[0], u) + s[1]), b = sigmoid(s[1] - s[0]);
    const Var both = stack({a, b}, 1);  // [B, 2, 3]
    return {sum(both, {1}), stack({a, b, a * b}, -1)};
  };
  c.states = {normal({2, 3}, 0.0, 1.0, gen, f64)};
  c.sequences = {normal({4, 2, 3}, 0.0, 1.0, gen, f64)};
  expect_round_trip(c, "stack", 1e-12);
  const ::onnx::ModelProto model = recur::onnx_io::scan_model(c.body, c.states, c.sequences);
  std::vector<std::string> ops;
  for (const auto& n : model.graph().node(0).attribute(0).g().node()) ops.push_back(n.op_type());
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "Unsqueeze"), 5);
}

// A batch-first sequence [B, T, I] read from its last step to its first, the outputs
// prepended (so in the sequence's order) along axis 1.
TEST(OnnxExportScan, ReverseDirectionsAndOtherAxesRoundTrip) {
  ScanCase c = elman(DType::float64);
  c.sequences = {permute(c.sequences[0], {1, 0, 2})};
  c.options.scan = {.scan_input_axes = {1}, .scan_input_directions = {1}, .scan_output_axes = {1},
                    .scan_output_directions = {1}};
  expect_round_trip(c, "reverse", 1e-12);
}

// Token ids as the scan input: an embedding lookup (take) of an integer sequence.
TEST(OnnxExportScan, IntegerScanInputsRoundTrip) {
  Generator gen(6);
  const DType f64 = DType::float64;
  const Shared embedding = parameter({5, 4}, f64, gen, "embedding"), u = parameter({4, 4}, f64, gen, "U");
  ScanCase c;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var next = tanh(take(Var(embedding), s[1], 0) + matmul(s[0], u));  // s[1]: ids [B]
    return {next, next};
  };
  c.states = {normal({2, 4}, 0.0, 1.0, gen, f64)};
  c.sequences = {from_vector(std::vector<std::int64_t>{0, 4, 3, 1, 2, 2}, {3, 2})};
  expect_round_trip(c, "token_ids", 1e-12);
}

// No carried state: each step maps its elements (two sequences) to outputs on its own,
// through transposes, softmax, reshapes, reductions and broadcasting.
TEST(OnnxExportScan, StepWithoutStateRoundTrips) {
  Generator gen(3);
  const DType f64 = DType::float64;
  const Shared w = parameter({3, 4}, f64, gen, "proj");
  ScanCase c;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var p = softmax(matmul(s[0], w), -1);                             // [2, 4]
    const Var q = transpose(p) * exp(-s[1]);                                // [4, 2]
    const Var r = reshape(q, {8}) + exp(Var(full({8}, 0.1, f64)));  // an op on constants: folded
    return {q, relu(r - Var(full({8}, 0.2, f64))), log_softmax(sum(q, {0}), 0) + index(s[1], 0, 1)};
  };
  c.sequences = {normal({3, 2, 3}, 0.0, 1.0, gen, f64), normal({3, 4, 2}, 0.0, 1.0, gen, f64)};
  expect_round_trip(c, "stateless", 1e-12);
}

// Every other op with an ONNX form, each once, in a step with one state.
TEST(OnnxExportScan, EveryMappedOpRoundTrips) {
  Generator gen(4);
  const DType f64 = DType::float64;
  const Shared w = parameter({3, 2}, f64, gen, "w");
  const Tensor mask = tensor({{1.0, 0.0}, {0.0, 1.0}}, f64);
  const Tensor positions = from_vector(std::vector<std::int64_t>{2, 0}, {2});
  const Tensor rows = from_vector(std::vector<std::int64_t>{1, 0, 1, 1}, {2, 2});
  ScanCase c;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var& h = s[0];                                              // [2, 2]
    const Var x = s[1];                                               // [2, 3]
    const Var a = matmul_t(x, Var(w), false, false);                  // [2, 2]
    const Var b = matmul_t(a, h, true, false) + matmul_t(h, a, false, true);
    const Var m = maximum(pow(abs(b), Var(scalar(2.0, f64))), minimum(sqrt(abs(a) + 1.0), softplus(h)));
    const Var r = where(Var(mask), log(m + 1.0), m / (abs(h) + 1.0));  // [2, 2]
    const Var reduced = max(r, {0}) + min(r, {1}) + prod(r, {0}) + logsumexp(r, {1});  // [2]
    const Var spread = broadcast_to(reduced, {3, 2}) * 0.1;           // [3, 2]
    const Var back = sum_to(spread, {1, 2});                          // [1, 2]
    const Var picked = take(x, Var(positions), 1) + gather(r, 0, Var(rows));  // [2, 2]
    const Var next = tanh(picked * 0.1 + back);
    return {next, next};
  };
  c.states = {normal({2, 2}, 0.0, 1.0, gen, f64)};
  c.sequences = {normal({3, 2, 3}, 0.0, 1.0, gen, f64)};
  const ::onnx::ModelProto model = recur::onnx_io::scan_model(c.body, c.states, c.sequences);
  std::set<std::string> ops;
  for (const auto& n : model.graph().node(0).attribute(0).g().node()) ops.insert(n.op_type());
  for (const char* op : {"Transpose", "Max", "Min", "Pow", "Abs", "Sqrt", "Softplus", "Where", "Log", "Div",
                         "ReduceMax", "ReduceMin", "ReduceProd", "Exp", "Expand", "ReduceSum",
                         "Reshape", "Gather", "GatherElements"})
    EXPECT_TRUE(ops.contains(op)) << op;
  expect_round_trip(c, "every_op", 1e-12);
}

// Steps made of recur's cell modules and cell functions: their fused elementwise ops
// (rnn_pointwise, lstm_pointwise, gru_pointwise) become the ONNX ops of the cells'
// equations; ONNX's GRU form (linear_before_reset false) records plain ops. A clip's
// bounds come along. Outputs and the parameters' gradients equal the scan's.
// A module's parameters by the names the export gives them: the Shared's own, `suffix` added.
std::vector<std::pair<std::string, Shared>> named(const Module& module, const std::string& suffix = "") {
  std::vector<std::pair<std::string, Shared>> out;
  for (const Shared& p : module.parameters()) out.emplace_back(p.name() + suffix, p);
  return out;
}

TEST(OnnxExportScan, CellModulesAndFunctionsInAStepRoundTripWithGradients) {
  for (const auto& [dtype, tolerance] : {std::pair{DType::float64, 1e-12}, std::pair{DType::float32, 1e-6}}) {
    Generator gen(7);
    const std::int64_t b = 2, in = 3, h = 4;
    const nn::LSTMCell lstm({.input_size = in, .hidden_size = h, .dtype = dtype}, gen);
    const nn::GRUCell gru({.input_size = in, .hidden_size = h, .dtype = dtype}, gen);
    const nn::RNNCell rnn({.input_size = in, .hidden_size = h, .nonlinearity = nn::Nonlinearity::relu, .dtype = dtype},
                          gen);
    const Tensor x = normal({3, b, in}, 0.0, 1.0, gen, dtype), h0 = normal({b, h}, 0.0, 0.5, gen, dtype);
    ScanCase with_lstm{[=](std::span<const Var> s) -> std::vector<Var> {
                         const nn::LstmState next = lstm(s[2], s[0], s[1]);
                         return {next.h, next.c, next.h};
                       },
                       {h0, normal({b, h}, 0.0, 0.5, gen, dtype)}, {x}, {}, named(lstm)};
    expect_round_trip(with_lstm, "lstm_cell", tolerance);
    ScanCase with_gru{[=](std::span<const Var> s) -> std::vector<Var> {
                        const Var next = gru(s[1], s[0]);
                        return {next, clip(next, -0.3, 0.2)};
                      },
                      {h0}, {x}, {}, named(gru)};
    expect_round_trip(with_gru, "gru_cell", tolerance);
    // ONNX's GRU form and an Elman cell with relu, both on the GRU's and RNN's parameters.
    const nn::CellParameters& g = gru.weights();
    ScanCase with_functions{[=](std::span<const Var> s) -> std::vector<Var> {
                              Tape& tape = s[0].tape();
                              const Var next = nn::gru_cell(s[1], s[0], g.read(tape), false);
                              return {next, rnn(s[1], next)};
                            },
                            {h0}, {x}, {}, named(gru)};
    for (auto& entry : named(rnn, "_2")) with_functions.trained.push_back(entry);  // read second: renamed
    expect_round_trip(with_functions, "cell_functions", tolerance);
  }
}

// Exported at batch 3 with a symbolic batch, the model runs at batch 5 as recur's scan does
// there: an LSTM cell, the batch merged into one axis and back (Reshape), a broadcast over it
// (Expand) and a constant of its size. A slice or a constant that depends on the batch
// size is an error naming it.
TEST(OnnxExportScan, ASymbolicBatchRunsAtAnotherBatchSize) {
  Generator gen(8);
  const DType f64 = DType::float64;
  const std::int64_t in = 3, h = 4;
  const nn::LSTMCell lstm({.input_size = in, .hidden_size = h, .dtype = f64}, gen);
  const Shared scale = parameter({1, h}, f64, gen, "scale");
  auto inputs = [&](std::int64_t b) {
    return std::pair{std::vector<Tensor>{normal({b, h}, 0.0, 0.5, gen, f64), normal({b, h}, 0.0, 0.5, gen, f64)},
                     std::vector<Tensor>{normal({3, b, in}, 0.0, 1.0, gen, f64)}};
  };
  const auto [states3, sequences3] = inputs(3);
  const auto [states5, sequences5] = inputs(5);
  ScanCase c{[=](std::span<const Var> s) -> std::vector<Var> {
               const std::int64_t b = s[0].size(0);
               const nn::LstmState next = lstm(s[2], s[0], s[1]);
               const Var flat = reshape(next.h, {b * h});  // [B*H]
               const Var scaled = reshape(flat, {b, h}) * broadcast_to(Var(scale), {b, h});
               return {scaled + Var(full({b, h}, 0.25, f64)), next.c, sum(scaled, {1})};
             },
             states3, sequences3, {.batch_axis = 0}, named(lstm), states5, sequences5};
  c.trained.emplace_back("scale", scale);
  const ::onnx::ModelProto model = recur::onnx_io::scan_model(c.body, c.states, c.sequences, c.options);
  EXPECT_EQ(model.graph().input(0).type().tensor_type().shape().dim(0).dim_param(), "batch");
  EXPECT_EQ(model.graph().input(2).type().tensor_type().shape().dim(1).dim_param(), "batch");
  EXPECT_EQ(model.graph().output(2).type().tensor_type().shape().dim(1).dim_param(), "batch");
  expect_round_trip(c, "batch", 1e-12);

  const OnnxBody inner = c.body;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    std::vector<Var> out = inner(s);
    out[2] = slice(out[0], 0, 1, s[0].size(0));  // all rows but the first: bounds of the batch's size
    return out;
  };
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences, c.options); },
                                    {"onnx_io::save", "'slice'", "depend on the batch size"});
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    std::vector<Var> out = inner(s);
    out[2] = mean(out[0], {0});  // divides by the batch size, a constant
    return out;
  };
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences, c.options); },
                                    {"onnx_io::save", "constant", "depends on the batch size"});
}

TEST(OnnxExportScan, AnOpWithoutOnnxFormIsAnErrorNamingItAndWritesNothing) {
  ScanCase c = elman(DType::float64);
  const OnnxBody inner = c.body;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var next = inner(s)[0] * mse(s[0], inner(s)[0]);
    return {next, next};
  };
  const fs::path path = temp_path("unsupported");
  testing::expect_error<recur::onnx_io::UnsupportedError>(
      [&] { recur::onnx_io::save(path, c.body, c.states, c.sequences); }, {"onnx_io::save", "'mse'", "no ONNX form"});
  EXPECT_FALSE(fs::exists(path));
}

TEST(OnnxExportScan, AValueComputedWithoutGradientAWrongStateOrBadOptionsAreErrors) {
  ScanCase c = elman(DType::float64);
  c.body = [](std::span<const Var> s) -> std::vector<Var> {
    const Var positive = greater(s[1], Var(full_like(s[1].value(), 0.6)));  // a mask: a constant on the tape
    return {s[0], positive * s[1]};
  };
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences); },
                                    {"onnx_io::save", "constant computed from the step's inputs"});
  c.body = [](std::span<const Var> s) -> std::vector<Var> { return {sum(s[0], {0})}; };
  testing::expect_error<ShapeError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences); },
                                    {"onnx_io::save", "new state 0", "[4]", "[2, 4]"});
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, {}); },
                                    {"onnx_io::save", "needs a scan input"});
  recur::onnx_io::ScanExportOptions reversed;
  reversed.scan.scan_input_directions = {2};
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences, reversed); },
                                    {"onnx_io::save", "scan_input_directions", "0 or 1"});
  c = elman(DType::float64);
  recur::onnx_io::ScanExportOptions misnamed;
  misnamed.state_names = {"x"};
  misnamed.scan_input_names = {"x"};
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences, misnamed); },
                                    {"onnx_io::save", "'x'", "two values"});
  recur::onnx_io::ScanExportOptions two_axes;
  two_axes.scan.scan_output_axes = {0, 1};
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences, two_axes); },
                                    {"onnx_io::save", "scan_output_axes", "2 entries for 1 values"});
}

// A scan inside the step is unrolled into the body (its length the traced one): its steps
// are ops the export sees. A strict one checks its steps' inputs itself, so they are
// recorded out of the export's sight, and a random draw changes its stream's state:
// neither can be one ONNX body.
TEST(OnnxExportScan, ANestedScanIsUnrolledAndAStrictOneOrARandomDrawIsAnError) {
  ScanCase c = elman(DType::float64);
  const OnnxBody inner = c.body;
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var twice = onnx_scan(inner, {s[0]}, {stack({s[1], s[1]})}).scan_outputs[0];
    return {s[0], twice};  // the state passes through: a body output that is a body input
  };
  expect_round_trip(c, "nested", 1e-12);
  c.body = [](std::span<const Var> s) -> std::vector<Var> {
    auto add = [](std::span<const Var> a) -> StepResult { return a[0] + a[1]; };
    const Var total = scan(add, {.sequences = {stack({s[1], s[1]})}, .outputs_info = {s[1]}, .strict = true})[0];
    return {s[0], total};
  };
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences); },
                                    {"onnx_io::save", "out of the export's sight"});
  auto stream = std::make_shared<RandomStream>(3);
  c.body = [=](std::span<const Var> s) -> std::vector<Var> {
    const Var noisy = s[0] + stream->normal({2, 4}, 0.0, 1.0, DType::float64);
    return {noisy, noisy};
  };
  testing::expect_error<ValueError>([&] { (void)recur::onnx_io::scan_model(c.body, c.states, c.sequences); },
                                    {"onnx_io::save", "random_stream", "no side effects"});
}

}  // namespace
}  // namespace recur
