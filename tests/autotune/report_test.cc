// The tuning report: round ticks, the end-to-end curve from the default latency, every measured
// candidate as a point with failures marked, the machine's peak. (tests/python/test_autotune.py
// renders a real session's report to pictures.)
#include <gtest/gtest.h>

#include <regex>

#include "autotune/machine_peak.h"
#include "autotune/report.h"
#include "autotune/svg_plot.h"

namespace tessera::autotune {
namespace {

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The SVG plots of a page, in order.
std::vector<std::string> plots(const std::string& html) {
  std::vector<std::string> out;
  std::regex svg("<svg[^]*?</svg>");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), svg); it != std::sregex_iterator(); ++it)
    out.push_back(it->str());
  return out;
}

TaskState task(const std::string& name, std::vector<double> measured) {
  TaskState t;
  t.description = name;
  t.flops = 2e6;
  t.measured = std::move(measured);
  t.trials = static_cast<int>(t.measured.size());
  t.default_seconds = t.measured.front();
  for (double s : t.measured)
    if (s > 0 && (t.best_seconds <= 0 || s < t.best_seconds)) t.best_seconds = s;
  return t;
}

TuneResult session() {
  TuneResult r;
  r.tasks = {task("conv", {4e-5, 5e-5, 0, 3e-5, 0, 2e-5}), task("dense", {1e-5, 2e-5})};
  r.default_latency = 5e-5;
  r.estimated_latency = 3e-5;
  r.latency_history = {{0, 5e-5}, {4, 4e-5}, {8, 3e-5}};
  r.peak = MachinePeak{150, "AVX-512 FMA x 2 threads, measured"};
  return r;
}

TEST(SvgPlot, TicksAreOneTwoOrFiveTimesAPowerOfTen) {
  EXPECT_DOUBLE_EQ(tick_step(40, 6), 10);
  EXPECT_DOUBLE_EQ(tick_step(0.0222, 5), 0.005);
  EXPECT_DOUBLE_EQ(tick_step(150, 5), 50);
  EXPECT_DOUBLE_EQ(tick_step(7, 6), 2);
  EXPECT_DOUBLE_EQ(tick_step(0, 5), 1);  // an empty plot still gets an axis
}

TEST(TuningReport, EndToEndCurveStartsAtTheDefaultLatency) {
  const std::string e2e = plots(report_html(session()))[0];
  // The curve's first vertex and the dashed reference line are at the same height.
  std::smatch first, reference;
  ASSERT_TRUE(std::regex_search(e2e, first,
                                std::regex("<polyline fill='none' stroke='#1f77b4'[^>]*points='([0-9.]+),([0-9.]+)")));
  ASSERT_TRUE(std::regex_search(e2e, reference, std::regex("<line x1='[0-9.]+' y1='([0-9.]+)'[^>]*stroke-dasharray")));
  EXPECT_EQ(first[2], reference[1]);
  EXPECT_NE(e2e.find("default schedules: 0.05 ms"), std::string::npos);
  EXPECT_NE(e2e.find("estimated latency (ms)"), std::string::npos);
}

TEST(TuningReport, EveryCandidateIsAPointAndFailuresAreMarked) {
  const std::vector<std::string> svgs = plots(report_html(session()));
  ASSERT_EQ(svgs.size(), 3u);
  // conv: four valid candidates (and the legend's dot), two failures (and the legend's cross).
  EXPECT_EQ(count(svgs[1], "<circle"), 4 + 1);
  EXPECT_EQ(count(svgs[1], "<path d="), 2 + 1);
  EXPECT_NE(svgs[1].find("failed (2)"), std::string::npos);
  EXPECT_NE(svgs[1].find("best so far: 100 GFLOP/s"), std::string::npos);
  // dense failed nothing, so nothing is marked.
  EXPECT_EQ(count(svgs[2], "<path d="), 0);
}

TEST(TuningReport, ThePeakIsALineWhereItFitsAndANoteWhereItWouldFlattenThePoints) {
  TuneResult r = session();
  std::vector<std::string> svgs = plots(report_html(r));
  EXPECT_NE(svgs[1].find("machine peak: 150 GFLOP/s</text>"), std::string::npos);  // best 100
  EXPECT_EQ(count(svgs[1], "stroke='#ff7f0e'"), 2);                                // line and legend
  r.peak->gflops = 5000;
  svgs = plots(report_html(r));
  EXPECT_NE(svgs[1].find("machine peak: 5e+03 GFLOP/s, above the plot"), std::string::npos);
  EXPECT_EQ(count(svgs[1], "stroke='#ff7f0e'"), 0);
  r.peak.reset();
  EXPECT_NE(report_html(r).find("peak is not known"), std::string::npos);
}

TEST(MachinePeak, MeasuredForCpusAndUnknownElsewhere) {
  std::optional<MachinePeak> cpu = measure_machine_peak("llvm");
#if defined(__x86_64__) || defined(__aarch64__)
  ASSERT_TRUE(cpu);
  EXPECT_GT(cpu->gflops, 1);
  EXPECT_NE(cpu->how.find("measured"), std::string::npos);
#endif
  EXPECT_FALSE(measure_machine_peak("opencl"));
}

}  // namespace
}  // namespace tessera::autotune
