#include <recur/ops/random_stream.hpp>

#include <array>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/autodiff/recording_scope.hpp>
#include <recur/core/random.hpp>

namespace recur {
namespace {

Generator restore(const Tensor& state) {
  Generator gen(0);
  gen.set_state(state);
  return gen;
}

// What a draw samples, and how many raw generator outputs it consumes for `n` elements
// (the count the advance node skips; core/random.hpp documents it per distribution).
std::int64_t one_per_element(std::int64_t n) { return n; }
std::int64_t two_per_pair(std::int64_t n) { return n + n % 2; }

// A distribution of two real parameters sampled by a core/random.hpp function:
// uniform(low, high), normal(mean, std).
using TwoParameterSampler = Tensor (*)(const Shape&, double, double, Generator&, DType);
template <const std::string_view& Name, TwoParameterSampler Sampler, std::int64_t (*Draws)(std::int64_t),
          const std::string_view& First, const std::string_view& Second>
struct TwoParameterDraw {
  static constexpr std::string_view name = Name;
  Shape shape;
  double first, second;
  DType dtype;
  OpAttributes attributes() const {
    return {{"shape", ints_attribute(shape)}, {First, first}, {Second, second}, {"dtype", std::string(name_of(dtype))}};
  }
  Tensor sample(Generator& gen) const { return Sampler(shape, first, second, gen, dtype); }
  static std::int64_t draws(std::int64_t n) { return Draws(n); }
};
constexpr std::string_view uniform_name = "RandomStream::uniform", normal_name = "RandomStream::normal";
constexpr std::string_view low = "low", high = "high", mean = "mean", std_dev = "std";
using UniformDraw = TwoParameterDraw<uniform_name, recur::uniform, one_per_element, low, high>;
using NormalDraw = TwoParameterDraw<normal_name, recur::normal, two_per_pair, mean, std_dev>;

// n = 1 with a tensor of probabilities.
struct BernoulliDraw {
  static constexpr std::string_view name = "RandomStream::binomial";
  DType dtype;
  OpAttributes attributes() const { return {{"dtype", std::string(name_of(dtype))}}; }
  Tensor sample(Generator& gen, const Tensor& p) const { return recur::bernoulli(p, gen).to(dtype); }
  static std::int64_t draws(std::int64_t n) { return one_per_element(n); }
};

// n trials of one probability per element; element i takes draws i*n ... i*n + n - 1.
struct BinomialDraw {
  static constexpr std::string_view name = "RandomStream::binomial";
  Shape shape;
  std::int64_t n;
  double p;
  DType dtype;
  OpAttributes attributes() const {
    return {{"shape", ints_attribute(shape)}, {"n", n}, {"p", p}, {"dtype", std::string(name_of(dtype))}};
  }
  Tensor sample(Generator& gen) const {
    for (auto d : shape)
      if (d < 0) fail<ShapeError>(name, "argument 'shape' has a negative size: ", to_string(shape));
    if (n < 0) fail<ValueError>(name, "argument 'n' must be >= 0, got ", n);
    if (!(p >= 0 && p <= 1)) fail<ValueError>(name, "argument 'p' must be in [0, 1], got ", p);
    return dispatch(dtype, [&]<class T>() {
      Tensor out = Tensor::empty(shape, dtype);
      T* y = out.data<T>();
      for (std::int64_t i = 0, size = out.numel(); i < size; ++i) {
        std::int64_t k = 0;
        for (std::int64_t j = 0; j < n; ++j) k += gen.next_double() < p ? 1 : 0;
        y[i] = static_cast<T>(k);
      }
      return out;
    });
  }
  std::int64_t draws(std::int64_t size) const {
    std::int64_t out = 0;
    if (__builtin_mul_overflow(size, n, &out))
      fail<ValueError>(name, size, " samples of ", n, " trials each take more draws than an int64 counts");
    return out;
  }
};

// The sample of a draw, from the state (and p): a pure function of its inputs, so replay
// reproduces it. Samples are constants for autodiff: no gradient to any input.
template <class D>
struct Sample {
  static constexpr std::string_view name = D::name;
  D draw;
  OpAttributes attributes() const { return draw.attributes(); }
  template <class... P>
  Tensor forward(const Tensor& state, const P&... p) const {
    Generator gen = restore(state);
    return draw.sample(gen, p...);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return Grads<V>(a.inputs.size());
  }
};

// The state after a draw of `draws` raw outputs, from the state before it.
struct Advance {
  static constexpr std::string_view name = "RandomStream::advance";
  std::int64_t draws;
  OpAttributes attributes() const { return {{"draws", draws}}; }
  Tensor forward(const Tensor& state) const {
    Generator gen = restore(state);
    gen.discard(static_cast<std::uint64_t>(draws));
    return gen.state();
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>&) const {
    return Grads<V>(1);
  }
};

// Like record(), except that the node never requires a gradient and, while gradients are
// on, keeps its op even so: a checkpoint may then release its value and replay it.
template <class Op, class... Vs>
Var record_draw(Tape& tape, Op op, const Vs&... inputs) {
  const std::array<std::uint32_t, sizeof...(Vs)> ids{inputs.id()...};
  TapeAccess::check_inputs(tape, Op::name, ids);
  Tensor out = op.forward(TapeAccess::node_value(tape, inputs.id())...);
  return TapeAccess::push(tape, std::move(out), ids,
                          grad_enabled() || TapeAccess::keeps_all_ops(tape)
                              ? detail::OpBox::make<sizeof...(Vs)>(std::move(op))
                              : detail::OpBox(),
                          false);
}

// A draw inside a scan: reads the state, records the sample and the advanced state (so a
// checkpoint may replay them), and hands the new state to the innermost recording scope (a
// running scan) as an update of it.
template <class D, class... P>
Var draw_in_scope(RecordingScope& scope, Shared state, Tape& tape, const D& d, const P&... p) {
  return transactional(tape, [&] {
    const Var s = tape.read(state);
    Var sample = record_draw(tape, Sample<D>{d}, s, p...);
    const Var next = record_draw(tape, Advance{d.draws(sample.numel())}, s);
    scope.take_update(state, next);
    return sample;
  });
}

// A draw: inside a scan as above; outside any, nothing will replay it, so the sample is a
// constant and the Shared takes the generator's state after it at once (the Shared changes
// under this tape: its value is used directly, not as a Shared read, which a tape makes
// once and checks for changes).
template <class D, class... P>
Var draw(Shared state, Tape& tape, const D& d, const P&... p) {
  if (RecordingScope* scope = TapeAccess::innermost_scope(tape)) return draw_in_scope(*scope, state, tape, d, p...);
  Generator gen = restore(state.value());
  Var sample = tape.constant(d.sample(gen, TapeAccess::node_value(tape, p.id())...));
  state.assign(gen.state());
  return sample;
}

}  // namespace

RandomStream::RandomStream(std::uint64_t seed, std::string name)
    : state_(Generator(seed).state(), std::move(name)) {}

void RandomStream::seed(std::uint64_t seed) { state_.assign(Generator(seed).state()); }

Var RandomStream::uniform(const Shape& shape, double lo, double hi, DType dtype) {
  return draw(state_, Tape::current(), UniformDraw{shape, lo, hi, dtype});
}

Var RandomStream::normal(const Shape& shape, double mean, double std, DType dtype) {
  return draw(state_, Tape::current(), NormalDraw{shape, mean, std, dtype});
}

Var RandomStream::binomial(const Var& p, std::optional<DType> dtype) {
  if (!p.defined()) fail<ValueError>(BernoulliDraw::name, "argument 'p' is an undefined Var");
  return draw(state_, p.tape(), BernoulliDraw{dtype.value_or(p.dtype())}, p);
}

Var RandomStream::binomial(const Shape& shape, std::int64_t n, double p, DType dtype) {
  return draw(state_, Tape::current(), BinomialDraw{shape, n, p, dtype});
}

}  // namespace recur
