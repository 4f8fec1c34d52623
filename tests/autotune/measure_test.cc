// Isolated measurement: candidates of a matmul task timed in worker processes; traces that do not
// replay; and, through a test build of the worker (tessera-measure-faulty, whose candidates
// "test:segv", "test:hang" and "test:wrong" crash it, hang it, or change one output element),
// that crashes, hangs and wrong results are recorded and the candidates after them still measured.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "autotune/measure.h"
#include "runtime/device_api.h"
#include "runtime/error.h"
#include "schedule/templates/cpu.h"
#include "targets/build.h"
#include "targets/target.h"
#include "temp_dir.h"

namespace tessera::autotune {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

class MeasureTest : public ::testing::Test {
 protected:
  // The real worker is found through the variable users set too.
  static void SetUpTestSuite() { setenv("TESSERA_MEASURE_WORKER", TESSERA_MEASURE_WORKER_PATH, 1); }

  static MeasureOptions quick() {
    MeasureOptions o;
    o.repeat = 3;
    o.min_repeat_ms = 2;
    return o;
  }
  static MeasureOptions faulty() {
    MeasureOptions o = quick();
    o.worker_path = TESSERA_MEASURE_FAULTY_WORKER_PATH;
    o.timeout_seconds = 5;  // a valid candidate compiles in well under a second
    return o;
  }

  std::string default_trace() const {
    return schedule::default_cpu_schedule(task.compute.outputs, task.compute.anchor, task.compute.hardware)
        ->trace()
        .to_json();
  }
  std::string tiled_trace() const {
    schedule::Schedule s(task.compute.outputs);
    schedule::Stage& mm = s.stage("matmul");
    auto tiles = mm.tile(mm.loop("i"), mm.loop("j"), 16, 16);  // i.outer, j.outer, i.inner, j.inner
    mm.reorder({tiles[0], tiles[1], mm.loop("k"), tiles[2], tiles[3]});
    mm.vectorize(tiles[3]);
    return s.trace().to_json();
  }
  static void expect_valid(const MeasureResult& r, size_t repeat) {
    EXPECT_EQ(r.error, "");
    ASSERT_EQ(r.costs.size(), repeat);
    for (double c : r.costs) EXPECT_GT(c, 0);
    // 2.4 million operations: between a microsecond and a second on any machine.
    EXPECT_GT(median(r.costs), 1e-6);
    EXPECT_LT(median(r.costs), 1.0);
    EXPECT_GT(r.compile_seconds, 0);
  }

  Task task = task_from_kernel("def @main(%p0: float32[128, 64], %p1: float32[64, 96]) {\n  matmul(%p0, %p1)\n}\n",
                               targets::Target::parse("llvm").hardware());
};

TEST_F(MeasureTest, DefaultUnscheduledAndTiledCandidatesAreTimed) {
  Measurer m(quick());
  EXPECT_EQ(m.worker_path(), TESSERA_MEASURE_WORKER_PATH);
  auto results = m.measure(task, "llvm", {default_trace(), "[]", tiled_trace()});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) expect_valid(r, 3);
}

TEST_F(MeasureTest, FixedNumberAndCacheFlushing) {
  MeasureOptions o = quick();
  o.number = 1;
  o.flush_cache = true;
  Measurer m(o);
  expect_valid(m.measure(task, "llvm", {default_trace()})[0], 3);
}

TEST_F(MeasureTest, WrittenInputsAreRewrittenBeforeEachCallOrLeftAsTheyAre) {
  // A task from kernel text alone counts every input as written (a model's tasks leave out their
  // constants, tests/driver/model_check_test.cc). Rewritten or not, all or some: valid costs.
  EXPECT_EQ(task.written_inputs, (std::vector<size_t>{0, 1}));
  for (bool fresh : {true, false}) {
    MeasureOptions o = quick();
    o.fresh_inputs = fresh;
    Measurer m(o);
    expect_valid(m.measure(task, "llvm", {default_trace(), tiled_trace()})[1], 3);
    Task one = task;
    one.written_inputs = {1};
    expect_valid(m.measure(one, "llvm", {default_trace()})[0], 3);
  }
  Task wrong = task;
  wrong.written_inputs = {5};
  EXPECT_EQ(Measurer(quick()).measure(wrong, "llvm", {"[]"})[0].error,
            "setup: written input 5: the kernel has 2 inputs");
}

