#include "tensor_ir/ir.h"

#include "runtime/error.h"

namespace tessera::tensor_ir {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define TESSERA_X(k, type) \
  case NodeKind::k:        \
    return #k;
    TESSERA_ALL_NODES(TESSERA_X)
#undef TESSERA_X
  }
  return "?";
}

void RefCounted::destroy(const RefCounted* node) {
  // Set while this thread deletes nodes: children released meanwhile wait in the list.
  thread_local std::vector<const RefCounted*>* pending = nullptr;
  if (pending) {
    pending->push_back(node);
    return;
  }
  std::vector<const RefCounted*> list{node};
  pending = &list;
  while (!list.empty()) {
    const RefCounted* next = list.back();
    list.pop_back();
    delete next;
  }
  pending = nullptr;
}

std::vector<std::string> split_field_names(const char* joined) {
  std::vector<std::string> names(1);
  for (const char* c = joined; *c; ++c) {
    if (*c == ',') names.emplace_back();
    else if (*c != ' ') names.back() += *c;
  }
  return names;
}

const char* intrinsic_name(Intrinsic op) {
  switch (op) {
#define TESSERA_X(name, arity) \
  case Intrinsic::name:        \
    return #name;
    TESSERA_INTRINSICS(TESSERA_X)
#undef TESSERA_X
  }
  return "?";
}

int intrinsic_arity(Intrinsic op) {
  switch (op) {
#define TESSERA_X(name, arity) \
  case Intrinsic::name:        \
    return arity;
    TESSERA_INTRINSICS(TESSERA_X)
#undef TESSERA_X
  }
  return 0;
}

bool is_transcendental(Intrinsic op) {
  switch (op) {
    case Intrinsic::exp:
    case Intrinsic::log:
    case Intrinsic::tanh:
    case Intrinsic::sigmoid:
    case Intrinsic::erf:
    case Intrinsic::pow:
    case Intrinsic::sin:
    case Intrinsic::cos:
    case Intrinsic::tan:
    case Intrinsic::asin:
    case Intrinsic::acos:
    case Intrinsic::atan:
    case Intrinsic::sinh:
    case Intrinsic::cosh:
    case Intrinsic::asinh:
    case Intrinsic::acosh:
    case Intrinsic::atanh:
      return true;
    default:
      return false;
  }
}

Intrinsic parse_intrinsic(const std::string& name) {
#define TESSERA_X(n, arity) \
  if (name == #n) return Intrinsic::n;
  TESSERA_INTRINSICS(TESSERA_X)
#undef TESSERA_X
  fail("unknown intrinsic '", name, "'");
}

const char* reduce_kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Prod:
      return "prod";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
  }
  return "?";
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::Serial:
      return "for";
    case ForKind::Parallel:
      return "parallel";
    case ForKind::Vectorized:
      return "vectorized";
    case ForKind::Unrolled:
      return "unrolled";
  }
  return "?";
}

}  // namespace tessera::tensor_ir
