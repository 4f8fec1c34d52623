// Normalizations. Statistics are reductions into tensors of the input's rank with the reduced
// dimensions kept as size 1 (tag "norm_stat"), computed in float32 at least; the normalized
// output is one elementwise stage over them (tag "norm").
#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/ops/nn_util.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

// sum over `axes` of f(x at the index), keeping the reduced dimensions as size 1.
Tensor keepdims_sum(const Tensor& x, const std::vector<int64_t>& axes, const std::string& name,
                    const std::function<Expr(const std::vector<Expr>& idx, const std::vector<Var>& out)>& f) {
  return keepdims_reduce(x, axes, ReduceKind::Sum, name, "norm_stat", f);
}

// mean over `axes` (keepdims) in `acc`.
// The number of elements along `axes` of x as an `acc` value: a constant, or (symbolic sizes: an
// image of H x W) the product of the sizes converted as the kernel runs.
Expr count_along(const Tensor& x, const std::vector<int64_t>& axes, DataType acc) {
  Expr count = Expr(int64_t{1});
  for (int64_t a : axes) count = count * x->shape[a];
  count = arith::simplify(count);
  if (const int64_t* c = as_const_int(count)) return make_const(acc, static_cast<double>(*c));
  return cast(acc, count);
}

Tensor mean_of(const Tensor& x, const std::vector<int64_t>& axes, DataType acc, const std::string& name) {
  const Expr count = count_along(x, axes, acc);
  Tensor s = keepdims_sum(x, axes, name + "_sum",
                          [&](const std::vector<Expr>& idx, const std::vector<Var>&) { return read_as(x, idx, acc); });
  return compute(
      s->shape, [&](const std::vector<Var>& v) { return s(as_exprs(v)) / count; }, name, "norm_stat");
}

// mean over `axes` of (x - mean)^2.
Tensor variance_of(const Tensor& x, const Tensor& mean, const std::vector<int64_t>& axes, DataType acc,
                   const std::string& name) {
  const Expr count = count_along(x, axes, acc);
  Tensor s = keepdims_sum(x, axes, name + "_sum", [&](const std::vector<Expr>& idx, const std::vector<Var>& v) {
    Expr d = read_as(x, idx, acc) - mean(as_exprs(v));
    return d * d;
  });
  return compute(
      s->shape, [&](const std::vector<Var>& v) { return s(as_exprs(v)) / count; }, name, "norm_stat");
}

// Reads a per-channel (axis 1) vector for an element of x.
Expr channel(const Tensor& t, const std::vector<Var>& v, DataType acc) { return read_as(t, {v[1]}, acc); }

}  // namespace

Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean, const Tensor& var,
                  double epsilon) {
  if (x.ndim() < 2) fail("batch_norm: x must be [N, C, ...], got rank ", x.ndim());
  DataType acc = accumulation_type(x.dtype());
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        Expr y = (read_as(x, as_exprs(v), acc) - channel(mean, v, acc)) /
                 sqrt(channel(var, v, acc) + make_const(acc, epsilon));
        return cast(x.dtype(), y * channel(scale, v, acc) + channel(bias, v, acc));
      },
      "batch_norm", "broadcast");
}

Tensor instance_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, double epsilon) {
  if (x.ndim() < 3) fail("instance_norm: x must be [N, C, spatial...], got rank ", x.ndim());
  DataType acc = accumulation_type(x.dtype());
  std::vector<int64_t> axes;
  for (size_t d = 2; d < x.ndim(); ++d) axes.push_back(static_cast<int64_t>(d));
  Tensor mean = mean_of(x, axes, acc, "instance_norm_mean");
  Tensor var = variance_of(x, mean, axes, acc, "instance_norm_var");
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> s = keepdims_index(v, axes);
        Expr y = (read_as(x, as_exprs(v), acc) - mean(s)) / sqrt(var(s) + make_const(acc, epsilon));
        return cast(x.dtype(), y * channel(scale, v, acc) + channel(bias, v, acc));
      },
      "instance_norm", "norm");
}

