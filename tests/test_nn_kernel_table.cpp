// The tables of cell kernels (ops/kernels/cell_kernel_table_detail.hpp): every function of every
// table this CPU runs gives the portable table's bits, on rows that end mid-vector and on
// values from the saturated tails, NaN and infinity included; whole fused layers (LSTM,
// both GRU forms, RNN) give the same outputs and gradients bit for bit whichever table
// runs; the table in use is the widest one unless RECUR_CPU_KERNELS says otherwise (ctest
// entries run these tests once more with it set to portable, avx2 and an unknown value).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
#include <recur/recur.hpp>

namespace recur::nn::detail {
namespace {

// Whether this build on this CPU must have the table of `isa`: an x86-64 CPU that runs it.
bool expected(KernelIsa isa) {
#if defined(__x86_64__)
  if (isa == KernelIsa::avx2) return __builtin_cpu_supports("avx2");
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return false;
#endif
}

constexpr KernelIsa kVectorIsas[] = {KernelIsa::avx2, KernelIsa::avx512};
const char* name_of(KernelIsa isa) { return isa == KernelIsa::avx2 ? "AVX2" : isa == KernelIsa::avx512 ? "AVX-512" : "portable"; }

template <class T>
std::vector<T> random_row(std::int64_t n, std::mt19937& gen, double scale) {
  std::uniform_real_distribution<double> u(-scale, scale);
  std::vector<T> v(static_cast<std::size_t>(n));
  for (T& x : v) x = static_cast<T>(u(gen));
  // Saturated tails and non-finite values where the row is long enough.
  const T specials[] = {T(90), T(-90), T(800), std::numeric_limits<T>::infinity(),
                        -std::numeric_limits<T>::infinity(), std::numeric_limits<T>::quiet_NaN(), T(0), T(-0.0)};
  for (std::size_t i = 0; i < std::size(specials) && 3 * i + 2 < v.size(); ++i) v[3 * i + 2] = specials[i];
  return v;
}

// Equal bits, or NaN on both sides: x86 keeps the first operand's NaN of a + b, and the
// compiler may order a commutative operation's operands differently in vector code, so a
// NaN's sign may differ; its being NaN may not.
template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(T)) != 0 && !(std::isnan(a[i]) && std::isnan(b[i]))) return false;
  return true;
}

