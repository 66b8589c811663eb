// Hostile models and files (issue 24): each fault an attacker found, through the public API.
// Every bad input is a recur::Error naming what is wrong; a failed run leaves the tape as it
// was; nothing reads past a buffer, wraps a size or runs without a bound the user can set.
#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "../expect_error.hpp"
#include "../file_helpers.hpp"
#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

using ::onnx::TensorProto;

// y = x + c, c an initializer given as `c` (whatever its bytes).
std::string model_with_initializer(const TensorProto& c) {
  GraphBuilder g("g");
  g.input("x", {1}, c.data_type()).output("y", {1}, c.data_type());
  g.initializer(c).node("Add", {"x", c.name()}, {"y"});
  return model_bytes(g.graph(), 13);
}

TensorProto raw_tensor(std::int32_t type, const std::string& raw) {
  TensorProto t;
  t.set_name("c");
  t.set_data_type(type);
  t.add_dims(1);
  t.set_raw_data(raw);
  return t;
}

// ---- 1. raw_data of the wrong length is refused before anything parses it ----------------

TEST(OnnxHostile, RawDataShorterThanOneElement) {
  // 3 bytes for one int64: the ONNX library's ParseData crashed on it.
  expect_error<IOError>([] { onnx_io::load_from_bytes(model_with_initializer(raw_tensor(TensorProto::INT64, "abc")), "m.onnx"); },
                        {"m.onnx", "initializer 'c'", "raw_data holds 3 bytes", "[1]"});
}

TEST(OnnxHostile, RawDataNotAMultipleOfTheElementSize) {
  // 5 bytes for one float: ParseData wrote past its buffer, then the model loaded.
  expect_error<IOError>([] { onnx_io::load_from_bytes(model_with_initializer(raw_tensor(TensorProto::FLOAT, "abcde")), "m.onnx"); },
                        {"m.onnx", "raw_data holds 5 bytes"});
  expect_error<IOError>([] { onnx_io::load_from_bytes(model_with_initializer(raw_tensor(TensorProto::INT16, "abc")), "m.onnx"); },
                        {"raw_data holds 3 bytes"});
}

