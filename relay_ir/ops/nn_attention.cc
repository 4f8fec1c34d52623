// attention(q, k, v[, bias or mask]): softmax(q @ k^T * scale + bias) @ v over the last two axes, one kernel that keeps
// a block of query rows' scores in cache (tensor_ir/ops/nn_attention.cc). Exporters write it as two matmuls around a
// softmax, which AttentionFusion (relay_ir/transforms/attention_fusion.cc) turns into this op for CPU builds; the ONNX
// importer does not create it directly.
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace ops = tensor_ir::ops;
using In = std::vector<tensor_ir::Tensor>;

namespace {

Type attention_rel(const std::vector<Type>& args, const Attrs& attrs) {
  const auto& q = tensor_arg(args, 0, "q");
  const auto& k = tensor_arg(args, 1, "k");
  const auto& v = tensor_arg(args, 2, "v");
  if (q.dtype != runtime::kFloat32 || k.dtype != runtime::kFloat32 || v.dtype != runtime::kFloat32)
    fail("q, k and v must be float32, got ", q.dtype.str(), ", ", k.dtype.str(), ", ", v.dtype.str());
  const bool trans_k = attrs.get_int("trans_k");
  const Shape out(ops::attention_shape(q.shape.dims(), k.shape.dims(), v.shape.dims(), trans_k));
  if (args.size() > 3) {
    const auto& bias = tensor_arg(args, 3, "bias");
    if (bias.dtype != runtime::kFloat32 && !bias.dtype.is_bool())
      fail("the bias must be float32 or a bool mask, got ", bias.dtype.str());
    ops::check_attention_bias(bias.shape.dims(), q.shape.dims(), k.shape.dims(), trans_k);
  }
  return tensor_type(out, q.dtype);
}

}  // namespace

void register_nn_attention_ops(OpRegistry& r) {
  r.add({"attention",
         "softmax(q @ k^T * scale + bias) @ v over the last two axes: q [.., L, D], k [.., D, S] (or [.., S, D] with "
         "trans_k=1), v [.., S, Dv], float32, equal batch dimensions; the optional fourth input broadcasts to the "
         "scores [.., L, S]: a float32 bias, added, or a bool mask, the scores replaced by fill where it is false "
         "(keep=1) or true (keep=0)",
         3, 4, nn::with_register_attrs({{"scale", 1.0}, {"trans_k", int64_t(0)}, {"fill", 0.0}, {"keep", int64_t(1)}}),
         attention_rel, OpPattern::OutEWiseFusable, single_output([](const In& in, const Attrs& a) {
           ops::AttentionOptions options{a.get_float("scale"), a.get_int("trans_k") != 0, a.get_float("fill"),
                                         a.get_int("keep") != 0};
           return ops::attention(in[0], in[1], in[2], nn::optional_input(in, 3), options, registers_of(a, "attention"));
         }),
         "attention"});
}

}  // namespace tessera::relay_ir
