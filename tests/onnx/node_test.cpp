#include "node_test.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <recur/autodiff/tape.hpp>
#include <recur/ops/onnx/model.hpp>

namespace recur::testing {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> sorted(std::vector<fs::path> paths) {
  std::sort(paths.begin(), paths.end());
  return paths;
}

std::vector<fs::path> files_named(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().rfind(prefix, 0) == 0) out.push_back(e.path());
  // input_10.pb sorts before input_2.pb: order by the number.
  std::sort(out.begin(), out.end(), [&](const fs::path& a, const fs::path& b) {
    const auto number = [&](const fs::path& p) { return std::stoi(p.stem().string().substr(prefix.size())); };
    return number(a) < number(b);
  });
  return out;
}

// Empty when `got` matches `want`, else what differs.
std::string mismatch(const Tensor& got, const Tensor& want) {
  std::ostringstream why;
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    why << "got " << got.dtype() << " " << to_string(got.shape()) << ", expected " << want.dtype() << " "
        << to_string(want.shape());
    return why.str();
  }
  const Tensor g = got.to(DType::float64);
  const Tensor w = want.to(DType::float64);
  for (std::int64_t i = 0; i < g.numel(); ++i) {
    const double a = g.data<double>()[i];
    const double b = w.data<double>()[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (a == b) continue;  // infinities
    if (!(std::abs(a - b) <= 1e-7 + 1e-3 * std::abs(b))) {
      why << "element " << i << " is " << a << ", expected " << b;
      return why.str();
    }
  }
  return {};
}

}  // namespace

std::vector<fs::path> node_test_dirs() {
  std::vector<fs::path> out;
  const fs::path root = RECUR_ONNX_NODE_TESTS;
  if (!fs::is_directory(root)) return out;
  for (const auto& e : fs::directory_iterator(root))
    if (fs::exists(e.path() / "model.onnx")) out.push_back(e.path());
  return sorted(out);
}

bool node_test_supported(const fs::path& dir) { return onnx_io::unsupported_ops((dir / "model.onnx").string()).empty(); }

NodeTestResult run_node_test(const fs::path& dir) {
  using Kind = NodeTestResult::Kind;
  try {
    const onnx_io::Model model = onnx_io::load((dir / "model.onnx").string());
    const auto inputs = model.input_names();
    const auto outputs = model.output_names();
    int sets = 0;
    for (const auto& set : sorted({fs::directory_iterator(dir), fs::directory_iterator()})) {
      if (!fs::is_directory(set) || set.filename().string().rfind("test_data_set_", 0) != 0) continue;
      ++sets;
      const auto input_files = files_named(set, "input_");
      Tape tape;
      std::map<std::string, Var> feed;
      std::map<std::string, std::vector<Var>> sequences;
      for (std::size_t i = 0; i < input_files.size() && i < inputs.size(); ++i) {
        if (model.is_sequence(inputs[i])) {
          const auto tensors = onnx_io::load_sequence(input_files[i].string());
          sequences.emplace(inputs[i], std::vector<Var>(tensors.begin(), tensors.end()));
        } else {
          feed.emplace(inputs[i], onnx_io::load_tensor(input_files[i].string()));
        }
      }
      const auto got = model.run_with_sequences(feed, sequences);
      const auto output_files = files_named(set, "output_");
      if (output_files.size() != outputs.size())
        return {Kind::failed, set.filename().string() + ": " + std::to_string(output_files.size()) +
                                  " expected outputs for " + std::to_string(outputs.size()) + " graph outputs"};
      for (std::size_t k = 0; k < outputs.size(); ++k) {
        std::string why;
        if (model.is_sequence(outputs[k])) {
          const auto& seq = got.sequences.at(outputs[k]);
          const auto want = onnx_io::load_sequence(output_files[k].string());
          if (seq.size() != want.size())
            why = "a sequence of " + std::to_string(seq.size()) + " tensors, expected " + std::to_string(want.size());
          for (std::size_t j = 0; why.empty() && j < want.size(); ++j) why = mismatch(seq[j].value(), want[j]);
        } else {
          why = mismatch(got.tensors.at(outputs[k]).value(), onnx_io::load_tensor(output_files[k].string()));
        }
        if (!why.empty()) return {Kind::failed, set.filename().string() + ", output '" + outputs[k] + "': " + why};
      }
    }
    if (sets == 0) return {Kind::failed, "no test_data_set_* directory"};
    return {Kind::passed, {}};
  } catch (const onnx_io::UnsupportedError& e) {
    return {Kind::unsupported, e.what()};
  } catch (const std::exception& e) {
    return {Kind::failed, e.what()};
  }
}

}  // namespace recur::testing
