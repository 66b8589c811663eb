#include <recur/core/random.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <numbers>
#include <type_traits>

#include <recur/core/creation.hpp>

namespace recur {
namespace {

// The first word of a state: "PHILOX" and the layout's version, 1.
constexpr std::int64_t kStateTag = 0x5048494C4F580001;
constexpr std::int64_t kStateWords = 4;

void check_shape(std::string_view op, const Shape& shape) {
  for (auto d : shape)
    if (d < 0) fail<ShapeError>(op, "argument 'shape' has a negative size: ", to_string(shape));
}

// Hands the next `n` raw draws of `gen` to use(draws, first, count), a chunk at a time:
// draws[0, count) are draws first ... first + count - 1. Chunks hold an even count.
template <class Use>
void in_chunks(Generator& gen, std::int64_t n, Use use) {
  constexpr std::int64_t kChunk = 256;
  std::array<std::uint64_t, kChunk> draws;
  for (std::int64_t first = 0; first < n; first += kChunk) {
    const std::int64_t count = std::min(kChunk, n - first);
    gen.fill(std::span(draws.data(), static_cast<std::size_t>(count)));
    use(draws.data(), first, count);
  }
}

// A new tensor whose element i is f(raw draw i, i): one draw per element, row-major order.
template <class T, class F>
Tensor generate(const Shape& shape, DType dtype, Generator& gen, F f) {
  Tensor out = Tensor::empty(shape, dtype);
  T* y = out.data<T>();
  in_chunks(gen, out.numel(), [&](const std::uint64_t* draws, std::int64_t first, std::int64_t count) {
    for (std::int64_t j = 0; j < count; ++j) y[first + j] = f(draws[j], first + j);
  });
  return out;
}

// lo + (hi - lo) * u rounded to T; rounding can reach hi, which the interval excludes.
template <class T>
T scale_into(double lo, double hi, double u) {
  const T v = static_cast<T>(lo + (hi - lo) * u);
  const T top = static_cast<T>(hi);
  return v >= top && static_cast<T>(lo) < top ? std::nextafter(top, static_cast<T>(lo)) : v;
}

}  // namespace

void Generator::fill(std::span<std::uint64_t> out) {
  std::size_t i = 0;
  if (!out.empty() && (position_[0] & 1)) out[i++] = next_u64();  // the rest of the current block
  Position at = position_;
  for (; i + 2 <= out.size(); i += 2) {
    const auto pair = block_draws(key_, at);
    out[i] = pair[0];
    out[i + 1] = pair[1];
    if ((at[0] += 2) < 2) ++at[1];
  }
  position_ = at;
  block_ready_ = false;
  if (i < out.size()) out[i] = next_u64();
}

void Generator::discard(std::uint64_t n) {
  position_[0] += n;
  if (position_[0] < n) ++position_[1];  // carried out of the low word
  block_ready_ = false;
}

Tensor Generator::state() const {
  Tensor out = Tensor::empty({kStateWords}, DType::int64);
  std::int64_t* words = out.data<std::int64_t>();
  words[0] = kStateTag;
  words[1] = std::bit_cast<std::int64_t>(key_);
  words[2] = std::bit_cast<std::int64_t>(position_[0]);
  words[3] = std::bit_cast<std::int64_t>(position_[1]);
  return out;
}

void Generator::set_state(const Tensor& state) {
  constexpr std::string_view op = "Generator::set_state";
  if (!state.defined()) fail<ValueError>(op, "argument 'state' is undefined");
  if (state.dtype() != DType::int64) fail<DTypeError>(op, "argument 'state' must be int64, got ", state.dtype());
  if (state.shape() != Shape{kStateWords})
    fail<ShapeError>(op, "argument 'state' must have shape [", kStateWords, "] (a Philox4x32-10 state: tag, key, ",
                     "position), got ", to_string(state.shape()),
                     state.rank() == 1 && state.size(0) > kStateWords
                         ? "; a longer state is one of recur's earlier mt19937_64 Generator, which cannot be "
                           "continued: start that stream again from a seed"
                         : "");
  const std::int64_t* words = state.data<std::int64_t>();
  if (words[0] != kStateTag)
    fail<ValueError>(op, "argument 'state' is not a Philox4x32-10 generator state: its first word is ", words[0],
                     ", a state's is ", kStateTag);
  key_ = std::bit_cast<std::uint64_t>(words[1]);
  position_ = {std::bit_cast<std::uint64_t>(words[2]), std::bit_cast<std::uint64_t>(words[3])};
  block_ready_ = false;
}

Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype) {
  check_shape("uniform", shape);
  if (!std::isfinite(lo) || !std::isfinite(hi))
    fail<ValueError>("uniform", "arguments 'lo' and 'hi' must be finite, got lo=", lo, ", hi=", hi);
  if (hi < lo) fail<ValueError>("uniform", "argument 'hi' (", hi, ") is less than argument 'lo' (", lo, ")");
  if (!std::isfinite(hi - lo)) fail<ValueError>("uniform", "the range hi - lo overflows: lo=", lo, ", hi=", hi);
  return dispatch_floating("uniform", dtype, [&]<class T>() {
    return generate<T>(shape, dtype, gen, [&](std::uint64_t raw, std::int64_t) {
      const double u = std::is_same_v<T, float> ? Generator::unit_float(raw) : Generator::unit_double(raw);
      return scale_into<T>(lo, hi, u);
    });
  });
}