TEST(OnnxHostile, RawDataOfAConstantNodeIsCheckedAtLoad) {
  // A Constant node's value is read at load (the last-step shortcut reads int64 constants).
  GraphBuilder g("g");
  g.input("x", {1}, TensorProto::INT64).output("y", {1}, TensorProto::INT64);
  ::onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(::onnx::AttributeProto::TENSOR);
  *value.mutable_t() = raw_tensor(TensorProto::INT64, "abc");
  g.node("Constant", {}, {"c"}, {value}).node("Add", {"x", "c"}, {"y"});
  const auto model = [&] { return onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx"); };
  try {
    const auto m = model();
    Tape tape;  // if it loads, the run reads the value and refuses it
    expect_clean_failure<IOError>(tape, [&] { m.run({{"x", int64_tensor({1})}}); }, {"raw_data holds 3 bytes"});
  } catch (const IOError& e) {
    EXPECT_NE(std::string(e.what()).find("raw_data holds 3 bytes"), std::string::npos) << e.what();
  }
}

TEST(OnnxHostile, RawDataOfConstantOfShapeIsCheckedWhenItRuns) {
  GraphBuilder g("g");
  g.input("shape", {1}, TensorProto::INT64).output("y", {-1});
  ::onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(::onnx::AttributeProto::TENSOR);
  *value.mutable_t() = raw_tensor(TensorProto::DOUBLE, "abcde");
  g.node("ConstantOfShape", {"shape"}, {"y"}, {value});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
  Tape tape;
  const std::map<std::string, Var> feed{{"shape", int64_tensor({3})}};
  expect_clean_failure<IOError>(tape, [&] { model.run(feed); }, {"raw_data holds 5 bytes"});
}

class OnnxHostileFiles : public TempDirTest {};

TEST_F(OnnxHostileFiles, LoadTensorChecksRawData) {
  const auto path = file("t.pb").string();
  {
    std::ofstream out(path, std::ios::binary);
    raw_tensor(TensorProto::INT64, "abc").SerializeToOstream(&out);
  }
  expect_error<IOError>([&] { onnx_io::load_tensor(path); }, {"onnx", "raw_data holds 3 bytes"});
}

// ---- 2. sizes whose product passes int64 ----------------------------------------------------

TEST(OnnxHostile, ReshapeOfAnEmptyTensorToAWrappingShape) {
  // 2^62 x 64 wraps to 0 in int64: it was accepted as a shape of 0 elements.
  const std::int64_t big = std::int64_t{1} << 62;
  expect_error<ShapeError>([&] { reshape(zeros({0}, DType::float64), {big, 64}); }, {"reshape", "[4611686018427387904, 64]"});
  expect_error<ShapeError>([&] { reshape(zeros({0}, DType::float64), {big, 64, -1}); }, {"reshape"});
  expect_error<ShapeError>([&] { (void)zeros({0}, DType::float64).view({big, 64}); }, {"[4611686018427387904, 64]"});
  // Empty shapes whose other sizes overflow are refused as NumPy refuses them (strides).
  expect_error<ShapeError>([&] { zeros({big, 64, 0}, DType::float64); }, {"[4611686018427387904, 64, 0]"});

  GraphBuilder g("g");
  g.input("x", {0}).input("shape", {2}, TensorProto::INT64).output("y", {-1});
  g.node("Reshape", {"x", "shape"}, {"r"})
      .node("Constant", {}, {"i"}, {tensor_attribute("value", int64_scalar(5))})
      .node("Gather", {"r", "i"}, {"y"});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
  Tape tape;
  const std::map<std::string, Var> feed{{"x", zeros({0}, DType::float64)}, {"shape", int64_tensor({big, 64})}};
  expect_clean_failure<ShapeError>(tape, [&] { model.run(feed); }, {"reshape", "[4611686018427387904, 64]"});
}

// ---- 3. loops with a bound the user sets, cancellation, memory that runs out ---------------

// A Loop carrying h (any size) for M iterations with cond true throughout; each iteration
// adds h + h as a scan output, so memory grows with the iterations.
std::string endless_loop_model() {
  GraphBuilder body("body");
  body.input("i", {}, TensorProto::INT64).input("cond_in", {}, TensorProto::BOOL).input("h", {-1});
  body.output("cond_out", {}, TensorProto::BOOL).output("h_next", {-1}).output("y", {-1});
  body.node("Identity", {"h"}, {"h_next"}).node("Add", {"h", "h"}, {"y"}).node("Identity", {"cond_in"}, {"cond_out"});
  GraphBuilder g("loop");
  g.input("M", {}, TensorProto::INT64).input("h0", {-1});
  g.output("hT", {-1}).output("ys", {-1, -1});
  g.node("Loop", {"M", "", "h0"}, {"hT", "ys"}, {graph_attribute("body", body.graph())});
  return model_bytes(g.graph(), 13);
}

constexpr std::int64_t kHuge = std::int64_t{1} << 62;

TEST(OnnxHostile, MaxIterationsBoundsEveryLoop) {
  const auto model = onnx_io::load_from_bytes(endless_loop_model(), "m.onnx");
  Tape tape;
  const Var h0 = tape.variable(random_tensor({4}, 1)), huge = tape.constant(int64_scalar(kHuge));
  expect_clean_failure<LimitError>(
      tape, [&] { model.run({{"M", huge}, {"h0", h0}}, {.max_iterations = 100}); },
      {"Loop", "iteration 101", "RunOptions::max_iterations = 100"});
  // Within the bound the loop runs, and its values are those of the loop written out.
  const auto out = model.run({{"M", int64_scalar(100)}, {"h0", h0}}, {.max_iterations = 100});
  EXPECT_EQ(out.at("ys").shape(), (Shape{100, 4}));
  expect_near(out.at("ys").value()[99], h0.value() * 2.0, 0.0);
}

TEST(OnnxHostile, MaxIterationsBoundsAScanBeforeItRuns) {
  GraphBuilder body("body");
  body.input("s", {1}).input("x_t", {1}).output("s_next", {1}).output("y", {1});
  body.node("Add", {"s", "x_t"}, {"s_next"}).node("Identity", {"s_next"}, {"y"});
  GraphBuilder g("scan");
  g.input("s0", {1}).input("xs", {-1, 1}).output("sT", {1}).output("ys", {-1, 1});
  g.node("Scan", {"s0", "xs"}, {"sT", "ys"}, {graph_attribute("body", body.graph()), int_attribute("num_scan_inputs", 1)});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 16), "m.onnx");
  Tape tape;
  const Tensor s0 = zeros({1}, DType::float64), xs = ones({11, 1}, DType::float64);
  const std::map<std::string, Var> feed{{"s0", s0}, {"xs", xs}};
  expect_clean_failure<LimitError>(tape, [&] { model.run(feed, {.max_iterations = 10}); },
                                   {"Scan", "iteration 11", "max_iterations = 10"});
  EXPECT_EQ(model.run({{"s0", s0}, {"xs", xs}}, {.max_iterations = 11}).at("sT").value().item<double>(), 11.0);
}

