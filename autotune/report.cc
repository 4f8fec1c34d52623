#include "autotune/report.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "autotune/svg_plot.h"
#include "runtime/error.h"

namespace tessera::autotune {

namespace {

constexpr const char *kBest = "#1f77b4", *kDefault = "#777777", *kCandidate = "#9cc3e4", *kFailed = "#d62728",
                     *kPeak = "#ff7f0e";

std::string fmt(double v, const char* f = "%.3g") {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string end_to_end_plot(const TuneResult& r) {
  SvgPlot plot("trials (schedules measured, all tasks)", "estimated latency (ms)");
  SvgPlot::Points latency;
  for (const auto& [trials, seconds] : r.latency_history) latency.emplace_back(trials, seconds * 1e3);
  plot.steps(latency, kBest, "best schedules so far: " + fmt(r.estimated_latency * 1e3) + " ms");
  if (r.default_latency > 0)
    plot.reference(r.default_latency * 1e3, kDefault, "default schedules: " + fmt(r.default_latency * 1e3) + " ms");
  return plot.svg();
}

// Each measured candidate of a task as a point, failures marked on the axis, under its
// best-so-far line: in GFLOP/s, or in milliseconds for tasks that count no arithmetic.
std::string task_plot(const TaskState& t, const std::optional<MachinePeak>& peak) {
  const bool rate = t.flops > 0;
  auto value = [&](double seconds) { return rate ? t.flops / seconds / 1e9 : seconds * 1e3; };
  const char* unit = rate ? "GFLOP/s" : "ms";
  SvgPlot plot("trials of this task", rate ? "GFLOP/s (higher is better)" : "time (ms, lower is better)");
  SvgPlot::Points measured, failed, best;
  double best_seconds = 0, top = 0;
  for (size_t k = 0; k < t.measured.size(); ++k) {
    const double seconds = t.measured[k], trial = static_cast<double>(k + 1);
    if (seconds <= 0) {
      failed.emplace_back(trial, 0);
      continue;
    }
    measured.emplace_back(trial, value(seconds));
    top = std::max(top, value(seconds));
    if (best_seconds <= 0 || seconds < best_seconds) {
      best_seconds = seconds;
      best.emplace_back(trial, value(seconds));
    }
  }
  plot.points(measured, SvgPlot::Marker::Dot, kCandidate, "measured (" + std::to_string(measured.size()) + ")");
  if (!failed.empty())
    plot.points(failed, SvgPlot::Marker::Cross, kFailed, "failed (" + std::to_string(failed.size()) + ")");
  if (!best.empty()) plot.steps(best, kBest, "best so far: " + fmt(best.back().second) + " " + unit);
  if (t.default_seconds > 0)
    plot.reference(value(t.default_seconds), kDefault, "default: " + fmt(value(t.default_seconds)) + " " + unit);
  if (rate && peak) {
    // A peak far above the measurements would flatten them against the axis.
    std::string text = "machine peak: " + fmt(peak->gflops) + " GFLOP/s";
    if (peak->gflops <= 3 * top) plot.reference(peak->gflops, kPeak, text);
    else plot.note(text + ", above the plot");
  }
  return plot.svg();
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
     << " tasks, tuning took " << fmt(r.wall_seconds, "%.0f") << " s. ";
  if (r.peak)
    os << "Machine peak: " << fmt(r.peak->gflops, "%.1f") << " GFLOP/s float32 (" << xml_escape(r.peak->how) << ").";
  else os << "The machine's peak is not known for this target.";
  os << "</p><p>The estimate is the sum over tasks of weight &times; best time, each task at its default's time "
        "until a faster schedule is measured. At the end each searched task's default and best are timed again "
        "side by side, and each keeps its faster time: the reference line is the defaults' latency so timed.</p>";
  os << "<h2>End to end</h2>" << end_to_end_plot(r);
  os << "<h2>Tasks</h2><table><tr><th>task</th><th>weight</th><th>trials</th><th>default ms</th><th>best "
        "ms</th><th>GFLOP/s</th>"
     << (r.peak ? "<th>of peak</th>" : "") << "</tr>";
  for (const auto& t : r.tasks) {
    os << "<tr><td style='text-align:left'>" << xml_escape(t.description) << "</td><td>" << t.weight << "</td><td>"
       << t.trials << "</td><td>" << fmt(t.default_seconds * 1e3, "%.4f") << "</td><td>"
       << fmt(t.best_seconds * 1e3, "%.4f") << "</td><td>" << fmt(t.gflops(), "%.1f") << "</td>";
    if (r.peak) os << "<td>" << fmt(100 * t.gflops() / r.peak->gflops, "%.0f") << "%</td>";
    os << "</tr>";
  }
  os << "</table>";
  for (const auto& t : r.tasks)
    os << "<div class='task'><h3>" << xml_escape(t.description) << "</h3>" << task_plot(t, r.peak) << "</div>";
  os << "</body></html>\n";
  return os.str();
}

void write_report(const TuneResult& result, const std::string& path) {
  std::ofstream out(path);
  out << report_html(result);
  if (!out) fail("cannot write the tuning report ", path);
}

}  // namespace tessera::autotune
