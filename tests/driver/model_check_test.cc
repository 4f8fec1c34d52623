// The model check: each tuned kernel is timed inside the built model against its default, and
// builds then use whichever ran faster there. (Which one wins in a real model is a matter of
// measurement; here the record fastest alone is plain loops, sure to lose.)
#include <gtest/gtest.h>

#include <filesystem>

#include "autotune/database.h"
#include "autotune/task.h"
#include "driver/model_check.h"
#include "relay_ir/expr.h"
#include "runtime/error.h"
#include "schedule/schedule.h"
#include "temp_dir.h"

namespace tessera::driver {
namespace {

schedule::HardwareParams host_hardware() { return targets::Target::parse("llvm").hardware(); }

using namespace relay_ir;

// One 128 x 384 x 256 matrix product: the template's schedule runs it many times faster than
// the empty schedule (plain loops, nothing vectorized or parallel).
Module product_model() {
  runtime::NDArray w = runtime::NDArray::empty({384, 256}, runtime::kFloat32);
  for (int64_t i = 0; i < w.numel(); ++i) w.data_as<float>()[i] = static_cast<float>(i % 7) - 3;
  Var x("x", tensor_type({128, 384}, runtime::kFloat32));
  return Module(function({x}, call("matmul", {x, constant(w)})));
}

autotune::Record record(const autotune::Task& task, const std::string& target, const std::string& trace,
                        autotune::RecordKind kind, double seconds) {
  autotune::Record r;
  r.workload = task.workload.key;
  r.target = target;
  r.trace = trace;
  r.costs = {seconds, seconds, seconds};
  r.kind = kind;
  return r;
}

// A database whose default record holds the template's schedule and whose fastest record alone
// (1 us, faster than anything could run) holds `tuned`.
std::string database(const std::string& name, const autotune::Task& task, const std::string& target,
                     const std::string& tuned) {
  std::string path = (tessera::testing::test_temp_dir() / name).string();
  std::filesystem::remove(path);
  autotune::TuningDatabase db(path);
  db.add_workload(task.workload);
  db.commit({record(task, target, autotune::default_trace(task), autotune::RecordKind::Default, 1e-3),
             record(task, target, tuned, autotune::RecordKind::Tuned, 1e-6)});
  return path;
}

// Measurement rewrites the inputs earlier kernels write before each timed call, not the weights.
TEST(ModelCheck, TasksNameTheInputsTheModelWrites) {
  auto tasks = autotune::extract_tasks(optimize(product_model(), host_hardware(), 2), host_hardware());
  ASSERT_EQ(tasks.size(), 1u);
  EXPECT_EQ(tasks[0].written_inputs, (std::vector<size_t>{0}));
}

TEST(ModelCheck, AScheduleFastestAloneThatLosesInTheModelIsNotUsed) {
  Module m = product_model();
  BuildOptions options;
  auto tasks = autotune::extract_tasks(optimize(m, host_hardware(), options.opt_level), host_hardware());
  ASSERT_EQ(tasks.size(), 1u);
  auto target = targets::Target::parse("llvm");
  std::string key = target.with_host_defaults().str();
  std::string templ = autotune::default_trace(tasks[0]);
  std::string plain = schedule::Schedule(tasks[0].compute.outputs).trace().to_json();
  ModelCheckOptions quick{3, 3};

  // The record fastest alone is plain loops: it loses in the model, and builds take the default.
  options.db_path = database("loses.db", tasks[0], key, plain);
  ModelCheck check = check_in_model(m, target, options.opt_level, options.db_path, quick);
  ASSERT_EQ(check.kernels.size(), 1u);
  EXPECT_GT(check.kernels[0].tuned_seconds, 2 * check.kernels[0].default_seconds);
  EXPECT_FALSE(check.kernels[0].tuned_kept());
  std::string table = format_model_check(check);
  EXPECT_NE(table.find("matmul"), std::string::npos) << table;
  EXPECT_EQ(table.find("tuned (record"), std::string::npos) << table;
  BuildResult built = build(m, target, options);
  EXPECT_EQ(built.kernels[0].schedule.rfind("default (faster in the model", 0), 0u) << built.kernels[0].schedule;
  auto db = autotune::TuningDatabase::open_existing(options.db_path);
  EXPECT_EQ(db->chosen(tasks[0].workload.key, key)->trace, templ);
  EXPECT_EQ(built.kernels[0].record, db->chosen(tasks[0].workload.key, key)->id);
  EXPECT_EQ(db->best(tasks[0].workload.key, key)->trace, plain);  // times taken alone are untouched
  // Checked again, nothing is left to time: the default is what builds use.
  EXPECT_TRUE(check_in_model(m, target, options.opt_level, options.db_path, quick).kernels.empty());
}

TEST(ModelCheck, NeedsADatabase) {
  BuildOptions options;
  options.db_path = (tessera::testing::test_temp_dir() / "missing.db").string();
  try {
    check_in_model(product_model(), targets::Target::parse("llvm"), options.opt_level, options.db_path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.db"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tessera::driver
