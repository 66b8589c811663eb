#pragma once
// SVG pictures for the example programs, written by hand (no dependency): a Document to
// draw on, a LineChart (series of numbers with axes, ticks, labels and a legend, scaled to
// its data) and an ImageGrid (small grayscale or binary images side by side).
//
//   examples::svg::LineChart chart{.title = "loss", .x_label = "epoch", .y_label = "error"};
//   chart.add_series("train", losses, 1.0);   // y values at x = 1, 2, 3, ...
//   chart.write("loss.svg");                   // or chart.draw(document, frame) inside a bigger picture
//
// All text is escaped, so titles and series names may hold any characters.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace examples::svg {

// Text as XML character data: & < > " ' become entities, and control characters that XML
// 1.0 forbids become '?'.
inline std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 && c != '\t' && c != '\n' && c != '\r') ? '?' : c;
    }
  }
  return out;
}

// A coordinate: at most two decimals, no trailing zeros, never "-0".
inline std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  std::string s = buf;
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

struct Rect {
  double x = 0, y = 0, width = 0, height = 0;
};

enum class Anchor { start, middle, end };

// A picture under construction; elements are drawn in the order they are added.
class Document {
 public:
  Document(double width, double height) : width_(width), height_(height) {}
  double width() const { return width_; }
  double height() const { return height_; }

  void rect(const Rect& r, std::string_view fill, std::string_view stroke = "none", double stroke_width = 1) {
    body_ += "<rect x=\"" + number(r.x) + "\" y=\"" + number(r.y) + "\" width=\"" + number(r.width) + "\" height=\"" +
             number(r.height) + "\" fill=\"" + escape(fill) + "\"";
    if (stroke != "none") body_ += " stroke=\"" + escape(stroke) + "\" stroke-width=\"" + number(stroke_width) + "\"";
    body_ += "/>\n";
  }
  void line(double x1, double y1, double x2, double y2, std::string_view stroke, double stroke_width = 1) {
    body_ += "<line x1=\"" + number(x1) + "\" y1=\"" + number(y1) + "\" x2=\"" + number(x2) + "\" y2=\"" + number(y2) +
             "\" stroke=\"" + escape(stroke) + "\" stroke-width=\"" + number(stroke_width) + "\"/>\n";
  }
  void polyline(const std::vector<std::pair<double, double>>& points, std::string_view stroke, double stroke_width = 1.5) {
    body_ += "<polyline fill=\"none\" stroke=\"" + escape(stroke) + "\" stroke-width=\"" + number(stroke_width) +
             "\" stroke-linejoin=\"round\" points=\"";
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (i) body_ += ' ';  // not `(i ? " " : "") + number(...)`: GCC 12 -Wrestrict false positive
      body_ += number(points[i].first) + "," + number(points[i].second);
    }
    body_ += "\"/>\n";
  }
  // `rotate` in degrees around (x, y); (x, y) is the baseline point given by `anchor`.
  void text(double x, double y, std::string_view content, double size = 12, Anchor anchor = Anchor::start,
            double rotate = 0, bool bold = false) {
    static constexpr const char* anchors[] = {"start", "middle", "end"};
    body_ += "<text x=\"" + number(x) + "\" y=\"" + number(y) + "\" font-size=\"" + number(size) + "\" text-anchor=\"" +
             anchors[static_cast<int>(anchor)] + "\"";
    if (bold) body_ += " font-weight=\"bold\"";
    if (rotate != 0) body_ += " transform=\"rotate(" + number(rotate) + " " + number(x) + " " + number(y) + ")\"";
    body_ += ">" + escape(content) + "</text>\n";
  }

  std::string str() const {
    return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + number(width_) + "\" height=\"" + number(height_) +
           "\" viewBox=\"0 0 " + number(width_) + " " + number(height_) +
           "\" font-family=\"Helvetica, Arial, sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" +
           body_ + "</svg>\n";
  }
  // Throws std::runtime_error when the file cannot be written.
  void write(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    out << str();
    out.close();
    if (!out) throw std::runtime_error("cannot write " + path);
  }

 private:
  double width_, height_;
  std::string body_;
};

