// Narrow storage types in kernels (runtime/data_type.h: bfloat16, float8, float4, int4, int2).
// After storage flattening, every value of a narrow type is held in its compute_type() (float32,
// int8 or uint8): a load of a narrow buffer decodes its bits, a store encodes the value, and a
// Cast to a narrow type rounds (encodes and decodes) as runtime/narrow_types.h does. Buffers keep
// their narrow types (code generation lays them out as their storage_type()); a store of a value
// loaded from a buffer of the same narrow type copies the bits.
#pragma once
#include "tensor_ir/expr.h"
#include "tensor_ir/stmt.h"

namespace tessera::tensor_ir {

Stmt lower_narrow_types(const Stmt& s);

// The value of `bits`, an expression of a narrow type, in that type's compute_type().
Expr decode_narrow(const Expr& bits);
// The narrow-typed bits of `value` converted to `type` (a value of any number type).
Expr encode_narrow(const Expr& value, DataType type);

}  // namespace tessera::tensor_ir
