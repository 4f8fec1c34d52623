// batch_norm_train: batch normalization in training mode (ONNX BatchNormalization with
// training_mode=1, PyTorch's BatchNorm in train()). It normalizes with the batch's statistics
// and returns the updated running statistics beside the saved ones its gradient reads.
#include "relay_ir/ops/nn_grad.h"
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"
#include "tensor_ir/ops/nn_grad.h"

namespace tessera::relay_ir::nn_grad {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

Type batch_norm_train_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& x = nn::arg(args, 0, "x");
  nn::require_float(x, "x");
  if (x.ndim() < 2) fail("x must be [N, C, ...], got ", runtime::shape_str(x.shape));
  const char* names[] = {"scale", "bias", "mean", "var"};
  for (size_t i = 1; i < 5; ++i) {
    const auto& p = nn::arg(args, i, names[i - 1]);
    nn::require_float(p, names[i - 1]);
    if (p.shape != std::vector<int64_t>{x.shape[1]})
      fail(names[i - 1], " must have shape [", x.shape[1], "] (one value per channel), got ", runtime::shape_str(p.shape));
  }
  const auto& mean = nn::arg(args, 3, "mean");
  if (nn::arg(args, 4, "var").dtype != mean.dtype) fail("var dtype differs from mean's ", mean.dtype.str());
  int64_t unbiased = attrs.get_int("unbiased_running_var");
  if (unbiased != 0 && unbiased != 1) fail("unbiased_running_var must be 0 or 1, got ", unbiased);
  int64_t count = 1;
  for (size_t d = 0; d < x.ndim(); ++d)
    if (d != 1) count *= x.shape[d];
  if (unbiased && count < 2) fail("the unbiased variance needs two values per channel, x ", runtime::shape_str(x.shape), " has ", count);
  Type stat = tensor_type({x.shape[1]}, mean.dtype);
  return tuple_type({args[0], stat, stat, stat, stat});
}

}  // namespace

void register_norm_ops(OpRegistry& r) {
  r.add({"batch_norm_train",
         "training batch normalization of x [N, C, ...] with the batch's statistics along axis 1 (biased variance): returns (y, "
         "momentum * mean + (1 - momentum) * batch_mean, momentum * var + (1 - momentum) * batch_var, batch_mean, "
         "1 / sqrt(batch_var + epsilon)); the running variance takes the unbiased batch variance with unbiased_running_var=1",
         5, 5, {{"epsilon", 1e-5}, {"momentum", 0.9}, {"unbiased_running_var", int64_t(0)}}, batch_norm_train_rel, OpPattern::Opaque,
         [](const In& in, const Attrs& a, const Type&) {
           return ops::batch_norm_train(in[0], in[1], in[2], in[3], in[4], a.get_float("epsilon"), a.get_float("momentum"),
                                        a.get_int("unbiased_running_var") != 0);
         }});
}

}  // namespace tessera::relay_ir::nn_grad
