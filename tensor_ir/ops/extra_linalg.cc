// det: Gaussian elimination with partial pivoting, unrolled over the static matrix size. Step k
// works on the trailing (M - k) x (M - k) block: one stage finds the largest |entry| of its first
// column, one the first row holding it (the pivot), and one builds the next block with the pivot
// row swapped to the top and eliminated from the rows below. The determinant is the product of
// the pivots, negated once per swap. All stages are tagged "det", whose template keeps each
// stage in its own loop nest (inlining the blocks into each other would grow exponentially).
#include <limits>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/extra.h"

namespace tessera::tensor_ir::ops {

namespace {

// The batch indices of `out` followed by `rest`.
std::vector<Expr> at(const std::vector<Var>& out, size_t batch, std::vector<Expr> rest) {
  std::vector<Expr> idx(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(batch));
  idx.insert(idx.end(), rest.begin(), rest.end());
  return idx;
}

}  // namespace

Tensor det(const Tensor& x) {
  DataType dt = x.dtype();
  if (!dt.is_float()) fail("det: the input must be float16, float32 or float64, got ", dt.str());
  size_t rank = x.ndim();
  if (rank < 2 || x->dim(rank - 1) != x->dim(rank - 2)) {
    std::vector<int64_t> shape;
    for (size_t d = 0; d < rank; ++d) shape.push_back(x->dim(d));
    fail("det: the input must be [..., M, M] (square matrices), got ", runtime::shape_str(shape));
  }
  int64_t m = x->dim(rank - 1);
  if (m > kMaxDetSize) fail("det: matrices of size ", m, " exceed the largest supported size ", kMaxDetSize);
  size_t batch = rank - 2;
  std::vector<Expr> batch_shape(x->shape.begin(), x->shape.begin() + static_cast<std::ptrdiff_t>(batch));
  DataType acc = dt.bits == 16 ? runtime::kFloat32 : dt;
  if (m == 0)
    return compute(
        batch_shape, [&](const std::vector<Var>&) { return make_one(dt); }, "det", "det");

  auto shape_of = [&](std::vector<int64_t> rest) {
    std::vector<Expr> s = batch_shape;
    for (int64_t r : rest) s.push_back(Expr(r));
    return s;
  };
  Tensor block =
      x.dtype() == acc
          ? x
          : compute(
                x->shape,
                [&](const std::vector<Var>& i) { return cast(acc, x(std::vector<Expr>(i.begin(), i.end()))); },
                "det_input", "det");
  // A NaN can hide from the pivot search (a comparison with NaN is false), so it is looked for.
  IterVar ri = reduce_axis(Range(Expr(0), Expr(m)), "ri"), rj = reduce_axis(Range(Expr(0), Expr(m)), "rj");
  Tensor has_nan = compute(
      batch_shape,
      [&](const std::vector<Var>& b) {
        Expr v = block(at(b, batch, {ri, rj}));
        return max_reduce(select(call(Intrinsic::isnan, {v}), Expr(int64_t{1}), Expr(int64_t{0})), {ri, rj});
      },
      "det_has_nan", "det");

  std::vector<Tensor> blocks, pivots;  // the block of each step and its pivot row
  for (int64_t k = 0; k < m; ++k) {
    int64_t n = m - k;
    blocks.push_back(block);
    if (n == 1) {
      pivots.push_back(Tensor());
      break;
    }
    IterVar r = reduce_axis(Range(Expr(0), Expr(n)), "r");
    Tensor column_max = compute(
        batch_shape,
        [&](const std::vector<Var>& b) {
          return max_reduce(tensor_ir::abs(block(at(b, batch, {r, Expr(0)}))), {r});
        },
        "det_column_max", "det");
    IterVar r2 = reduce_axis(Range(Expr(0), Expr(n)), "r");
    Tensor pivot = compute(
        batch_shape,
        [&](const std::vector<Var>& b) {
          Expr hit =
              tensor_ir::abs(block(at(b, batch, {r2, Expr(0)}))) == column_max(std::vector<Expr>(b.begin(), b.end()));
          return min_reduce(select(hit, cast(kIndexType, Expr(r2)), Expr(n - 1)), {r2});
        },
        "det_pivot", "det");
    pivots.push_back(pivot);
    Tensor prev = block;
    block = compute(
        shape_of({n - 1, n - 1}),
        [&](const std::vector<Var>& o) {
          Expr p = pivot(std::vector<Expr>(o.begin(), o.begin() + static_cast<std::ptrdiff_t>(batch)));
          Expr row = Expr(o[batch]) + Expr(1), col = Expr(o[batch + 1]) + Expr(1);
          // Row p moved to the top, so the row read for `row` is row 0 when row == p.
          Expr src = select(row == p, Expr(0), row);
          Expr top = prev(at(o, batch, {p, col})), head = prev(at(o, batch, {p, Expr(0)}));
          Expr lead = prev(at(o, batch, {src, Expr(0)}));
          Expr factor = select(head == make_zero(acc), make_zero(acc), lead / head);
          return prev(at(o, batch, {src, col})) - factor * top;
        },
        "det_block", "det");
  }
  return compute(
      batch_shape,
      [&](const std::vector<Var>& b) {
        std::vector<Expr> bi(b.begin(), b.end());
        Expr product;
        for (size_t k = 0; k < blocks.size(); ++k) {
          Expr term;
          if (pivots[k].defined()) {
            Expr p = pivots[k](bi);
            Expr v = blocks[k](at(b, batch, {p, Expr(0)}));
            term = select(p == Expr(int64_t{0}), v, -v);
          } else {
            term = blocks[k](at(b, batch, {Expr(0), Expr(0)}));
          }
          product = product.defined() ? product * term : term;
        }
        Expr nan = make_const(acc, std::numeric_limits<double>::quiet_NaN());
        return cast(dt, select(has_nan(bi) != Expr(int64_t{0}), nan, product));
      },
      "det", "det");
}

}  // namespace tessera::tensor_ir::ops
