// Normalizations: batch_norm (inference), batch_norm_train, instance_norm, layer_norm, lrn,
// mean_variance_normalization, with their gradients. batch_norm_train is batch normalization in
// training mode (ONNX BatchNormalization with training_mode=1, PyTorch's BatchNorm in train()): it
// normalizes with the batch's statistics and returns the updated running statistics beside the
// saved ones its gradient reads.
// Gradients: normalizing with statistics of x itself (batch_norm_train, instance_norm,
// layer_norm) differentiates through them: with x_hat = (x - mean) * inv_std over n values and
// g' the cotangent of x_hat,
//   dx = inv_std * (g' - mean(g') - x_hat * mean(g' * x_hat)),
// and cotangents of returned statistics (the running and saved ones, zero in practice and then
// skipped) add theirs: d mean / dx = 1 / n, d var / dx = 2 (x - mean) / n.
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/nn_grad.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

const TensorTypeNode& float_input(const std::vector<Type>& args, size_t min_rank) {
  const auto& x = tensor_arg(args, 0, "x");
  require_float(x, "x");
  if (x.ndim() < min_rank) fail("x must have rank >= ", min_rank, ", got ", runtime::shape_str(x.shape));
  return x;
}

// Arguments first..last-1 must be float vectors of one value per channel (axis 1 of x).
void check_channel_params(const std::vector<Type>& args, const TensorTypeNode& x, size_t first,
                          std::initializer_list<const char*> names) {
  size_t i = first;
  for (const char* name : names) {
    const auto& p = tensor_arg(args, i++, name);
    require_float(p, name);
    if (p.ndim() == 1 && p.shape.is_static())
      tensor_ir::require_constant_dim(
          x.shape.dim(1), p.shape[0],
          std::string(name) + " " + p.shape.str() + " gives one value per channel of x " + x.shape.str());
    if (p.shape != std::vector<int64_t>{x.shape[1]})
      fail(name, " must have shape [", x.shape[1], "] (one value per channel), got ", runtime::shape_str(p.shape));
  }
}

Type batch_norm_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& x = float_input(args, 2);
  check_channel_params(args, x, 1, {"scale", "bias", "mean", "var"});
  return args[0];
}

Type instance_norm_rel(const std::vector<Type>& args, const Attrs&) {
  const auto& x = float_input(args, 3);
  check_channel_params(args, x, 1, {"scale", "bias"});
  return args[0];
}

Type layer_norm_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = float_input(args, 1);
  int64_t axis = ops::normalize_axis(attrs.get_int("axis"), x.ndim(), "axis");
  for (size_t i = 1; i < args.size(); ++i) {
    const char* name = i == 1 ? "scale" : "bias";
    const auto& p = tensor_arg(args, i, name);
    if (p.dtype != x.dtype) fail(name, " dtype ", p.dtype.str(), " differs from x's ", x.dtype.str());
    // numpy broadcasting onto x, without growing x
    if (p.ndim() > x.ndim()) fail(name, " ", p.shape.str(), " has a higher rank than x ", x.shape.str());
    for (size_t d = 0; d < p.ndim(); ++d) {
      const tensor_ir::Expr pd = p.shape.dim(d), xd = x.shape.dim(x.ndim() - p.ndim() + d);
      if (tensor_ir::is_const_int(pd, 1) || dims_equal(pd, xd)) continue;
      const std::string message = std::string(name) + " " + p.shape.str() + " does not broadcast to x " + x.shape.str();
      if (const int64_t* size = tensor_ir::as_const_int(pd)) tensor_ir::require_constant_dim(xd, *size, message);
      fail(message);
    }
  }
  DataType stat = DataType::parse(attrs.get_str("stat_dtype"));
  if (!stat.is_float() || !stat.is_scalar()) fail("stat_dtype must be a float type, got ", stat.str());
  if (!attrs.get_int("statistics")) return args[0];
  std::vector<tensor_ir::Expr> s = x.shape.dims();
  for (size_t d = axis; d < s.size(); ++d) s[d] = 1;
  return tuple_type({args[0], tensor_type(Shape(s), stat), tensor_type(Shape(s), stat)});
}

