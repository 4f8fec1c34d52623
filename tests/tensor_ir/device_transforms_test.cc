// The device lowering passes on hand-written kernels: barriers where threads of a block share
// what they write (and nowhere else), thread extents of one tag merged, shared allocations
// hoisted to the kernel's top.
#include <gtest/gtest.h>


#include "runtime/error.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/transforms/hoist_shared_allocations.h"
#include "tensor_ir/transforms/insert_barriers.h"
#include "tensor_ir/transforms/merge_thread_extents.h"
#include "error_of.h"

namespace tessera::tensor_ir {
namespace {

using namespace tessera::testing;

using runtime::kFloat32;

Buffer buffer(const std::string& name, int64_t size, MemoryScope scope) {
  return BufferNode::make(name, kFloat32, {Expr(size)}, scope);
}

// A kernel of one block of 64 threads: launch_thread(bx) { launch_thread(tx) { body } }.
struct Kernel {
  Var bx{"bx"}, tx{"tx"};
  Stmt operator()(Stmt body) const {
    return ThreadExtent::make(bx, "blockIdx.x", Expr(4), ThreadExtent::make(tx, "threadIdx.x", Expr(64), body));
  }
};

// Each thread stores its element, then reads its neighbour's: without the barrier, the
// neighbour may not have stored it yet.
TEST(InsertBarriers, BetweenAWriteAndAnotherThreadsRead) {
  Kernel k;
  Buffer in = buffer("In", 256, MemoryScope::Global), out = buffer("Out", 256, MemoryScope::Global);
  Buffer s = buffer("S", 64, MemoryScope::Shared);
  Stmt body =
      Allocate::make(s, Block::make({Store::make(s, Load::make(in, k.bx * 64 + k.tx), k.tx),
                                     Store::make(out, Load::make(s, floormod(k.tx + 1, Expr(64))), k.bx * 64 + k.tx)}));
  EXPECT_EQ(to_string(insert_barriers(k(body))),
            "launch_thread (bx = blockIdx.x, 4) {\n"
            "  launch_thread (tx = threadIdx.x, 64) {\n"
            "    allocate S: float32[64] (shared)\n"
            "    S[tx] = In[bx*64 + tx]\n"
            "    barrier()\n"
            "    Out[bx*64 + tx] = S[(tx + 1) % 64]\n"
            "  }\n"
            "}\n");
}

TEST(InsertBarriers, NoneWhereNoThreadReadsAnothersWrite) {
  Kernel k;
  Buffer in = buffer("In", 256, MemoryScope::Global), out = buffer("Out", 256, MemoryScope::Global);
  // Only global and local buffers: each thread its own elements.
  Buffer l = buffer("L", 1, MemoryScope::Local);
  Stmt local = Allocate::make(l, Block::make({Store::make(l, Load::make(in, k.bx * 64 + k.tx), Expr(0)),
                                              Store::make(out, Load::make(l, Expr(0)), k.bx * 64 + k.tx)}));
  EXPECT_EQ(to_string(insert_barriers(k(local))), to_string(k(local)));
  // A shared buffer each thread reads back at the index it wrote: its own element.
  Buffer s = buffer("S", 64, MemoryScope::Shared);
  Stmt own = Allocate::make(s, Block::make({Store::make(s, Load::make(in, k.bx * 64 + k.tx), k.tx),
                                            Store::make(s, Load::make(s, k.tx) * 2, k.tx),
                                            Store::make(out, Load::make(s, k.tx), k.bx * 64 + k.tx)}));
  EXPECT_EQ(to_string(insert_barriers(k(own))), to_string(k(own)));
}

// A deep nest reading a shared buffer (a convolution's reduction around a register tile): each
// access is tracked once, however often the nest's loops are visited.
TEST(InsertBarriers, DeepNestsStayCheap) {
  Kernel k;
  Buffer a = buffer("A", 256, MemoryScope::Global), tile = buffer("T", 64, MemoryScope::Shared);
  Buffer acc = buffer("acc", 1, MemoryScope::Local);
  std::vector<Var> vars;
  Expr index = k.tx;
  for (int d = 0; d < 12; ++d) {
    vars.emplace_back("v" + std::to_string(d));
    index = index + vars.back();
  }
  Stmt nest = Store::make(acc, Load::make(acc, Expr(0)) + Load::make(tile, floormod(index, Expr(64))), Expr(0));
  for (int d = 11; d >= 0; --d) nest = For::make(vars[d], Expr(0), Expr(2), ForKind::Serial, nest);
  Stmt body = Allocate::make(
      tile, Allocate::make(acc, Block::make({Store::make(tile, Load::make(a, k.bx * 64 + k.tx), k.tx), nest})));
  const std::string text = to_string(insert_barriers(k(body)));
  EXPECT_EQ(text.find("barrier()"), text.rfind("barrier()")) << text;  // one, after the fill
  EXPECT_NE(text.find("barrier()"), std::string::npos) << text;
}

// The reduction loop of a tiled GEMM: each step refills the tile (write), then every thread
// reads all of it. A barrier after the fill (read after write) and one before the next fill,
// which other threads may still be reading (write after read).
TEST(InsertBarriers, TiledReductionLoopGetsBoth) {
  Kernel k;
  Var ko("ko"), r("r");
  Buffer a = buffer("A", 4096, MemoryScope::Global), c = buffer("C", 256, MemoryScope::Global);
  Buffer tile = buffer("T", 64, MemoryScope::Shared), acc = buffer("acc", 1, MemoryScope::Local);
  Stmt fill = Store::make(tile, Load::make(a, ko * 64 + k.tx), k.tx);
  Stmt use = For::make(r, Expr(0), Expr(64), ForKind::Serial,
                       Store::make(acc, Load::make(acc, Expr(0)) + Load::make(tile, r), Expr(0)));
  Stmt body = Allocate::make(
      tile,
      Allocate::make(acc, Block::make({Store::make(acc, make_zero(kFloat32), Expr(0)),
                                       For::make(ko, Expr(0), Expr(16), ForKind::Serial, Block::make({fill, use})),
                                       Store::make(c, Load::make(acc, Expr(0)), k.bx * 64 + k.tx)})));
  EXPECT_EQ(to_string(insert_barriers(k(body))),
            "launch_thread (bx = blockIdx.x, 4) {\n"
            "  launch_thread (tx = threadIdx.x, 64) {\n"
            "    allocate T: float32[64] (shared)\n"
            "    allocate acc: float32[1] (local)\n"
            "    acc[0] = 0.0f\n"
            "    for (ko, 0, 16) {\n"
            "      barrier()\n"
            "      T[tx] = A[ko*64 + tx]\n"
            "      barrier()\n"
            "      for (r, 0, 64) {\n"
            "        acc[0] = acc[0] + T[r]\n"
            "      }\n"
            "    }\n"
            "    C[bx*64 + tx] = acc[0]\n"
            "  }\n"
            "}\n");
}

// A barrier that only the threads taking a branch would reach would hang or race: refused.
TEST(InsertBarriers, RefusesABarrierUnderABranch) {
  Kernel k;
  Buffer in = buffer("In", 256, MemoryScope::Global), s = buffer("S", 64, MemoryScope::Shared);
  Stmt branch = IfThenElse::make(k.tx < 32, Block::make({Store::make(s, Load::make(in, k.tx), k.tx),
                                                         Store::make(s, Load::make(s, k.tx + 1), k.tx)}));
  std::string msg = error_of([&] { insert_barriers(k(Allocate::make(s, branch))); });
  EXPECT_NE(msg.find("the statements under if (tx < 32) need a barrier"), std::string::npos) << msg;
}

TEST(InsertBarriers, RefusesABarrierInALoopOfThreadDependentLength) {
  Kernel k;
  Var r("r");
  Buffer in = buffer("In", 256, MemoryScope::Global), s = buffer("S", 64, MemoryScope::Shared);
  Stmt body = Block::make({Store::make(s, Load::make(in, r), k.tx), Store::make(s, Load::make(s, k.tx + 1), k.tx)});
  Stmt loop = For::make(r, Expr(0), k.tx + 1, ForKind::Serial, body);
  std::string msg = error_of([&] { insert_barriers(k(Allocate::make(s, loop))); });
  EXPECT_NE(msg.find("loop r needs a barrier between its shared-memory accesses, but its trip count depends on thread "
                     "tx"),
            std::string::npos)
      << msg;
}

TEST(MergeThreadExtents, InnerLoopsOfATagRunOnTheOuterThreads) {
  Kernel k;
  Var inner("fill"), wide("wide");
  Buffer s = buffer("S", 64, MemoryScope::Shared);
  Stmt fill = ThreadExtent::make(inner, "threadIdx.x", Expr(16), Store::make(s, make_zero(kFloat32), inner));
  EXPECT_EQ(to_string(merge_thread_extents(k(fill))),
            "launch_thread (bx = blockIdx.x, 4) {\n"
            "  launch_thread (tx = threadIdx.x, 64) {\n"
            "    if (tx < 16) {\n"
            "      S[tx] = 0.0f\n"
            "    }\n"
            "  }\n"
            "}\n");
  Stmt too_wide = ThreadExtent::make(wide, "threadIdx.x", Expr(65), Store::make(s, make_zero(kFloat32), wide));
  std::string msg = error_of([&] { merge_thread_extents(k(too_wide)); });
  EXPECT_NE(msg.find("loop wide is bound to threadIdx.x with 65 iterations, but the launch it runs in has 64"),
            std::string::npos)
      << msg;
}

TEST(HoistSharedAllocations, ToTheTopOfTheKernel) {
  Kernel k;
  Var ko("ko");
  Buffer s = buffer("S", 64, MemoryScope::Shared), l = buffer("L", 2, MemoryScope::Local);
  Stmt loop = For::make(ko, Expr(0), Expr(3), ForKind::Serial,
                        Allocate::make(s, Allocate::make(l, Store::make(s, Load::make(l, Expr(0)), k.tx))));
  EXPECT_EQ(to_string(hoist_shared_allocations(k(loop))),
            "launch_thread (bx = blockIdx.x, 4) {\n"
            "  launch_thread (tx = threadIdx.x, 64) {\n"
            "    allocate S: float32[64] (shared)\n"
            "    for (ko, 0, 3) {\n"
            "      allocate L: float32[2] (local)\n"
            "      S[tx] = L[0]\n"
            "    }\n"
            "  }\n"
            "}\n");
}

}  // namespace
}  // namespace tessera::tensor_ir
