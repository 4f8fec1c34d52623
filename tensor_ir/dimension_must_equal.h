// A symbolic dimension that an operator needs to be a constant: a convolution's input channels,
// which its weights fix, or a product's inner dimension against a constant operand. Where that
// dimension is a variable by itself, the operator throws DimensionMustEqual; the frontend that
// owns the variable (a model input's named dimension) fixes it to the value and imports again, so
// the module declares the constant and every call checks it, as TVM Relax's match_cast does. A
// dimension that is an expression of variables stays an error.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/error.h"
#include "tensor_ir/expr.h"

namespace tessera::tensor_ir {

class DimensionMustEqual : public Error {
 public:
  DimensionMustEqual(std::string var, int64_t value, const std::string& message)
      : Error(message), var(std::move(var)), value(value) {}
  std::string var;  // the variable's name
  int64_t value;
};

// Throws DimensionMustEqual(`message`) when `dim` is a variable by itself; returns otherwise.
void require_constant_dim(const Expr& dim, int64_t value, const std::string& message);

// A variable dimension that must be a multiple of a constant for an operator to have exact sizes:
// a reshape whose -1 divides the element count at some sizes only (PyTorch's pixel_unshuffle
// splits H into (H / 2, 2)). The frontend declares the dimension as `factor` times a variable of
// its own and imports again, so every size divides and each call checks its input.
class DimensionMustBeMultiple : public Error {
 public:
  DimensionMustBeMultiple(std::string var, int64_t factor, const std::string& message)
      : Error(message), var(std::move(var)), factor(factor) {}
  std::string var;
  int64_t factor;
};

// Whether dimensions `a` and `b` are equal at every size where both are sizes (not negative, as
// each call checks every tensor's): as polynomials, once a clamp max(x, 0) at the top of either
// is dropped.
bool same_dimension(const Expr& a, const Expr& b);
// Where `a` and `b` are the same dimension once a variable of theirs is a multiple of a constant
// (2 to 64, the smallest; x[::2] and x[1::2] of an even height), throws DimensionMustBeMultiple
// with `message`; returns otherwise.
void require_multiple_for_same_dimension(const Expr& a, const Expr& b, const std::string& message);

}  // namespace tessera::tensor_ir