// Runs every function of table k on the same inputs; returns all that they wrote, in order.
template <class T>
std::vector<std::vector<T>> run_all(const KernelTable<T>& k, std::int64_t n, unsigned seed) {
  std::mt19937 gen(seed);
  auto row = [&](std::int64_t len, double scale = 6) { return random_row<T>(len, gen, scale); };
  std::vector<std::vector<T>> out;
  const auto pre = row(4 * n), c_prev = row(n, 2), dh = row(n), dc_in = row(n);
  {  // LSTM
    std::vector<T> act(pre.size());
    k.lstm.activations(pre.data(), act.data(), n);
    std::vector<T> c(n), h(n), tc(n), act2(pre.size());
    k.lstm.cell_update(act.data(), c_prev.data(), c.data(), n);
    out.insert(out.end(), {act, c});
    k.lstm.forward(pre.data(), act2.data(), c_prev.data(), c.data(), h.data(), tc.data(), n);
    std::vector<T> dc = dc_in;
    k.lstm.backward(act2.data(), c_prev.data(), c.data(), dh.data(), dc.data(), tc.data(), n);
    out.insert(out.end(), {c, h, act2, dc});
  }
  for (Nonlinearity a : {Nonlinearity::tanh, Nonlinearity::relu}) {  // RNN
    std::vector<T> h = row(n), d(n);
    k.rnn.forward(h.data(), n, a);
    k.rnn.backward(h.data(), dh.data(), d.data(), n, a);
    out.insert(out.end(), {h, d});
  }
  const auto x = row(3 * n), hp = row(3 * n), hprev = row(n, 1), d_rh = row(n);
  for (bool scaled : {true, false}) {  // GRU, the step's pieces
    std::vector<T> act(3 * n), next(n), d(n);
    k.gru.reset_update(x.data(), hp.data(), act.data(), n);
    k.gru.candidate(x.data(), hp.data() + 2 * n, act.data(), scaled, n);
    k.gru.blend(act.data(), hprev.data(), next.data(), n);
    out.insert(out.end(), {act, next});
    k.gru.backward_blend(act.data(), hprev.data(), dh.data(), d.data(), n);
    std::vector<T> act2 = act, dhp_n(n), d2 = d;
    k.gru.backward_reset_scaled(act.data(), hp.data() + 2 * n, dhp_n.data(), n);
    k.gru.backward_reset_inner(act2.data(), d_rh.data(), hprev.data(), d2.data(), n);
    out.insert(out.end(), {act, dhp_n, act2, d2});
  }
  {  // GRU, whole steps
    std::vector<T> act(3 * n), next(n), dx(3 * n), dhp(3 * n), d(n);
    k.gru.forward(x.data(), hp.data(), hprev.data(), next.data(), act.data(), n);
    k.gru.backward(x.data(), hp.data(), hprev.data(), dh.data(), dx.data(), dhp.data(), d.data(), n);
    out.insert(out.end(), {act, next, dx, dhp, d});
  }
  {  // rows
    const auto a = row(n, 100), b = row(n, 100);
    std::vector<T> s1(n), s2(n), t(n);
    k.sigmoid_row(a.data(), nullptr, s1.data(), n);
    k.sigmoid_row(a.data(), b.data(), s2.data(), n);
    k.tanh_row(a.data(), t.data(), n);
    out.insert(out.end(), {s1, s2, t});
  }
  {  // a fused chain's arithmetic and every gradient rule, written and added
    const auto a = row(n, 100), b = row(n, 100), g = row(n, 10);
    for (auto op : {recur::detail::ChainArith::add, recur::detail::ChainArith::sub, recur::detail::ChainArith::mul,
                    recur::detail::ChainArith::div}) {
      std::vector<T> y(n);
      k.chain_arith_row(op, a.data(), b.data(), y.data(), n);
      out.push_back(y);
    }
    using R = recur::detail::ChainGrad;
    for (R rule : {R::copy, R::negate, R::times, R::divide, R::divisor, R::tanh, R::sigmoid, R::relu})
      for (bool accumulate : {false, true}) {
        std::vector<T> r = g;
        k.chain_grad_row(rule, accumulate, g.data(), a.data(), b.data(), r.data(), n);
        out.push_back(r);
      }
    // Two rules in one pass: every first rule, then each one-operand instruction's rule.
    const auto w = row(n, 1);
    for (R first : {R::copy, R::negate, R::times, R::divide, R::divisor, R::tanh, R::sigmoid, R::relu})
      for (R then : {R::negate, R::times, R::tanh, R::sigmoid, R::relu})
        for (bool accumulate : {false, true}) {
          std::vector<T> r = g;
          k.chain_grad_then_row(first, then, accumulate, g.data(), a.data(), b.data(), w.data(), r.data(), n);
          out.push_back(r);
        }
  }
  {  // the squared error's gradient, and its sum (a double, kept as its bytes)
    const auto a = row(n, 100), b = row(n, 100);
    std::vector<T> d(n);
    k.scaled_difference(T(-0.75), a.data(), b.data(), d.data(), n);
    out.push_back(d);
    auto finite = [](std::vector<T> v) {
      for (T& x : v) x = std::isfinite(x) ? x : T(1);
      return v;
    };
    const auto fa = finite(a), fb = finite(b);
    for (const auto& [x, y] : {std::pair{&fa, &fb}, std::pair{&a, &b}, std::pair{&a, &a}}) {
      const double sum = k.squared_difference_sum(x->data(), y->data(), n);
      std::vector<T> bytes((sizeof(double) + sizeof(T) - 1) / sizeof(T));
      std::memcpy(bytes.data(), &sum, sizeof(double));
      out.push_back(bytes);
    }
  }
  return out;
}

template <class T>
void expect_table_matches_portable(const KernelTable<T>& k) {
  for (std::int64_t n : {1, 3, 8, 13, 64, 67, 130}) {
    const auto want = run_all(portable_kernels<T>(), n, static_cast<unsigned>(n));
    const auto got = run_all(k, n, static_cast<unsigned>(n));
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(same_bits(want[i], got[i])) << "n " << n << ", result " << i;
  }
}

// On x86-64 the AVX2 and AVX-512 tables are built (CMakeLists.txt compiles their files with
// those instruction sets): were a flag lost, the comparisons below would skip, so this test
// fails instead. Each skips, saying so, where the CPU lacks its instruction set.
void expect_table_where_the_cpu_runs_it(KernelIsa isa) {
  if (!expected(isa)) GTEST_SKIP() << "not an x86-64 CPU with " << name_of(isa);
  EXPECT_NE(kernels_for<float>(isa), nullptr);
  EXPECT_NE(kernels_for<double>(isa), nullptr);
}
TEST(KernelTable, Avx2TableExistsWhereTheCpuRunsIt) { expect_table_where_the_cpu_runs_it(KernelIsa::avx2); }
TEST(KernelTable, Avx512TableExistsWhereTheCpuRunsIt) { expect_table_where_the_cpu_runs_it(KernelIsa::avx512); }

