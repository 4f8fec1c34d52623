#include "autotune/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace tessera::autotune {

namespace {

constexpr int kWidth = 520, kLegendRow = 16, kLeft = 64, kRight = 16, kBottom = 42, kPlotHeight = 200;

std::string number(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

// The legend's entries, laid out left to right in rows of the plot's width.
struct LegendLayout {
  std::vector<std::pair<int, int>> at;  // (x, row) of each entry
  int rows = 0;
};

LegendLayout layout_legend(const std::vector<std::string>& texts) {
  LegendLayout l;
  int x = kLeft, row = 0;
  for (const std::string& t : texts) {
    int width = 22 + 6 * static_cast<int>(t.size()) + 14;  // mark, text at ~6 px a character, gap
    if (x > kLeft && x + width > kWidth - kRight) {
      x = kLeft;
      ++row;
    }
    l.at.emplace_back(x, row);
    x += width;
  }
  l.rows = texts.empty() ? 0 : row + 1;
  return l;
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '\'') out += "&apos;";
    else out += c;
  }
  return out;
}

double tick_step(double max, int count) {
  if (!(max > 0)) return 1;
  double raw = max / count, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw) return m * power;
  return 10 * power;
}

void SvgPlot::steps(Points points, std::string color, std::string legend) {
  series_.push_back({Series::Steps, std::move(points), Marker::Dot, std::move(color), std::move(legend)});
}

void SvgPlot::points(Points points, Marker marker, std::string color, std::string legend) {
  series_.push_back({Series::Scatter, std::move(points), marker, std::move(color), std::move(legend)});
}

void SvgPlot::reference(double y, std::string color, std::string legend) {
  series_.push_back({Series::Reference, {{0, y}}, Marker::Dot, std::move(color), std::move(legend)});
}

void SvgPlot::note(std::string text) { series_.push_back({Series::Note, {}, Marker::Dot, "", std::move(text)}); }

std::string SvgPlot::svg() const {
  double x_max = 0, y_max = 0;
  for (const Series& s : series_)
    for (const auto& [x, y] : s.points) {
      if (s.kind != Series::Reference) x_max = std::max(x_max, x);
      y_max = std::max(y_max, y);
    }
  // x counts trials: whole ticks, and room for a few so that one trial is not drawn on the edge.
  x_max = std::max(x_max, 5.0);
  const double y_top = y_max > 0 ? y_max * 1.05 : 1;  // a margin above the highest point
  const double x_step = std::max(1.0, tick_step(x_max, 6)), y_step = tick_step(y_top, 5);
  x_max = x_step * std::ceil(x_max / x_step);
  y_max = y_step * std::ceil(y_top / y_step);

  std::vector<std::string> texts;
  for (const Series& s : series_) texts.push_back(s.legend);
  const LegendLayout legend = layout_legend(texts);
  const int top = 8 + legend.rows * kLegendRow + 8, height = top + kPlotHeight + kBottom;
  const int right = kWidth - kRight, bottom = top + kPlotHeight;
  auto px = [&](double x) { return kLeft + (right - kLeft) * x / x_max; };
  auto py = [&](double y) { return bottom - kPlotHeight * std::min(y, y_max) / y_max; };

  std::ostringstream os;
  os.precision(5);
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kWidth << "' height='" << height
     << "' font-family='sans-serif' font-size='11'><rect width='100%' height='100%' fill='white'/>";
  // Grid and ticks.
  for (double y = 0; y <= y_max * 1.0001; y += y_step)
    os << "<line x1='" << kLeft << "' y1='" << py(y) << "' x2='" << right << "' y2='" << py(y)
       << "' stroke='#e4e4e4'/><text x='" << kLeft - 5 << "' y='" << py(y) + 4 << "' text-anchor='end'>" << number(y)
       << "</text>";
  for (double x = 0; x <= x_max * 1.0001; x += x_step)
    os << "<line x1='" << px(x) << "' y1='" << bottom << "' x2='" << px(x) << "' y2='" << bottom + 4
       << "' stroke='black'/><text x='" << px(x) << "' y='" << bottom + 16 << "' text-anchor='middle'>" << number(x)
       << "</text>";
  os << "<polyline fill='none' stroke='black' points='" << kLeft << "," << top << " " << kLeft << "," << bottom << " "
     << right << "," << bottom << "'/>";
  os << "<text x='" << (kLeft + right) / 2 << "' y='" << height - 6 << "' text-anchor='middle'>" << xml_escape(x_title_)
     << "</text>";
  os << "<text transform='translate(14," << (top + bottom) / 2 << ") rotate(-90)' text-anchor='middle'>"
     << xml_escape(y_title_) << "</text>";

  // Data, then the legend above the plot area.
  for (const Series& s : series_) {
    if (s.kind == Series::Reference) {
      os << "<line x1='" << kLeft << "' y1='" << py(s.points[0].second) << "' x2='" << right << "' y2='"
         << py(s.points[0].second) << "' stroke='" << s.color << "' stroke-width='2' stroke-dasharray='6,4'/>";
    } else if (s.kind == Series::Steps && !s.points.empty()) {
      os << "<polyline fill='none' stroke='" << s.color << "' stroke-width='2' points='";
      double prev = s.points.front().second;
      for (const auto& [x, y] : s.points) {
        os << px(x) << "," << py(prev) << " " << px(x) << "," << py(y) << " ";
        prev = y;
      }
      os << px(x_max) << "," << py(prev) << "'/>";
    } else if (s.kind == Series::Scatter) {
      for (const auto& [x, y] : s.points) {
        if (s.marker == Marker::Dot)
          os << "<circle cx='" << px(x) << "' cy='" << py(y) << "' r='2.5' fill='" << s.color << "'/>";
        else
          os << "<path d='M" << px(x) - 3 << "," << py(y) - 3 << "l6,6m0,-6l-6,6' stroke='" << s.color
             << "' stroke-width='1.5'/>";
      }
    }
  }
  for (size_t i = 0; i < series_.size(); ++i) {
    const Series& s = series_[i];
    const int x = legend.at[i].first, y = 8 + legend.at[i].second * kLegendRow + 10;
    if (s.kind == Series::Steps || s.kind == Series::Reference)
      os << "<line x1='" << x << "' y1='" << y - 4 << "' x2='" << x + 18 << "' y2='" << y - 4 << "' stroke='" << s.color
         << "' stroke-width='2'" << (s.kind == Series::Reference ? " stroke-dasharray='6,4'" : "") << "/>";
    else if (s.kind == Series::Scatter && s.marker == Marker::Dot)
      os << "<circle cx='" << x + 9 << "' cy='" << y - 4 << "' r='2.5' fill='" << s.color << "'/>";
    else if (s.kind == Series::Scatter)
      os << "<path d='M" << x + 6 << "," << y - 7 << "l6,6m0,-6l-6,6' stroke='" << s.color << "' stroke-width='1.5'/>";
    os << "<text x='" << x + 22 << "' y='" << y << "'>" << xml_escape(s.legend) << "</text>";
  }
  os << "</svg>";
  return os.str();
}

}  // namespace tessera::autotune
