// The source-built targets end to end: opencl programs built and run on PoCL against the host's
// result (guards on awkward sizes, a shared-memory reduction with barriers, two kernels with a
// workspace), cuda programs through NVRTC and ptxas (and run where a CUDA driver is found), and
// the c target's kernels, parallel loops included, against the LLVM backend's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "device_programs.h"
#include "runtime/device_api.h"
#include "runtime/device_program.h"
#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "runtime/thread_pool.h"
#include "targets/build.h"
#include "tensor_ir/parallel_work.h"
#include "error_of.h"

namespace tessera::targets {
namespace {

using namespace tessera::testing;
using runtime::NDArray;

const runtime::Device kOpenCL{runtime::DeviceType::OpenCL, 0};
const runtime::Device kCUDA{runtime::DeviceType::CUDA, 0};

NDArray random_array(std::vector<int64_t> shape, unsigned seed) {
  NDArray a = NDArray::empty(std::move(shape), runtime::kFloat32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < a.numel(); ++i) a.data_as<float>()[i] = dist(rng);
  return a;
}

// Runs program `name` of `module` on copies of `host` arrays on `device`; returns them copied back.
std::vector<NDArray> run_on(const runtime::Module& module, const std::string& name, const std::vector<NDArray>& host,
                            runtime::Device device) {
  std::vector<NDArray> on_device;
  for (const NDArray& a : host) on_device.push_back(a.copy_to(device));
  (*module.device_program(name))(on_device);
  std::vector<NDArray> back;
  for (const NDArray& a : on_device) back.push_back(a.copy_to(runtime::Device::cpu()));
  return back;
}

TEST(OpenCLTarget, VectorAddOnAwkwardSizes) {
  for (auto [n, block] : {std::pair<int64_t, int64_t>{1, 1}, {1, 64}, {1000, 128}, {4097, 256}, {64, 64}}) {
    auto module = build({vector_add(n, block)}, Target::parse("opencl"));
    NDArray a = random_array({n}, 1), b = random_array({n}, 2), c = NDArray::empty({n}, runtime::kFloat32);
    std::vector<NDArray> out = run_on(*module, "vadd", {a, b, c}, kOpenCL);
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(out[2].data_as<float>()[i], a.data_as<float>()[i] + b.data_as<float>()[i]) << "n=" << n << " i=" << i;
  }
}

TEST(OpenCLTarget, BlockReductionThroughSharedMemory) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{3, 1000}, {1, 1}, {5, 64}}) {
    auto module = build({row_sum(rows, cols, 64)}, Target::parse("opencl"));
    EXPECT_TRUE(contains(module->source("cl"), "barrier(CLK_LOCAL_MEM_FENCE)"));
    NDArray a = random_array({rows, cols}, 3), b = NDArray::empty({rows}, runtime::kFloat32);
    std::vector<NDArray> out = run_on(*module, "row_sum", {a, b}, kOpenCL);
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += a.data_as<float>()[r * cols + c];
      EXPECT_NEAR(out[1].data_as<float>()[r], sum, 1e-4 * (1 + std::abs(sum))) << rows << "x" << cols << " row " << r;
    }
  }
}

TEST(OpenCLTarget, KernelsInOrderThroughAWorkspace) {
  const int64_t n = 100;
  auto module = build({two_kernels(n)}, Target::parse("opencl"));
  const auto& spec = module->device_program("two")->spec();
  ASSERT_EQ(spec.kernels.size(), 2u);
  EXPECT_EQ(spec.workspace.size(), 1u);
  EXPECT_EQ(spec.kernels[1].config.block[0], 64u);
  NDArray a = random_array({n}, 4), b = NDArray::empty({n}, runtime::kFloat32);
  std::vector<NDArray> out = run_on(*module, "two", {a, b}, kOpenCL);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(out[1].data_as<float>()[i], a.data_as<float>()[i] * 2 + 1) << i;
}