TEST(OnnxHostile, CancelFromAnotherThread) {
  const auto model = onnx_io::load_from_bytes(endless_loop_model(), "m.onnx");
  Tape tape;
  const Var h0 = tape.variable(random_tensor({4}, 2)), huge = tape.constant(int64_scalar(kHuge));
  const auto before = tape.size();
  std::stop_source stop;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  expect_error<CancelledError>(
      [&] {
        model.run({{"M", huge}, {"h0", h0}},
                  {.max_iterations = std::numeric_limits<std::int64_t>::max(), .cancel = stop.get_token()});
      },
      {"cancelled", "RunOptions::cancel"});
  canceller.join();
  EXPECT_EQ(tape.size(), before);
}

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
// With the address space limited (as a user limits a process that runs untrusted models),
// the loop runs out of memory: a MemoryError, the tape rolled back, the process alive. The
// rollback used to throw std::bad_alloc itself and end the process. (The sanitizers reserve
// address space of their own, so this runs in the plain build only.)
TEST(OnnxHostileDeathTest, LoopThatExhaustsMemoryIsAMemoryError) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const auto model = onnx_io::load_from_bytes(endless_loop_model(), "m.onnx");
  const auto exhaust_memory = [&] {
        rlimit limit{};
    getrlimit(RLIMIT_AS, &limit);
    std::ifstream statm("/proc/self/statm");
    std::uint64_t pages = 0;
    statm >> pages;
    limit.rlim_cur = pages * 4096 + (std::uint64_t{512} << 20);  // what the process has, and 512 MiB
    setrlimit(RLIMIT_AS, &limit);
    Tape tape;
    const Var h0 = tape.variable(random_tensor({1 << 16}, 3)), huge = tape.constant(int64_scalar(kHuge));
    const auto before = tape.size();  // 512 KiB a step
    try {
      model.run({{"M", huge}, {"h0", h0}}, {.max_iterations = kHuge});
    } catch (const MemoryError&) {
      std::exit(tape.size() == before ? 0 : 2);
    }
    std::exit(1);
      };
  EXPECT_EXIT(exhaust_memory(), ::testing::ExitedWithCode(0), "");
}
#endif

// ---- 4. names are scoped per graph ------------------------------------------------------------