Tensor normal(const Shape& shape, double mean, double std, Generator& gen, DType dtype) {
  check_shape("normal", shape);
  if (!std::isfinite(mean)) fail<ValueError>("normal", "argument 'mean' must be finite, got ", mean);
  if (!(std >= 0) || !std::isfinite(std))
    fail<ValueError>("normal", "argument 'std' must be finite and >= 0, got ", std);
  return dispatch_floating("normal", dtype, [&]<class T>() {
    Tensor out = Tensor::empty(shape, dtype);
    T* y = out.data<T>();
    const std::int64_t n = out.numel();
    // Two draws per pair of elements; chunks are even, so a pair's draws share one.
    in_chunks(gen, n + n % 2, [&](const std::uint64_t* draws, std::int64_t first, std::int64_t count) {
      // float32 draws do Box-Muller in float: its log, sqrt, cos and sin cost about half
      // of double's, and the result is rounded to float anyway.
      using Math = std::conditional_t<std::is_same_v<T, float>, float, double>;
      auto unit = [](std::uint64_t raw) -> Math {
        if constexpr (std::is_same_v<Math, float>) return Generator::unit_float(raw);
        else return Generator::unit_double(raw);
      };
      for (std::int64_t j = 0; j < count; j += 2) {
        const Math u1 = Math(1) - unit(draws[j]);  // (0, 1]: log(u1) is finite
        const Math u2 = unit(draws[j + 1]);
        const Math r = std::sqrt(Math(-2) * std::log(u1)), theta = Math(2) * std::numbers::pi_v<Math> * u2;
        const std::int64_t i = first + j;
        y[i] = static_cast<T>(mean + std * (r * std::cos(theta)));
        if (i + 1 < n) y[i + 1] = static_cast<T>(mean + std * (r * std::sin(theta)));
      }
    });
    return out;
  });
}

Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype) {
  check_shape("bernoulli", shape);
  if (!(p >= 0 && p <= 1)) fail<ValueError>("bernoulli", "argument 'p' must be in [0, 1], got ", p);
  return dispatch(dtype, [&]<class T>() {
    return generate<T>(shape, dtype, gen,
                       [&](std::uint64_t raw, std::int64_t) { return static_cast<T>(Generator::unit_double(raw) < p ? 1 : 0); });
  });
}

Tensor bernoulli(const Tensor& p, Generator& gen) {
  if (!p.defined()) fail<ValueError>("bernoulli", "argument 'p' is undefined");
  return dispatch_floating("bernoulli", p.dtype(), [&]<class T>() {
    const T* q = p.data<T>();
    const std::int64_t n = p.numel();
    for (std::int64_t i = 0; i < n; ++i)
      if (!(q[i] >= 0 && q[i] <= 1))
        fail<ValueError>("bernoulli", "argument 'p' of shape ", to_string(p.shape()),
                         " must hold probabilities in [0, 1], found ", q[i], " at flat index ", i);
    return generate<T>(p.shape(), p.dtype(), gen, [&](std::uint64_t raw, std::int64_t i) {
      return static_cast<T>(Generator::unit_double(raw) < q[i] ? 1 : 0);
    });
  });
}

}  // namespace recur