TEST(OpenCLTarget, ArgumentsAreChecked) {
  auto module = build({vector_add(10, 4)}, Target::parse("opencl"));
  auto program = module->device_program("vadd");
  NDArray good = NDArray::empty({10}, runtime::kFloat32, kOpenCL);
  EXPECT_EQ(error_of([&] { (*program)({good, good}); }), "device program 'vadd' takes 3 arrays, got 2");
  EXPECT_EQ(error_of([&] {
              (*program)({good, NDArray::empty({11}, runtime::kFloat32, kOpenCL), good});
            }),
            "device program 'vadd' argument 1 ('B'): expected shape (10,), got (11,)");
  EXPECT_EQ(error_of([&] {
              (*program)({good, good, NDArray::empty({10}, runtime::kInt32, kOpenCL)});
            }),
            "device program 'vadd' argument 2 ('C'): expected dtype float32, got int32");
  EXPECT_EQ(error_of([&] {
              (*program)({good, NDArray::empty({10}, runtime::kFloat32), good});
            }),
            "device program 'vadd' argument 1 ('B'): the array is on cpu(0); the program runs on an OpenCL device: "
            "copy it there first");
  EXPECT_TRUE(contains(error_of([&] { module->get_kernel("vadd"); }), "kernel 'vadd' runs on a device"));
  EXPECT_TRUE(contains(error_of([&] { module->source("ptx"); }), "no source in format 'ptx' (available: cl)"));
}

TEST(DeviceTargets, TheVerifierRefusesThroughBuild) {
  Buffer a = device_buffer("A", {10});
  Var i("i");
  LoweredFunc unbound{
      "f", {a}, For::make(i, 0, 10, ForKind::Serial, Store::make(a, make_const(runtime::kFloat32, 1), i))};
  for (const char* target : {"opencl", "cuda -arch=sm_80"})
    EXPECT_TRUE(contains(error_of([&] { build({unbound}, Target::parse(target)); }),
                         "kernel 'f_kernel0': loop 'i' is outside every thread extent"))
        << target;
  EXPECT_TRUE(contains(error_of([&] { build({vector_add(4096, 2048)}, Target::parse("cuda -arch=sm_90")); }),
                       "has 2048 threads per block (threadIdx extents 2048 x 1 x 1); the device allows 1024"));
}

TEST(CUDATarget, CompilesThroughNvrtcAndPtxas) {
  for (const char* target : {"cuda -arch=sm_80", "cuda -arch=sm_90"}) {
    auto module = build({row_sum(3, 1000, 64), two_kernels(100)}, Target::parse(target));
    EXPECT_TRUE(contains(module->source("cuda"), "__syncthreads();"));
    EXPECT_TRUE(contains(module->source("ptx"), ".entry row_sum_kernel0"));
    const std::string report = module->source("ptxas");
    EXPECT_TRUE(contains(report, "row_sum_kernel0 (sm_")) << report;
    EXPECT_TRUE(contains(report, "registers, 256 bytes shared")) << report;
    EXPECT_TRUE(contains(report, "two_kernel1 (sm_")) << report;
  }
  // Without -arch the device decides; without a device that is an error that says what to give.
  if (!runtime::DeviceAPI::exists(kCUDA)) {
    EXPECT_TRUE(contains(error_of([] { build({vector_add(10, 4)}, Target::parse("cuda")); }), "give -arch=sm_XX"));
  }
}

TEST(CUDATarget, RunsWhereADriverIsFound) {
  auto module = build({vector_add(1000, 128)}, Target::parse("cuda -arch=sm_80"));
  if (!runtime::DeviceAPI::exists(kCUDA)) {
    EXPECT_TRUE(contains(error_of([&] { NDArray::empty({1000}, runtime::kFloat32, kCUDA); }), "no CUDA driver found"));
    GTEST_SKIP() << "no CUDA device here: compiled only";
  }
  NDArray a = random_array({1000}, 5), b = random_array({1000}, 6), c = NDArray::empty({1000}, runtime::kFloat32);
  std::vector<NDArray> out = run_on(*module, "vadd", {a, b, c}, kCUDA);
  for (int64_t i = 0; i < 1000; ++i)
    ASSERT_EQ(out[2].data_as<float>()[i], a.data_as<float>()[i] + b.data_as<float>()[i]) << i;
}

