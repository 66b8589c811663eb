#pragma once
// The fixture of every test made from a Markdown code block (tests/docs/
// extract_code_blocks.cpp): the block runs in a fresh empty directory that is its working
// directory, so an example writes its files by plain relative names; the directory is
// removed afterwards.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>

#include "file_helpers.hpp"

namespace recur::docs {

class BlockInTempDir : public recur::testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    previous_ = std::filesystem::current_path();
    std::filesystem::current_path(dir_);
  }
  void TearDown() override {
    std::filesystem::current_path(previous_);
    TempDirTest::TearDown();
  }

 private:
  std::filesystem::path previous_;
};

}  // namespace recur::docs