// Two If nodes: the first's branch defines a Constant named idx (-1); the second's branch
// runs a Scan and reads its scan output with Gather(ys, idx), idx = 0 defined in that branch
// after the Scan. Each branch sees only its own idx: the result is step 0. With one
// model-wide map of constants (the first definition winning), the sibling's -1 was read and
// the last step came back instead, silently.
TEST(OnnxHostile, LastStepShortcutResolvesNamesInTheReadersScope) {
  GraphBuilder body("body");
  body.input("s", {1}).input("x_t", {1}).output("s_next", {1}).output("y", {1});
  body.node("Add", {"s", "x_t"}, {"s_next"}).node("Identity", {"s_next"}, {"y"});
  GraphBuilder defines_idx("defines_idx"), other("other");
  defines_idx.output("idx", {}, TensorProto::INT64).node("Constant", {}, {"idx"}, {tensor_attribute("value", int64_scalar(-1))});
  other.output("other_idx", {}, TensorProto::INT64).node("Constant", {}, {"other_idx"}, {tensor_attribute("value", int64_scalar(-1))});
  GraphBuilder reads_idx("reads_idx"), no_scan("no_scan");
  reads_idx.output("first", {1});
  reads_idx.node("Scan", {"s0", "xs"}, {"sT", "ys"}, {graph_attribute("body", body.graph()), int_attribute("num_scan_inputs", 1)})
      .node("Constant", {}, {"idx"}, {tensor_attribute("value", int64_scalar(0))})
      .node("Gather", {"ys", "idx"}, {"first"});
  no_scan.output("s0_copy", {1}).node("Identity", {"s0"}, {"s0_copy"});
  GraphBuilder g("g");
  g.input("s0", {1}).input("xs", {-1, 1}).input("flag", {}, TensorProto::BOOL);
  g.output("branch", {}, TensorProto::INT64).output("first", {1});
  g.node("If", {"flag"}, {"branch"}, {graph_attribute("then_branch", defines_idx.graph()), graph_attribute("else_branch", other.graph())})
      .node("If", {"flag"}, {"first"}, {graph_attribute("then_branch", reads_idx.graph()), graph_attribute("else_branch", no_scan.graph())});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 16), "m.onnx");
  Tape tape;
  const Tensor xs = int64_tensor({1, 2, 3}).to(DType::float64).view({3, 1});
  for (const bool keep_last : {true, false}) {
    const auto out = model.run({{"s0", zeros({1}, DType::float64)}, {"xs", xs}, {"flag", int64_scalar(1)}}, {.keep_last = keep_last});
    EXPECT_EQ(out.at("first").value().item<double>(), 1.0) << "keep_last " << keep_last;  // step 0: 0 + 1 (the last is 6)
  }
}

// ---- smaller: files, nesting, external data ---------------------------------------------------

TEST_F(OnnxHostileFiles, EmptyFileAndDirectoryAreIOErrors) {
  const auto empty = file("empty.onnx").string();
  std::ofstream(empty).close();
  expect_error<IOError>([&] { onnx_io::load(empty); }, {"onnx_io::load", "empty.onnx", "empty"});
  expect_error<IOError>([&] { onnx_io::load(dir_.string()); }, {"onnx_io::load", "not a regular file"});
  expect_error<IOError>([&] { onnx_io::load_from_bytes("", "bytes"); }, {"bytes", "empty"});
}

TEST(OnnxHostile, NestingBeyondProtobufsLimitIsNamed) {
  // An If inside the then-branch of an If ... 60 levels: over protobuf's 100 message levels.
  ::onnx::GraphProto leaf, inner;
  leaf.set_name("leaf");
  for (int level = 0; level < 60; ++level) {
    GraphBuilder g("level" + std::to_string(level));
    g.input("c", {}, TensorProto::BOOL).output("y", {}, TensorProto::BOOL);
    g.node("If", {"c"}, {"y"}, {graph_attribute("then_branch", level ? inner : leaf), graph_attribute("else_branch", leaf)});
    inner = g.graph();
  }
  expect_error<IOError>([&] { onnx_io::load_from_bytes(model_bytes(inner, 13), "deep.onnx"); },
                        {"deep.onnx", "deeper than protobuf's limit of 100"});
}

