// The call RNN, LSTM and GRU share, layer(input, RecurrentState) -> RecurrentOutput: one
// function template runs all three (and a `const RecurrentLayer&`) over a sequence in two
// chunks, carrying out.state(), and gets what one run over the whole sequence gives; the
// common call is the positional one to the bit; a cell state given to RNN or GRU is refused.
#include <gtest/gtest.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

using recur::testing::expect_clean_failure;

constexpr DType f64 = DType::float64;
constexpr std::int64_t kT1 = 3, kT2 = 2, kB = 2, kI = 3, kH = 4, kLayers = 2;

RecurrentOptions options() {
  return {.input_size = kI, .hidden_size = kH, .num_layers = kLayers, .dtype = f64};
}

// One layer of each kind, of the same sizes, and a generator for the data.
struct ThreeLayers {
  explicit ThreeLayers(std::uint64_t seed) : gen(seed) {}
  Generator gen;
  const RNN rnn{options(), gen};
  const LSTM lstm{options(), gen};
  const GRU gru{options(), gen};
};

// Generic over the layer type: no per-type dispatch. The second chunk starts from the
// state the first ended in (h, and c when the layer has one).
template <class Layer>
RecurrentOutput in_two_chunks(const Layer& layer, const Var& first, const Var& second) {
  const RecurrentOutput a = layer(first);
  return layer(second, a.state());
}

std::vector<double> last(const Tensor& t, std::int64_t n) {
  const std::vector<double> v = to_vector<double>(t);
  return {v.end() - n, v.end()};
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-12) << what << " [" << i << "]";
}

template <class Layer>
void expect_chunks_match_whole(const Layer& layer, bool has_cell, const std::string& kind) {
  Generator data(7);
  Tape tape;
  const Var first = tape.variable(normal({kT1, kB, kI}, 0, 1, data, f64));
  const Var second = tape.variable(normal({kT2, kB, kI}, 0, 1, data, f64));
  const RecurrentOutput whole = layer(concat({first, second}, 0));
  const RecurrentOutput chunked = in_two_chunks(layer, first, second);
  // Time-major: the second chunk's outputs are the last kT2 * B * H of the whole run's.
  expect_near(to_vector<double>(chunked.output.value()), last(whole.output.value(), kT2 * kB * kH), kind + " output");
  expect_near(to_vector<double>(chunked.h_n.value()), to_vector<double>(whole.h_n.value()), kind + " h_n");
  EXPECT_EQ(chunked.c_n.defined(), has_cell) << kind;
  if (has_cell) expect_near(to_vector<double>(chunked.c_n.value()), to_vector<double>(whole.c_n.value()), kind + " c_n");

  // The gradient flows back through the carried state into the first chunk.
  tape.backward(sum(chunked.output));
  EXPECT_GT(max_abs_diff(first.grad(), zeros(first.shape(), f64)), 0.0) << kind;
}

TEST(RecurrentCommonCall, OneTemplateRunsAllThreeInChunks) {
  const ThreeLayers l(1);
  const RNN& rnn = l.rnn;
  const LSTM& lstm = l.lstm;
  const GRU& gru = l.gru;
  expect_chunks_match_whole(rnn, false, "RNN");
  expect_chunks_match_whole(lstm, true, "LSTM");
  expect_chunks_match_whole(gru, false, "GRU");
  // And without templates, through the common base.
  for (const RecurrentLayer* layer : std::initializer_list<const RecurrentLayer*>{&rnn, &lstm, &gru})
    expect_chunks_match_whole(*layer, layer == &lstm, "RecurrentLayer&");
}

TEST(RecurrentCommonCall, IsThePositionalCallToTheBit) {
  ThreeLayers l(2);
  Tape tape;
  const Var x = tape.variable(normal({kT1, kB, kI}, 0, 1, l.gen, f64));
  const Var h0 = tape.variable(normal({kLayers, kB, kH}, 0, 1, l.gen, f64));
  const Var c0 = tape.variable(normal({kLayers, kB, kH}, 0, 1, l.gen, f64));
  auto same = [](const RecurrentOutput& a, const RecurrentOutput& b) {
    EXPECT_EQ(max_abs_diff(a.output.value(), b.output.value()), 0.0);
    EXPECT_EQ(max_abs_diff(a.h_n.value(), b.h_n.value()), 0.0);
    EXPECT_EQ(a.c_n.defined(), b.c_n.defined());
    if (a.c_n.defined()) {
      EXPECT_EQ(max_abs_diff(a.c_n.value(), b.c_n.value()), 0.0);
    }
  };
  same(l.rnn(x, {.h = h0}), l.rnn(x, h0));
  same(l.gru(x, {.h = h0}), l.gru(x, h0));
  same(l.lstm(x, {.h = h0, .c = c0}), l.lstm(x, h0, c0));
  same(l.lstm(x, {.h = h0}), l.lstm(x, h0));
  // A missing state is zeros in either form.
  same(l.lstm(x, RecurrentState{}), l.lstm(x));
  const RecurrentOutput out = l.lstm(x, h0, c0);
  EXPECT_EQ(out.state().h.id(), out.h_n.id());
  EXPECT_EQ(out.state().c.id(), out.c_n.id());
}

TEST(RecurrentCommonCall, RnnAndGruRefuseACellState) {
  ThreeLayers l(3);
  Tape tape;
  const Var x = tape.variable(normal({kT1, kB, kI}, 0, 1, l.gen, f64));
  const RecurrentState from_lstm = l.lstm(x).state();  // has c
  expect_clean_failure<ValueError>(tape, [&] { l.rnn(x, from_lstm); }, {"recur::RNN", "'c0'", "no cell state"});
  expect_clean_failure<ValueError>(tape, [&] { l.gru(x, from_lstm); }, {"recur::GRU", "'c0'", "no cell state"});
  // The state's members are checked as the positional arguments are.
  const Var bad = tape.variable(zeros({1, kB, kH}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { l.lstm(x, {.h = from_lstm.h, .c = bad}); },
                                   {"recur::LSTM", "'c0'", "[2, 2, 4]", "got [1, 2, 4]"});
}

}  // namespace
}  // namespace recur::nn
