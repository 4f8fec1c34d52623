#include "relay_ir/shape.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/ir.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/structural.h"

namespace tessera::relay_ir {

using tensor_ir::Expr;

Shape::Shape(std::vector<int64_t> dims) : values_(std::move(dims)) {}
Shape::Shape(std::initializer_list<int64_t> dims) : values_(dims) {}

Shape::Shape(const std::vector<Expr>& dims) {
  for (const Expr& d : dims) {
    if (!d.defined() || !d.type().is_integer() || d.type().is_vector())
      fail("a dimension must be an integer expression, got ", d.defined() ? tensor_ir::to_string(d) : "nothing");
    Expr s = tensor_ir::arith::simplify(d);
    const auto* c = s.as<tensor_ir::IntImm>();
    values_.push_back(c ? c->value : kSymbolic);
    exprs_.push_back(c ? Expr(c->value) : s);
  }
  if (std::none_of(values_.begin(), values_.end(), [](int64_t v) { return v == kSymbolic; })) exprs_.clear();
}

int64_t Shape::operator[](size_t i) const {
  if (i >= size()) fail("dimension ", i, " of a shape of rank ", size());
  if (values_[i] == kSymbolic)
    fail("dimension ", i, " of ", str(), " is symbolic (", tensor_ir::to_string(exprs_[i]),
         ") where a constant is needed: this operator needs the model built at fixed sizes");
  return values_[i];
}

const std::vector<int64_t>& Shape::ints() const {
  for (size_t i = 0; i < size(); ++i) (*this)[i];  // throws naming the first symbolic dimension
  return values_;
}

std::vector<int64_t> Shape::ints_from(size_t begin) const {
  std::vector<int64_t> out;
  for (size_t i = begin; i < size(); ++i) out.push_back((*this)[i]);
  return out;
}

Expr Shape::dim(size_t i) const {
  if (i >= size()) fail("dimension ", i, " of a shape of rank ", size());
  return is_static() ? Expr(values_[i]) : exprs_[i];
}

std::vector<Expr> Shape::dims() const {
  std::vector<Expr> out;
  for (size_t i = 0; i < size(); ++i) out.push_back(dim(i));
  return out;
}

Expr Shape::numel() const {
  Expr n = int64_t{1};
  for (size_t i = 0; i < size(); ++i) n = n * dim(i);
  return tensor_ir::arith::simplify(n);
}

bool dims_equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  const auto* ca = a.as<tensor_ir::IntImm>();
  const auto* cb = b.as<tensor_ir::IntImm>();
  if (ca || cb) return ca && cb && ca->value == cb->value;
  if (tensor_ir::structural_equal(a, b)) return true;
  return tensor_ir::same_dimension(a, b);
}

bool Shape::operator==(const Shape& o) const {
  if (size() != o.size()) return false;
  if (is_static() && o.is_static()) return values_ == o.values_;
  for (size_t i = 0; i < size(); ++i)
    if (!dims_equal(dim(i), o.dim(i))) return false;
  return true;
}

std::string Shape::str() const {
  if (is_static()) return runtime::shape_str(values_);
  std::string s = "(";
  for (size_t i = 0; i < size(); ++i) s += (i ? ", " : "") + tensor_ir::to_string(dim(i));
  return s + (size() == 1 ? ",)" : ")");
}

}  // namespace tessera::relay_ir
