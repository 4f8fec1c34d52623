// The host/device split (kernels, their parameters, launch extents, workspace, guards for a thread
// axis bound with two extents) and the device verifier's refusals.
#include <gtest/gtest.h>

#include "device_programs.h"
#include "runtime/error.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/transforms/split_host_device.h"
#include "tensor_ir/transforms/verify_device.h"
#include "error_of.h"

namespace tessera::tensor_ir {
namespace {

using namespace tessera::testing;

std::vector<std::string> names(const std::vector<Buffer>& buffers) {
  std::vector<std::string> out;
  for (const Buffer& b : buffers) out.push_back(b.name());
  return out;
}

TEST(SplitHostDevice, OneKernelWithGridAndBlock) {
  DeviceProgram p = split_host_device(vector_add(1000, 128));
  ASSERT_EQ(p.kernels.size(), 1u);
  const DeviceKernel& k = p.kernels[0];
  EXPECT_EQ(k.func.name, "vadd_kernel0");
  EXPECT_EQ(names(k.func.args), (std::vector<std::string>{"A", "B", "C"}));
  EXPECT_EQ(to_string(k.grid[0]) + " " + to_string(k.grid[1]) + " " + to_string(k.grid[2]), "8 1 1");
  EXPECT_EQ(k.block, (std::array<int64_t, 3>{128, 1, 1}));
  EXPECT_EQ(k.shared_bytes, 0);
  EXPECT_TRUE(p.workspace.empty());
  verify_device_program(p, DeviceLimits{});
}

TEST(SplitHostDevice, SharedMemoryIsCounted) {
  DeviceProgram p = split_host_device(row_sum(3, 100, 64));
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].shared_bytes, 64 * 4);
  EXPECT_EQ(to_string(p.kernels[0].grid[0]), "3");
  verify_device_program(p, DeviceLimits{});
}

TEST(SplitHostDevice, WorkspaceBetweenKernelsAndGuardedSmallerExtent) {
  DeviceProgram p = split_host_device(two_kernels(100));
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(names(p.workspace), std::vector<std::string>{"T"});
  EXPECT_EQ(names(p.kernels[0].func.args), (std::vector<std::string>{"A", "T"}));
  EXPECT_EQ(names(p.kernels[1].func.args), (std::vector<std::string>{"B", "T"}));
  EXPECT_EQ(p.kernels[1].block[0], 64);
  // The second binding of threadIdx.x (32) now spans the launch's 64 threads behind a guard.
  const std::string text = to_string(p.kernels[1].func.body);
  EXPECT_NE(text.find("tx_1 < 32"), std::string::npos) << text;
  verify_device_program(p, DeviceLimits{});
}

TEST(SplitHostDevice, GuardsThreadIndicesOfAnyIntegerType) {
  Buffer a = device_buffer("A", {64});
  Var b("b", runtime::kInt32), t0("t0", runtime::kInt32), t1("t1", runtime::kInt32);
  auto store = [&](const Var& t) {
    return Store::make(a, make_const(runtime::kFloat32, 1), Cast::make(kIndexType, t));
  };
  Stmt body = Block::make({ThreadExtent::make(t0, "threadIdx.x", make_const(runtime::kInt32, 64), store(t0)),
                           ThreadExtent::make(t1, "threadIdx.x", make_const(runtime::kInt32, 16), store(t1))});
  DeviceProgram p =
      split_host_device({"f", {a}, ThreadExtent::make(b, "blockIdx.x", make_const(runtime::kInt32, 1), body)});
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].block[0], 64);
  EXPECT_NE(to_string(p.kernels[0].func.body).find("if (t1 < int32(16))"), std::string::npos)
      << to_string(p.kernels[0].func.body);
}

TEST(SplitHostDevice, RefusesNonConstantExtentAndNestedRebinding) {
  Buffer a = device_buffer("A", {10});
  Var n("n"), tx("tx"), tx2("tx2");
  LoweredFunc symbolic{
      "f", {a}, ThreadExtent::make(tx, "threadIdx.x", n, Store::make(a, make_const(runtime::kFloat32, 0), tx))};
  EXPECT_NE(error_of([&] { split_host_device(symbolic); }).find("kernel 'f_kernel0': the extent of threadIdx.x (tx)"),
            std::string::npos);
  LoweredFunc nested{
      "g",
      {a},
      bind(tx, "threadIdx.x", 4, bind(tx2, "threadIdx.x", 2, Store::make(a, make_const(runtime::kFloat32, 0), tx)))};
  EXPECT_NE(error_of([&] { split_host_device(nested); }).find("threadIdx.x is bound again (tx2)"), std::string::npos);
  Buffer s = device_buffer("S", {10}, MemoryScope::Shared);
  LoweredFunc shared_outside{
      "h", {a}, Allocate::make(s, bind(tx, "threadIdx.x", 4, Store::make(s, Load::make(a, tx), tx)))};
  EXPECT_NE(
      error_of([&] { split_host_device(shared_outside); }).find("shared buffer 'S' is allocated outside every kernel"),
      std::string::npos);
}

