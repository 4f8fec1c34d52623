// A compute graph of symbolic sizes bound to sizes reads as the graph built at those sizes: the
// extents and products of dimensions folded, the operators' own arithmetic left as written.
#include <gtest/gtest.h>

#include "runtime/error.h"
#include "tensor_ir/bind_sizes.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"

namespace tessera::tensor_ir {
namespace {

// A row-clamped product of `rows` rows (L*N: a flattened batch) and depth k.
std::vector<Tensor> product(const Expr& rows, const Expr& k) {
  Tensor a = placeholder({rows, k}, runtime::kFloat32, "a");
  Tensor b = placeholder({k, Expr(8)}, runtime::kFloat32, "b");
  IterVar r = reduce_axis(Range(Expr(0), k), "r");
  Tensor c = compute(
      {rows, Expr(8)}, [&](const std::vector<Var>& v) { return sum(a(min(v[0], rows - 1), r) * b(r, v[1]), {r}); }, "c",
      "matmul");
  return {c};
}

TEST(BindSizes, ReadsAsTheGraphBuiltAtThoseSizes) {
  Var l("L"), n("N"), k("K");
  std::vector<Tensor> symbolic = product(l * n, k);
  std::vector<Var> vars = size_vars(symbolic);
  ASSERT_EQ(vars.size(), 3u);
  EXPECT_EQ(vars[0].name(), "L");
  EXPECT_EQ(vars[2].name(), "K");
  std::vector<Tensor> bound = bind_sizes(symbolic, {{"L", 128}, {"N", 2}, {"K", 40}});
  EXPECT_EQ(to_string(bound), to_string(product(Expr(256), Expr(40))));
  EXPECT_NE(to_string(bound).find("min(i, 256 - 1)"), std::string::npos);
  EXPECT_TRUE(size_vars(bound).empty());
  EXPECT_THROW(bind_sizes(symbolic, {{"L", 128}, {"N", 2}}), Error);
}

}  // namespace
}  // namespace tessera::tensor_ir