TEST(OnnxHostile, ExternalDataIsRefusedBeforeAnyFileIsTouched) {
  // The same message whether the path exists or not: the model learns nothing of the disk.
  std::vector<std::string> messages;
  for (const std::string location : {"/etc/passwd", "/no/such/file", "../../secret.bin"}) {
    TensorProto t = raw_tensor(TensorProto::FLOAT, "");
    t.clear_raw_data();
    t.set_data_location(TensorProto::EXTERNAL);
    auto* entry = t.add_external_data();
    entry->set_key("location");
    entry->set_value(location);
    try {
      onnx_io::load_from_bytes(model_with_initializer(t), "m.onnx");
      ADD_FAILURE() << "external data loaded from " << location;
    } catch (const onnx_io::UnsupportedError& e) {
      messages.push_back(e.what());
    }
  }
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_EQ(messages[0], messages[1]);
  EXPECT_EQ(messages[0], messages[2]);
  EXPECT_NE(messages[0].find("external"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0].find("passwd"), std::string::npos) << messages[0];
}

// Runs `model` on `feed` and expects E naming `mentions`; the feed's constants are put on
// the tape first, so that what must stay unchanged is what the run itself recorded.
template <class E>
void expect_run_fails(const onnx_io::Model& model, const std::map<std::string, Tensor>& feed,
                      std::initializer_list<std::string> mentions) {
  Tape tape;
  std::map<std::string, Var> vars;
  for (const auto& [name, value] : feed) vars.emplace(name, tape.constant(value));
  expect_clean_failure<E>(tape, [&] { model.run(vars); }, mentions);
}

// ---- 5. invalid input that was silently accepted ----------------------------------------------

// A model of one node `op` on inputs a and b (none if UNDEFINED) of these element types.
onnx_io::Model one_node(const std::string& op, std::int32_t a_type, std::int32_t b_type, std::int32_t y_type,
                     const std::vector<::onnx::AttributeProto>& attributes = {}) {
  GraphBuilder g("g");
  g.input("a", {-1}, a_type);
  if (b_type != TensorProto::UNDEFINED) g.input("b", {-1}, b_type);
  g.output("y", {-1}, y_type);
  g.node(op, b_type != TensorProto::UNDEFINED ? std::vector<std::string>{"a", "b"} : std::vector<std::string>{"a"}, {"y"},
         attributes);
  return onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
}

TEST(OnnxHostile, DuplicateAxesAreRefused) {
  GraphBuilder g("g");
  g.input("x", {3, 1, 1, 4}).input("axes", {2}, TensorProto::INT64).output("y", {-1});
  g.node("Squeeze", {"x", "axes"}, {"y"});
  const auto squeeze_model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
  Tape tape;
  const Tensor x = zeros({3, 1, 1, 4}, DType::float64);
  expect_run_fails<ValueError>(squeeze_model, {{"x", x}, {"axes", int64_tensor({1, 1})}}, {"Squeeze", "axis 1 is named twice"});
  expect_run_fails<ValueError>(squeeze_model, {{"x", x}, {"axes", int64_tensor({2, -2})}}, {"Squeeze", "named twice"});
  EXPECT_EQ(squeeze_model.run({{"x", x}, {"axes", int64_tensor({1, 2})}}).at("y").shape(), (Shape{3, 4}));

  GraphBuilder u("u");
  u.input("x", {3}).input("axes", {2}, TensorProto::INT64).output("y", {-1});
  u.node("Unsqueeze", {"x", "axes"}, {"y"});
  const auto unsqueeze_model = onnx_io::load_from_bytes(model_bytes(u.graph(), 13), "m.onnx");
  expect_run_fails<ValueError>(unsqueeze_model, {{"x", zeros({3}, DType::float64)}, {"axes", int64_tensor({0, 0})}}, {"Unsqueeze", "named twice"});

  GraphBuilder s("s");
  s.input("x", {4}).input("starts", {2}, TensorProto::INT64).input("ends", {2}, TensorProto::INT64);
  s.input("axes", {2}, TensorProto::INT64).output("y", {-1});
  s.node("Slice", {"x", "starts", "ends", "axes"}, {"y"});
  const auto slice_model = onnx_io::load_from_bytes(model_bytes(s.graph(), 13), "m.onnx");
  expect_run_fails<ValueError>(slice_model, {{"x", zeros({4}, DType::float64)}, {"starts", int64_tensor({0, 1})}, {"ends", int64_tensor({3, 2})},
                     {"axes", int64_tensor({0, -1})}}, {"Slice", "named twice"});
}

