// Matrix products: MatMul (NumPy's matmul, any rank) and Gemm.
#include <algorithm>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/linalg.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx_io::detail {
namespace {

Shape leading(const Shape& s, std::size_t drop) { return Shape(s.begin(), s.end() - static_cast<std::ptrdiff_t>(drop)); }

// The batch axes of both operands broadcast together (NumPy rules).
Shape broadcast_batch(const NodeContext& c, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const std::int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1) c.invalid("batch shapes ", to_string(a), " and ", to_string(b), " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// recur's matmul covers ranks 1 to 3; higher ranks fold their (broadcast) batch axes into one.
std::vector<Var> matmul_import(const NodeContext& c) {
  Var a = c.input(0);
  Var b = c.input(1);
  check_same_dtype(c, a, b);
  if (a.rank() <= 3 && b.rank() <= 3 && !(a.rank() == 3 && b.rank() == 3 && a.size(0) != b.size(0)))
    return {matmul(a, b)};
  const bool vector_a = a.rank() == 1;
  const bool vector_b = b.rank() == 1;
  if (vector_a) a = unsqueeze(a, 0);
  if (vector_b) b = unsqueeze(b, 1);
  const Shape batch = broadcast_batch(c, leading(a.shape(), 2), leading(b.shape(), 2));
  const std::int64_t n_batch = numel(batch, "onnx MatMul");  // checked: the broadcast of both batches
  const auto fold = [&](const Var& x) {
    Shape full = batch;
    full.push_back(x.size(-2));
    full.push_back(x.size(-1));
    return reshape(broadcast_to(x, full), Shape{n_batch, x.size(-2), x.size(-1)});
  };
  Shape out_shape = batch;
  if (!vector_a) out_shape.push_back(a.size(-2));
  if (!vector_b) out_shape.push_back(b.size(-1));
  return {reshape(matmul(fold(a), fold(b)), out_shape)};
}

// alpha * op(A) op(B) + beta * C, C broadcast (optional from opset 11).
std::vector<Var> gemm_import(const NodeContext& c) {
  const Var& a = c.input(0);
  const Var& b = c.input(1);
  check_same_dtype(c, a, b);
  Var y = matmul_t(a, b, c.int_attr("transA", 0) != 0, c.int_attr("transB", 0) != 0);
  const double alpha = c.float_attr("alpha", 1.0f);
  if (alpha != 1.0) y = y * alpha;
  if (c.has_input(2)) {
    const double beta = c.float_attr("beta", 1.0f);
    const Var& bias = c.input(2);
    check_same_dtype(c, a, bias);
    y = y + (beta == 1.0 ? bias : bias * beta);
  }
  return {y};
}

}  // namespace

void add_matmul_ops(Registry& r) {
  r.add("MatMul", {matmul_import});
  // Gemm before opset 7 has the `broadcast` attribute: not imported.
  r.add("Gemm", {gemm_import, 7});
}

}  // namespace recur::onnx_io::detail
