#include "tensor_ir/size_hint.h"

#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir {

namespace {
thread_local const std::map<std::string, int64_t>* current_hints = nullptr;
}  // namespace

SizeHintScope::SizeHintScope(std::map<std::string, int64_t> hints)
    : hints_(std::move(hints)), previous_(current_hints) {
  current_hints = &hints_;
}

SizeHintScope::~SizeHintScope() { current_hints = previous_; }

int64_t size_hint(const std::string& name) {
  // An empty size (a first run of no rows) says nothing of the sizes to come.
  if (current_hints)
    if (auto it = current_hints->find(name); it != current_hints->end() && it->second > 0) return it->second;
  return kDefaultSizeHint;
}

int64_t size_hint(const Expr& extent) {
  if (const int64_t* c = as_const_int(extent)) return *c;
  VarMap values;
  for (const Var& v : vars_of(extent)) values[v.get()] = IntImm::make(v.type(), size_hint(v.name()));
  const int64_t* c = as_const_int(arith::simplify(substitute(extent, values)));
  return c ? *c : kDefaultSizeHint;
}

int64_t tile_size_hint(const Expr& extent) {
  const int64_t hint = size_hint(extent);
  return hint > 0 ? hint : kDefaultSizeHint;
}

}  // namespace tessera::tensor_ir
