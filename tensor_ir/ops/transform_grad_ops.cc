#include "tensor_ir/ops/transform_grad_ops.h"

#include <cstdlib>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/index_util.h"
#include "tensor_ir/ops/transform_index.h"

namespace tessera::tensor_ir::ops {

namespace {

using runtime::shape_str;

Tensor zeros(const Shape& shape, DataType dtype, const char* name) {
  return compute(
      shape_exprs(shape), [&](const std::vector<Var>&) { return make_zero(dtype); }, name, "transform");
}

}  // namespace

Tensor unslice(const Tensor& x, const Shape& shape, const std::vector<int64_t>& starts,
               const std::vector<int64_t>& ends, const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  std::vector<SliceDim> dims = slice_dims(shape, starts, ends, axes, steps);
  Shape xs = x->dims(), expected;
  for (const auto& d : dims) expected.push_back(d.length);
  if (xs != expected)
    fail("unslice: the input is ", shape_str(xs), ", but the slice of ", shape_str(shape), " is ", shape_str(expected));
  if (numel(xs) == 0) return zeros(shape, x.dtype(), "unslice");
  return compute(
      shape_exprs(shape),
      [&](const std::vector<Var>& o) {
        std::vector<Expr> idx;
        Expr inside;
        for (size_t d = 0; d < dims.size(); ++d) {
          const SliceDim& s = dims[d];
          if (s.start == 0 && s.step == 1 && s.length == shape[d]) {
            idx.push_back(o[d]);
            continue;
          }
          // rel: the distance from the slice's start in the direction of its step.
          int64_t step = std::llabs(s.step);
          Expr rel = s.step > 0 ? (s.start ? o[d] - Expr(s.start) : Expr(o[d])) : Expr(s.start) - o[d];
          Expr c = logical_and(rel >= Expr(0), rel < Expr(s.length * step));
          if (step > 1) c = logical_and(c, rel % Expr(step) == Expr(0));
          idx.push_back(step > 1 ? rel / Expr(step) : rel);
          inside = inside ? logical_and(inside, c) : c;
        }
        // Select reads lazily: x is only read inside the slice.
        return inside ? select(inside, x(idx), make_zero(x.dtype())) : x(idx);
      },
      "unslice", "transform");
}

Shape take_grad_shape(const Shape& x, const Shape& indices, int64_t axis, int64_t size) {
  if (x.size() < indices.size())
    fail("take_grad: the input ", shape_str(x), " has fewer axes than the indices ", shape_str(indices));
  if (size < 0) fail("take_grad: negative size ", size);
  auto rank = static_cast<int64_t>(x.size() - indices.size() + 1);
  int64_t a = normalize_axis(axis, rank, "take_grad: axis");
  Shape out(x.begin(), x.begin() + a);
  for (size_t d = 0; d < indices.size(); ++d)
    if (x[a + d] != indices[d])
      fail("take_grad: the input ", shape_str(x), " does not hold the indices' shape ", shape_str(indices), " at axis ",
           a);
  out.push_back(size);
  out.insert(out.end(), x.begin() + a + static_cast<int64_t>(indices.size()), x.end());
  return out;
}

Tensor take_grad(const Tensor& x, const Tensor& indices, int64_t axis, int64_t size) {
  if (!indices.dtype().is_integer()) fail("take_grad: indices must be integers, got ", indices.dtype().str());
  Shape is = indices->dims();
  Shape out = take_grad_shape(x->dims(), is, axis, size);
  int64_t a = normalize_axis(axis, static_cast<int64_t>(out.size()));
  if (numel(is) == 0 || numel(out) == 0) return zeros(out, x.dtype(), "take_grad");
  return compute(
      shape_exprs(out),
      [&](const std::vector<Var>& o) {
        std::vector<IterVar> ks;
        std::vector<Expr> at;
        for (size_t d = 0; d < is.size(); ++d) {
          ks.push_back(reduce_axis(Range(Expr(0), Expr(is[d])), "k" + std::to_string(d)));
          at.push_back(ks.back().var());
        }
        std::vector<Expr> idx(o.begin(), o.begin() + a);
        idx.insert(idx.end(), at.begin(), at.end());
        idx.insert(idx.end(), o.begin() + a + 1, o.end());
        // A select rather than a reduction condition, so that the reduction vectorizes.
        Expr hit = wrap_and_clamp_index(indices(at), size) == o[a];
        Expr value = select(hit, x(idx), make_zero(x.dtype()));
        return ks.empty() ? value : sum(value, ks);
      },
      "take_grad", "scatter");
}

Tensor weighted_gather(const Tensor& x, const Tensor& index, const Tensor& weight, int64_t axis) {
  if (!index.dtype().is_integer()) fail("weighted_gather: the index table must be integers, got ", index.dtype().str());
  if (weight.dtype() != x.dtype())
    fail("weighted_gather: the weights are ", weight.dtype().str(), ", the input ", x.dtype().str());
  Shape xs = x->dims(), table = index->dims();
  if (table.size() != 2 || weight->dims() != table)
    fail("weighted_gather: index and weight must be [n, K] tables of one shape, got ", shape_str(table), " and ",
         shape_str(weight->dims()));
  int64_t a = normalize_axis(axis, static_cast<int64_t>(xs.size()), "weighted_gather: axis");
  int64_t length = xs[a], taps = table[1];
  Shape out = xs;
  out[a] = table[0];
  if (numel(out) == 0 || taps == 0 || length == 0) return zeros(out, x.dtype(), "weighted_gather");
  return compute(
      shape_exprs(out),
      [&](const std::vector<Var>& o) {
        IterVar k = reduce_axis(Range(Expr(0), Expr(taps)), "k");
        std::vector<Expr> idx = as_exprs(o);
        idx[a] = wrap_and_clamp_index(index(o[a], k.var()), length);
        return sum(weight(o[a], k.var()) * x(idx), {k});
      },
      "weighted_gather", "scatter");
}

}  // namespace tessera::tensor_ir::ops
