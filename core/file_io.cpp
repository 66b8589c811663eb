#include <recur/core/file_io.hpp>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <random>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include <recur/core/error.hpp>

namespace recur::detail {
namespace {

namespace fs = std::filesystem;

std::string hex64(std::uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

fs::path temporary_for(const fs::path& target) {
  std::random_device rd;
  const std::uint64_t r = (std::uint64_t{rd()} << 32) ^ rd();
  fs::path tmp = target;
  tmp += ".tmp-" + std::to_string(::getpid()) + "-" + hex64(r);
  return tmp;
}

// Removes "<target>.tmp-<pid>-<16 hex>" files next to `target` whose process no longer
// runs: what a save killed part way (SIGKILL, power loss) left behind. Best effort: a
// temporary that cannot be removed stays. Another live process's temporaries are kept.
void remove_stale_temporaries(const fs::path& target, const fs::path& dir) {
  const std::string prefix = target.filename().string() + ".tmp-";
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());  // "<pid>-<16 hex>"
    const std::size_t dash = rest.find('-');
    if (dash == 0 || dash == std::string::npos || rest.size() - dash - 1 != 16 ||
        rest.find_first_not_of("0123456789") != dash || rest.find_first_not_of("0123456789abcdef", dash + 1) != std::string::npos)
      continue;
    const long pid = std::strtol(rest.c_str(), nullptr, 10);
    if (pid <= 0 || pid == ::getpid() || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    ::unlink(it->path().c_str());
  }
}

// Makes the rename itself durable. Some file systems cannot sync a directory (EINVAL):
// then there is nothing more to do.
void sync_directory(const fs::path& dir, std::string_view op, const fs::path& target) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int err = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if (::fsync(fd) != 0 && errno != EINVAL) err = errno;
    ::close(fd);
  }
  if (err)
    fail<IOError>(op, "'", target.string(), "': the file was replaced, but syncing its directory '", dir.string(),
                  "' failed: ", std::strerror(err));
}

}  // namespace

InputFile open_input(const fs::path& path, std::string_view op) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    fail<IOError>(op, "'", path.string(), "': cannot access the file: ", ec.message());
  if (!fs::exists(status)) fail<IOError>(op, "'", path.string(), "': no such file");
  if (!fs::is_regular_file(status)) fail<IOError>(op, "'", path.string(), "': not a regular file");
  InputFile f;
  f.size = fs::file_size(path, ec);
  if (ec) fail<IOError>(op, "'", path.string(), "': cannot read the file size: ", ec.message());
  f.stream.open(path, std::ios::binary);
  if (!f.stream) fail<IOError>(op, "'", path.string(), "': cannot open the file for reading");
  return f;
}

void FileSink::write(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    fail<IOError>(op_, "'", target_.string(), "': writing ", bytes, " bytes at offset ", written_,
                  " failed: ", std::strerror(errno));
  written_ += bytes;
}

void write_atomically(const fs::path& target, std::string_view op, const std::function<void(FileSink&)>& fill) {
  const fs::path tmp = temporary_for(target);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  // 0666 less the umask, as for any new file; O_EXCL: never write through someone else's file.
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0)
    fail<IOError>(op, "'", target.string(), "': cannot create the temporary file '", tmp.string(),
                  "': ", std::strerror(errno));
  std::FILE* file = ::fdopen(fd, "wb");
  if (!file) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail<IOError>(op, "'", target.string(), "': cannot open a stream on '", tmp.string(), "': ", std::strerror(err));
  }
  // Each step reports its own failure; the temporary goes away whatever failed.
  auto give_up = [&](const char* what, int err) {
    ::unlink(tmp.c_str());
    fail<IOError>(op, "'", target.string(), "': ", what, " the temporary file '", tmp.string(), "' failed: ",
                  std::strerror(err), " (the previous file, if any, is unchanged)");
  };
  try {
    FileSink sink(file, op, target);
    fill(sink);
  } catch (...) {
    std::fclose(file);
    ::unlink(tmp.c_str());
    throw;
  }
  if (std::fflush(file) != 0) {
    const int err = errno;
    std::fclose(file);
    give_up("flushing", err);
  }
  if (::fsync(::fileno(file)) != 0) {
    const int err = errno;
    std::fclose(file);
    give_up("syncing", err);
  }
  if (std::fclose(file) != 0) give_up("closing", errno);
  if (std::rename(tmp.c_str(), target.c_str()) != 0) give_up("renaming", errno);
  remove_stale_temporaries(target, dir);
  sync_directory(dir, op, target);
}

}  // namespace recur::detail