// tmp = exp(A) * 2 in a parallel loop over uneven tiles (a heap buffer: larger than the stack's
// share), then C = tmp + B in a second parallel loop; a stack buffer in each iteration.
LoweredFunc parallel_cpu_kernel(int64_t n) {
  Buffer a = device_buffer("A", {n}), b = device_buffer("B", {n}), c = device_buffer("C", {n});
  Buffer tmp = device_buffer("tmp", {n}, MemoryScope::Local), small = device_buffer("small", {2}, MemoryScope::Local);
  Var io("io"), ii("ii"), j("j");
  Expr i = io * 8 + ii;
  Stmt first = For::make(
      io, 0, (n + 7) / 8, ForKind::Parallel,
      For::make(ii, 0, 8, ForKind::Serial,
                IfThenElse::make(
                    i < n,
                    Store::make(tmp, call(Intrinsic::exp, {Load::make(a, i)}) * make_const(runtime::kFloat32, 2), i))));
  Stmt second =
      For::make(j, 0, n, ForKind::Parallel,
                Allocate::make(small, Block::make({Store::make(small, Load::make(b, j), Expr(1)),
                                                   Store::make(c, Load::make(tmp, j) + Load::make(small, 1), j)})));
  return {"par", {a, b, c}, Allocate::make(tmp, Block::make({first, second}))};
}

TEST(CTarget, ParallelKernelsMatchLLVM) {
  for (int64_t n : {1, 100, 5000}) {
    LoweredFunc f = parallel_cpu_kernel(n);
    auto c_module = build({f}, Target::parse("c"));
    EXPECT_TRUE(contains(c_module->source("c"), "tessera_hook_parallel_launch(par_parallel0"));
    auto llvm_module = build({f}, Target::parse("llvm"));
    NDArray a = random_array({n}, 7), b = random_array({n}, 8);
    NDArray from_c = NDArray::empty({n}, runtime::kFloat32), from_llvm = NDArray::empty({n}, runtime::kFloat32);
    c_module->get_kernel("par")({a, b, from_c});
    llvm_module->get_kernel("par")({a, b, from_llvm});
    for (int64_t i = 0; i < n; ++i)
      ASSERT_NEAR(from_c.data_as<float>()[i], from_llvm.data_as<float>()[i],
                  1e-6f * (1 + std::abs(from_llvm.data_as<float>()[i])))
          << "n=" << n << " i=" << i;
  }
}

// One loop variable bound by a serial loop and again inside a parallel one, as loop partitioning
// leaves it: the parallel body captures only what is in scope where it starts.
TEST(CTarget, ALoopVariableReusedInAParallelBody) {
  const int64_t n = 10;
  Buffer a = device_buffer("A", {n}), c = device_buffer("C", {n});
  Var ii("ii"), io("io");
  Expr i = io * 5 + ii;
  Stmt body = Block::make(
      {For::make(ii, 0, n, ForKind::Serial, Store::make(c, Load::make(a, ii), ii)),
       For::make(io, 0, 2, ForKind::Parallel,
                 For::make(ii, 0, 5, ForKind::Serial, Store::make(c, Load::make(c, i) * Load::make(a, i), i)))});
  LoweredFunc f{"reuse", {a, c}, body};
  NDArray x = random_array({n}, 9), from_c = NDArray::empty({n}, runtime::kFloat32);
  build({f}, Target::parse("c"))->get_kernel("reuse")({x, from_c});
  for (int64_t k = 0; k < n; ++k) ASSERT_EQ(from_c.data_as<float>()[k], x.data_as<float>()[k] * x.data_as<float>()[k]);
}

