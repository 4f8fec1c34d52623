#include "relay_ir/transforms/passes.h"

namespace tessera::relay_ir {

std::vector<Pass> standard_passes() {
  return {
      infer_type_pass(),        dead_code_elimination_pass(), fold_batch_norm_pass(),
      convert_layout_pass(),    rows_before_products_pass(),  alter_op_layout_pass(),
      fold_constant_pass(),     simplify_expr_pass(),         eliminate_common_subexpr_pass(),
      layer_norm_fusion_pass(), attention_fusion_pass(),      fuse_ops_pass(),
  };
}

}  // namespace tessera::relay_ir
