// The module file format and loader: a hand-written module round-trips, and every way a file can
// be wrong is reported, with the code never handed to the dynamic loader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <map>

#include "runtime/error.h"
#include "runtime/module_loader.h"
#include "tests/runtime/test_module.h"

namespace tessera::runtime {
namespace {

using namespace testing;

std::string load_error(const std::string& path) {
  unsetenv("TESSERA_TEST_KERNELS_LOADED");
  try {
    load_module(path);
  } catch (const Error& e) {
    EXPECT_EQ(std::getenv("TESSERA_TEST_KERNELS_LOADED"), nullptr) << "the code was loaded: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "loading " << path << " did not fail";
  return "";
}

// A copy of `path` with `edit` applied to its bytes.
template <typename Edit>
std::string edited(const std::string& path, const std::string& name, Edit edit) {
  std::string bytes = read_file(path);
  edit(bytes);
  std::string out = temp_path(name);
  write_file(out, bytes);
  return out;
}

TEST(ModuleFile, RoundTripsAndRunsWithWeightsInPlace) {
  std::string path = write_add4_module("ok.so");
  LoadedModule m = load_module(path);
  EXPECT_EQ(m.target, "test");
  EXPECT_EQ(m.format_version, kModuleFormatVersion);
  GraphExecutor& ex = *m.executor;
  ASSERT_EQ(ex.num_inputs(), 1u);
  EXPECT_EQ(ex.input_info(0).name, "x");
  EXPECT_TRUE(ex.plan().constants[0].is_aligned());
  NDArray x = NDArray::empty({4}, kFloat32);
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = float(i);
  ex.set_input(0, x);
  ex.run();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ex.output(0).data_as<float>()[i], float(i) + 10.0f * (i + 1));  // hook was set
}

// A program's runner keeps every run's outputs: run_handing_over writes an output into the array
// the caller gives where that fits (aligned, of the output's shape and dtype), else hands over
// the executor's own buffer; either way the next run writes elsewhere.
TEST(ModuleFile, OutputsAreWrittenWhereTheCallerSaysAndHandedOver) {
  LoadedModule m = load_module(write_add4_module("into.so"));
  GraphExecutor& ex = *m.executor;
  NDArray x = NDArray::empty({4}, kFloat32);
  for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = float(i);
  NDArray place = NDArray::empty({4}, kFloat32);
  std::vector<NDArray> out = {place};
  ex.run_handing_over({x}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].data(), place.data());
  EXPECT_EQ(place.data_as<float>()[3], 43.0f);
  // Not of the output's shape, or not aligned: not written; the executor's own buffer is handed over.
  NDArray wrong = NDArray::empty({5}, kFloat32), storage = NDArray::empty({5}, kFloat32);
  NDArray unaligned = storage.view_as({4}, kFloat32, sizeof(float));
  for (NDArray given : {wrong, unaligned}) {
    out = {given};
    x.data_as<float>()[3] = 4.0f;
    ex.run_handing_over({x}, out);
    EXPECT_NE(out[0].data(), given.data());
    EXPECT_EQ(out[0].data_as<float>()[3], 44.0f);
    EXPECT_EQ(given.data_as<float>()[3], 0.0f);
  }
  // What was handed over is not written by later runs.
  NDArray kept = out[0];
  out = {NDArray()};
  x.data_as<float>()[3] = 5.0f;
  ex.run_handing_over({x}, out);
  EXPECT_NE(out[0].data(), kept.data());
  EXPECT_EQ(out[0].data_as<float>()[3], 45.0f);
  EXPECT_EQ(kept.data_as<float>()[3], 44.0f);
  EXPECT_EQ(place.data_as<float>()[3], 43.0f);
}

TEST(ModuleFile, RejectsFilesThatAreNoModule) {
  std::string text = temp_path("text.so");
  write_file(text, "hello");
  EXPECT_NE(load_error(text).find("not a Tessera module"), std::string::npos);
  EXPECT_NE(load_error(TESSERA_TEST_KERNELS).find("not a Tessera module"), std::string::npos);  // a plain .so
  write_file(text, "");
  EXPECT_NE(load_error(text).find("the file is empty"), std::string::npos);
  EXPECT_NE(load_error(temp_path("missing.so")).find("cannot open module"), std::string::npos);
}

TEST(ModuleFile, RejectsTruncatedFiles) {
  std::string path = write_add4_module("truncate.so");
  const size_t size = read_file(path).size();
  std::string cut = edited(path, "cut.so", [](std::string& b) { b.resize(b.size() - 100); });
  std::string message = load_error(cut);
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("header gives " + std::to_string(size) + " bytes"), std::string::npos) << message;
  // Cut inside the code: no header left to say what is missing.
  std::string short_file = edited(path, "short.so", [](std::string& b) { b.resize(100); });
  EXPECT_NE(load_error(short_file).find("not a Tessera module"), std::string::npos);
}

