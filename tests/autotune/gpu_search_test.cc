// The GPU search space (Ansor's GPU sketch rules and the GPU template's knobs): sampled schedules
// bind blocks and threads, run on the OpenCL device (PoCL) and compute what the default GPU
// schedule computes; the shared-memory variants, which PoCL's hardware description never offers
// (its local memory is global memory), run there too when the hardware says otherwise.
#include <gtest/gtest.h>

#include "runtime/device_api.h"
#include "runtime/device_program.h"
#include "search_test_util.h"

namespace tessera::autotune {
namespace {

using namespace testing;

const runtime::Device kOpenCL{runtime::DeviceType::OpenCL, 0};

schedule::HardwareParams opencl_hardware() { return targets::Target::parse("opencl").hardware(); }

// Runs candidate `c` on the OpenCL device; the outputs of `args` (host arrays) are overwritten.
void run_on_opencl(const SearchSpace& space, const Candidate& c, const std::vector<runtime::NDArray>& args) {
  auto s = space.apply(c);
  auto module = targets::build({space.lower(*s, "kernel")}, targets::Target::parse("opencl"));
  std::vector<runtime::NDArray> on;
  for (const auto& a : args) on.push_back(a.copy_to(kOpenCL));
  (*module->device_program("kernel"))(on);
  for (size_t i = space.compute().inputs.size(); i < args.size(); ++i) args[i].copy_from(on[i]);
}

// Up to `wanted` samples of `space` (of sketch `only` when given) that the device can run: a
// sample may ask for more threads or shared memory than a block has, which lowering refuses.
std::vector<Candidate> runnable_samples(const SearchSpace& space, int wanted, int only = -1) {
  std::mt19937_64 rng(5);
  std::vector<Candidate> found;
  for (int tries = 0; tries < 400 && static_cast<int>(found.size()) < wanted; ++tries) {
    Candidate c = space.sample(rng);
    if (only >= 0 && c.sketch != only) continue;
    try {
      auto s = space.apply(c);
      space.lower(*s);
    } catch (const Error&) {
      continue;
    }
    found.push_back(c);
  }
  return found;
}

void expect_samples_compute_the_default(const SearchSpace& space, const std::vector<Candidate>& samples) {
  auto expected = make_args(space, 11);
  run_on_opencl(space, SearchSpace::default_candidate(), expected);
  for (const Candidate& c : samples) {
    SCOPED_TRACE(space.sketches()[c.sketch].name + "\n" + space.apply(c)->trace().to_code());
    auto args = make_args(space, 11);
    run_on_opencl(space, c, args);
    for (size_t o = space.compute().inputs.size(); o < args.size(); ++o)
      EXPECT_LT(max_abs_diff(args[o], expected[o]), 1e-3);
  }
}

std::vector<std::string> sketch_names(const SearchSpace& space) {
  std::vector<std::string> names;
  for (const auto& s : space.sketches()) names.push_back(s.name);
  return names;
}

bool has_sketch(const SearchSpace& space, const std::string& piece) {
  for (const auto& name : sketch_names(space))
    if (name.find(piece) != std::string::npos) return true;
  return false;
}

class GpuSearch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!runtime::DeviceAPI::exists(kOpenCL)) GTEST_SKIP() << "no OpenCL device (scripts/test.sh installs PoCL)";
  }
};

TEST_F(GpuSearch, RulesBindBlocksAndThreads) {
  SearchSpace matmul(for_hardware(matmul_task(48, 64, 32), opencl_hardware()).compute);
  EXPECT_TRUE(has_sketch(matmul, "matmul:cache_write_tile")) << ::testing::PrintToString(sketch_names(matmul));
  EXPECT_FALSE(has_sketch(matmul, "shared"));  // PoCL's local memory is global memory
  SearchSpace softmax(for_hardware(softmax_task(), opencl_hardware()).compute);
  EXPECT_TRUE(has_sketch(softmax, "rfactor")) << ::testing::PrintToString(sketch_names(softmax));
  // The GPU template's knobs: threads per block and register tile lengths.
  EXPECT_TRUE(has_sketch(matmul, "template_knobs"));
  EXPECT_FALSE(matmul.template_candidates(1000).empty());
  for (const Candidate& c : runnable_samples(matmul, 4)) {
    std::string code = matmul.apply(c)->trace().to_code();
    EXPECT_NE(code.find("blockIdx.x"), std::string::npos) << code;
    EXPECT_EQ(code.find("parallel"), std::string::npos) << code;
  }
}