Type batch_norm_train_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = tensor_arg(args, 0, "x");
  require_float(x, "x");
  if (x.ndim() < 2) fail("x must be [N, C, ...], got ", runtime::shape_str(x.shape));
  const char* names[] = {"scale", "bias", "mean", "var"};
  for (size_t i = 1; i < 5; ++i) {
    const auto& p = tensor_arg(args, i, names[i - 1]);
    require_float(p, names[i - 1]);
    if (p.shape != std::vector<int64_t>{x.shape[1]})
      fail(names[i - 1], " must have shape [", x.shape[1], "] (one value per channel), got ",
           runtime::shape_str(p.shape));
  }
  const auto& mean = tensor_arg(args, 3, "mean");
  if (tensor_arg(args, 4, "var").dtype != mean.dtype) fail("var dtype differs from mean's ", mean.dtype.str());
  int64_t unbiased = attrs.get_int("unbiased_running_var");
  if (unbiased != 0 && unbiased != 1) fail("unbiased_running_var must be 0 or 1, got ", unbiased);
  int64_t count = 1;
  for (size_t d = 0; d < x.ndim(); ++d)
    if (d != 1) count *= x.shape[d];
  if (unbiased && count < 2)
    fail("the unbiased variance needs two values per channel, x ", runtime::shape_str(x.shape), " has ", count);
  Type stat = tensor_type({x.shape[1]}, mean.dtype);
  return tuple_type({args[0], stat, stat, stat, stat});
}

Type lrn_rel(const std::vector<Type>& args, const Attrs& attrs) {
  float_input(args, 2);
  if (attrs.get_int("size") < 1) fail("size must be positive, got ", attrs.get_int("size"));
  return args[0];
}

Type mvn_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = float_input(args, 1);
  std::vector<bool> seen(x.ndim(), false);
  for (int64_t a : attrs.get_ints("axes")) {
    int64_t d = ops::normalize_axis(a, x.ndim(), "axes entry");
    if (seen[d]) fail("axis ", a, " is listed twice in axes");
    seen[d] = true;
  }
  return args[0];
}

}  // namespace

