// Lowered device functions written by hand, as device lowering produces them (loops bound to
// blockIdx/threadIdx as ThreadExtents, shared and local allocations, barriers): the inputs of the
// host/device split, the verifier, the source printers and the device targets' tests.
#pragma once
#include <string>
#include <vector>

#include "tensor_ir/op.h"

namespace tessera::testing {

using namespace tensor_ir;

inline Buffer device_buffer(const std::string& name, std::vector<int64_t> shape,
                            MemoryScope scope = MemoryScope::Global, runtime::DataType dtype = runtime::kFloat32) {
  std::vector<Expr> dims(shape.begin(), shape.end());
  return BufferNode::make(name, dtype, dims, scope);
}

inline Stmt bind(const Var& v, const std::string& tag, int64_t extent, Stmt body) {
  return ThreadExtent::make(v, tag, Expr(extent), std::move(body));
}

inline Stmt barrier() { return Evaluate::make(Call::make(runtime::kInt32, Intrinsic::barrier, {})); }

// C = A + B over n elements in blocks of `block` threads; a guard where n is not a multiple.
inline LoweredFunc vector_add(int64_t n, int64_t block, runtime::DataType dtype = runtime::kFloat32) {
  Buffer a = device_buffer("A", {n}, MemoryScope::Global, dtype),
         b = device_buffer("B", {n}, MemoryScope::Global, dtype),
         c = device_buffer("C", {n}, MemoryScope::Global, dtype);
  Var bx("bx"), tx("tx");
  Expr i = bx * block + tx;
  Stmt store = Store::make(c, Load::make(a, i) + Load::make(b, i), i);
  if (n % block) store = IfThenElse::make(i < n, store);
  return {"vadd", {a, b, c}, bind(bx, "blockIdx.x", (n + block - 1) / block, bind(tx, "threadIdx.x", block, store))};
}

// B[r] = the sum of row r of A (rows x cols): one block per row; each of `threads` threads (a power
// of two) sums a strided part of the row into a local accumulator, then the block adds the partial
// sums as a tree in shared memory, with a barrier between the steps.
inline LoweredFunc row_sum(int64_t rows, int64_t cols, int64_t threads) {
  Buffer a = device_buffer("A", {rows, cols}), b = device_buffer("B", {rows});
  Buffer partial = device_buffer("partial", {threads}, MemoryScope::Shared);
  Buffer acc = device_buffer("acc", {1}, MemoryScope::Local);
  Var bx("bx"), tx("tx"), k("k");
  Expr col = k * threads + tx;
  Stmt accumulate =
      IfThenElse::make(col < cols, Store::make(acc, Load::make(acc, 0) + Load::make(a, bx * cols + col), Expr(0)));
  std::vector<Stmt> steps{
      Allocate::make(acc, Block::make({Store::make(acc, make_const(runtime::kFloat32, 0), Expr(0)),
                                       For::make(k, 0, (cols + threads - 1) / threads, ForKind::Serial, accumulate),
                                       Store::make(partial, Load::make(acc, 0), tx)})),
      barrier()};
  for (int64_t half = threads / 2; half >= 1; half /= 2) {
    steps.push_back(IfThenElse::make(
        tx < half, Store::make(partial, Load::make(partial, tx) + Load::make(partial, tx + half), tx)));
    steps.push_back(barrier());
  }
  steps.push_back(IfThenElse::make(tx == 0, Store::make(b, Load::make(partial, 0), bx)));
  Stmt body =
      bind(bx, "blockIdx.x", rows, Allocate::make(partial, bind(tx, "threadIdx.x", threads, Block::make(steps))));
  return {"row_sum", {a, b}, body};
}

// Two kernels passing data through a global workspace buffer: T = A * 2, then B = T + 1, the
// second kernel with threadIdx.x bound twice (64 threads, then 32 of them for a second store).
inline LoweredFunc two_kernels(int64_t n) {
  Buffer a = device_buffer("A", {n}), b = device_buffer("B", {n}), t = device_buffer("T", {n});
  Var bx0("bx"), tx0("tx"), bx1("bx"), tx1("tx"), tx2("tx");
  auto f32 = [](double v) { return make_const(runtime::kFloat32, v); };
  Expr i0 = bx0 * 64 + tx0, i1 = bx1 * 64 + tx1;
  const int64_t blocks = (n + 63) / 64;
  Stmt k0 =
      bind(bx0, "blockIdx.x", blocks,
           bind(tx0, "threadIdx.x", 64, IfThenElse::make(i0 < n, Store::make(t, Load::make(a, i0) * f32(2), i0))));
  Stmt k1 = bind(bx1, "blockIdx.x", blocks,
                 Block::make({bind(tx1, "threadIdx.x", 64,
                                   IfThenElse::make(i1 < n, Store::make(b, Load::make(t, i1) + f32(1), i1))),
                              // B[bx] (the first of each block's 64) once more, by 32 threads of which one writes.
                              bind(tx2, "threadIdx.x", 32,
                                   IfThenElse::make(And::make(tx2 == 0, bx1 * 64 < n),
                                                    Store::make(b, Load::make(t, bx1 * 64) + f32(1), bx1 * 64)))}));
  return {"two", {a, b}, Allocate::make(t, Block::make({k0, k1}))};
}

}  // namespace tessera::testing