std::vector<Tensor> layer_norm(const Tensor& x, const Tensor& scale, const Tensor& bias, int64_t axis, double epsilon,
                               DataType stat_dtype) {
  axis = normalize_axis(axis, x.ndim(), "layer_norm axis");
  // Statistics in float32 at least (float64 inputs keep float64).
  DataType acc = x.dtype().bits == 64 ? x.dtype() : runtime::kFloat32;
  std::vector<int64_t> axes;
  for (size_t d = axis; d < x.ndim(); ++d) axes.push_back(static_cast<int64_t>(d));
  Tensor mean = mean_of(x, axes, acc, "layer_norm_mean");
  Tensor var = variance_of(x, mean, axes, acc, "layer_norm_var");
  Tensor inv = compute(
      mean->shape,
      [&](const std::vector<Var>& v) { return make_one(acc) / sqrt(var(as_exprs(v)) + make_const(acc, epsilon)); },
      "layer_norm_inv_std", "norm_stat");
  auto bcast = [&](const Tensor& t, const std::vector<Var>& v) {
    std::vector<Expr> idx;
    size_t off = v.size() - t.ndim();
    for (size_t d = 0; d < t.ndim(); ++d) idx.push_back(t->dim(d) == 1 ? Expr(0) : Expr(v[off + d]));
    return read_as(t, idx, acc);
  };
  Tensor y = compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> s = keepdims_index(v, axes);
        Expr n = (read_as(x, as_exprs(v), acc) - mean(s)) * inv(s) * bcast(scale, v);
        if (bias.defined()) n = n + bcast(bias, v);
        return cast(x.dtype(), n);
      },
      "layer_norm", "norm");
  auto as_stat = [&](const Tensor& t, const std::string& name) {
    if (stat_dtype == acc) return t;
    return compute(
        t->shape, [&](const std::vector<Var>& v) { return cast(stat_dtype, t(as_exprs(v))); }, name, "norm");
  };
  return {y, as_stat(mean, "layer_norm_mean_out"), as_stat(inv, "layer_norm_inv_std_out")};
}

Tensor lrn(const Tensor& x, int64_t size, double alpha, double beta, double bias) {
  if (x.ndim() < 2) fail("lrn: x must be [N, C, ...], got rank ", x.ndim());
  if (size < 1) fail("lrn: size must be positive, got ", size);
  DataType acc = accumulation_type(x.dtype());
  int64_t before = (size - 1) / 2, channels = x->dim(1);
  IterVar r = reduce_axis(Range(Expr(0), Expr(size)), "r");
  Tensor squares = compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx = as_exprs(v);
        Expr c = v[1] - Expr(before) + r;
        idx[1] = max(min(c, Expr(channels - 1)), Expr(0));
        Expr e = read_as(x, idx, acc);
        return sum(select(logical_and(c >= Expr(0), c < Expr(channels)), e * e, make_zero(acc)), {r});
      },
      "lrn_square_sum", "norm_stat");
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        Expr d = make_const(acc, bias) + make_const(acc, alpha / static_cast<double>(size)) * squares(as_exprs(v));
        return cast(x.dtype(), read_as(x, as_exprs(v), acc) / call(Intrinsic::pow, {d, make_const(acc, beta)}));
      },
      "lrn", "norm");
}

Tensor mean_variance_normalization(const Tensor& x, const std::vector<int64_t>& axes_in) {
  std::vector<int64_t> axes;
  for (int64_t a : axes_in) axes.push_back(normalize_axis(a, x.ndim(), "mean_variance_normalization axes"));
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    fail("mean_variance_normalization: an axis is listed twice");
  DataType acc = accumulation_type(x.dtype());
  Tensor mean = mean_of(x, axes, acc, "mvn_mean");
  const Expr count = count_along(x, axes, acc);
  Tensor sq = keepdims_sum(x, axes, "mvn_square_sum", [&](const std::vector<Expr>& idx, const std::vector<Var>&) {
    Expr e = read_as(x, idx, acc);
    return e * e;
  });
  return compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> s = keepdims_index(v, axes);
        Expr m = mean(s);
        Expr stddev = sqrt(sq(s) / count - m * m);
        return cast(x.dtype(), (read_as(x, as_exprs(v), acc) - m) / (stddev + make_const(acc, 1e-9)));
      },
      "mean_variance_normalization", "norm");
}

int64_t normalize_axis(int64_t axis, size_t rank, const std::string& what) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    fail(what, " ", axis, " is out of range for rank ", rank, " (valid: ", -r, " to ", r - 1, ")");
  return axis < 0 ? axis + r : axis;
}

}  // namespace tessera::tensor_ir::ops
