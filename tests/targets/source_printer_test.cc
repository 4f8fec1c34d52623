// The C-family source printer's dialects on hand-made IR: the text each prints, and that it
// compiles with the dialect's own compiler (PoCL's clBuildProgram for opencl, NVRTC and ptxas for
// cuda, the system C compiler for c through the c target).
#include <gtest/gtest.h>

#include "device_programs.h"
#include "runtime/device_api.h"
#include "runtime/error.h"
#include "targets/cuda/nvrtc.h"
#include "targets/source/source_dialects.h"
#include "tensor_ir/transforms/split_host_device.h"
#include "error_of.h"

namespace tessera::targets {
namespace {

using namespace tessera::testing;
using runtime::DataType;

// Builds `source` with PoCL and looks up each of `kernels`; throws with the build log otherwise.
void build_on_pocl(const std::string& source, const std::vector<std::string>& kernels) {
  auto module = runtime::DeviceAPI::get({runtime::DeviceType::OpenCL, 0})
                    .load_module(source, runtime::DeviceCodeFormat::OpenCLSource);
  for (const auto& k : kernels) module->function(k);
}

// One kernel over buffers of several types using the math and integer operations each dialect
// spells its own way: float16 and bool in memory, float64, floor division, fmod, sigmoid, rint,
// an integer's abs.
LoweredFunc mixed_types() {
  Buffer h = device_buffer("H", {64}, MemoryScope::Global, runtime::kFloat16);
  Buffer d = device_buffer("D", {64}, MemoryScope::Global, runtime::kFloat64);
  Buffer m = device_buffer("M", {64}, MemoryScope::Global, runtime::kBool);
  Buffer q = device_buffer("Q", {64}, MemoryScope::Global, runtime::kInt32);
  Buffer out = device_buffer("Out", {64});
  Var tx("tx");
  Expr x = Load::make(h, tx);  // float16
  Expr f = Cast::make(runtime::kFloat32, x);
  Expr y = call(Intrinsic::sigmoid, {f}) + call(Intrinsic::round, {f}) +
           Mod::make(f, make_const(runtime::kFloat32, 3)) +
           Cast::make(runtime::kFloat32, call(Intrinsic::exp, {Load::make(d, tx)}));
  Expr qi = Load::make(q, tx);
  Expr idx = FloorDiv::make(qi, make_const(runtime::kInt32, 4)) + FloorMod::make(qi, make_const(runtime::kInt32, 3)) +
             call(Intrinsic::abs, {qi});
  Stmt body = Block::make({Store::make(out, Select::make(Load::make(m, tx), y, Cast::make(runtime::kFloat32, idx)), tx),
                           Store::make(h, Cast::make(runtime::kFloat16, y), tx),
                           Store::make(m, Not::make(Load::make(m, tx)), tx)});
  return {"mixed", {h, d, m, q, out}, bind(tx, "threadIdx.x", 64, body)};
}

TEST(OpenCLPrinter, VectorAdd) {
  const std::string cl = source::print_opencl(split_host_device(vector_add(1000, 128)));
  EXPECT_TRUE(contains(cl,
                       "__kernel __attribute__((reqd_work_group_size(128, 1, 1))) void vadd_kernel0(__global const "
                       "float* restrict A, __global const float* restrict B, __global float* restrict C) {\n"
                       "  const long bx = (long)get_group_id(0);\n"
                       "  const long tx = (long)get_local_id(0);\n"
                       "  if ((((bx * 128L) + tx) < 1000L)) {\n"
                       "    C[((bx * 128L) + tx)] = (A[((bx * 128L) + tx)] + B[((bx * 128L) + tx)]);\n"))
      << cl;
  build_on_pocl(cl, {"vadd_kernel0"});
}

TEST(OpenCLPrinter, SharedMemoryAndBarriers) {
  const std::string cl = source::print_opencl(split_host_device(row_sum(3, 100, 64)));
  EXPECT_TRUE(contains(cl,
                       "void row_sum_kernel0(__global const float* restrict A, __global float* restrict B) {\n"
                       "  __local float partial[64];\n"))
      << cl;
  EXPECT_TRUE(contains(cl, "  float acc[1];\n")) << cl;
  EXPECT_TRUE(contains(cl, "barrier(CLK_LOCAL_MEM_FENCE);")) << cl;
  build_on_pocl(cl, {"row_sum_kernel0"});
}

TEST(OpenCLPrinter, TypesAndMath) {
  const std::string cl = source::print_opencl(split_host_device(mixed_types()));
  EXPECT_TRUE(contains(cl, "__global half* restrict H")) << cl;
  EXPECT_TRUE(contains(cl, "vload_half(tx, H)")) << cl;
  EXPECT_TRUE(contains(cl, "vstore_half(")) << cl;
  EXPECT_TRUE(contains(cl, "__global uchar* restrict M")) << cl;
  EXPECT_TRUE(contains(cl, "tessera_floordiv_int32(")) << cl;
  EXPECT_TRUE(contains(cl, "fmod(")) << cl;
  EXPECT_TRUE(contains(cl, "rint(")) << cl;
  EXPECT_TRUE(contains(cl, "((Q[tx]) < 0 ? -(Q[tx]) : (Q[tx]))")) << cl;
  build_on_pocl(cl, {"mixed_kernel0"});
}

TEST(CUDAPrinter, VectorAddCompilesForSm80AndSm90) {
  const std::string cu = source::print_cuda(split_host_device(vector_add(1000, 128)));
  EXPECT_TRUE(contains(cu,
                       "extern \"C\" __global__ void __launch_bounds__(128) vadd_kernel0(const float* __restrict__ A, "
                       "const float* __restrict__ B, float* __restrict__ C) {\n"
                       "  const long long bx = (long long)blockIdx.x;\n"
                       "  const long long tx = (long long)threadIdx.x;\n"))
      << cu;
  EXPECT_FALSE(contains(cu, "cuda_fp16.h"));
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const std::string ptx = cuda::compile_to_ptx(cu, "vadd", arch);
    EXPECT_TRUE(contains(ptx, ".target " + arch)) << ptx.substr(0, 400);
    const auto kernels = cuda::check_ptx(ptx, arch);
    ASSERT_EQ(kernels.size(), 1u);
    EXPECT_EQ(kernels[0].name, "vadd_kernel0");
    EXPECT_GT(kernels[0].registers, 0);
    EXPECT_EQ(kernels[0].shared_bytes, 0);
  }
}

TEST(CUDAPrinter, SharedMemoryBarriersAndTypes) {
  const std::string cu = source::print_cuda(split_host_device(row_sum(3, 100, 64)));
  EXPECT_TRUE(contains(cu, "  __shared__ float partial[64];\n")) << cu;
  EXPECT_TRUE(contains(cu, "__syncthreads();")) << cu;
  const auto kernels = cuda::check_ptx(cuda::compile_to_ptx(cu, "row_sum", "sm_80"), "sm_80");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].shared_bytes, 64 * 4);

  const std::string mixed = source::print_cuda(split_host_device(mixed_types()));
  EXPECT_TRUE(contains(mixed, "#include <cuda_fp16.h>")) << mixed;
  EXPECT_TRUE(contains(mixed, "__half* __restrict__ H")) << mixed;
  EXPECT_TRUE(contains(mixed, "__half2float(H[tx])")) << mixed;
  EXPECT_TRUE(contains(mixed, "expf(") || contains(mixed, "exp(")) << mixed;
  EXPECT_TRUE(contains(mixed, "fmodf(")) << mixed;
  cuda::check_ptx(cuda::compile_to_ptx(mixed, "mixed", "sm_90"), "sm_90");
}