// An axis from lo to hi with ticks every `step`, all multiples of step.
struct Axis {
  double lo = 0, hi = 1, step = 0.2;
  std::vector<double> ticks() const {
    std::vector<double> t;
    const auto n = static_cast<std::int64_t>(std::llround((hi - lo) / step));
    for (std::int64_t i = 0; i <= n; ++i) t.push_back(lo + static_cast<double>(i) * step);
    return t;
  }
  // A tick's label with as many decimals as the step needs.
  std::string label(double v) const {
    const int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step) + 1e-9)));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    const std::string s = buf;
    return s.find_first_not_of("-0.") == std::string::npos ? "0" : s;
  }
};

// The axis covering [min, max] with at most max_ticks ticks at 1, 2 or 5 times a power of
// ten. An empty range is widened (a constant series still gets an axis around it).
inline Axis nice_axis(double min, double max, int max_ticks = 6) {
  if (!std::isfinite(min) || !std::isfinite(max) || min > max) min = 0, max = 1;
  if (max == min) {
    const double pad = min == 0 ? 1 : std::abs(min) * 0.1;
    min -= pad, max += pad;
  }
  const double raw = (max - min) / std::max(1, max_ticks - 1);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double r = raw / magnitude * (1 - 1e-9);  // slack: 1.0000000000000002 is still 1
  const double step = (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * magnitude;
  // Slack again: 0.3 / 0.1 = 2.9999999999999996 must not become a tick lower.
  return {std::floor(min / step + 1e-9) * step, std::ceil(max / step - 1e-9) * step, step};
}

// Lines of numbers over x, with axes and labels, scaled to the data.
struct LineChart {
  struct Series {
    std::string name;
    std::vector<double> x, y;
  };
  std::string title{}, x_label{}, y_label{};  // `{}`: designated initializers may leave any out
  double width = 640, height = 360;
  std::vector<Series> series{};

  // y[i] at x = x0 + i * dx.
  void add_series(std::string name, std::vector<double> y, double x0 = 0, double dx = 1) {
    std::vector<double> x(y.size());
    for (std::size_t i = 0; i < y.size(); ++i) x[i] = x0 + static_cast<double>(i) * dx;
    series.push_back({std::move(name), std::move(x), std::move(y)});
  }
  void add_series(std::string name, std::vector<double> x, std::vector<double> y) {
    if (x.size() != y.size()) throw std::invalid_argument("LineChart::add_series: x and y differ in length");
    series.push_back({std::move(name), std::move(x), std::move(y)});
  }

  // The axes covering every finite point (points with a NaN or infinite coordinate are left out).
  Axis x_axis() const { return axis_of(&Series::x); }
  Axis y_axis() const { return axis_of(&Series::y); }
  // Where the data go inside `frame`: room is left for the title, tick labels and axis labels.
  static Rect plot_area(const Rect& frame) {
    return {frame.x + 70, frame.y + 36, std::max(1.0, frame.width - 90), std::max(1.0, frame.height - 86)};
  }

  void draw(Document& doc, const Rect& frame) const {
    static constexpr const char* palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
    const Rect p = plot_area(frame);
    const Axis ax = x_axis(), ay = y_axis();
    auto sx = [&](double v) { return p.x + (v - ax.lo) / (ax.hi - ax.lo) * p.width; };
    auto sy = [&](double v) { return p.y + p.height - (v - ay.lo) / (ay.hi - ay.lo) * p.height; };

    doc.text(frame.x + frame.width / 2, frame.y + 22, title, 15, Anchor::middle, 0, true);
    for (double t : ay.ticks()) {
      doc.line(p.x, sy(t), p.x + p.width, sy(t), "#e4e4e4");
      doc.text(p.x - 6, sy(t) + 4, ay.label(t), 11, Anchor::end);
    }
    for (double t : ax.ticks()) {
      doc.line(sx(t), p.y, sx(t), p.y + p.height, "#e4e4e4");
      doc.text(sx(t), p.y + p.height + 16, ax.label(t), 11, Anchor::middle);
    }
    doc.rect(p, "none", "#444444");
    doc.text(p.x + p.width / 2, p.y + p.height + 36, x_label, 12, Anchor::middle);
    doc.text(frame.x + 16, p.y + p.height / 2, y_label, 12, Anchor::middle, -90);

    for (std::size_t s = 0; s < series.size(); ++s) {
      const char* color = palette[s % std::size(palette)];
      std::vector<std::pair<double, double>> points;
      for (std::size_t i = 0; i < series[s].y.size(); ++i)
        if (std::isfinite(series[s].x[i]) && std::isfinite(series[s].y[i]))
          points.emplace_back(sx(series[s].x[i]), sy(series[s].y[i]));
      doc.polyline(points, color);
      if (series[s].name.empty()) continue;
      const double ly = p.y + 16 + 16 * static_cast<double>(s);
      doc.line(p.x + p.width - 150, ly - 4, p.x + p.width - 130, ly - 4, color, 2.5);
      doc.text(p.x + p.width - 124, ly, series[s].name, 11);
    }
  }
  std::string str() const {
    Document doc(width, height);
    draw(doc, {0, 0, width, height});
    return doc.str();
  }
  void write(const std::string& path) const {
    Document doc(width, height);
    draw(doc, {0, 0, width, height});
    doc.write(path);
  }

 private:
  Axis axis_of(std::vector<double> Series::*coordinate) const {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const Series& s : series)
      for (std::size_t i = 0; i < s.y.size(); ++i)
        if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) {
          lo = std::min(lo, (s.*coordinate)[i]);
          hi = std::max(hi, (s.*coordinate)[i]);
        }
    return nice_axis(lo, hi);
  }
};