TEST(ModuleFile, RejectsCorruptBytesInEverySection) {
  std::string path = write_add4_module("corrupt.so");
  const size_t size = read_file(path).size();
  const size_t header = (read_file(TESSERA_TEST_KERNELS).size() + 63) / 64 * 64;  // after the code, 64-aligned
  const std::pair<size_t, const char*> cases[] = {
      {200, "code section fails its checksum"},
      {header + 20, "header fails its checksum"},
      {header + 128 + 3, "metadata section fails its checksum"},  // the metadata follows the 112-byte header
      {size - 32 - 10, "weights section fails its checksum"},
      {size - 32 + 1, "trailer fails its checksum"}};
  for (const auto& [offset, expected] : cases) {
    // A copy of the binding for the lambda: C++17 cannot capture a structured binding (clang refuses).
    std::string bad =
        edited(path, "corrupt-" + std::to_string(offset) + ".so", [at = offset](std::string& b) { b[at] ^= 0x5a; });
    std::string message = load_error(bad);
    EXPECT_NE(message.find(expected), std::string::npos) << message;
  }
}

TEST(ModuleFile, RejectsANewerFormatVersion) {
  std::string path = write_add4_module("version.so");
  // The trailer's u32 version sits 24 bytes before the end.
  std::string newer =
      edited(path, "newer.so", [](std::string& b) { b[b.size() - 24] = char(kModuleFormatVersion + 1); });
  std::string message = load_error(newer);
  EXPECT_NE(message.find("newer Tessera (module format version " + std::to_string(kModuleFormatVersion + 1)),
            std::string::npos)
      << message;
}

TEST(ModuleFile, RejectsCodeNeedingCpuFeaturesThisHostLacks) {
  ModuleMetadata m = add4_metadata();
  m.cpu_features = {"no-such-feature"};
  std::string message = load_error(write_add4_module("feature.so", m));
  EXPECT_NE(message.find("needs CPU features this host lacks: no-such-feature (unknown to this runtime)"),
            std::string::npos)
      << message;
  for (const std::string& f : detectable_cpu_features(host_arch())) {
    if (missing_cpu_features({f}).empty()) continue;  // the host has it
    m.cpu_features = {f};
    message = load_error(write_add4_module("feature2.so", m));
    EXPECT_NE(message.find(f + " (not supported by this CPU)"), std::string::npos) << message;
    break;
  }
}

TEST(ModuleFile, RejectsCodeForAnotherArchitectureAndInconsistentPlans) {
  ModuleMetadata m = add4_metadata();
  m.arch = host_arch() == "aarch64" ? "x86_64" : "aarch64";
  EXPECT_NE(load_error(write_add4_module("arch.so", m)).find("corrupt: its code is for " + host_arch()),
            std::string::npos);
  m = add4_metadata();
  m.plan.steps[0].args = {0, 1, 7};
  std::string message = load_error(write_add4_module("plan.so", m));
  EXPECT_NE(message.find("corrupt module metadata: step 0: tensor 7 is out of range"), std::string::npos) << message;
}