// A warp shuffle of each width __shfl_down_sync takes, and of one it does not (int8, through int);
// OpenCL C 1.2 has none.
TEST(CUDAPrinter, WarpShufflesOfEveryWidth) {
  std::vector<Stmt> stores;
  std::vector<Buffer> buffers;
  Var tx("tx");
  for (DataType t : {runtime::kFloat32, runtime::kFloat64, runtime::kInt64, DataType::Int(8)}) {
    Buffer b = device_buffer("A_" + t.str(), {64}, MemoryScope::Global, t);
    Expr shuffled = Call::make(t, Intrinsic::warp_shuffle_down, {Load::make(b, tx), make_const(runtime::kInt32, 4)});
    stores.push_back(Store::make(b, shuffled, tx));
    buffers.push_back(b);
  }
  const DeviceProgram program = split_host_device(LoweredFunc{"shfl", buffers, bind(tx, "threadIdx.x", 64, Block::make(stores))});
  const std::string cu = source::print_cuda(program);
  EXPECT_TRUE(contains(cu, "A_float32[tx] = __shfl_down_sync(0xffffffffu, A_float32[tx], 4);")) << cu;
  EXPECT_TRUE(contains(cu, "A_int8[tx] = ((signed char)__shfl_down_sync(0xffffffffu, (int)(A_int8[tx]), 4));")) << cu;
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const std::string ptx = cuda::compile_to_ptx(cu, "shfl", arch);
    EXPECT_TRUE(contains(ptx, "shfl.sync.down.b32")) << ptx;
    cuda::check_ptx(ptx, arch);
  }
  EXPECT_TRUE(contains(error_of([&] { source::print_opencl(program); }),
                       "the opencl source printer cannot print warp shuffles (a cross-thread reduction lowered for "
                       "cuda)"));
}