namespace nn {
namespace {

// The cotangent of x for x_hat = (x - mean) * inv over `axes` (keepdims statistics), given the
// cotangent gh of x_hat.
Expr through_statistics(const Expr& gh, const Expr& xhat, const Expr& inv, const std::vector<int64_t>& axes) {
  Expr centered = sub(gh, reduce_mean(gh, axes, true));
  return mul(inv, sub(centered, mul(xhat, reduce_mean(mul(gh, xhat), axes, true))));
}

// total += t, where an undefined total is nothing yet.
void accumulate(Expr& total, const Expr& t) { total = total ? add(total, t) : t; }

// The cotangent of x from cotangents of its statistics over `count` values (undefined when
// unused): g_mean of the mean, g_var of the biased variance. Undefined when both are.
Expr from_statistics(const Expr& x, const Expr& mean, const Expr& g_mean, const Expr& g_var, double count) {
  Expr dx;
  if (g_mean) accumulate(dx, div(g_mean, scalar_like(count, x)));
  if (g_var) accumulate(dx, mul(g_var, mul(sub(x, mean), scalar_like(2 / count, x))));
  return dx;
}

Expr unless_zero(const Expr& e) { return e && !is_zeros(e) ? e : Expr(); }

double count_over(const std::vector<int64_t>& shape, const std::vector<int64_t>& axes) {
  double n = 1;
  for (int64_t a : axes) n *= static_cast<double>(shape[a]);
  return n;
}

// Inference: y = (x - mean) * inv * scale + bias with inv = 1 / sqrt(var + epsilon) given.
std::vector<Expr> batch_norm_gradient(const Expr& c, const Expr& g) {
  const Expr &x = arg(c, 0), &scale = arg(c, 1), &mean = arg(c, 3), &var = arg(c, 4);
  size_t rank = tensor_of(x).ndim();
  std::vector<int64_t> axes = all_but_channels(rank);
  double eps = as_call(c).attrs.get_float("epsilon");
  Expr inv = div(scalar_like(1, var), call("sqrt", {add(var, scalar_like(eps, var))}));
  Expr centered = sub(x, channel_view(mean, rank));
  Expr g_sum = reduce_sum(g, axes, false), g_centered = reduce_sum(mul(g, centered), axes, false);
  Expr scaled = mul(scale, inv);
  return std::vector<Expr>{mul(g, channel_view(scaled, rank)), mul(g_centered, inv), g_sum, neg(mul(g_sum, scaled)),
                           mul(mul(g_centered, scale), mul(scalar_like(-0.5, inv), mul(inv, mul(inv, inv))))};
}

std::vector<Expr> batch_norm_train_gradient(const Expr& c, const Expr& g) {
  const Expr &x = arg(c, 0), &scale = arg(c, 1);
  const auto& xt = tensor_of(x);
  size_t rank = xt.ndim();
  std::vector<int64_t> axes = all_but_channels(rank);
  double count = count_over(xt.shape, axes);
  const Attrs& attrs = as_call(c).attrs;
  double momentum = attrs.get_float("momentum");
  double var_scale = attrs.get_int("unbiased_running_var") ? count / (count - 1) : 1.0;
  Expr mean = channel_view(cast_to(tuple_get(c, 3), xt.dtype), rank);
  Expr inv = channel_view(cast_to(tuple_get(c, 4), xt.dtype), rank);
  Expr gy = element(g, 0), g_run_mean = unless_zero(element(g, 1)), g_run_var = unless_zero(element(g, 2));
  Expr g_mean = unless_zero(element(g, 3)), g_inv = unless_zero(element(g, 4));
  Expr xhat = mul(sub(x, mean), inv);
  Expr dx = through_statistics(mul(gy, channel_view(cast_to(scale, xt.dtype), rank)), xhat, inv, axes);
  // The statistics' own cotangents, as cotangents of the batch mean and biased variance.
  Expr gm, gv;
  if (g_run_mean) accumulate(gm, mul(g_run_mean, scalar_like(1 - momentum, g_run_mean)));
  if (g_mean) accumulate(gm, g_mean);
  if (g_run_var) accumulate(gv, mul(g_run_var, scalar_like((1 - momentum) * var_scale, g_run_var)));
  Expr inv_c = tuple_get(c, 4);  // d inv / d var = -inv^3 / 2
  if (g_inv) accumulate(gv, mul(g_inv, mul(scalar_like(-0.5, inv_c), mul(inv_c, mul(inv_c, inv_c)))));
  if (Expr extra = from_statistics(x, mean, gm ? channel_view(cast_to(gm, xt.dtype), rank) : Expr(),
                                   gv ? channel_view(cast_to(gv, xt.dtype), rank) : Expr(), count))
    accumulate(dx, extra);
  auto as_param = [&](const Expr& e, size_t i) { return cast_to(e, tensor_of(arg(c, i)).dtype); };
  return std::vector<Expr>{dx, as_param(reduce_sum(mul(gy, xhat), axes, false), 1),
                           as_param(reduce_sum(gy, axes, false), 2),
                           g_run_mean ? mul(g_run_mean, scalar_like(momentum, g_run_mean)) : Expr(),
                           g_run_var ? mul(g_run_var, scalar_like(momentum, g_run_var)) : Expr()};
}

std::vector<Expr> instance_norm_gradient(const Expr& c, const Expr& g) {
  const Expr &x = arg(c, 0), &scale = arg(c, 1);
  size_t rank = tensor_of(x).ndim();
  std::vector<int64_t> axes;
  for (size_t d = 2; d < rank; ++d) axes.push_back(static_cast<int64_t>(d));
  double eps = as_call(c).attrs.get_float("epsilon");
  Expr centered = sub(x, reduce_mean(x, axes, true));
  Expr inv = div(scalar_like(1, x),
                 call("sqrt", {add(reduce_mean(mul(centered, centered), axes, true), scalar_like(eps, x))}));
  Expr xhat = mul(centered, inv);
  std::vector<int64_t> outer = all_but_channels(rank);
  return std::vector<Expr>{through_statistics(mul(g, channel_view(scale, rank)), xhat, inv, axes),
                           reduce_sum(mul(g, xhat), outer, false), reduce_sum(g, outer, false)};
}

std::vector<Expr> layer_norm_gradient(const Expr& c, const Expr& g) {
  const Expr &x = arg(c, 0), &scale = arg(c, 1);
  const auto& xt = tensor_of(x);
  const Attrs& attrs = as_call(c).attrs;
  int64_t axis = attrs.get_int("axis");
  if (axis < 0) axis += static_cast<int64_t>(xt.ndim());
  std::vector<int64_t> axes;
  for (size_t d = axis; d < xt.ndim(); ++d) axes.push_back(static_cast<int64_t>(d));
  double count = count_over(xt.shape, axes);
  // The returned statistics, unless the call returns none or they are narrower than x (float64 x
  // with float32 statistics): then they are recomputed in x's precision.
  const bool returned = attrs.get_int("statistics");
  Expr mean = returned ? tuple_get(c, 1) : Expr(), inv = returned ? tuple_get(c, 2) : Expr();
  if (!returned || (tensor_of(mean).dtype.bits < xt.dtype.bits && xt.dtype.bits == 64)) {
    mean = reduce_mean(x, axes, true);
    Expr centered = sub(x, mean);
    inv = div(scalar_like(1, x), call("sqrt", {add(reduce_mean(mul(centered, centered), axes, true),
                                                   scalar_like(attrs.get_float("epsilon"), x))}));
  }
  mean = cast_to(mean, xt.dtype), inv = cast_to(inv, xt.dtype);
  Expr gy = returned ? element(g, 0) : g, g_mean = unless_zero(element(g, 1)), g_inv = unless_zero(element(g, 2));
  Expr xhat = mul(sub(x, mean), inv);
  Expr dx = through_statistics(mul(gy, scale), xhat, inv, axes);
  Expr gv;
  if (g_inv) gv = mul(cast_to(g_inv, xt.dtype), mul(scalar_like(-0.5, x), mul(inv, mul(inv, inv))));
  if (Expr extra = from_statistics(x, mean, g_mean ? cast_to(g_mean, xt.dtype) : Expr(), gv, count))
    accumulate(dx, extra);
  std::vector<Expr> grads{dx, collapse_sum_to(mul(gy, xhat), scale->checked_type)};
  if (as_call(c).args.size() > 2) grads.push_back(collapse_sum_to(gy, arg(c, 2)->checked_type));
  return grads;
}

// y = (x - mean) / (std + 1e-9) with std = sqrt(mean(x^2) - mean^2) over the axes:
//   dx = (g - mean(g)) / d - (x - mean) * mean(g * (x - mean)) / (std * d^2), d = std + 1e-9.
std::vector<Expr> mean_variance_normalization_gradient(const Expr& c, const Expr& g) {
  const Expr& x = arg(c, 0);
  int64_t rank = static_cast<int64_t>(tensor_of(x).ndim());
  std::vector<int64_t> axes;
  for (int64_t a : as_call(c).attrs.get_ints("axes")) axes.push_back(a < 0 ? a + rank : a);
  Expr mean = reduce_mean(x, axes, true);
  Expr centered = sub(x, mean);
  Expr std = call("sqrt", {sub(reduce_mean(mul(x, x), axes, true), mul(mean, mean))});
  Expr d = add(std, scalar_like(1e-9, x));
  Expr first = div(sub(g, reduce_mean(g, axes, true)), d);
  Expr second = div(mul(centered, reduce_mean(mul(g, centered), axes, true)), mul(std, mul(d, d)));
  return std::vector<Expr>{sub(first, second)};
}

// y = x * d^-beta with d = bias + alpha / size * S, S the sum of x^2 over the `size` channels
// around each (a window sum along the channels: avg_pool over [N, 1, C, rest] times size):
//   dx = g * d^-beta - 2 alpha beta / size * x * T,
// T the transposed window sum (window_sum_grad) of g * x * d^(-beta-1).
std::vector<Expr> lrn_gradient(const Expr& c, const Expr& g) {
  const Expr& x = arg(c, 0);
  const auto& xt = tensor_of(x);
  const Attrs& attrs = as_call(c).attrs;
  int64_t size = attrs.get_int("size");
  double alpha = attrs.get_float("alpha"), beta = attrs.get_float("beta"), bias = attrs.get_float("bias");
  int64_t rest = 1;
  for (size_t d = 2; d < xt.ndim(); ++d) rest *= xt.shape[d];
  std::vector<int64_t> planar{xt.shape[0], 1, xt.shape[1], rest};
  int64_t before = (size - 1) / 2;
  Attrs window{{"kernel", std::vector<int64_t>{size, 1}},
               {"strides", std::vector<int64_t>{1, 1}},
               {"pads", std::vector<int64_t>{before, 0, size - 1 - before, 0}},
               {"dilations", std::vector<int64_t>{1, 1}},
               {"ceil_mode", int64_t(0)}};
  Attrs avg = window;
  avg.set("count_include_pad", int64_t(1));
  Expr squares = reshape(mul(x, x), planar);
  Expr sum = mul(reshape(call("avg_pool", {squares}, avg), xt.shape), scalar_like(static_cast<double>(size), x));
  Expr d = add(scalar_like(bias, x), mul(scalar_like(alpha / static_cast<double>(size), x), sum));
  Expr d_beta = call("pow", {d, scalar_like(-beta, x)});
  Expr z = reshape(div(mul(mul(g, x), d_beta), d), planar);
  Attrs spread = window;
  spread.set("input_shape", planar);
  Expr t = reshape(call("window_sum_grad", {z}, spread), xt.shape);
  Expr dx = sub(mul(g, d_beta), mul(scalar_like(2 * alpha * beta / static_cast<double>(size), x), mul(x, t)));
  return std::vector<Expr>{dx};
}

}  // namespace
}  // namespace nn

