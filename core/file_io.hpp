#pragma once
// Opening files for the loaders and replacing files atomically for the savers, with
// errors that name the operation and the path. Internal to core's file formats.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string_view>

namespace recur::detail {

struct InputFile {
  std::ifstream stream;  // binary, at offset 0
  std::uint64_t size = 0;
};

// Opens a regular file for reading; IOError "recur::<op>: '<path>': no such file" (or not
// a regular file, or cannot be opened) otherwise.
InputFile open_input(const std::filesystem::path& path, std::string_view op);

// Where write_atomically's callback writes; every short write throws IOError.
class FileSink {
 public:
  FileSink(std::FILE* file, std::string_view op, const std::filesystem::path& target)
      : file_(file), op_(op), target_(target) {}
  void write(const void* data, std::size_t bytes);
  std::uint64_t written() const { return written_; }

 private:
  std::FILE* file_;
  std::string_view op_;
  const std::filesystem::path& target_;
  std::uint64_t written_ = 0;
};

// Replaces `target` with what `fill` writes, so that a reader sees the old file or the
// whole new one and never a part: writes "<target>.tmp-<pid>-<random>" in the same
// directory, flushes and fsyncs it, renames it over the target and fsyncs the directory.
// When anything fails (or `fill` throws), the temporary is removed, the target is left as
// it was and the error propagates (IOError naming the target for file-system failures).
// A process killed while saving (SIGKILL) cannot remove its temporary: the next successful
// save of the same target removes every "<target>.tmp-<pid>-<hex>" whose process is gone.
void write_atomically(const std::filesystem::path& target, std::string_view op,
                      const std::function<void(FileSink&)>& fill);

}  // namespace recur::detail