TEST(ModuleFile, RejectsInputsOfTheWrongShapeOrDtype) {
  LoadedModule m = load_module(write_add4_module("inputs.so"));
  try {
    m.executor->set_input(0, NDArray::empty({5}, kFloat32));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "input 'x': expected shape (4,), got (5,)");
  }
  try {
    m.executor->set_input(0, NDArray::empty({4}, kInt32));
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "input 'x': expected dtype float32, got int32");
  }
}

// y = addn(x, c) for x of symbolic size n, with a plan specialized for n = 4 (add4's) that shares
// its constant c: metadata only, the test library having no kernel of symbolic sizes.
ModuleMetadata hot_size_metadata() {
  ModuleMetadata m = add4_metadata();
  m.specialized = {m.plan};
  const ShapeExpr n = ShapeExpr::var("n");
  m.kernels.push_back({"addn", {{"", {n}, kFloat32}, {"", {4}, kFloat32}, {"", {n}, kFloat32}}, {"n"}});
  GraphPlan& p = m.plan;
  p.steps[0].kernel = "addn";
  p.shape_vars = {"n"};
  p.symbolic_shapes = {{n}, {4}, {n}};
  return m;
}

std::string hot_size_error(const std::string& name, const std::function<void(ModuleMetadata&)>& edit) {
  ModuleMetadata m = hot_size_metadata();
  edit(m);
  return load_error(write_add4_module(name, m));
}

TEST(ModuleFile, PlansSpecializedForHotSizesRoundTripFromVersionFiveWithSharedWeightsOnce) {
  const ModuleMetadata m = hot_size_metadata();
  EXPECT_EQ(weights_layout(m).bytes, 64u);  // c once
  const ModuleFile f = read_module_file(write_add4_module("hot.so", m));
  ASSERT_EQ(f.metadata.specialized.size(), 1u);
  const GraphPlan& hot = f.metadata.specialized[0];
  EXPECT_FALSE(hot.is_symbolic());
  EXPECT_EQ(hot.tensors[0].shape, std::vector<int64_t>{4});
  EXPECT_EQ(hot.steps[0].kernel, "add4");
  EXPECT_EQ(hot.constants[0].data(), f.metadata.plan.constants[0].data());
  EXPECT_EQ(hot_sizes_of(f.metadata.plan, hot), (std::map<std::string, int64_t>{{"n", 4}}));
  try {
    write_module_file(temp_path("hot_v4.so"), "", m, 4);
    ADD_FAILURE() << "a version 4 file was written with a specialized plan";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 4 cannot hold plans specialized for hot sizes"), std::string::npos);
  }
}

TEST(ModuleFile, RejectsSpecializedPlansThatDoNotFitTheirModel) {
  const std::string prefix = "corrupt module metadata: ";
  auto expect = [&](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find(prefix + part), std::string::npos) << message;
  };
  expect(hot_size_error("static.so",
                        [](ModuleMetadata& m) {
                          m.plan = m.specialized[0];
                          m.kernels.pop_back();
                        }),
         "it has plans specialized for hot sizes beside a plan of static sizes");
  expect(hot_size_error("renamed.so", [](ModuleMetadata& m) { m.specialized[0].tensors[0].name = "z"; }),
         "graph plan: a specialized plan's input 0 is 'z' float32, the model's is 'x' float32");
  expect(hot_size_error("output.so", [](ModuleMetadata& m) { m.specialized[0].tensors[2].shape = {5}; }),
         "graph plan: the plan specialized for n = 4 gives output 'y' of shape (5,), the model (4,)");
  expect(hot_size_error("twice.so", [](ModuleMetadata& m) { m.specialized.push_back(m.specialized[0]); }),
         "two specialized plans for n = 4");
  expect(hot_size_error("sizes.so", [](ModuleMetadata& m) { m.specialized[0].steps[0].kernel = "addn"; }),
         "step 0 of a plan of static sizes calls 'addn', which takes dimension variables");
}