void register_nn_norm_ops(OpRegistry& r) {
  r.add({"batch_norm",
         "inference batch normalization: (x - mean) / sqrt(var + epsilon) * scale + bias along axis 1",
         5,
         5,
         {{"epsilon", 1e-5}},
         batch_norm_rel,
         OpPattern::Broadcast,
         single_output([](const In& in, const Attrs& a) {
           return ops::batch_norm(in[0], in[1], in[2], in[3], in[4], a.get_float("epsilon"));
         }),
         "broadcast",
         nn::batch_norm_gradient});
  r.add({"batch_norm_train",
         "training batch normalization of x [N, C, ...] with the batch's statistics along axis 1 (biased variance): "
         "returns (y, "
         "momentum * mean + (1 - momentum) * batch_mean, momentum * var + (1 - momentum) * batch_var, batch_mean, "
         "1 / sqrt(batch_var + epsilon)); the running variance takes the unbiased batch variance with "
         "unbiased_running_var=1",
         5,
         5,
         {{"epsilon", 1e-5}, {"momentum", 0.9}, {"unbiased_running_var", int64_t(0)}},
         batch_norm_train_rel,
         OpPattern::Opaque,
         [](const In& in, const Attrs& a, const Type&) {
           return ops::batch_norm_train(in[0], in[1], in[2], in[3], in[4], a.get_float("epsilon"),
                                        a.get_float("momentum"), a.get_int("unbiased_running_var") != 0);
         },
         "batch_norm_train",
         nn::batch_norm_train_gradient});
  r.add({"instance_norm",
         "normalizes each (n, c) over the spatial dimensions, then * scale[c] + bias[c]",
         3,
         3,
         {{"epsilon", 1e-5}},
         instance_norm_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::instance_norm(in[0], in[1], in[2], a.get_float("epsilon"));
         }),
         "norm",
         nn::instance_norm_gradient});
  r.add({"layer_norm",
         "normalizes over dimensions axis.. then * scale + bias; returns (y, mean, inv_std_dev), or y alone "
         "with statistics=0 (what inference reads: the statistics then stay inside the kernel's rows)",
         2,
         3,
         {{"axis", int64_t(-1)}, {"epsilon", 1e-5}, {"stat_dtype", std::string("float32")}, {"statistics", int64_t(1)}},
         layer_norm_rel,
         OpPattern::Opaque,
         [](const In& in, const Attrs& a, const Type&) {
           std::vector<tensor_ir::Tensor> out =
               ops::layer_norm(in[0], in[1], nn::optional_input(in, 2), a.get_int("axis"), a.get_float("epsilon"),
                               DataType::parse(a.get_str("stat_dtype")));
           if (!a.get_int("statistics")) out.resize(1);
           return out;
         },
         "norm",
         nn::layer_norm_gradient});
  r.add({"lrn",
         "local response normalization across channels",
         1,
         1,
         {{"size", int64_t(0), true}, {"alpha", 1e-4}, {"beta", 0.75}, {"bias", 1.0}},
         lrn_rel,
         OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::lrn(in[0], a.get_int("size"), a.get_float("alpha"), a.get_float("beta"), a.get_float("bias"));
         }),
         "norm",
         nn::lrn_gradient});
  r.add({"mean_variance_normalization",
         "(x - mean) / (std + 1e-9) over axes",
         1,
         1,
         {{"axes", std::vector<int64_t>{0, 2, 3}}},
         mvn_rel,
         OpPattern::Opaque,
         single_output(
             [](const In& in, const Attrs& a) { return ops::mean_variance_normalization(in[0], a.get_ints("axes")); }),
         "norm",
         nn::mean_variance_normalization_gradient});
}

}  // namespace tessera::relay_ir
