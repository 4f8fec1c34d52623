// The whole tensor IR in one include, plus kind dispatch over it.
#pragma once
#include "tensor_ir/buffer.h"
#include "tensor_ir/expr.h"
#include "tensor_ir/node.h"
#include "tensor_ir/stmt.h"
#include "tensor_ir/tensor.h"

namespace tessera::tensor_ir {

template <typename F>
decltype(auto) dispatch(const Object* node, F&& f) {
  switch (node->kind) {
#define TESSERA_X(kind, type) \
  case NodeKind::kind:        \
    return f(static_cast<const type*>(node));
    TESSERA_ALL_NODES(TESSERA_X)
#undef TESSERA_X
  }
  __builtin_unreachable();
}

// Calls f(name, value) for every field of a node, in declaration order.
template <typename T, typename F>
void for_each_field(const T* node, F&& f) {
  const auto& names = T::field_names();
  std::apply(
      [&](const auto&... field) {
        size_t i = 0;
        (f(names[i++], field), ...);
      },
      node->fields());
}

}  // namespace tessera::tensor_ir
