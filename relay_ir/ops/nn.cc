// Matrix, convolution, pooling, normalization, softmax and loss operators; each group registers
// from its own file (nn_*.cc).
#include "relay_ir/op.h"
#include "relay_ir/ops/families.h"
#include "relay_ir/ops/nn_ops.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

namespace nn {

const TensorTypeNode& arg(const std::vector<Type>& args, size_t i, const std::string& what) {
  if (i >= args.size()) fail("missing ", what, " (argument ", i, ")");
  return as_tensor(args[i], what);
}

void require_float(const TensorTypeNode& t, const std::string& what) {
  if (!t.dtype.is_float()) fail(what, " must be float16, float32 or float64, got ", t.dtype.str());
}

void require_dtype(const TensorTypeNode& t, const std::string& what, std::initializer_list<const char*> allowed) {
  std::string list;
  for (const char* a : allowed) {
    if (t.dtype.str() == a) return;
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  fail(what, " must be one of ", list, ", got ", t.dtype.str());
}

void check_quant_param(const std::vector<Type>& args, size_t i, const char* name, DataType dtype, int64_t per_index) {
  const auto& p = arg(args, i, name);
  if (p.dtype != dtype) fail(name, " must be ", dtype.str(), ", got ", p.dtype.str());
  if (p.ndim() > 1 || (p.numel() != 1 && (per_index == 0 || p.numel() != per_index)))
    fail(name, " must be one value", per_index ? " or " + std::to_string(per_index) + " values" : std::string(), ", got shape ",
         runtime::shape_str(p.shape));
}

}  // namespace nn

void register_nn_ops(OpRegistry& r) {
  register_nn_matmul_ops(r);
  register_nn_conv_ops(r);
  register_nn_pool_ops(r);
  register_nn_norm_ops(r);
  register_nn_softmax_ops(r);
}

}  // namespace tessera::relay_ir
