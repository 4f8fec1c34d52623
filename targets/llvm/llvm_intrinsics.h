// The math and bit intrinsics of the tensor IR (expr.h's Call) in LLVM IR. float32 exp, log,
// tanh, sigmoid and erf are polynomial approximations in plain IR (max relative error ~3e-7), so
// they vectorize like arithmetic instead of becoming one libm call per lane; the rest map to
// LLVM intrinsics or libm. Internal to targets/llvm.
#pragma once
#include <llvm/IR/IRBuilder.h>

#include <vector>

#include "runtime/data_type.h"
#include "tensor_ir/expr.h"

namespace tessera::targets::llvm_backend {

// What the target offers the approximations beyond plain IR.
struct IntrinsicOptions {
  // AVX-512F's vscalefps: exp's 2^n in one instruction on 16 lanes instead of building two
  // factors from exponent bits (nine), with the same result.
  bool avx512_scalef = false;
};

// `op` applied to `args`, register values that all have the tensor IR type `type` (float16
// arrives as float32). Libm functions are declared in the builder's module as needed.
llvm::Value* emit_intrinsic(llvm::IRBuilder<>& b, tensor_ir::Intrinsic op, const std::vector<llvm::Value*>& args,
                            runtime::DataType type, const IntrinsicOptions& options = {});

}  // namespace tessera::targets::llvm_backend