// A program over add4's plan as its one stage: y = stage0(x), then If(flag) choosing y or x,
// which reads both from the program around it; `flag` a constant of the program.
ModuleMetadata program_metadata(bool flag) {
  ModuleMetadata m = add4_metadata();
  m.stages = {m.plan};
  m.plan = GraphPlan();
  auto body = [](const std::string& value) {
    auto b = std::make_shared<ProgramPlan>();
    b->outputs = {value};
    return b;
  };
  auto p = std::make_shared<ProgramPlan>();
  p->inputs = {"x"};
  p->input_types = {{ProgramInputType::Tensor, {"x", {4}, kFloat32}}};
  p->outputs = {"z"};
  ProgramStep stage;
  stage.kind = ProgramStep::Kind::Stage;
  stage.origin = "the add";
  stage.inputs = {"x"};
  stage.outputs = {"y"};
  stage.stage = 0;
  ProgramStep branch;
  branch.kind = ProgramStep::Kind::If;
  branch.origin = "the branch";
  branch.inputs = {"flag"};
  branch.outputs = {"z"};
  branch.bodies = {body("y"), body("x")};
  p->steps = {stage, branch};
  NDArray f = NDArray::empty({}, kBool);
  *static_cast<bool*>(f.data()) = flag;
  p->constants = {{"flag", f}};
  m.program = p;
  return m;
}

TEST(ModuleFile, ProgramsRoundTripFromVersionSixAndRunTheirStages) {
  for (bool flag : {true, false}) {
    LoadedModule loaded = load_module(write_add4_module("program.so", program_metadata(flag)));
    ASSERT_TRUE(loaded.program);
    EXPECT_EQ(loaded.executor, nullptr);
    NDArray x = NDArray::empty({4}, kFloat32);
    for (int i = 0; i < 4; ++i) x.data_as<float>()[i] = static_cast<float>(i);
    const std::vector<ProgramValue> out = loaded.program->run({ProgramValue(x)});
    ASSERT_EQ(out.size(), 1u);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out[0].tensor.data_as<float>()[i], flag ? 11.0f * i + 10.0f : i);
    try {
      loaded.program->run({ProgramValue(NDArray::empty({5}, kFloat32))});
      ADD_FAILURE() << "a program ran on an input of the wrong shape";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("input 'x'"), std::string::npos) << e.what();
    }
  }
  try {
    write_module_file(temp_path("program_v5.so"), "", program_metadata(true), 5);
    ADD_FAILURE() << "a version 5 file was written with a program";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("version 5 cannot hold a program"), std::string::npos);
  }
}

TEST(ModuleFile, RejectsProgramsThatDoNotFitTheirStages) {
  auto error = [](const std::string& name, const std::function<void(ModuleMetadata&, ProgramPlan&)>& edit) {
    ModuleMetadata m = program_metadata(true);
    auto p = std::make_shared<ProgramPlan>(*m.program);
    edit(m, *p);
    m.program = p;
    return load_error(write_add4_module(name, m));
  };
  auto expect = [](const std::string& message, const std::string& part) {
    EXPECT_NE(message.find("corrupt module metadata: " + part), std::string::npos) << message;
  };
  expect(error("stage.so", [](ModuleMetadata&, ProgramPlan& p) { p.steps[0].stage = 3; }),
         "step 'the add': stage 3 is out of range (0..1)");
  expect(error("inputs.so", [](ModuleMetadata&, ProgramPlan& p) { p.steps[0].inputs.push_back("x"); }),
         "step 'the add' passes 2 inputs and takes 1 outputs; its stage's plan has 1 and 1");
  expect(error("builtin.so",
               [](ModuleMetadata&, ProgramPlan& p) {
                 p.steps[1].kind = ProgramStep::Kind::Builtin;
                 p.steps[1].builtin = "fancy";
                 p.steps[1].bodies.clear();
               }),
         "step 'the branch' runs the unknown builtin 'fancy'");
  expect(error("bodies.so", [](ModuleMetadata&, ProgramPlan& p) { p.steps[1].bodies.pop_back(); }),
         "step 'the branch' has 1 bodies");
  expect(error("beside.so", [](ModuleMetadata& m, ProgramPlan&) { m.plan = m.stages[0]; }),
         "it holds a program beside a plan");
}

}  // namespace
}  // namespace tessera::runtime
