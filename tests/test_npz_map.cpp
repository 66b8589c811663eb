// .npz archives by name (load_npz_map, save_npz_map): the same arrays as the list form,
// looked up by name; written in name order; the list form's checks and errors.
#include <gtest/gtest.h>

#include <string_view>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "file_helpers.hpp"
#include "values.hpp"

namespace recur {
namespace {

using testing::expect_error;
using testing::listing;
using testing::read_bytes;
using testing::same_bytes;

namespace fs = std::filesystem;

const fs::path kNpz = fs::path(RECUR_TEST_DATA) / "npz";

using NpzMap = testing::TempDirTest;

TEST_F(NpzMap, HoldsWhatTheListHoldsByName) {
  // numpy.savez wrote six arrays, one with '/' in its name and one non-ASCII.
  const NamedTensors list = load_npz(kNpz / "numpy_savez.npz");
  const TensorMap map = load_npz_map(kNpz / "numpy_savez.npz");
  ASSERT_EQ(list.size(), 6u);
  ASSERT_EQ(map.size(), list.size());
  for (const auto& [name, t] : list) {
    const auto found = map.find(name);
    ASSERT_NE(found, map.end()) << name;
    EXPECT_TRUE(same_bytes(found->second, t)) << name;
  }
  // Looked up without building a std::string, as numpy's npz["w"].
  const auto w = map.find(std::string_view("param/lstm.weight_ih_l0"));
  ASSERT_NE(w, map.end());
  EXPECT_EQ(w->second.shape(), (Shape{4, 2}));
  EXPECT_EQ(to_vector<float>(w->second), (std::vector<float>{0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f}));
}

TEST_F(NpzMap, SavesInNameOrderAndRoundTrips) {
  const TensorMap arrays{{"z", tensor({1.0, 2.0}, DType::float64)},
                         {"a/b", from_vector<std::int64_t>({7, -8, 9}, {3})},
                         {"m", zeros({2, 0})}};
  save_npz_map(file("map.npz"), arrays);
  // The list form sees the members in byte order of the names...
  const NamedTensors back = load_npz(file("map.npz"));
  ASSERT_EQ(back.size(), 3u);
  EXPECT_EQ(back[0].first, "a/b");
  EXPECT_EQ(back[1].first, "m");
  EXPECT_EQ(back[2].first, "z");
  // ... the very bytes save_npz writes for that list ...
  save_npz(file("list.npz"), {{"a/b", arrays.at("a/b")}, {"m", arrays.at("m")}, {"z", arrays.at("z")}});
  EXPECT_EQ(read_bytes(file("map.npz")), read_bytes(file("list.npz")));
  // ... and the map form reads back every array bit for bit.
  const TensorMap again = load_npz_map(file("map.npz"));
  ASSERT_EQ(again.size(), arrays.size());
  for (const auto& [name, t] : arrays) EXPECT_TRUE(same_bytes(again.at(name), t)) << name;
}

TEST_F(NpzMap, ErrorsAreTheListForms) {
  const Tensor t = ones({2});
  expect_error<ValueError>([&] { save_npz_map(file("bad.npz"), {{"ok", t}, {"../up", t}}); },
                           {"recur::save_npz", "'../up'", "'..'"});
  expect_error<ValueError>([&] { save_npz_map(file("bad.npz"), {{"u", Tensor()}}); }, {"'u'", "undefined"});
  EXPECT_TRUE(listing(dir_).empty()) << "a refused save wrote a file";
  expect_error<IOError>([&] { load_npz_map(file("none.npz")); }, {"recur::load_npz", "none.npz"});
  save_npz_map(file("empty.npz"), {});
  EXPECT_TRUE(load_npz_map(file("empty.npz")).empty());
}

}  // namespace
}  // namespace recur
