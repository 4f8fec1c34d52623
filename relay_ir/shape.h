// A tensor type's shape. Each dimension is a constant or, for a model of symbolic sizes, an
// integer expression of named dimension variables (a tensor_ir::Expr: `N`, `L*4`), as TVM's
// Relay keeps PrimExprs. Code written for static shapes reads a Shape as integers; reading a
// symbolic dimension that way throws, naming it, so an operator that does not handle symbolic
// sizes says so instead of computing with a wrong number.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "tensor_ir/expr.h"

namespace tessera::relay_ir {

class Shape {
 public:
  Shape() = default;
  Shape(std::vector<int64_t> dims);            // NOLINT: a static shape reads as its integers
  Shape(std::initializer_list<int64_t> dims);  // NOLINT
  // Constant dimensions are folded to integers; the rest must be integer expressions.
  explicit Shape(const std::vector<tensor_ir::Expr>& dims);

  size_t size() const { return values_.size(); }
  bool empty() const { return values_.empty(); }
  bool is_static() const { return exprs_.empty(); }
  bool is_static(size_t i) const { return is_static() || values_.at(i) != kSymbolic; }

  // Dimension i as an integer; throws if it is symbolic.
  int64_t operator[](size_t i) const;
  int64_t at(size_t i) const { return (*this)[i]; }
  int64_t front() const { return (*this)[0]; }
  int64_t back() const { return (*this)[size() - 1]; }
  // Every dimension as an integer; throws if one is symbolic.
  const std::vector<int64_t>& ints() const;
  // Dimensions `begin` onwards as integers (a convolution's spatial sizes past a symbolic batch).
  std::vector<int64_t> ints_from(size_t begin) const;
  operator const std::vector<int64_t>&() const { return ints(); }  // NOLINT: static code reads integers
  std::vector<int64_t>::const_iterator begin() const { return ints().begin(); }
  std::vector<int64_t>::const_iterator end() const { return ints().end(); }

  // Dimension i as an expression (an IntImm when constant).
  tensor_ir::Expr dim(size_t i) const;
  std::vector<tensor_ir::Expr> dims() const;
  // The number of elements, simplified.
  tensor_ir::Expr numel() const;

  // Dimensions equal as simplified expressions (the same variables, by identity).
  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "(N, 3, 224, 224)", as runtime::shape_str writes static shapes

 private:
  static constexpr int64_t kSymbolic = INT64_MIN;
  std::vector<int64_t> values_;         // kSymbolic where the dimension is an expression
  std::vector<tensor_ir::Expr> exprs_;  // every dimension, only when one is symbolic
};

inline bool operator==(const std::vector<int64_t>& a, const Shape& b) { return b == Shape(a); }
inline bool operator!=(const std::vector<int64_t>& a, const Shape& b) { return !(b == Shape(a)); }

// Whether two dimensions are provably equal (constants, or expressions that simplify alike).
bool dims_equal(const tensor_ir::Expr& a, const tensor_ir::Expr& b);

}  // namespace tessera::relay_ir
