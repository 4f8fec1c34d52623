#include "tensor_ir/ops/nn_util.h"

#include "tensor_ir/ops/nn.h"

namespace tessera::tensor_ir::ops::nn_detail {

std::vector<std::string> nc_axis_names(size_t rank) {
  std::vector<std::string> names;
  for (size_t d = 0; d < rank; ++d) names.push_back(d == 0 ? "n" : d == 1 ? "c" : "d" + std::to_string(d - 2));
  return names;
}

}  // namespace tessera::tensor_ir::ops::nn_detail

namespace tessera::tensor_ir::ops {

DataType packed_weight_dtype(DataType t) { return nn_detail::accumulation_type(t); }

}  // namespace tessera::tensor_ir::ops