// Let-bound values become locals computed once (substituting them would double the expression
// at each of these lets), those under a select's side only where that side is chosen.
TEST(SourcePrinter, LetsBecomeLocalsComputedOnce) {
  Buffer a = device_buffer("A", {64});
  Var tx("tx");
  Expr value = Load::make(a, tx);
  std::vector<Var> vars;
  for (int i = 0; i < 40; ++i) vars.push_back(Var("v", runtime::kFloat32));
  Expr body = vars.back() + vars.back();
  for (int i = 39; i > 0; --i) body = Let::make(vars[i], vars[i - 1] * vars[i - 1], body);
  body = Let::make(vars[0], value, body);
  Expr guarded = select(tx < 32, body, make_zero(runtime::kFloat32));
  const DeviceProgram program =
      split_host_device(LoweredFunc{"lets", {a}, bind(tx, "threadIdx.x", 64, Store::make(a, guarded, tx))});
  const std::string cl = source::print_opencl(program);
  EXPECT_LT(cl.size(), 6000u) << cl;
  EXPECT_TRUE(contains(cl, "if ((tx < 32L)) {\n      const float v = A[tx];")) << cl;
  build_on_pocl(cl, {"lets_kernel0"});
}

TEST(CUDAPrinter, CompilerErrorsAreNamed) {
  EXPECT_TRUE(contains(error_of([] { cuda::compile_to_ptx("__global__ void k() { undeclared; }", "bad", "sm_80"); }),
                       "NVRTC failed to compile 'bad' for sm_80"));
  EXPECT_TRUE(contains(error_of([] { cuda::compile_to_ptx("", "p", "compute_80"); }), "-arch must read sm_XX"));
  EXPECT_TRUE(contains(error_of([] { cuda::check_ptx("not ptx", "sm_80"); }), "ptxas refused the PTX for sm_80"));
}

TEST(SourcePrinter, RefusesWhatADialectCannotPrint) {
  Buffer a = device_buffer("A", {64});
  Var tx("tx"), i("i");
  // A vector store is printed lane by lane; a vector value anywhere else is refused.
  LoweredFunc vec{
      "vec",
      {a},
      bind(
          tx, "threadIdx.x", 16,
          Store::make(a, Broadcast::make(make_const(runtime::kFloat32, 1), 4) + Load::make(a, Ramp::make(tx * 4, 1, 4)),
                      Ramp::make(tx * 4, 1, 4)))};
  const std::string cl = source::print_opencl(split_host_device(vec));
  EXPECT_TRUE(contains(cl,
                       "for (long lane = 0; lane < 4; ++lane) {\n    A[((tx * 4L) + 1L * lane)] = (1.0f + "
                       "A[((tx * 4L) + 1L * lane)]);"))
      << cl;
  build_on_pocl(cl, {"vec_kernel0"});
  Var v("v", DataType::Int(64, 4));
  LoweredFunc vec_let{
      "vec_let",
      {a},
      bind(tx, "threadIdx.x", 16,
           LetStmt::make(v, Ramp::make(tx * 4, 1, 4), Store::make(a, make_const(runtime::kFloat32, 1), tx)))};
  EXPECT_TRUE(contains(error_of([&] { source::print_opencl(split_host_device(vec_let)); }),
                       "kernel 'vec_let_kernel0': the opencl source printer cannot print vector values (int64x4) "
                       "outside a store"));
  LoweredFunc par{"par",
                  {a},
                  bind(tx, "threadIdx.x", 1,
                       For::make(i, 0, 64, ForKind::Parallel, Store::make(a, make_const(runtime::kFloat32, 1), i)))};
  EXPECT_TRUE(contains(error_of([&] { source::print_cuda(split_host_device(par)); }),
                       "the cuda source printer cannot print the parallel loop 'i'; bind it to blockIdx or threadIdx"));
  EXPECT_TRUE(contains(error_of([&] { source::print_c({mixed_types()}); }),
                       "the c source printer cannot print float16 values"));
  EXPECT_TRUE(contains(error_of([&] { source::print_c({vector_add(10, 4)}); }),
                       "the c source printer cannot print thread extents (blockIdx.x)"));
}

}  // namespace
}  // namespace tessera::targets
