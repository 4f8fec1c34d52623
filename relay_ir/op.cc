#include "relay_ir/op.h"

#include <algorithm>

#include "relay_ir/ops/families.h"
#include "runtime/error.h"

namespace tessera::relay_ir {

const char* pattern_name(OpPattern p) {
  switch (p) {
    case OpPattern::Elemwise:
      return "elemwise";
    case OpPattern::Broadcast:
      return "broadcast";
    case OpPattern::Injective:
      return "injective";
    case OpPattern::CommReduce:
      return "reduce";
    case OpPattern::OutEWiseFusable:
      return "out_ewise_fusable";
    case OpPattern::Opaque:
      return "opaque";
  }
  return "?";
}

const OpRegistry& OpRegistry::global() {
  static const OpRegistry registry = [] {
    OpRegistry r;
    register_all_op_families(r);
    return r;
  }();
  return registry;
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

const OpDef& OpRegistry::get(const std::string& name) const {
  if (const OpDef* d = find(name)) return *d;
  // Suggest ops whose names share the last component ("conv2d" -> "nn.conv2d").
  std::string tail = name.substr(name.rfind('.') == std::string::npos ? 0 : name.rfind('.') + 1);
  std::string similar;
  for (const auto& n : names())
    if (n.find(tail) != std::string::npos) similar += (similar.empty() ? "" : ", ") + n;
  fail("unknown operator '", name, "'", similar.empty() ? "" : " (did you mean: " + similar + "?)");
}

std::vector<std::string> OpRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [n, d] : ops_) out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

void OpRegistry::add(OpDef def) {
  if (ops_.count(def.name)) fail("internal error: operator ", def.name, " is registered twice");
  if (!def.infer_type) fail("internal error: operator ", def.name, " has no type relation");
  std::string name = def.name;
  ops_.emplace(name, std::make_unique<OpDef>(std::move(def)));
}

}  // namespace tessera::relay_ir
