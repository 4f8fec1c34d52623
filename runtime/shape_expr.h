// A dimension of a kernel argument's shape: a constant, or an integer expression of named
// dimension variables (`n`, `n*64`, `floordiv(n + 1, 2)`) when a kernel is compiled for symbolic
// sizes. The runtime binds the variables from the shapes a call passes, checks every dimension
// against them and hands their values to the kernel; it needs no compiler for that.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace tessera::runtime {

class ShapeExpr {
 public:
  enum class Op : uint8_t { Const, Var, Add, Sub, Mul, FloorDiv, FloorMod, Min, Max };

  ShapeExpr(int64_t value = 0);  // NOLINT: a constant dimension reads as its value
  static ShapeExpr var(std::string name);
  static ShapeExpr binary(Op op, ShapeExpr a, ShapeExpr b);

  Op op() const { return node_->op; }
  bool is_constant() const { return node_->op == Op::Const; }
  int64_t constant() const;  // throws unless is_constant()
  // The variable's name when the dimension is one variable by itself, else null.
  const std::string* var_name() const { return node_->op == Op::Var ? &node_->name : nullptr; }
  // The operands of a binary expression (throws for a constant or a variable).
  ShapeExpr lhs() const;
  ShapeExpr rhs() const;
  // Its variables, each once, in the order they first appear.
  void collect_vars(std::vector<std::string>& names) const;
  // Its value under `values`; throws naming a variable `values` lacks, or a division by zero.
  int64_t evaluate(const std::map<std::string, int64_t>& values) const;
  std::string str() const;
  bool operator==(const ShapeExpr& o) const;
  bool operator!=(const ShapeExpr& o) const { return !(*this == o); }

 private:
  struct Node {
    Op op;
    int64_t value = 0;
    std::string name;
    std::shared_ptr<const Node> a, b;
  };
  explicit ShapeExpr(std::shared_ptr<const Node> n) : node_(std::move(n)) {}
  std::shared_ptr<const Node> node_;
};

using SymbolicShape = std::vector<ShapeExpr>;

// Whether every dimension is a constant; their values (throws naming `what` otherwise).
bool is_static(const SymbolicShape& shape);
std::vector<int64_t> static_shape(const SymbolicShape& shape, const std::string& what);
SymbolicShape symbolic_shape(const std::vector<int64_t>& shape);
// Whether `shape` is static and equal to `dims` (no allocation: for checks at every call).
bool equals(const SymbolicShape& shape, const std::vector<int64_t>& dims);
// "(n, 7)" as shape_str writes static shapes.
std::string symbolic_shape_str(const SymbolicShape& shape);

// The variable and the constant factor of a dimension `v` or `v*c` (c > 0), else nothing.
std::optional<std::pair<std::string, int64_t>> scaled_var(const ShapeExpr& e);
// The values of dimension variables fixed by the shapes of one call: each variable takes the
// first dimension that is that variable by itself, else the first that is it times a constant,
// divided by it; every dimension must then equal its expression. Errors begin with `where` and name argument i as
// `names[i]` ("input 'x'").
std::map<std::string, int64_t> bind_shape_vars(const std::vector<SymbolicShape>& expected,
                                               const std::vector<std::vector<int64_t>>& got,
                                               const std::vector<std::string>& names, const std::string& where);

}  // namespace tessera::runtime
