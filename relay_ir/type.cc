#include "relay_ir/type.h"

#include "runtime/error.h"
#include "runtime/ndarray.h"

namespace tessera::relay_ir {

int64_t TensorTypeNode::numel() const {
  int64_t n = 1;
  for (int64_t d : shape.ints()) n *= d;
  return n;
}

Type tensor_type(Shape shape, DataType dtype) {
  for (size_t i = 0; i < shape.size(); ++i)
    if (shape.is_static(i) && shape[i] < 0) fail("tensor type: negative dimension in ", shape.str());
  if (dtype.is_vector() || dtype.is_handle()) fail("tensor type: invalid element type ", dtype.str());
  return Type(new TensorTypeNode(std::move(shape), dtype));
}

Type tuple_type(std::vector<Type> fields) { return Type(new TupleTypeNode(std::move(fields))); }
Type func_type(std::vector<Type> params, Type ret) { return Type(new FuncTypeNode(std::move(params), std::move(ret))); }

const TensorTypeNode& as_tensor(const Type& t, const std::string& what) {
  const auto* tt = t.as<TensorTypeNode>();
  if (!tt) fail(what, ": expected a tensor, got ", to_string(t));
  return *tt;
}

std::string to_string(const Type& t) {
  if (!t) return "?";
  if (const auto* tt = t.as<TensorTypeNode>()) {
    std::string dims = tt->shape.str();  // "(a, b)"; a rank-1 shape's "(a,)"
    dims = dims.substr(1, dims.size() - 2);
    if (!dims.empty() && dims.back() == ',') dims.pop_back();
    return tt->dtype.str() + "[" + dims + "]";
  }
  if (const auto* tu = t.as<TupleTypeNode>()) {
    std::string s = "(";
    for (size_t i = 0; i < tu->elements.size(); ++i) s += (i ? ", " : "") + to_string(tu->elements[i]);
    return s + (tu->elements.size() == 1 ? ",)" : ")");
  }
  const auto* f = t.as<FuncTypeNode>();
  std::string s = "fn(";
  for (size_t i = 0; i < f->params.size(); ++i) s += (i ? ", " : "") + to_string(f->params[i]);
  return s + ") -> " + to_string(f->ret);
}

bool type_equal(const Type& a, const Type& b) {
  if (a.same_as(b)) return true;
  if (!a || !b || a->kind != b->kind) return false;
  if (const auto* ta = a.as<TensorTypeNode>()) {
    const auto* tb = b.as<TensorTypeNode>();
    return ta->shape == tb->shape && ta->dtype == tb->dtype;
  }
  if (const auto* ta = a.as<TupleTypeNode>()) {
    const auto* tb = b.as<TupleTypeNode>();
    if (ta->elements.size() != tb->elements.size()) return false;
    for (size_t i = 0; i < ta->elements.size(); ++i)
      if (!type_equal(ta->elements[i], tb->elements[i])) return false;
    return true;
  }
  const auto* fa = a.as<FuncTypeNode>();
  const auto* fb = b.as<FuncTypeNode>();
  if (fa->params.size() != fb->params.size() || !type_equal(fa->ret, fb->ret)) return false;
  for (size_t i = 0; i < fa->params.size(); ++i)
    if (!type_equal(fa->params[i], fb->params[i])) return false;
  return true;
}

}  // namespace tessera::relay_ir
