#pragma once
// The character corpus of the main demo: text files read from disk (by default the licence
// texts every Debian system ships in /usr/share/common-licenses, so nothing is downloaded),
// its alphabet, and the text cut into parallel streams for batched training.
#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <recur/recur.hpp>

namespace examples {

class CharCorpus {
 public:
  // Reads every regular file named (directories: their regular files, sorted; symbolic
  // links to files already read are skipped).
  explicit CharCorpus(const std::vector<std::filesystem::path>& sources) {
    std::vector<std::filesystem::path> files;
    for (const auto& s : sources) {
      if (std::filesystem::is_directory(s)) {
        std::vector<std::filesystem::path> in_dir;
        for (const auto& e : std::filesystem::directory_iterator(s))
          if (e.is_regular_file() && !e.is_symlink()) in_dir.push_back(e.path());
        std::sort(in_dir.begin(), in_dir.end());
        files.insert(files.end(), in_dir.begin(), in_dir.end());
      } else {
        files.push_back(s);
      }
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      if (!in) throw std::runtime_error("cannot read corpus file " + f.string());
      std::ostringstream text;
      text << in.rdbuf();
      text_ += text.str();
    }
    if (text_.size() < 1000) throw std::runtime_error("the corpus has fewer than 1000 characters");
    std::array<bool, 256> seen{};
    for (unsigned char c : text_) seen[c] = true;
    for (int c = 0; c < 256; ++c)
      if (seen[c]) alphabet_.push_back(static_cast<char>(c));
    for (std::size_t i = 0; i < alphabet_.size(); ++i) code_[static_cast<unsigned char>(alphabet_[i])] = static_cast<std::int64_t>(i);
  }

  const std::string& text() const { return text_; }
  std::int64_t vocabulary() const { return static_cast<std::int64_t>(alphabet_.size()); }
  std::int64_t code(char c) const { return code_[static_cast<unsigned char>(c)]; }
  char character(std::int64_t code) const { return alphabet_[static_cast<std::size_t>(code)]; }

  // The text as `batch` parallel streams: stream b is the b-th of `batch` equal pieces.
  // Returns codes [steps, batch] (time first) with steps = length / batch.
  recur::Tensor streams(std::int64_t batch) const {
    const auto steps = static_cast<std::int64_t>(text_.size()) / batch;
    recur::Tensor codes = recur::Tensor::empty({steps, batch}, recur::DType::int64);
    auto* p = codes.data<std::int64_t>();
    for (std::int64_t t = 0; t < steps; ++t)
      for (std::int64_t b = 0; b < batch; ++b) p[t * batch + b] = code(text_[static_cast<std::size_t>(b * steps + t)]);
    return codes;
  }

 private:
  std::string text_;
  std::vector<char> alphabet_;
  std::array<std::int64_t, 256> code_{};
};

}  // namespace examples
