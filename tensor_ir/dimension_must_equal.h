// What an operator needs of a symbolic dimension that only a declaration of the model's inputs can
// give: a constant (a convolution's input channels, which its weights fix), a multiple of a
// constant (a reshape that splits H into (H / 2, 2); x[::2] beside x[1::2]), the same size as
// another variable (a broadcast of [N] against [M], as ONNX Runtime's symbolic shape inference
// merges them), or an expression of others (a decoder's attention mask of S positions against
// the P cached and L new keys: S is P + L). Where the dimension is a variable by itself, the
// operator throws a DimensionRequirement; the frontend that owns the variable (a model input's
// named dimension) declares it so and imports again, so the module declares the relation and
// every call checks it, as TVM Relax's match_cast does. A dimension that is an expression of
// variables stays an error.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "tensor_ir/expr.h"

namespace tessera::tensor_ir {

class DimensionRequirement : public Error {
 public:
  enum class Kind {
    Constant,  // var is `value`
    Multiple,  // var is `value` times a variable of its own
    SameAs,    // var is the variable `other`
    Is,        // var is `expression`, of other variables
  };
  DimensionRequirement(Kind kind, std::string var, int64_t value, std::string other, const std::string& message,
                       Expr expression = Expr())
      : Error(message),
        kind(kind),
        var(std::move(var)),
        value(value),
        other(std::move(other)),
        expression(std::move(expression)) {}
  // The same requirement, its message after `context` ("Conv (node 'c'): ...").
  DimensionRequirement in(const std::string& context) const {
    return DimensionRequirement(kind, var, value, other, context + ": " + what(), expression);
  }
  Kind kind;
  std::string var;  // the variable's name
  int64_t value;
  std::string other;
  Expr expression;
};

// Throws a requirement that `dim` be `value` (`message`) when it is a variable by itself.
void require_constant_dim(const Expr& dim, int64_t value, const std::string& message);

// Whether dimensions `a` and `b` are equal at every size where both are sizes (not negative, as
// each call checks every tensor's): as polynomials, once a clamp max(x, 0) at the top of either
// is dropped.
bool same_dimension(const Expr& a, const Expr& b);
// The variables that must be at least 1 for dimensions `a` and `b`, not the same dimension, to be
// equal at every size where they are (x[-L:] has L rows but at L = 0, where it is the whole axis:
// a broadcast of it against L holds where L >= 1), each checked at every call; nothing where no
// such variables make them equal.
std::optional<std::vector<Var>> same_dimension_where_positive(const Expr& a, const Expr& b);
// Of two dimensions equal where some variables are positive, the one a broadcast of them gives
// (the one of fewer variables: L rather than the slice's expression of L and P), whichever order
// they come in.
const Expr& simpler_dimension(const Expr& a, const Expr& b);
// Where `a` and `b`, not the same dimension, are two variables, throws a requirement that the
// second be the first; where they are the same once a variable of theirs is a multiple of a
// constant (2 to 64, the smallest), a requirement that it be one; where one is a variable and the
// other an expression of other variables, a requirement that the variable be that expression.
// Returns otherwise.
void require_same_dimension(const Expr& a, const Expr& b, const std::string& message);
// Where `divisor` divides `dividend` exactly once a variable is such a multiple, throws that
// requirement; returns otherwise.
void require_multiple_for_exact_quotient(const Expr& dividend, const Expr& divisor, const std::string& message);

}  // namespace tessera::tensor_ir
