// Versions of one kernel, each compiled for a class of sizes (row_count_versions.h: a product's
// row counts; conv_form_versions.h: a convolution's Winograd and direct forms), joined into one
// kernel whose body chooses at each call, as Halide's specialize() does on a condition.
#pragma once
#include <vector>

#include "tensor_ir/stmt.h"

namespace tessera::driver {

// `version` reading and writing `args` instead of its own arguments, its argument j as
// args[at[j]] (the arguments it does not take, it leaves alone).
tensor_ir::LoweredFunc with_arguments(const tensor_ir::LoweredFunc& version, std::vector<tensor_ir::Buffer> args,
                                      const std::vector<size_t>& at);
// `version` reading and writing the arguments of `like`, another version of the same kernel (the
// same arguments, in order).
tensor_ir::LoweredFunc with_arguments_of(const tensor_ir::LoweredFunc& version, const tensor_ir::LoweredFunc& like);

// One kernel of two versions: `if_true`'s body where `condition` (an expression of the kernel's
// sizes) holds at the call, else `if_false`'s, which reads and writes `if_true`'s arguments.
tensor_ir::LoweredFunc choose_by_condition(const tensor_ir::LoweredFunc& if_true, const tensor_ir::LoweredFunc& if_false,
                                           const tensor_ir::Expr& condition);

}  // namespace tessera::driver
