// Normalizations: batch_norm (inference), instance_norm, layer_norm, lrn,
// mean_variance_normalization.
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

const TensorTypeNode& float_input(const std::vector<Type>& args, size_t min_rank) {
  const auto& x = nn::arg(args, 0, "x");
  nn::require_float(x, "x");
  if (x.ndim() < min_rank) fail("x must have rank >= ", min_rank, ", got ", runtime::shape_str(x.shape));
  return x;
}

// Arguments first..last-1 must be float vectors of one value per channel (axis 1 of x).
void check_channel_params(const std::vector<Type>& args, const TensorTypeNode& x, size_t first, std::initializer_list<const char*> names) {
  size_t i = first;
  for (const char* name : names) {
    const auto& p = nn::arg(args, i++, name);
    nn::require_float(p, name);
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
    const auto& p = nn::arg(args, i, name);
    if (p.dtype != x.dtype) fail(name, " dtype ", p.dtype.str(), " differs from x's ", x.dtype.str());
    // numpy broadcasting onto x, without growing x
    if (p.ndim() > x.ndim()) fail(name, " ", runtime::shape_str(p.shape), " has a higher rank than x ", runtime::shape_str(x.shape));
    for (size_t d = 0; d < p.ndim(); ++d) {
      int64_t xd = x.shape[x.ndim() - p.ndim() + d];
      if (p.shape[d] != 1 && p.shape[d] != xd)
        fail(name, " ", runtime::shape_str(p.shape), " does not broadcast to x ", runtime::shape_str(x.shape));
    }
  }
  DataType stat = DataType::parse(attrs.get_str("stat_dtype"));
  if (!stat.is_float() || !stat.is_scalar()) fail("stat_dtype must be a float type, got ", stat.str());
  std::vector<int64_t> s = x.shape;
  for (size_t d = axis; d < s.size(); ++d) s[d] = 1;
  return tuple_type({args[0], tensor_type(s, stat), tensor_type(s, stat)});
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

void register_nn_norm_ops(OpRegistry& r) {
  r.add({"batch_norm", "inference batch normalization: (x - mean) / sqrt(var + epsilon) * scale + bias along axis 1", 5, 5,
         {{"epsilon", 1e-5}}, batch_norm_rel, OpPattern::Broadcast, single_output([](const In& in, const Attrs& a) {
           return ops::batch_norm(in[0], in[1], in[2], in[3], in[4], a.get_float("epsilon"));
         })});
  r.add({"instance_norm", "normalizes each (n, c) over the spatial dimensions, then * scale[c] + bias[c]", 3, 3, {{"epsilon", 1e-5}},
         instance_norm_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::instance_norm(in[0], in[1], in[2], a.get_float("epsilon"));
         })});
  r.add({"layer_norm", "normalizes over dimensions axis.. then * scale + bias; returns (y, mean, inv_std_dev)", 2, 3,
         {{"axis", int64_t(-1)}, {"epsilon", 1e-5}, {"stat_dtype", std::string("float32")}}, layer_norm_rel, OpPattern::Opaque,
         [](const In& in, const Attrs& a, const Type&) {
           return ops::layer_norm(in[0], in[1], nn::optional_input(in, 2), a.get_int("axis"), a.get_float("epsilon"),
                                  DataType::parse(a.get_str("stat_dtype")));
         }});
  r.add({"lrn", "local response normalization across channels", 1, 1,
         {{"size", int64_t(0), true}, {"alpha", 1e-4}, {"beta", 0.75}, {"bias", 1.0}}, lrn_rel, OpPattern::Opaque,
         single_output([](const In& in, const Attrs& a) {
           return ops::lrn(in[0], a.get_int("size"), a.get_float("alpha"), a.get_float("beta"), a.get_float("bias"));
         })});
  r.add({"mean_variance_normalization", "(x - mean) / (std + 1e-9) over axes", 1, 1, {{"axes", std::vector<int64_t>{0, 2, 3}}},
         mvn_rel, OpPattern::Opaque, single_output([](const In& in, const Attrs& a) {
           return ops::mean_variance_normalization(in[0], a.get_ints("axes"));
         })});
}

}  // namespace tessera::relay_ir
