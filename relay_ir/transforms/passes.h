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
// A layer normalization written as its arithmetic (exports before opset 17: means, a difference,
// a square root, a division, then scale and bias) becomes one layer_norm; a layer_norm whose
// statistics nothing reads returns y alone.
Pass layer_norm_fusion_pass();
// Attention written as two products around a softmax (matmul, an optional scale, softmax along
// the last axis, matmul) becomes one attention call, whose CPU kernel keeps the scores in cache.
Pass attention_fusion_pass();
// A transpose of a product's rows (after a reshape that keeps the last dimension) moves onto its
// left operand: a product by a 2-D weight treats each row alone (batch_first attention).
Pass rows_before_products_pass();
// Groups operators into fused kernels (primitive functions) by pattern kind: injective chains,
// elementwise epilogues of convolutions and matmuls, injective producers of reductions.
Pass fuse_ops_pass();
// Folds an inference batch_norm into the conv, gemm or matmul producing its input (weights and
// bias rescaled per output channel, as graph ops over the constants for FoldConstant), when its
// parameters and the product's weight are compile-time values and nothing else reads the product.
Pass fold_batch_norm_pass();
// CPU layouts: a conv (blocked form) or matmul/gemm whose weight is a compile-time value takes it
// packed as its kernel reads it (conv_pack_weight, matmul_pack_weight), for FoldConstant to pack
// once instead of the kernel on every call. Bit-identical results, except products of fewer
// than 4 rows (the classifier of a CNN), which take the packed kernel instead of the unpacked
// one: equal up to LLVM's reassociation of their sums (last-bit differences).
Pass alter_op_layout_pass();
// CPU layouts: a depthwise-separable network (its convolutions all depthwise, 1x1 or an image's
// stem, at least one depthwise) runs channels-last, conv_nhwc and matmul between transposes that
// cancel inside the network, so every kernel splits its threads by rows of positions.
Pass convert_layout_pass();

// The sequence build() runs at `opt_level` (build()'s default is 2). Each pass runs at its level
// and above:
//   0  InferType, DeadCodeElimination: only what compiling needs, every op its own kernel;
//   1  + FoldBatchNorm, RowsBeforeProducts, FoldConstant, SimplifyExpr, EliminateCommonSubexpr,
//      LayerNormFusion, FuseOps;
//   2  the same as 1 (the default);
//   3  + ConvertLayout (channels-last depthwise-separable networks) and AlterOpLayout (constant
//      weights prepacked: faster kernels, larger constants, longer compiles).
// FoldBatchNorm, ConvertLayout and AlterOpLayout come before FoldConstant, which evaluates the
// weights they rearrange.
std::vector<Pass> standard_passes();

}  // namespace tessera::relay_ir
