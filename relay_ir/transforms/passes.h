// The graph passes. Each takes a typed module and returns one (the same functions where it
// changed nothing). `standard_passes` lists them with the opt level they need.
#pragma once
#include <vector>

#include "relay_ir/pass.h"

namespace tessera::relay_ir {

// Merges structurally identical calls and constants.
Pass eliminate_common_subexpr_pass();
// Drops structure around live values: projections of tuples built on the spot.
Pass dead_code_elimination_pass();
// Replaces calls whose arguments are all constants by their values (ctx.evaluate).
Pass fold_constant_pass();
// Algebraic identities and redundant data movement: reshape/squeeze/expand_dims chains,
// transpose pairs, casts to the same type, x + 0, x * 1.
Pass simplify_expr_pass();
// Groups operators into fused kernels (primitive functions) by pattern kind: injective chains,
// elementwise epilogues of convolutions and matmuls, injective producers of reductions.
Pass fuse_ops_pass();

// The sequence build() runs at `opt_level` (0: only what is required to compile).
std::vector<Pass> standard_passes();

}  // namespace tessera::relay_ir