TEST(VerifyDevice, RefusesUnboundLoopsAndStores) {
  Buffer a = device_buffer("A", {10});
  Var i("i"), tx("tx");
  LoweredFunc loop{"f", {a}, For::make(i, 0, 10, ForKind::Serial, Store::make(a, make_const(runtime::kFloat32, 1), i))};
  EXPECT_NE(error_of([&] {
              verify_device_program(split_host_device(loop), {});
            }).find("kernel 'f_kernel0': loop 'i' is outside every thread extent"),
            std::string::npos);
  LoweredFunc store{"g",
                    {a},
                    Block::make({bind(tx, "threadIdx.x", 10, Store::make(a, make_const(runtime::kFloat32, 1), tx)),
                                 Store::make(a, make_const(runtime::kFloat32, 2), Expr(0))})};
  EXPECT_NE(error_of([&] {
              verify_device_program(split_host_device(store), {});
            }).find("the store to buffer 'A' is outside every thread extent"),
            std::string::npos);
}

TEST(VerifyDevice, RefusesWhatTheDeviceCannotHold) {
  DeviceProgram p = split_host_device(vector_add(4096, 2048));
  EXPECT_NE(error_of([&] { verify_device_program(p, {}); })
                .find("kernel 'vadd_kernel0' has 2048 threads per block (threadIdx extents 2048 x 1 x 1); the device "
                      "allows 1024"),
            std::string::npos);
  DeviceProgram r = split_host_device(row_sum(2, 8, 64));
  EXPECT_NE(error_of([&] {
              verify_device_program(r, {1024, 128});
            }).find("kernel 'row_sum_kernel0' needs 256 bytes of shared memory per block; the device allows 128"),
            std::string::npos);
}

TEST(VerifyDevice, RefusesDivergentBarriersOnly) {
  Buffer a = device_buffer("A", {64}), s = device_buffer("S", {64}, MemoryScope::Shared);
  Var bx("bx"), tx("tx"), j("j");
  auto kernel = [&](Stmt inner) {
    return LoweredFunc{
        "f", {a}, bind(bx, "blockIdx.x", 2, Allocate::make(s, bind(tx, "threadIdx.x", 64, std::move(inner))))};
  };
  // Under a condition on blockIdx (the same for the whole block) a barrier is fine.
  verify_device_program(split_host_device(kernel(IfThenElse::make(bx == 0, barrier()))), {});
  EXPECT_NE(error_of([&] {
              verify_device_program(split_host_device(kernel(IfThenElse::make(tx < 32, barrier()))), {});
            }).find("kernel 'f_kernel0': a barrier under control flow that depends on the thread index (tx < 32)"),
            std::string::npos);
  // Through a let and through a loop bound.
  Var t2("t2");
  Stmt let = LetStmt::make(t2, tx * 2, IfThenElse::make(t2 < 8, barrier()));
  EXPECT_NE(error_of([&] { verify_device_program(split_host_device(kernel(let)), {}); }).find("a barrier under"),
            std::string::npos);
  Stmt loop = For::make(j, 0, tx, ForKind::Serial, barrier());
  EXPECT_NE(error_of([&] { verify_device_program(split_host_device(kernel(loop)), {}); }).find("a barrier under"),
            std::string::npos);
}

// A warp shuffle needs every lane of its warp, as a barrier needs every thread of its block.
TEST(VerifyDevice, RefusesDivergentWarpShufflesOnly) {
  Buffer a = device_buffer("A", {64});
  Var tx("tx");
  auto kernel = [&](Expr condition) {
    Expr value = Load::make(a, tx);
    Expr shuffled = Call::make(runtime::kFloat32, Intrinsic::warp_shuffle_down, {value, make_const(runtime::kInt32, 1)});
    Stmt store = Store::make(a, shuffled, tx);
    return split_host_device(
        LoweredFunc{"f", {a}, bind(tx, "threadIdx.x", 64, condition.defined() ? IfThenElse::make(condition, store) : store)});
  };
  verify_device_program(kernel(Expr()), {});
  EXPECT_NE(error_of([&] { verify_device_program(kernel(tx < 32), {}); })
                .find("kernel 'f_kernel0': a warp shuffle under control flow that depends on the thread index (tx < "
                      "32): every lane of a warp must take part in it"),
            std::string::npos);
}

}  // namespace
}  // namespace tessera::tensor_ir