// Small images of rows x cols pixels in [0, 1] (0 white, 1 black; binary images are the
// case of 0s and 1s), laid out `columns` to a row under a title.
struct ImageGrid {
  std::string title{};  // `{}`: designated initializers may leave it out
  std::int64_t rows = 8, cols = 8;  // pixels of one image
  std::int64_t columns = 8;         // images per row of the grid
  double pixel = 5;                 // side of one pixel
  double gap = 6;                   // between images
  std::vector<std::vector<double>> images{};

  void add(std::vector<double> pixels) {
    if (static_cast<std::int64_t>(pixels.size()) != rows * cols)
      throw std::invalid_argument("ImageGrid::add: an image of " + std::to_string(pixels.size()) + " pixels, expected " +
                                  std::to_string(rows * cols));
    images.push_back(std::move(pixels));
  }
  std::int64_t grid_rows() const { return (static_cast<std::int64_t>(images.size()) + columns - 1) / columns; }
  double width() const { return static_cast<double>(columns) * (cols * pixel + gap) - gap; }
  double height() const { return title_height + static_cast<double>(grid_rows()) * (rows * pixel + gap) - gap; }
  // The top-left corner of image i's first pixel when the grid is drawn at (x, y).
  std::pair<double, double> origin(std::size_t i, double x, double y) const {
    const auto n = static_cast<std::int64_t>(i);
    return {x + static_cast<double>(n % columns) * (cols * pixel + gap),
            y + title_height + static_cast<double>(n / columns) * (rows * pixel + gap)};
  }

  // White pixels are the image's background; darker ones are drawn a run of equal pixels
  // in a row at a time (bars and stripes are mostly runs).
  void draw(Document& doc, double x, double y) const {
    doc.text(x, y + 14, title, 13, Anchor::start, 0, true);
    for (std::size_t i = 0; i < images.size(); ++i) {
      const auto [ox, oy] = origin(i, x, y);
      doc.rect({ox, oy, cols * pixel, rows * pixel}, "white", "#bbbbbb", 0.5);
      for (std::int64_t r = 0; r < rows; ++r)
        for (std::int64_t c = 0, run = 1; c < cols; c += run) {
          const int level = gray(i, r, c);
          for (run = 1; c + run < cols && gray(i, r, c + run) == level;) ++run;
          if (level == 255) continue;
          char fill[8];
          std::snprintf(fill, sizeof fill, "#%02x%02x%02x", level, level, level);
          doc.rect({ox + c * pixel, oy + r * pixel, run * pixel, pixel}, fill);
        }
    }
  }

  static constexpr double title_height = 22;

 private:
  // 255 (white) for 0 and below (and NaN), 0 (black) for 1 and above.
  int gray(std::size_t image, std::int64_t r, std::int64_t c) const {
    const double v = images[image][static_cast<std::size_t>(r * cols + c)];
    return v > 0 ? static_cast<int>(std::lround(255 * (1 - std::min(v, 1.0)))) : 255;
  }
};

}  // namespace examples::svg