TEST(CpuTargets, AParallelLoopMarkedWithItsLeastWorkRunsInParallelOnlyAtSizesThatReachIt) {
  // parallel for i in [0, n): for j in [0, 64): C[i*64 + j] = A[i*64 + j] + 1, where n is read
  // from an argument, marked worth a launch from 64 * 100 values on: 10 rows run on the calling
  // thread, 1000 are shared out.
  Buffer args = device_buffer("args", {1}), a = device_buffer("A", {64000}), c = device_buffer("C", {64000});
  Var n("n", runtime::kInt64), i("i"), j("j");
  Stmt row = For::make(j, 0, 64, ForKind::Serial,
                       Store::make(c, Load::make(a, i * 64 + j) + make_const(runtime::kFloat32, 1), i * 64 + j));
  Stmt rows = For::make(i, 0, n, ForKind::Parallel, row, {{tensor_ir::kParallelMinWork, 6400}});
  LoweredFunc f{"rows", {args, a, c}, LetStmt::make(n, cast(runtime::kInt64, Load::make(args, 0)), rows)};
  runtime::ThreadPool& pool = runtime::ThreadPool::global();
  if (pool.num_threads() < 2) GTEST_SKIP() << "one thread: nothing runs in parallel";
  for (const char* target : {"llvm", "c"}) {
    const runtime::Kernel kernel = build({f}, Target::parse(target))->get_kernel("rows");
    NDArray x = NDArray::empty({64000}, runtime::kFloat32), y = NDArray::empty({64000}, runtime::kFloat32);
    for (int64_t k = 0; k < 64000; ++k) x.data_as<float>()[k] = static_cast<float>(k);
    for (int64_t count : {10, 99, 100, 1000}) {
      NDArray size = NDArray::empty({1}, runtime::kFloat32);
      size.data_as<float>()[0] = static_cast<float>(count);
      const int64_t before = pool.shared_calls();
      kernel({size, x, y});
      EXPECT_EQ(pool.shared_calls() - before, count >= 100 ? 1 : 0) << target << " at " << count << " rows";
      for (int64_t k = 0; k < count * 64; ++k) ASSERT_EQ(y.data_as<float>()[k], k + 1.0f) << target << " " << k;
    }
  }
}

TEST(CpuTargets, AStoreGuardedPerLaneWritesAndReadsOnlyTheLanesThatHold) {
  // for io in [0, 3): if (ramp(io*16, 1, L) < n) C[ramp(io*16, 1, L)] = A[ramp(..)] + 1, n = 37:
  // the tail of a row of symbolic length, vectorized. C's elements past n keep their value; at
  // 12 lanes (not a power of two) the masked store is widened with its lanes past 12 off.
  for (const int lanes : {16, 12}) {
    Buffer args = device_buffer("args", {1}), a = device_buffer("A", {48}), c = device_buffer("C", {48});
    Var n("n", runtime::kInt64), io("io");
    Expr base = io * lanes;
    Expr idx = Ramp::make(base, Expr(1), lanes);
    Stmt guarded = IfThenElse::make(
        idx < Broadcast::make(n, lanes),
        Store::make(c, Load::make(a, idx) + Broadcast::make(make_const(runtime::kFloat32, 1), lanes), idx));
    LoweredFunc f{"tail",
                  {args, a, c},
                  LetStmt::make(n, cast(runtime::kInt64, Load::make(args, 0)),
                                For::make(io, 0, 48 / lanes, ForKind::Serial, guarded))};
    for (const char* target : {"llvm", "c"}) {
      NDArray size = NDArray::empty({1}, runtime::kFloat32), x = random_array({48}, 3),
              y = NDArray::empty({48}, runtime::kFloat32);
      size.data_as<float>()[0] = 37;
      for (int64_t k = 0; k < 48; ++k) y.data_as<float>()[k] = -7;
      build({f}, Target::parse(target))->get_kernel("tail")({size, x, y});
      for (int64_t k = 0; k < 48; ++k)
        ASSERT_EQ(y.data_as<float>()[k], k < 37 ? x.data_as<float>()[k] + 1 : -7.0f)
            << target << " " << lanes << " " << k;
    }
  }
}

TEST(CTarget, CompilerErrorsAndABI) {
  auto module = build({parallel_cpu_kernel(10)}, Target::parse("c"));
  const runtime::Kernel k = module->get_kernel("par");
  void* args[2] = {nullptr, nullptr};
  EXPECT_EQ(k.function()(args, 2), -1);  // the argument count is checked by the kernel itself
  EXPECT_TRUE(contains(error_of([&] { module->device_program("par"); }), "no device program 'par'"));
}

}  // namespace
}  // namespace tessera::targets