TEST(OnnxHostile, LossTargetOfAnotherShapeIsRefused) {
  GraphBuilder g("g");
  g.input("x", {-1, -1}).input("t", {-1}, TensorProto::INT64).output("y", {});
  g.node("NegativeLogLikelihoodLoss", {"x", "t"}, {"y"});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
  Tape tape;
  const Tensor x = zeros({4, 3}, DType::float64);
  // A target for 2 of the 4 rows gave a loss over a sub-block.
  expect_run_fails<ValueError>(model, {{"x", x}, {"t", int64_tensor({0, 1})}}, {"NegativeLogLikelihoodLoss", "[4, 3]", "[2]"});
  EXPECT_EQ(model.run({{"x", x}, {"t", int64_tensor({0, 1, 2, 0})}}).at("y").value().item<double>(), 0.0);
}

TEST(OnnxHostile, Opset8SequenceLensOfTheWrongShapeIsRefused) {
  GraphBuilder body("body");
  body.input("s", {1}).input("x_t", {1}).output("s_next", {1}).output("y", {1});
  body.node("Add", {"s", "x_t"}, {"s_next"}).node("Identity", {"s_next"}, {"y"});
  GraphBuilder g("scan8");
  g.input("lens", {-1}, TensorProto::INT64).input("s0", {-1, 1}).input("xs", {-1, -1, 1});
  g.output("sT", {-1, 1}).output("ys", {-1, -1, 1});
  g.node("Scan", {"lens", "s0", "xs"}, {"sT", "ys"},
         {graph_attribute("body", body.graph()), int_attribute("num_scan_inputs", 1)});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 8), "m.onnx");
  Tape tape;
  const Tensor s0 = zeros({2, 1}, DType::float64), xs = ones({2, 3, 1}, DType::float64);
  expect_run_fails<ValueError>(model, {{"lens", int64_tensor({3, 3, 3})}, {"s0", s0}, {"xs", xs}}, {"Scan", "sequence_lens", "[3]", "[2]"});
  // States of another batch size than the scan inputs were cut to the first entries.
  expect_run_fails<ValueError>(model, {{"lens", int64_tensor({3, 3})}, {"s0", zeros({3, 1}, DType::float64)}, {"xs", xs}}, {"Scan", "[3, 1]", "batch of 2"});
  expect_near(model.run({{"lens", int64_tensor({3, 1})}, {"s0", s0}, {"xs", xs}}).at("sT").value(),
              int64_tensor({3, 1}).to(DType::float64).view({2, 1}), 0.0);
}

TEST(OnnxHostile, LoopBodyOutputOfAnotherElementTypeIsRefused) {
  // The body declares a float64 carried value and computes an int64 one.
  GraphBuilder body("body");
  body.input("i", {}, TensorProto::INT64).input("cond_in", {}, TensorProto::BOOL).input("h", {1});
  body.output("cond_out", {}, TensorProto::BOOL).output("h_next", {1});
  body.node("Identity", {"cond_in"}, {"cond_out"}).node("Cast", {"h"}, {"h_next"}, {int_attribute("to", TensorProto::INT64)});
  GraphBuilder g("loop");
  g.input("M", {}, TensorProto::INT64).input("h0", {1}).output("hT", {1});
  g.node("Loop", {"M", "", "h0"}, {"hT"}, {graph_attribute("body", body.graph())});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
  Tape tape;
  expect_run_fails<ValueError>(model, {{"M", int64_scalar(3)}, {"h0", ones({1}, DType::float64)}}, {"graph 'body' output 'h_next'", "DOUBLE", "int64"});
}