void expect_portable_bits(KernelIsa isa) {
  if (!kernels_for<float>(isa)) GTEST_SKIP() << "no " << name_of(isa) << " table on this build or CPU";
  expect_table_matches_portable(*kernels_for<float>(isa));
  expect_table_matches_portable(*kernels_for<double>(isa));
}
TEST(KernelTable, Avx2TableGivesThePortableBits) { expect_portable_bits(KernelIsa::avx2); }
TEST(KernelTable, Avx512TableGivesThePortableBits) { expect_portable_bits(KernelIsa::avx512); }

// The check above can fail: a table whose tanh, or whose chain rule for sigmoid, differs
// in one element is caught.
bool any_difference(const KernelTable<float>& k) {
  const auto want = run_all(portable_kernels<float>(), 13, 1), got = run_all(k, 13, 1);
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!same_bits(want[i], got[i])) return true;
  return false;
}
TEST(KernelTable, ComparisonSeesADifferentKernel) {
  EXPECT_FALSE(any_difference(portable_kernels<float>()));
  KernelTable<float> k = portable_kernels<float>();
  k.tanh_row = [](const float* a, float* out, std::int64_t n) {
    portable_kernels<float>().tanh_row(a, out, n);
    out[n - 1] = std::nextafter(out[n - 1], 2.f);
  };
  EXPECT_TRUE(any_difference(k));
  k = portable_kernels<float>();
  k.chain_grad_row = [](recur::detail::ChainGrad rule, bool accumulate, const float* g, const float* u, const float* v,
                        float* r, std::int64_t n) {
    portable_kernels<float>().chain_grad_row(rule, accumulate, g, u, v, r, n);
    if (rule == recur::detail::ChainGrad::sigmoid) r[0] = std::nextafter(r[0], 2.f);
  };
  EXPECT_TRUE(any_difference(k));
}

// Two rules in one pass give the bits of the two passes, the first's share kept in a register
// between them (as the chain's backward does when it does not fold them), in every table.
template <class T>
void expect_two_rules_in_one_pass_equal_two_passes(const KernelTable<T>& k) {
  using R = recur::detail::ChainGrad;
  std::mt19937 gen(5);
  auto row = [&](std::int64_t len, double scale) { return random_row<T>(len, gen, scale); };
  for (std::int64_t n : {1, 13, 67}) {
    const auto a = row(n, 100), b = row(n, 100), g = row(n, 10), w = row(n, 1), r0 = row(n, 3);
    for (R first : {R::copy, R::negate, R::times, R::divide, R::divisor, R::tanh, R::sigmoid, R::relu})
      for (R then : {R::negate, R::times, R::tanh, R::sigmoid, R::relu})
        for (bool accumulate : {false, true}) {
          std::vector<T> between(n), want = r0, got = r0;
          k.chain_grad_row(first, false, g.data(), a.data(), b.data(), between.data(), n);
          k.chain_grad_row(then, accumulate, between.data(), w.data(), nullptr, want.data(), n);
          k.chain_grad_then_row(first, then, accumulate, g.data(), a.data(), b.data(), w.data(), got.data(), n);
          EXPECT_TRUE(same_bits(want, got)) << "n " << n << ", rules " << int(first) << " then " << int(then);
        }
  }
}
TEST(KernelTable, TwoRulesInOnePassEqualTwoPasses) {
  for (KernelIsa isa : {KernelIsa::portable, KernelIsa::avx2, KernelIsa::avx512}) {
    if (!kernels_for<double>(isa)) continue;  // Avx2TableExistsWhereTheCpuRunsIt says where one is missing
    expect_two_rules_in_one_pass_equal_two_passes(*kernels_for<float>(isa));
    expect_two_rules_in_one_pass_equal_two_passes(*kernels_for<double>(isa));
  }
}

