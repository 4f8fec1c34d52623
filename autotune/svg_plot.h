// A line-and-points chart of trials as SVG, for the tuning report: axes from zero with ticks at round
// values, axis titles with units, and a legend in a band above the plot area, so no label sits
// on the data. Lines are steps (a best-so-far or an estimate holds until the next trial).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace tessera::autotune {

class SvgPlot {
 public:
  using Points = std::vector<std::pair<double, double>>;
  enum class Marker { Dot, Cross };

  SvgPlot(std::string x_title, std::string y_title) : x_title_(std::move(x_title)), y_title_(std::move(y_title)) {}

  void steps(Points points, std::string color, std::string legend);
  void points(Points points, Marker marker, std::string color, std::string legend);
  // A dashed horizontal line across the plot at `y`.
  void reference(double y, std::string color, std::string legend);
  // A legend entry without a mark (what is known but off the scale, say).
  void note(std::string text);

  std::string svg() const;

 private:
  struct Series {
    enum Kind { Steps, Scatter, Reference, Note } kind;
    Points points;
    Marker marker;
    std::string color, legend;
  };
  std::string x_title_, y_title_;
  std::vector<Series> series_;
};

// `s` with the characters markup gives a meaning to replaced by their entities.
std::string xml_escape(const std::string& s);

// 1, 2 or 5 times a power of ten: the tick step that cuts [0, max] into at most `count` parts.
double tick_step(double max, int count);

}  // namespace tessera::autotune