TEST(OnnxHostile, IntegerDivisionByZeroIsAnError) {
  const auto model = one_node("Div", TensorProto::INT64, TensorProto::INT64, TensorProto::INT64);
  Tape tape;
  expect_run_fails<ValueError>(model, {{"a", int64_tensor({7, 8})}, {"b", int64_tensor({2, 0})}}, {"Div", "integer division by zero"});
  expect_near(model.run({{"a", int64_tensor({7, -7})}, {"b", int64_tensor({2, 2})}}).at("y").value(), int64_tensor({3, -3}),
              0.0);
}

TEST(OnnxHostile, FloatToIntegerCastOutOfRangeIsAnError) {
  const auto model = one_node("Cast", TensorProto::DOUBLE, TensorProto::UNDEFINED, TensorProto::INT64, {int_attribute("to", TensorProto::INT64)});
  Tape tape;
  const double inf = std::numeric_limits<double>::infinity();
  for (const double v : {std::numeric_limits<double>::quiet_NaN(), inf, -inf, 1e19, -1e300}) {
    const Tensor x = full({1}, v, DType::float64);
    expect_run_fails<ValueError>(model, {{"a", x}}, {"cannot be held in int64"});
  }
  // In range, truncation toward zero; -2^63 is held exactly.
  Tensor x = Tensor::empty({3}, DType::float64);
  x.data<double>()[0] = -2.7, x.data<double>()[1] = 2.7, x.data<double>()[2] = -0x1p63;
  const Tensor y = model.run({{"a", x}}).at("y").value();
  EXPECT_EQ(y.data<std::int64_t>()[0], -2);
  EXPECT_EQ(y.data<std::int64_t>()[1], 2);
  EXPECT_EQ(y.data<std::int64_t>()[2], std::numeric_limits<std::int64_t>::min());
}

TEST(OnnxHostile, CastToNarrowIntegersWraps) {
  // ONNX: integers out of a narrower type's range keep their low bits (200 as int8 is -56).
  const Tensor x = int64_tensor({200, 300, -1, 65537});
  const std::vector<std::pair<std::int32_t, Tensor>> cases{
      {TensorProto::INT8, int64_tensor({-56, 44, -1, 1})},   {TensorProto::UINT8, int64_tensor({200, 44, 255, 1})},
      {TensorProto::INT16, int64_tensor({200, 300, -1, 1})}, {TensorProto::UINT16, int64_tensor({200, 300, 65535, 1})},
      {TensorProto::INT32, int64_tensor({200, 300, -1, 65537})}, {TensorProto::UINT32, int64_tensor({200, 300, 4294967295, 65537})}};
  for (const auto& [to, want] : cases) {
    const auto model = one_node("Cast", TensorProto::INT64, TensorProto::UNDEFINED, to, {int_attribute("to", to)});
    Tape tape;
    expect_near(model.run({{"a", x}}).at("y").value(), want, 0.0);
  }
}

