// The SVG helper of the example programs (examples/svg.hpp): axes at round numbers that
// cover the data, points placed where the axes say, text escaped, images drawn pixel by
// pixel. Expected values are worked out by hand in the comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "../examples/svg.hpp"
#include "file_helpers.hpp"

namespace {

namespace svg = examples::svg;

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The (x, y) pairs of the first polyline.
std::vector<std::pair<double, double>> polyline_points(const std::string& doc) {
  const std::string key = "points=\"";
  const auto begin = doc.find(key, doc.find("<polyline"));
  std::istringstream in(doc.substr(begin + key.size(), doc.find('"', begin + key.size()) - begin - key.size()));
  std::vector<std::pair<double, double>> points;
  double x, y;
  char comma;
  while (in >> x >> comma >> y) points.emplace_back(x, y);
  return points;
}

void expect_axis(const svg::Axis& a, double lo, double hi, double step) {
  EXPECT_NEAR(a.lo, lo, 1e-12);
  EXPECT_NEAR(a.hi, hi, 1e-12);
  EXPECT_NEAR(a.step, step, 1e-12);
}

TEST(ExamplesSvg, NiceAxisCoversTheRangeWithRoundTicks) {
  // (0.87 - 0.13) / 5 = 0.148 -> 0.2; floor(0.65) = 0, ceil(4.35) = 5 steps.
  expect_axis(svg::nice_axis(0.13, 0.87), 0.0, 1.0, 0.2);
  // 599 / 5 = 119.8 -> 200: 0 .. 600.
  expect_axis(svg::nice_axis(1, 600), 0, 600, 200);
  // 15.9 / 5 = 3.18 -> 5: floor(-0.74) = -1, ceil(2.44) = 3.
  expect_axis(svg::nice_axis(-3.7, 12.2), -5, 15, 5);
  // A constant 0.3 is widened by 10% to [0.27, 0.33]: 0.012 -> 0.02, 13.5 -> 13, 16.5 -> 17.
  expect_axis(svg::nice_axis(0.3, 0.3), 0.26, 0.34, 0.02);
  // Exact multiples stay on the tick: 0.3 / 0.1 in floating point is 2.9999999999999996.
  expect_axis(svg::nice_axis(0.3, 0.8), 0.3, 0.8, 0.1);

  const svg::Axis a = svg::nice_axis(0.13, 0.87);
  const std::vector<double> ticks = a.ticks();
  ASSERT_EQ(ticks.size(), 6u);
  for (std::size_t i = 0; i < ticks.size(); ++i) EXPECT_NEAR(ticks[i], 0.2 * static_cast<double>(i), 1e-12);
  EXPECT_EQ(a.label(ticks[0]), "0");
  EXPECT_EQ(a.label(ticks[3]), "0.6");
  EXPECT_EQ(svg::nice_axis(1, 600).label(400), "400");
  EXPECT_EQ(svg::nice_axis(0.3, 0.3).label(0.26), "0.26");
  EXPECT_EQ(a.label(-0.0), "0");
}

TEST(ExamplesSvg, LineChartPlacesPointsOnItsAxes) {
  svg::LineChart chart{.title = "t", .x_label = "x", .y_label = "y", .width = 640, .height = 360};
  chart.add_series("s", {0.13, 0.87, 0.5}, 0.0, 0.5);  // x = 0, 0.5, 1
  expect_axis(chart.x_axis(), 0, 1, 0.2);
  expect_axis(chart.y_axis(), 0, 1, 0.2);

  const svg::Rect p = svg::LineChart::plot_area({0, 0, 640, 360});
  EXPECT_GT(p.width, 400);
  EXPECT_GT(p.height, 200);
  const auto points = polyline_points(chart.str());
  ASSERT_EQ(points.size(), 3u);
  const double xs[] = {0, 0.5, 1}, ys[] = {0.13, 0.87, 0.5};
  for (int i = 0; i < 3; ++i) {  // both axes run 0..1: a linear map onto the plot area, y upwards
    EXPECT_NEAR(points[i].first, p.x + xs[i] * p.width, 0.006);
    EXPECT_NEAR(points[i].second, p.y + p.height - ys[i] * p.height, 0.006);
  }
}

TEST(ExamplesSvg, LineChartScalesToLargeValuesAndSkipsNonFinitePoints) {
  svg::LineChart chart;
  // 1e6 .. 3e6 in steps of 5e5 (2e6 / 5 = 4e5 -> 5e5); the NaN point is left out.
  chart.add_series("", {1e6, std::numeric_limits<double>::quiet_NaN(), 3e6}, 10, 10);
  expect_axis(chart.y_axis(), 1e6, 3e6, 5e5);
  expect_axis(chart.x_axis(), 10, 30, 5);  // x of the finite points: 10 and 30
  const svg::Rect p = svg::LineChart::plot_area({0, 0, chart.width, chart.height});
  const std::string doc = chart.str();
  const auto points = polyline_points(doc);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_NEAR(points[0].first, p.x, 0.006);  // the extremes land on the plot's corners
  EXPECT_NEAR(points[0].second, p.y + p.height, 0.006);
  EXPECT_NEAR(points[1].first, p.x + p.width, 0.006);
  EXPECT_NEAR(points[1].second, p.y, 0.006);
  EXPECT_NE(doc.find(">2500000</text>"), std::string::npos);
  EXPECT_EQ(doc.find("nan"), std::string::npos);
}

TEST(ExamplesSvg, TextIsEscaped) {
  EXPECT_EQ(svg::escape("a<b & \"c\" 'd' >"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos; &gt;");
  EXPECT_EQ(svg::escape(std::string("tab\tbell\a", 9)), "tab\tbell?");

  svg::LineChart chart{.title = "<script>&", .x_label = "x < 1", .y_label = "y"};
  chart.add_series("loss \"train\"", {3, 2, 1});
  const std::string doc = chart.str();
  EXPECT_EQ(doc.find("<script>"), std::string::npos);
  EXPECT_NE(doc.find(">&lt;script&gt;&amp;</text>"), std::string::npos);
  EXPECT_NE(doc.find(">x &lt; 1</text>"), std::string::npos);
  EXPECT_NE(doc.find(">loss &quot;train&quot;</text>"), std::string::npos);
  EXPECT_EQ(count(doc, "<text"), count(doc, "</text>"));
}

TEST(ExamplesSvg, ImageGridDrawsDarkPixelsWhereTheyAre) {
  svg::ImageGrid grid{.title = "g", .rows = 2, .cols = 2, .columns = 2, .pixel = 10, .gap = 5};
  grid.add({0, 1, 0.5, 0});  // top right black, bottom left mid gray
  grid.add({1, 1, 0, 0});    // top row black: one run
  EXPECT_THROW(grid.add({1, 0}), std::invalid_argument);
  EXPECT_DOUBLE_EQ(grid.width(), 2 * (2 * 10 + 5) - 5);
  EXPECT_DOUBLE_EQ(grid.height(), svg::ImageGrid::title_height + 2 * 10);

  svg::Document doc(100, 100);
  grid.draw(doc, 7, 3);
  const std::string s = doc.str();
  // The page's background, one frame per image, two single pixels and one run of two.
  EXPECT_EQ(count(s, "<rect"), 1u + 2u + 2u + 1u);
  const std::string top = svg::number(3 + svg::ImageGrid::title_height);
  const std::string below = svg::number(3 + svg::ImageGrid::title_height + 10);
  EXPECT_NE(s.find("<rect x=\"17\" y=\"" + top + "\" width=\"10\" height=\"10\" fill=\"#000000\"/>"), std::string::npos);
  // 255 * (1 - 0.5) = 127.5 rounds to 128 = 0x80.
  EXPECT_NE(s.find("<rect x=\"7\" y=\"" + below + "\" width=\"10\" height=\"10\" fill=\"#808080\"/>"),
            std::string::npos);
  // The second image starts one image and one gap to the right: 7 + 20 + 5.
  EXPECT_NE(s.find("<rect x=\"32\" y=\"" + top + "\" width=\"20\" height=\"10\" fill=\"#000000\"/>"), std::string::npos);
  EXPECT_EQ(grid.origin(1, 7, 3), (std::pair<double, double>{32, 3 + svg::ImageGrid::title_height}));
}

class ExamplesSvgFile : public recur::testing::TempDirTest {};

TEST_F(ExamplesSvgFile, WriteSavesTheDocumentAndReportsFailure) {
  svg::LineChart chart{.title = "written"};
  chart.add_series("a", {1, 2});
  chart.write(file("chart.svg").string());
  EXPECT_EQ(recur::testing::read_bytes(file("chart.svg")), chart.str());
  EXPECT_THROW(chart.write(file("missing/dir/chart.svg").string()), std::runtime_error);
}

}  // namespace
