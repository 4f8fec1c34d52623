// Attributes of an operator call (axis=1, strides=[2, 2], mode="linear"): a small ordered
// map of typed values. Each op declares its attributes once (name, kind, default) in its
// OpDef; calls are checked against that schema when they are made.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "relay_ir/shape.h"

namespace tessera::relay_ir {

// A list of dimensions (`Shape`) is an attribute of its own only when one is symbolic (a
// reshape's target in a model of symbolic sizes); a static one is stored as ints. An int attribute
// may be symbolic too, as dims of one dimension (trilu's diagonal after a cache of P tokens, P + 1).
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>, Shape>;

const char* attr_kind_name(const AttrValue& v);  // "int", "float", "string", "ints", "floats", "dims"
std::string attr_to_string(const AttrValue& v);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> items);

  bool has(const std::string& name) const;
  const AttrValue& get(const std::string& name) const;  // throws naming the attribute
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;  // ints convert
  const std::string& get_str(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  std::vector<double> get_floats(const std::string& name) const;  // ints convert
  Shape get_shape(const std::string& name) const;                 // ints or dims
  tensor_ir::Expr get_dim(const std::string& name) const;         // an int, or dims of one dimension
  void set(const std::string& name, AttrValue value);             // a static Shape is stored as ints

  // Sorted by name, so equal attribute sets compare and print alike.
  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  bool operator==(const Attrs& o) const { return items_ == o.items_; }
  bool operator!=(const Attrs& o) const { return !(*this == o); }

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;
};

}  // namespace tessera::relay_ir
