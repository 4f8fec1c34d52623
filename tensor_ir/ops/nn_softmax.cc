// Softmax, log-softmax and hardmax along one axis (or, as ONNX before opset 13 has it, over an
// axis and all later ones jointly), and the negative log-likelihood loss. The row maximum and
// the sum of exponentials are reductions kept as size-1 dimensions (tag "softmax_stat"); the
// result is one elementwise stage (tag "softmax") over them and the input (or the
// exponentials, tag "softmax_exp", which the row template keeps in a row buffer).
#include <limits>

#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_util.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

std::vector<int64_t> softmax_axes(const Tensor& x, int64_t axis, bool trailing, const std::string& op) {
  int64_t a = normalize_axis(axis, x.ndim(), op + " axis");
  std::vector<int64_t> axes{a};
  if (trailing)
    for (size_t d = a + 1; d < x.ndim(); ++d) axes.push_back(static_cast<int64_t>(d));
  return axes;
}

// combine over `axes` of f(index), keeping them as size-1 dimensions.
Tensor row_reduce(const Tensor& x, const std::vector<int64_t>& axes, ReduceKind kind, const std::string& name,
                  const std::function<Expr(const std::vector<Expr>&, const std::vector<Var>&)>& f) {
  return keepdims_reduce(x, axes, kind, name, "softmax_stat", f);
}

Tensor row_max(const Tensor& x, const std::vector<int64_t>& axes, DataType acc, const std::string& name) {
  return row_reduce(x, axes, ReduceKind::Max, name,
                    [&](const std::vector<Expr>& idx, const std::vector<Var>&) { return read_as(x, idx, acc); });
}

// sum of exp(x - max) along the row.
Tensor row_exp_sum(const Tensor& x, const Tensor& m, const std::vector<int64_t>& axes, DataType acc,
                   const std::string& name) {
  return row_reduce(x, axes, ReduceKind::Sum, name, [&](const std::vector<Expr>& idx, const std::vector<Var>& v) {
    return exp(read_as(x, idx, acc) - m(as_exprs(v)));
  });
}

void check_float(const Tensor& x, const std::string& op) {
  if (!x.dtype().is_float()) fail(op, ": x must be float16, float32 or float64, got ", x.dtype().str());
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t axis, bool trailing) {
  check_float(x, "softmax");
  auto axes = softmax_axes(x, axis, trailing, "softmax");
  DataType acc = accumulation_type(x.dtype());
  Tensor m = row_max(x, axes, acc, "softmax_max");
  // The exponentials are a stage of their own (tag "softmax_exp"): computed once, read by the
  // sum and by the output, which scales by the sum's reciprocal.
  Tensor e = compute(
      x->shape,
      [&](const std::vector<Var>& v) { return exp(read_as(x, as_exprs(v), acc) - m(keepdims_index(v, axes))); },
      "softmax_exp", "softmax_exp");
  Tensor s = row_reduce(e, axes, ReduceKind::Sum, "softmax_sum",
                        [&](const std::vector<Expr>& idx, const std::vector<Var>&) { return e(idx); });
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        return cast(x.dtype(), e(as_exprs(v)) * (make_one(acc) / s(keepdims_index(v, axes))));
      },
      "softmax", "softmax");
}

Tensor log_softmax(const Tensor& x, int64_t axis, bool trailing) {
  check_float(x, "log_softmax");
  auto axes = softmax_axes(x, axis, trailing, "log_softmax");
  DataType acc = accumulation_type(x.dtype());
  Tensor m = row_max(x, axes, acc, "log_softmax_max");
  Tensor s = row_exp_sum(x, m, axes, acc, "log_softmax_sum");
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> r = keepdims_index(v, axes);
        return cast(x.dtype(), read_as(x, as_exprs(v), acc) - m(r) - log(s(r)));
      },
      "log_softmax", "softmax");
}

