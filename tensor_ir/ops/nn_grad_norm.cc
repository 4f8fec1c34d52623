// Batch normalization in training mode: per-channel statistics of the batch are reductions over
// every dimension but the channels (tag "batch_norm_train", scheduled as reductions whose
// trailing, contiguous loops run innermost), kept as one-value-per-channel stages; the
// normalized output and the running-statistics updates are elementwise over them.
#include "runtime/error.h"
#include "tensor_ir/ops/nn_grad.h"
#include "tensor_ir/ops/nn_util.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

// sum over every dimension of x but the channels (axis 1) of f(x's index), one value per channel.
Tensor channel_sum(const Tensor& x, const std::string& name, const std::function<Expr(const std::vector<Expr>&)>& f) {
  std::vector<IterVar> axes;
  for (size_t d = 0; d < x.ndim(); ++d)
    if (d != 1) axes.push_back(reduce_axis(Range(Expr(0), Expr(x->dim(d))), "r" + std::to_string(d)));
  return compute({Expr(x->dim(1))},
                 [&](const std::vector<Var>& c) {
                   std::vector<Expr> idx{axes[0], c[0]};
                   for (size_t a = 1; a < axes.size(); ++a) idx.push_back(axes[a]);
                   return sum(f(idx), axes);
                 },
                 name, "batch_norm_train", {"c"});
}

Tensor per_channel(const Tensor& x, const std::string& name, DataType dtype,
                   const std::function<Expr(const Expr& c)>& f) {
  return compute({Expr(x->dim(1))}, [&](const std::vector<Var>& c) { return cast(dtype, f(c[0])); }, name,
                 "batch_norm_train", {"c"});
}

}  // namespace

std::vector<Tensor> batch_norm_train(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                                     const Tensor& var, double epsilon, double momentum, bool unbiased_running_var) {
  if (x.ndim() < 2) fail("batch_norm_train: x must be [N, C, ...], got rank ", x.ndim());
  DataType acc = accumulation_type(x.dtype()), stat = mean.dtype();
  double count = 1;
  for (size_t d = 0; d < x.ndim(); ++d)
    if (d != 1) count *= static_cast<double>(x->dim(d));
  if (unbiased_running_var && count < 2)
    fail("batch_norm_train: the unbiased variance needs two values per channel, got ", count);
  Tensor total = channel_sum(x, "batch_norm_train_sum", [&](const std::vector<Expr>& i) { return read_as(x, i, acc); });
  Tensor batch_mean =
      per_channel(x, "batch_norm_train_mean", acc, [&](const Expr& c) { return total(c) / make_const(acc, count); });
  Tensor squares = channel_sum(x, "batch_norm_train_squares", [&](const std::vector<Expr>& i) {
    Expr d = read_as(x, i, acc) - batch_mean(i[1]);
    return d * d;
  });
  Tensor inv_std = per_channel(x, "batch_norm_train_inv_std", acc, [&](const Expr& c) {
    return make_one(acc) / sqrt(squares(c) / make_const(acc, count) + make_const(acc, epsilon));
  });
  Tensor y = compute(
      x->shape,
      [&](const std::vector<Var>& v) {
        Expr c = v[1];
        Expr n = (read_as(x, as_exprs(v), acc) - batch_mean(c)) * inv_std(c);
        return cast(x.dtype(), n * read_as(scale, {c}, acc) + read_as(bias, {c}, acc));
      },
      "batch_norm_train", "batch_norm_train");
  Expr m = make_const(acc, momentum), rest = make_const(acc, 1 - momentum);
  Tensor running_mean = per_channel(x, "batch_norm_train_running_mean", stat,
                                    [&](const Expr& c) { return m * read_as(mean, {c}, acc) + rest * batch_mean(c); });
  double var_scale = unbiased_running_var ? count / (count - 1) : 1.0;
  Tensor running_var = per_channel(x, "batch_norm_train_running_var", stat, [&](const Expr& c) {
    return m * read_as(var, {c}, acc) + rest * (squares(c) / make_const(acc, count)) * make_const(acc, var_scale);
  });
  auto as_stat = [&](const Tensor& t, const std::string& name) {
    return stat == acc ? t : per_channel(x, name, stat, [&](const Expr& c) { return t(c); });
  };
  return {y, running_mean, running_var, as_stat(batch_mean, "batch_norm_train_saved_mean"),
          as_stat(inv_std, "batch_norm_train_saved_inv_std")};
}

}  // namespace tessera::tensor_ir::ops