TEST(KernelTable, ChoiceFollowsTheCpuAndTheEnvironment) {
  const char* env = std::getenv("RECUR_CPU_KERNELS");
  const std::string_view wanted = env ? env : "auto";
  auto has = [](KernelIsa isa) { return kernels_for<float>(isa) != nullptr; };
  // auto: the widest table there is; a named one where it is there; else portable.
  KernelIsa want = KernelIsa::portable;
  if (wanted == "auto") want = has(KernelIsa::avx512) ? KernelIsa::avx512 : has(KernelIsa::avx2) ? KernelIsa::avx2 : want;
  if (wanted == "avx2" && has(KernelIsa::avx2)) want = KernelIsa::avx2;
  if (wanted == "avx512" && has(KernelIsa::avx512)) want = KernelIsa::avx512;
  EXPECT_EQ(kernel_isa(), want) << "RECUR_CPU_KERNELS=" << wanted;
  // kernels<T>() is the table in use, and follows every switch, for both element types.
  auto expect_tables_of = [](KernelIsa isa) {
    EXPECT_EQ(&kernels<float>(), kernels_for<float>(isa));
    EXPECT_EQ(&kernels<double>(), kernels_for<double>(isa));
  };
  expect_tables_of(kernel_isa());
  EXPECT_TRUE(use_kernel_isa(KernelIsa::portable));
  EXPECT_EQ(kernel_isa(), KernelIsa::portable);
  expect_tables_of(KernelIsa::portable);
  for (KernelIsa isa : kVectorIsas) {
    EXPECT_EQ(use_kernel_isa(isa), has(isa));
    EXPECT_EQ(kernel_isa(), has(isa) ? isa : KernelIsa::portable);
    expect_tables_of(kernel_isa());
    use_kernel_isa(KernelIsa::portable);
    expect_tables_of(KernelIsa::portable);
  }
  use_kernel_isa(want);
}

struct LayerRun {
  Tensor out;
  std::vector<Tensor> grads;
};

LayerRun run_layer(CellKind kind, bool linear_before_reset, DType dtype) {
  Generator gen(7);
  const std::int64_t steps = 9, batch = 3, in = 5, n = 19;
  const std::int64_t gh = (kind == CellKind::lstm ? 4 : kind == CellKind::gru ? 3 : 1) * n;
  Tape tape;
  std::vector<Var> leaves{tape.variable(normal({steps, batch, in}, 0, 1, gen, dtype)),
                          tape.variable(normal({gh, in}, 0, 0.5, gen, dtype)),
                          tape.variable(normal({gh, n}, 0, 0.5, gen, dtype)),
                          tape.variable(normal({batch, n}, 0, 1, gen, dtype)),
                          tape.variable(normal({batch, n}, 0, 1, gen, dtype)),
                          tape.variable(normal({gh}, 0, 0.5, gen, dtype)),
                          tape.variable(normal({gh}, 0, 0.5, gen, dtype))};
  const FusedRecurrenceOptions o{.kind = kind, .linear_before_reset = linear_before_reset};
  const Var out = fused_recurrence(o, leaves[0], {leaves[1], leaves[2], leaves[5], leaves[6]}, leaves[3],
                                   kind == CellKind::lstm ? leaves[4] : Var());
  const Var loss = sum(out * tape.constant(normal(out.shape(), 0, 1, gen, dtype)));
  if (kind != CellKind::lstm) leaves.erase(leaves.begin() + 4);  // c0 takes no part
  LayerRun r{out.value(), {}};
  for (const Var& g : grad(std::span<const Var>(&loss, 1), leaves)) r.grads.push_back(g.value());
  return r;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

void expect_layers_give_the_portable_bits(KernelIsa isa) {
  if (!kernels_for<float>(isa)) GTEST_SKIP() << "no " << name_of(isa) << " table on this build or CPU";
  struct Layer {
    CellKind kind;
    bool linear_before_reset;
  };
  for (DType dtype : {DType::float32, DType::float64})
    for (Layer l : {Layer{CellKind::lstm, true}, Layer{CellKind::gru, true}, Layer{CellKind::gru, false},
                    Layer{CellKind::rnn, true}}) {
      LayerRun portable, vector;
      {
        const ScopedKernelIsa use(KernelIsa::portable);
        ASSERT_TRUE(use.switched());
        portable = run_layer(l.kind, l.linear_before_reset, dtype);
      }
      {
        const ScopedKernelIsa use(isa);
        ASSERT_TRUE(use.switched());
        vector = run_layer(l.kind, l.linear_before_reset, dtype);
      }
      EXPECT_TRUE(same_bits(portable.out, vector.out)) << name_of(isa);
      ASSERT_EQ(portable.grads.size(), vector.grads.size());
      for (std::size_t i = 0; i < portable.grads.size(); ++i)
        EXPECT_TRUE(same_bits(portable.grads[i], vector.grads[i])) << name_of(isa) << " gradient " << i;
    }
}
TEST(KernelTable, FusedLayersGiveTheSameBitsOnTheAvx2Table) { expect_layers_give_the_portable_bits(KernelIsa::avx2); }
TEST(KernelTable, FusedLayersGiveTheSameBitsOnTheAvx512Table) {
  expect_layers_give_the_portable_bits(KernelIsa::avx512);
}

}  // namespace
}  // namespace recur::nn::detail
