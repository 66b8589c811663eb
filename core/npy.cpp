#include <recur/core/npy.hpp>

#include <recur/core/file_io.hpp>
#include <recur/core/npy_format.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;

Tensor load(const fs::path& path, std::optional<DType> expected) {
  detail::InputFile f = detail::open_input(path, "load_npy");
  std::string where = "'";
  where.append(path.string()).append("'");
  return detail::read_npy(f.stream, f.size, {"load_npy", std::move(where)}, expected, true);
}

}  // namespace

void save_npy(const fs::path& path, const Tensor& t) {
  if (!t.defined()) fail<ValueError>("save_npy", "argument 't' is undefined (default-constructed)");
  const std::string header = detail::npy_header(t);
  detail::write_atomically(path, "save_npy", [&](detail::FileSink& out) {
    out.write(header.data(), header.size());
    out.write(t.raw_data(), t.nbytes());
  });
}

Tensor load_npy(const fs::path& path) { return load(path, std::nullopt); }
Tensor load_npy(const fs::path& path, DType expected_dtype) { return load(path, expected_dtype); }

}  // namespace recur
