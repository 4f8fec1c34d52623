// Types of graph values: tensors with a shape and a dtype, tuples, functions. A shape's
// dimensions are integers, or expressions of dimension variables for a model of symbolic sizes
// (relay_ir/shape.h).
#pragma once
#include <string>
#include <vector>

#include "relay_ir/node.h"
#include "relay_ir/shape.h"
#include "runtime/data_type.h"

namespace tessera::relay_ir {

using runtime::DataType;

struct TypeNode : Node {
  static constexpr bool kind_matches(RelayKind k) {
    return k == RelayKind::TensorType || k == RelayKind::TupleType || k == RelayKind::FuncType;
  }

 protected:
  explicit TypeNode(RelayKind k) : Node(k) {}
};

class Type : public Ref<TypeNode> {
 public:
  using Ref<TypeNode>::Ref;
  Type() = default;
};

struct TensorTypeNode : TypeNode {
  TESSERA_RELAY_NODE(TensorType)
  Shape shape;
  DataType dtype;
  TESSERA_FIELDS(shape, dtype)
  TensorTypeNode(Shape s, DataType t) : TypeNode(kKind), shape(std::move(s)), dtype(t) {}
  int64_t numel() const;  // throws if the shape is symbolic
  size_t ndim() const { return shape.size(); }
};

struct TupleTypeNode : TypeNode {
  TESSERA_RELAY_NODE(TupleType)
  std::vector<Type> elements;
  TESSERA_FIELDS(elements)
  explicit TupleTypeNode(std::vector<Type> e) : TypeNode(kKind), elements(std::move(e)) {}
};

struct FuncTypeNode : TypeNode {
  TESSERA_RELAY_NODE(FuncType)
  std::vector<Type> params;
  Type ret;
  TESSERA_FIELDS(params, ret)
  FuncTypeNode(std::vector<Type> p, Type r) : TypeNode(kKind), params(std::move(p)), ret(std::move(r)) {}
};

Type tensor_type(Shape shape, DataType dtype);
Type tuple_type(std::vector<Type> fields);
Type func_type(std::vector<Type> params, Type ret);

// The tensor type of `t`, or an Error saying `what` expected a tensor.
const TensorTypeNode& as_tensor(const Type& t, const std::string& what);

std::string to_string(const Type& t);  // float32[1, 3, 224, 224], (float32[2], int64[]), fn(...) -> ...
bool type_equal(const Type& a, const Type& b);

}  // namespace tessera::relay_ir