TEST_F(MeasureTest, TracesThatDoNotReplayAreErrors) {
  Measurer m(quick());
  auto results = m.measure(
      task, "llvm",
      {R"([{"kind":"split","stage":"nope","loops":["i"],"attrs":{"factor":8},"outputs":["i.outer","i.inner"]}])",
       "not json", default_trace()});
  EXPECT_EQ(results[0].error.rfind("replay: ", 0), 0u) << results[0].error;
  EXPECT_NE(results[0].error.find("nope"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[0].costs.empty());
  EXPECT_EQ(results[1].error.rfind("replay: schedule trace: invalid JSON", 0), 0u) << results[1].error;
  expect_valid(results[2], 3);
}

TEST_F(MeasureTest, WrongResultsAreCaughtByTheCheck) {
  Measurer m(faulty());
  auto results = m.measure(task, "llvm", {"test:wrong", "[]"});
  const std::string prefix = "wrong result: max abs error ";
  ASSERT_EQ(results[0].error.rfind(prefix, 0), 0u) << results[0].error;
  EXPECT_NEAR(std::stod(results[0].error.substr(prefix.size())), 1.0, 1e-5);  // 1 added, in float32
  EXPECT_NE(results[0].error.find("at element 7 of output 0"), std::string::npos) << results[0].error;
  EXPECT_TRUE(results[0].costs.empty());
  expect_valid(results[1], 3);

  MeasureOptions unchecked = faulty();
  unchecked.check = false;
  expect_valid(Measurer(unchecked).measure(task, "llvm", {"test:wrong"})[0], 3);
}

// A device target's candidates run on its device, timed by device events, and are checked
// against the default GPU schedule's outputs.
TEST_F(MeasureTest, OpenCLCandidatesAreTimedAndCheckedOnTheDevice) {
  if (!runtime::DeviceAPI::exists({runtime::DeviceType::OpenCL, 0}))
    GTEST_SKIP() << "no OpenCL device (scripts/test.sh installs PoCL)";
  const std::string target = targets::tuning_key(targets::Target::parse("opencl"));
  ASSERT_NE(target.find(" -device="), std::string::npos) << target;
  Task on_gpu = task_from_kernel(task.kernel, targets::Target::parse(target).hardware());
  auto results = Measurer(faulty()).measure(on_gpu, target, {autotune::default_trace(on_gpu), "test:wrong", "[]"});
  expect_valid(results[0], 3);
  EXPECT_NE(results[1].error.find("at element 7 of output 0"), std::string::npos) << results[1].error;
  // The unscheduled loop nest binds no thread: not a kernel a device runs.
  EXPECT_NE(results[2].error.find("outside every thread extent"), std::string::npos) << results[2].error;
  // A device this machine lacks is the setup's error, naming the devices there are.
  auto missing = Measurer(quick()).measure(on_gpu, "opencl -device=no-such-gpu", {"[]"});
  EXPECT_NE(missing[0].error.find("setup: device: target 'opencl -device=no-such-gpu': no such opencl device here"),
            std::string::npos)
      << missing[0].error;
}

TEST_F(MeasureTest, CrashesAndHangsAreRecordedAndMeasurementGoesOn) {
  Measurer m(faulty());
  auto results = m.measure(task, "llvm", {"[]", "test:segv", tiled_trace(), "test:hang", default_trace()});
  ASSERT_EQ(results.size(), 5u);
  expect_valid(results[0], 3);
  EXPECT_EQ(results[1].error, "crashed: SIGSEGV");
  expect_valid(results[2], 3);
  EXPECT_EQ(results[3].error, "timeout after 5 s");
  EXPECT_TRUE(results[3].costs.empty());
  expect_valid(results[4], 3);
}

TEST_F(MeasureTest, ConsecutiveCrashesDoNotEndTheSession) {
  Measurer m(faulty());
  auto results = m.measure(task, "llvm", {"test:segv", "test:segv", "test:segv", "[]"});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(results[i].error, "crashed: SIGSEGV");
  expect_valid(results[3], 3);
  // The next call (the worker the last candidate ran in) and one after a crash at its end.
  expect_valid(m.measure(task, "llvm", {default_trace()})[0], 3);
  EXPECT_EQ(m.measure(task, "llvm", {"test:segv"})[0].error, "crashed: SIGSEGV");
  expect_valid(m.measure(task, "llvm", {tiled_trace()})[0], 3);
}

TEST_F(MeasureTest, SetupFailuresAreEveryCandidatesError) {
  Measurer m(quick());
  Task broken = task;
  broken.kernel = "def @main( {";
  auto results = m.measure(broken, "llvm", {"[]", "[]"});
  for (const auto& r : results) EXPECT_EQ(r.error.rfind("setup: kernel: ", 0), 0u) << r.error;
  EXPECT_EQ(m.measure(task, "nonsense", {"[]"})[0].error.rfind("setup: target: ", 0), 0u);
  expect_valid(m.measure(task, "llvm", {"[]"})[0], 3);  // the same worker serves the next task
}

TEST_F(MeasureTest, WorkersThatFailBeforeAnsweringFailTheSetup) {
  const auto& dir = tessera::testing::test_temp_dir();
  auto script = [&](const std::string& name, const std::string& body) {
    std::string path = (dir / name).string();
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path;
  };
  MeasureOptions o = quick();
  o.timeout_seconds = 1;
  o.worker_path = script("dies", "echo 'cannot load a library' >&2; exit 3");
  for (const auto& r : Measurer(o).measure(task, "llvm", {"[]", "[]"}))
    EXPECT_EQ(r.error, "setup: crashed: exit status 3 (cannot load a library)");
  o.worker_path = script("hangs", "exec sleep 60");
  EXPECT_EQ(Measurer(o).measure(task, "llvm", {"[]"})[0].error, "setup: timeout after 1 s");
}

TEST_F(MeasureTest, MissingWorkerIsAnErrorNamingThePath) {
  MeasureOptions o;
  o.worker_path = "/nonexistent/tessera-measure";
  try {
    Measurer m(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/tessera-measure"), std::string::npos) << e.what();
  }
  o.worker_path = "";
  setenv("TESSERA_MEASURE_WORKER", "/nonexistent/worker", 1);
  EXPECT_THROW(Measurer{o}, Error);
  setenv("TESSERA_MEASURE_WORKER", TESSERA_MEASURE_WORKER_PATH, 1);
}

}  // namespace
}  // namespace tessera::autotune