Tensor hardmax(const Tensor& x, int64_t axis, bool trailing) {
  if (x.dtype().is_bool()) fail("hardmax: x must be numeric, got bool");
  auto axes = softmax_axes(x, axis, trailing, "hardmax");
  DataType acc = accumulation_type(x.dtype());
  Tensor m = row_max(x, axes, acc, "hardmax_max");
  // The row-major position of the first maximum within the row.
  auto position = [&](const std::vector<Expr>& idx) {
    Expr p = make_zero(runtime::kInt64);
    for (int64_t a : axes) p = p * x->shape[a] + idx[a];
    return p;
  };
  Tensor first = row_reduce(
      x, axes, ReduceKind::Min, "hardmax_first", [&](const std::vector<Expr>& idx, const std::vector<Var>& v) {
        return select(read_as(x, idx, acc) == m(as_exprs(v)), position(idx), Expr(std::numeric_limits<int64_t>::max()));
      });
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx = as_exprs(v);
        return select(position(idx) == first(keepdims_index(v, axes)), make_one(x.dtype()), make_zero(x.dtype()));
      },
      "hardmax", "softmax");
}

Tensor nll_loss(const Tensor& input, const Tensor& target, const Tensor& weight, const std::string& reduction,
                int64_t ignore_index) {
  if (input.ndim() < 2) fail("nll_loss: input must be [N, C, d...], got rank ", input.ndim());
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    fail("nll_loss: reduction must be none, sum or mean, got '", reduction, "'");
  DataType acc = accumulation_type(input.dtype());
  int64_t classes = input->dim(1);
  auto cls = [&](const std::vector<Expr>& tidx) { return cast(runtime::kInt64, target(tidx)); };
  // Per target element: its weight (0 when ignored) and its loss -input[n, t, d...] * weight.
  auto weight_at = [&](const std::vector<Expr>& tidx) {
    Expr t = cls(tidx);
    Expr w = weight.defined() ? read_as(weight, {max(min(t, Expr(classes - 1)), Expr(0))}, acc) : make_one(acc);
    return select(t == Expr(ignore_index), make_zero(acc), w);
  };
  auto loss_at = [&](const std::vector<Expr>& tidx) {
    std::vector<Expr> idx{tidx[0], max(min(cls(tidx), Expr(classes - 1)), Expr(0))};
    idx.insert(idx.end(), tidx.begin() + 1, tidx.end());
    Expr w = weight_at(tidx);
    // Where the weight is 0 (ignored) the loss is 0 even if the input is inf.
    return select(w == make_zero(acc), make_zero(acc), -read_as(input, idx, acc) * w);
  };
  std::vector<int64_t> tshape = target->dims();
  if (reduction == "none")
    return compute(
        target->shape, [&](const std::vector<Var>& v) { return cast(input.dtype(), loss_at(as_exprs(v))); }, "nll_loss",
        "nll_loss");
  std::vector<IterVar> r;
  for (size_t d = 0; d < tshape.size(); ++d)
    r.push_back(reduce_axis(Range(Expr(0), Expr(tshape[d])), "r" + std::to_string(d)));
  std::vector<Expr> ridx(r.begin(), r.end());
  Tensor total = compute(
      {}, [&](const std::vector<Var>&) { return sum(loss_at(ridx), r); }, "nll_loss_sum", "nll_loss_stat");
  if (reduction == "sum")
    return compute(
        {}, [&](const std::vector<Var>&) { return cast(input.dtype(), total({})); }, "nll_loss", "nll_loss");
  std::vector<IterVar> r2;
  for (size_t d = 0; d < tshape.size(); ++d)
    r2.push_back(reduce_axis(Range(Expr(0), Expr(tshape[d])), "w" + std::to_string(d)));
  std::vector<Expr> widx(r2.begin(), r2.end());
  Tensor weights = compute(
      {}, [&](const std::vector<Var>&) { return sum(weight_at(widx), r2); }, "nll_loss_weight", "nll_loss_stat");
  return compute(
      {}, [&](const std::vector<Var>&) { return cast(input.dtype(), total({}) / weights({})); }, "nll_loss",
      "nll_loss");
}

}  // namespace tessera::tensor_ir::ops