TEST(OnnxHostile, RecurrentSequenceLensAndHiddenSizeAreChecked) {
  // An RNN over X [T=3, B=2, I=1] with W [1, H, 1], R [1, H, H], and sequence_lens.
  GraphBuilder g("rnn");
  g.input("X", {3, 2, 1}).input("W", {1, -1, 1}).input("R", {1, -1, -1}).input("lens", {-1}, TensorProto::INT32);
  g.output("Y", {-1, -1, -1, -1});
  g.node("RNN", {"X", "W", "R", "", "lens"}, {"Y"}, {int_attribute("hidden_size", 2)});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 14), "m.onnx");
  const Tensor x = ones({3, 2, 1}, DType::float64), w = ones({1, 2, 1}, DType::float64), r = zeros({1, 2, 2}, DType::float64);
  // Three lengths for a batch of two: the third was read by nothing, and no error said so.
  expect_run_fails<ValueError>(model, {{"X", x}, {"W", w}, {"R", r}, {"lens", int64_tensor({3, 2, 1})}},
                               {"RNN", "sequence_lens has shape [3], not [2]"});
  expect_run_fails<ValueError>(model, {{"X", x}, {"W", w}, {"R", r}, {"lens", int64_tensor({3, 4})}},
                               {"RNN", "sequence_lens holds 4, outside [0, 3]"});
  // hidden_size 2 against weights of 5 units.
  expect_run_fails<ValueError>(
      model, {{"X", x}, {"W", ones({1, 5, 1}, DType::float64)}, {"R", zeros({1, 5, 5}, DType::float64)}, {"lens", int64_tensor({3, 2})}},
      {"RNN", "hidden_size 2"});
  Tape tape;
  const Tensor y = model.run({{"X", x}, {"W", w}, {"R", r}, {"lens", int64_tensor({3, 1})}}).at("Y").value();
  EXPECT_EQ(y.shape(), (Shape{3, 1, 2, 2}));
  EXPECT_EQ(y.at<double>({1, 0, 1, 0}), 0.0);  // past element 1's length: zero
  EXPECT_NEAR(y.at<double>({1, 0, 0, 0}), std::tanh(1.0), 1e-15);
}

TEST(OnnxHostile, NarrowIntegersOutOfTheirRangeInInt32DataAreRefused) {
  TensorProto t;
  t.set_name("c");
  t.set_data_type(TensorProto::INT8);
  t.add_dims(1);
  t.add_int32_data(1000);  // int8 holds -128..127
  expect_error<IOError>([&] { onnx_io::load_from_bytes(model_with_initializer(t), "m.onnx"); },
                        {"initializer 'c'", "the value 1000 is outside"});
}

TEST(OnnxHostile, IntegerConstantsAreExact) {
  // value_int INT64_MAX went through a double (2^63: undefined behaviour converting back).
  GraphBuilder g("g");
  g.output("y", {}, TensorProto::INT64);
  g.node("Constant", {}, {"y"}, {int_attribute("value_int", std::numeric_limits<std::int64_t>::max())});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
  Tape tape;
  EXPECT_EQ(model.run({}).at("y").value().data<std::int64_t>()[0], std::numeric_limits<std::int64_t>::max());
}

TEST(OnnxHostile, NumScanInputsOfInt64MaxIsRefused) {
  // Found by fuzz_onnx_structure: num_scan_inputs + 1 passed int64 in opset 8's check.
  GraphBuilder body("body");
  body.input("s", {1}).input("x_t", {1}).output("s_next", {1});
  body.node("Add", {"s", "x_t"}, {"s_next"});
  for (const std::int64_t opset : {8, 16}) {
    GraphBuilder g("scan");
    g.input("s0", {-1, 1}).input("xs", {-1, -1, 1}).output("sT", {-1, 1});
    const std::vector<std::string> inputs = opset == 8 ? std::vector<std::string>{"", "s0", "xs"} : std::vector<std::string>{"s0", "xs"};
    g.node("Scan", inputs, {"sT"},
           {graph_attribute("body", body.graph()), int_attribute("num_scan_inputs", std::numeric_limits<std::int64_t>::max())});
    const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), opset), "m.onnx");
    expect_run_fails<ValueError>(model, {{"s0", zeros({2, 1}, DType::float64)}, {"xs", zeros({2, 3, 1}, DType::float64)}},
                                 {"Scan", "num_scan_inputs = 9223372036854775807 does not fit"});
  }
}

}  // namespace
}  // namespace recur::testing