TEST_F(GpuSearch, SamplesComputeTheDefaultSchedulesResultsOnOpenCL) {
  for (const Task& cpu_task : all_tasks()) {
    SearchSpace space(for_hardware(cpu_task, opencl_hardware()).compute);
    SCOPED_TRACE(cpu_task.workload.key);
    std::vector<Candidate> samples = runnable_samples(space, 3);
    EXPECT_FALSE(samples.empty());
    expect_samples_compute_the_default(space, samples);
  }
}

TEST_F(GpuSearch, TemplateKnobsComputeTheDefaultSchedulesResultsOnOpenCL) {
  for (const Task& cpu_task : {matmul_task(48, 64, 32), conv_task(), softmax_task()}) {
    SearchSpace space(for_hardware(cpu_task, opencl_hardware()).compute);
    std::vector<Candidate> knobs = space.template_candidates(1000000);
    ASSERT_FALSE(knobs.empty()) << cpu_task.workload.key;
    knobs.resize(std::min<size_t>(knobs.size(), 4));
    expect_samples_compute_the_default(space, knobs);
  }
}

// Shared-memory staging with cooperative fetching, as on a GPU whose shared memory is on the chip.
TEST_F(GpuSearch, SharedMemoryVariantsComputeTheDefaultSchedulesResultsOnOpenCL) {
  schedule::HardwareParams on_chip = opencl_hardware();
  on_chip.gpu.dedicated_shared_memory = true;
  for (const Task& cpu_task : {matmul_task(48, 64, 40), dense_task(), conv_task(), te_gemm_task(40)}) {
    SearchSpace space(for_hardware(cpu_task, on_chip).compute);
    SCOPED_TRACE(cpu_task.workload.key);
    int shared = -1;
    for (size_t i = 0; i < space.sketches().size(); ++i)
      if (space.sketches()[i].name.find("_shared") != std::string::npos) shared = static_cast<int>(i);
    ASSERT_GE(shared, 0) << ::testing::PrintToString(sketch_names(space));
    std::vector<Candidate> samples = runnable_samples(space, 2, shared);
    ASSERT_FALSE(samples.empty());
    for (const Candidate& c : samples)
      EXPECT_NE(space.apply(c)->trace().to_code().find("shared"), std::string::npos);
    expect_samples_compute_the_default(space, samples);
  }
}

// Without a CUDA device: samples of every sketch, the shared-memory ones and cross-thread
// reductions (warp shuffles) among them, go through NVRTC and ptxas for sm_80.
TEST(GpuSearchCUDA, SamplesOfEverySketchCompileThroughPtxas) {
  const targets::Target cuda = targets::Target::parse("cuda -arch=sm_80");
  for (const Task& cpu_task : {matmul_task(48, 64, 40), conv_task(), softmax_task(), reduce_task()}) {
    SearchSpace space(for_hardware(cpu_task, cuda.hardware()).compute);
    SCOPED_TRACE(cpu_task.workload.key);
    for (size_t sketch = 1; sketch < space.sketches().size(); ++sketch) {
      SCOPED_TRACE(space.sketches()[sketch].name);
      std::vector<Candidate> samples = runnable_samples(space, 1, static_cast<int>(sketch));
      ASSERT_EQ(samples.size(), 1u);
      auto module = targets::build({space.lower(*space.apply(samples[0]), "kernel")}, cuda);
      EXPECT_NE(module->source("ptxas").find("registers"), std::string::npos) << module->source("ptxas");
    }
  }
}

}  // namespace
}  // namespace tessera::autotune
