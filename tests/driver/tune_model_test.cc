// One tuning session of a model (driver::tune_model), as `tessera tune` and Python run it: the
// options' one validation, the summary both print, the progress text, and a session end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "driver/tune_model.h"
#include "relay_ir/expr.h"
#include "runtime/error.h"
#include "temp_dir.h"

namespace tessera::driver {
namespace {

using namespace relay_ir;

// The message validate() throws for `options`, or "" when they are valid.
std::string invalid(const TuneModelOptions& options) {
  try {
    validate(options);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

TEST(TuneModel, TheDefaultOptionsAreValid) { EXPECT_EQ(invalid(TuneModelOptions{}), ""); }

// Each invalid option is refused by a message that names it, as the CLI and Python spell it.
TEST(TuneModel, AnInvalidOptionIsNamed) {
  struct Case {
    void (*set)(TuneModelOptions&);
    const char* expected;
  };
  const Case cases[] = {
      {[](TuneModelOptions& o) { o.tune.trials = 0; }, "trials must be at least 1 (got 0)"},
      {[](TuneModelOptions& o) { o.tune.trials = -5; }, "trials must be at least 1 (got -5)"},
      {[](TuneModelOptions& o) { o.tune.batch = 0; }, "batch must be at least 1"},
      {[](TuneModelOptions& o) { o.tune.policy = "annealing"; },
       "policy 'annealing' is unknown (expected evolutionary or random)"},
      {[](TuneModelOptions& o) { o.tune.early_stopping = -1; },
       "early_stopping (--early-stopping) must be 0 (never) or more"},
      {[](TuneModelOptions& o) { o.tune.max_seconds = 0.0; }, "timeout must be more than 0 seconds (got 0)"},
      {[](TuneModelOptions& o) { o.tune.max_seconds = -2.0; }, "timeout must be more than 0 seconds (got -2)"},
      {[](TuneModelOptions& o) { o.tune.max_seconds = std::nan(""); }, "timeout must be more than 0 seconds"},
      {[](TuneModelOptions& o) { o.tune.measure.repeat = 0; }, "repeat must be at least 1"},
      {[](TuneModelOptions& o) { o.tune.target = "tpu"; }, "target: target 'tpu': unknown kind"},
      {[](TuneModelOptions& o) { o.opt_level = 4; }, "opt_level (-O) must be 0, 1, 2 or 3 (got 4)"},
      {[](TuneModelOptions& o) { o.opt_level = -1; }, "opt_level (-O) must be 0, 1, 2 or 3 (got -1)"},
  };
  for (const auto& c : cases) {
    TuneModelOptions o;
    c.set(o);
    std::string message = invalid(o);
    EXPECT_NE(message.find(c.expected), std::string::npos) << "expected '" << c.expected << "' in '" << message << "'";
  }
  TuneModelOptions limited;
  limited.tune.max_seconds = 0.5;
  EXPECT_EQ(invalid(limited), "");
}

TEST(TuneModel, BuildRefusesAnOptLevelOutsideZeroToThree) {
  BuildOptions options;
  options.opt_level = 9;
  try {
    validate(options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("opt_level (-O) must be 0, 1, 2 or 3 (got 9)"), std::string::npos) << e.what();
  }
}

TEST(TuneModel, TheSummaryListsEachTaskTheLatencyAndTheReport) {
  TuneReport report;
  autotune::TaskState s;
  s.description = "matmul 32x48x40";
  s.weight = 2;
  s.trials = 7;
  s.flops = 2e9;
  s.default_seconds = 4e-3;
  s.best_seconds = 2e-3;
  report.session.tasks = {s};
  report.session.estimated_latency = 4e-3;
  report.session.default_latency = 8e-3;
  report.session.wall_seconds = 12.4;
  report.session.report_path = "/tmp/t.report.html";
  EXPECT_EQ(format_tune_report(report),
            "task                                     weight  trials  default ms     best ms  speedup   GFLOP/s\n"
            "matmul 32x48x40                               2       7      4.0000      2.0000    2.00x    1000.0\n"
            "estimated latency 4.000 ms (default schedules 8.000 ms) after 12 s\n"
            "report: /tmp/t.report.html\n");
  // The model check's table follows when it ran.
  std::string without = format_tune_report(report);
  report.model_check = ModelCheck{};
  EXPECT_EQ(format_tune_report(report), without + format_model_check(ModelCheck{}));
}

TEST(TuneModel, ProgressIsRedrawnOnATerminalAndALineEachElsewhere) {
  EXPECT_EQ(progress_text("[ 4/8 trials] task 1/1", 0), "[ 4/8 trials] task 1/1\n");
  EXPECT_EQ(progress_text("[ 4/8 trials] task 1/1", 9), "\r[ 4/8 tr\x1b[K");  // cut to fit: a wrapped line stays
  EXPECT_EQ(progress_text("short", 80), "\rshort\x1b[K");
}

// A matrix product small enough to tune in a second or two.
Module product_model() {
  runtime::NDArray w = runtime::NDArray::empty({48, 40}, runtime::kFloat32);
  for (int64_t i = 0; i < w.numel(); ++i) w.data_as<float>()[i] = static_cast<float>(i % 5) - 2;
  Var x("x", tensor_type({32, 48}, runtime::kFloat32));
  return Module(function({x}, call("matmul", {x, constant(w)})));
}

TEST(TuneModel, ASessionTunesEveryKernelAndReportsEachBatch) {
  TuneModelOptions options;
  options.tune.db_path = (tessera::testing::test_temp_dir() / "session.db").string();
  options.tune.trials = 3;
  options.tune.batch = 2;
  options.tune.seed = 1;
  options.tune.measure.repeat = 1;
  options.model_check = false;
  int batches = 0;
  TuneReport report = tune_model(product_model(), options, [&](const autotune::Progress& p) {
    ++batches;
    EXPECT_EQ(p.trials_total, 3);
  });
  ASSERT_EQ(report.session.tasks.size(), 1u);
  EXPECT_EQ(report.session.tasks[0].trials, 3);  // the default, then a batch of two
  EXPECT_EQ(batches, 2);
  EXPECT_FALSE(report.model_check);
  EXPECT_NE(format_tune_report(report).find("matmul"), std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(report.session.report_path));
}

// Invalid options are refused before anything is done: no database appears.
TEST(TuneModel, InvalidOptionsTouchNothing) {
  TuneModelOptions options;
  options.tune.db_path = (tessera::testing::test_temp_dir() / "never.db").string();
  options.tune.trials = 0;
  EXPECT_THROW(tune_model(product_model(), options), Error);
  EXPECT_FALSE(std::filesystem::exists(options.tune.db_path));
}

}  // namespace
}  // namespace tessera::driver
