#include "npz_mutator.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <unistd.h>

#include <recur/recur.hpp>

#include "fuzz_random.hpp"

namespace recur::fuzz {
namespace {

// The mutator's own scratch files (the harness reads its input from another one).
std::filesystem::path scratch(const char* what) {
  return std::filesystem::temp_directory_path() /
         ("recur_fuzz_npz_" + std::string(what) + "_" + std::to_string(::getpid()) + ".npz");
}

// A small shape: rank 0 to 3, sizes 0 to 4.
Shape small_shape(Rng& rng) {
  Shape s;
  for (int d = 0, rank = rng.below(4); d < rank; ++d) s.push_back(static_cast<std::int64_t>(rng.below(5)));
  return s;
}

// A value worth trying where a count, a step or a weight is read.
double interesting(Rng& rng) {
  const double values[] = {0.0, -1.0, 1.0, 0.5, 1e300, -1e300, std::numeric_limits<double>::quiet_NaN(),
                           std::numeric_limits<double>::infinity(), 0x1p62, 0x1p63, -0x1p63, 4294967296.0};
  return values[rng.below(std::size(values))];
}

// `t` in dtype `d`, its values through double (NaN and huge ones become 0 in int64).
Tensor with_dtype(const Tensor& t, DType d) {
  const Tensor f = t.to(DType::float64);
  Tensor out = Tensor::empty(t.shape(), d);
  dispatch(d, [&]<class T>() {
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      const double v = f.data<double>()[i];
      out.data<T>()[i] = std::is_integral_v<T> && !(v > -0x1p62 && v < 0x1p62) ? T(0) : static_cast<T>(v);
    }
  });
  return out;
}

void mutate(NamedTensors& arrays, Rng& rng) {
  const std::size_t k = rng.below(arrays.size());
  switch (rng.below(arrays.empty() ? 1 : 7)) {
    case 0: {  // a new member, named like an existing one in another group, or freshly
      const char* groups[] = {"param/", "optim/", "extra/", "rng/", ""};
      std::string name = groups[rng.below(std::size(groups))];
      name += arrays.empty() ? "x" : arrays[k].first.substr(arrays[k].first.find('/') + 1);
      if (rng.one_in(2)) name += std::to_string(rng.below(10));
      arrays.emplace_back(name, zeros(small_shape(rng), rng.one_in(2) ? DType::float32 : DType::int64));
      break;
    }
    case 1: arrays.erase(arrays.begin() + static_cast<std::ptrdiff_t>(k)); break;
    case 2: arrays[k].first = arrays[rng.below(arrays.size())].first + (rng.one_in(2) ? "" : "_"); break;
    case 3: arrays[k].second = zeros(small_shape(rng), arrays[k].second.dtype()); break;
    case 4: {
      const DType dtypes[] = {DType::float32, DType::float64, DType::int64};
      arrays[k].second = with_dtype(arrays[k].second, dtypes[rng.below(std::size(dtypes))]);
      break;
    }
    case 5: {  // one element set to a value worth trying
      Tensor t = arrays[k].second.clone();
      if (t.numel() == 0) break;
      const std::int64_t i = static_cast<std::int64_t>(rng.below(static_cast<std::size_t>(t.numel())));
      const double v = interesting(rng);
      dispatch(t.dtype(), [&]<class T>() {
        t.data<T>()[i] = std::is_integral_v<T> && !(v > -0x1p62 && v < 0x1p62) ? T(-1) : static_cast<T>(v);
      });
      arrays[k].second = t;
      break;
    }
    default: std::swap(arrays[k], arrays[rng.below(arrays.size())]); break;
  }
}

}  // namespace

std::size_t mutate_npz(std::uint8_t* data, std::size_t size, std::size_t max_size, unsigned seed) {
  const auto in = scratch("in"), out = scratch("out");
  {
    std::ofstream f(in, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    NamedTensors arrays = load_npz(in);
    Rng rng(seed);
    for (int n = 0, count = 1 + rng.below(3); n < count; ++n) mutate(arrays, rng);
    save_npz(out, arrays);  // a name twice, or an unsafe one, is a ValueError: no rewrite
  } catch (const Error&) {
    return 0;
  }
  std::ifstream f(out, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), {});
  if (bytes.empty() || bytes.size() > max_size) return 0;
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace recur::fuzz
