#include "autotune/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace tessera::autotune {

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string fmt(double v, const char* f = "%.3g") {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

// A step plot of (x, y) points with axes labels; y is plotted as given (higher is better or
// lower is better according to the caption).
std::string svg_plot(const std::vector<std::pair<double, double>>& points, const std::string& x_label,
                     const std::string& y_label) {
  const int w = 420, h = 220, left = 60, bottom = 40, top = 10, right = 10;
  std::ostringstream os;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h << "' style='background:#fff'>";
  if (points.empty()) return os.str() + "<text x='60' y='110'>no measurements</text></svg>";
  double xmax = 1, ymax = 0, ymin = 1e300;
  for (const auto& [x, y] : points) {
    xmax = std::max(xmax, x);
    ymax = std::max(ymax, y);
    ymin = std::min(ymin, y);
  }
  ymin = std::min(ymin, 0.0);
  if (ymax <= ymin) ymax = ymin + 1;
  auto px = [&](double x) { return left + (w - left - right) * x / xmax; };
  auto py = [&](double y) { return h - bottom - (h - bottom - top) * (y - ymin) / (ymax - ymin); };
  os << "<line x1='" << left << "' y1='" << h - bottom << "' x2='" << w - right << "' y2='" << h - bottom
     << "' stroke='black'/>";
  os << "<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << h - bottom << "' stroke='black'/>";
  os << "<text x='" << left << "' y='" << h - 8 << "' font-size='11'>" << escape(x_label) << " (0 to "
     << fmt(xmax, "%.0f") << ")</text>";
  os << "<text x='2' y='" << top + 10 << "' font-size='11'>" << fmt(ymax) << "</text>";
  os << "<text x='2' y='" << h - bottom << "' font-size='11'>" << fmt(ymin) << "</text>";
  os << "<text x='" << left + 5 << "' y='" << top + 12 << "' font-size='11' fill='#555'>" << escape(y_label)
     << "</text>";
  os << "<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='";
  double prev_y = points.front().second;
  os << px(0) << "," << py(prev_y) << " ";
  for (const auto& [x, y] : points) {
    os << px(x) << "," << py(prev_y) << " " << px(x) << "," << py(y) << " ";
    prev_y = y;
  }
  os << "'/></svg>";
  return os.str();
}

}  // namespace

std::string report_html(const TuneResult& r) {
  std::ostringstream os;
  os << "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Tessera tuning report</title>"
     << "<style>body{font-family:sans-serif;margin:2em} .task{display:inline-block;margin:1em;vertical-align:top}"
     << "table{border-collapse:collapse} td,th{padding:2px 8px;border-bottom:1px solid "
        "#ddd;text-align:right}</style></head><body>";
  os << "<h1>Tessera tuning report</h1>";
  os << "<p>Estimated end-to-end latency: <b>" << fmt(r.estimated_latency * 1e3, "%.3f")
     << " ms</b> (default schedules: " << fmt(r.default_latency * 1e3, "%.3f") << " ms), " << r.tasks.size()
     << " tasks, tuning took " << fmt(r.wall_seconds, "%.0f") << " s.</p>";
  std::vector<std::pair<double, double>> latency;
  for (const auto& [t, l] : r.latency_history) latency.emplace_back(t, l * 1e3);
  os << "<h2>End to end</h2>" << svg_plot(latency, "trials", "estimated latency (ms), lower is better");
  os << "<h2>Tasks</h2><table><tr><th>task</th><th>weight</th><th>trials</th><th>default ms</th><th>best "
        "ms</th><th>GFLOP/s</th></tr>";
  for (const auto& t : r.tasks)
    os << "<tr><td style='text-align:left'>" << escape(t.description) << "</td><td>" << t.weight << "</td><td>"
       << t.trials << "</td><td>" << fmt(t.default_seconds * 1e3, "%.4f") << "</td><td>"
       << fmt(t.best_seconds * 1e3, "%.4f") << "</td><td>" << fmt(t.gflops(), "%.1f") << "</td></tr>";
  os << "</table>";
  for (const auto& t : r.tasks) {
    std::vector<std::pair<double, double>> best;
    for (const auto& [n, s] : t.history)
      if (s > 0) best.emplace_back(n, t.flops / s / 1e9);
    os << "<div class='task'><h3>" << escape(t.description) << "</h3>"
       << svg_plot(best, "trials", "best GFLOP/s, higher is better") << "</div>";
  }
  os << "</body></html>\n";
  return os.str();
}

void write_report(const TuneResult& result, const std::string& path) {
  std::ofstream out(path);
  out << report_html(result);
  if (!out) fail("cannot write the tuning report ", path);
}

}  // namespace tessera::autotune
