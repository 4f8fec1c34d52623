// The DSL from C++: define a matrix multiplication, schedule it, compile it for this CPU and
// call it on aligned arrays. Built as build/bin/example_gemm_cpp.
#include <cmath>
#include <cstdio>
#include <vector>

#include "runtime/ndarray.h"
#include "schedule/lower.h"
#include "targets/build.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

using namespace tessera;
using namespace tessera::tensor_ir;

int main() {
  const int64_t n = 256, m = 192, k = 128;
  Tensor A = placeholder({Expr(n), Expr(k)}, runtime::kFloat32, "A");
  Tensor B = placeholder({Expr(k), Expr(m)}, runtime::kFloat32, "B");
  IterVar r = reduce_axis(Range(Expr(0), Expr(k)), "r");
  Tensor C = compute(
      {Expr(n), Expr(m)}, [&](const std::vector<Var>& i) { return sum(A(i[0], r) * B(r, i[1]), {r}); }, "C");

  schedule::Schedule s({C});
  schedule::Stage& c = s[C];
  auto tiles = c.tile(c.loop("i"), c.loop("j"), 8, 32);  // i.outer, j.outer, i.inner, j.inner
  c.reorder({tiles[0], tiles[1], c.loop(r), tiles[2], tiles[3]});
  c.unroll(tiles[2]);
  c.vectorize(tiles[3]);
  c.parallel(tiles[0]);

  LoweredFunc f = schedule::lower(s, {A, B, C}, "matmul");
  std::printf("%s\n", to_string(f).c_str());
  auto module = targets::build({f}, targets::Target::parse("llvm"));
  runtime::Kernel kernel = module->get_kernel("matmul");

  auto a = runtime::NDArray::empty({n, k}, runtime::kFloat32);
  auto b = runtime::NDArray::empty({k, m}, runtime::kFloat32);
  auto out = runtime::NDArray::empty({n, m}, runtime::kFloat32);
  for (int64_t i = 0; i < n * k; ++i) a.data_as<float>()[i] = float(i % 7) - 3;
  for (int64_t i = 0; i < k * m; ++i) b.data_as<float>()[i] = float(i % 5) - 2;
  kernel({a, b, out});  // checks shapes and dtypes, then runs

  double max_error = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j) {
      double ref = 0;
      for (int64_t q = 0; q < k; ++q) ref += a.data_as<float>()[i * k + q] * b.data_as<float>()[q * m + j];
      max_error = std::max(max_error, std::abs(ref - out.data_as<float>()[i * m + j]));
    }
  std::printf("max |C - A*B| = %g\n", max_error);
  return max_error < 1e-3 ? 0 : 1;
}
