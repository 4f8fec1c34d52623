#include "autotune/record_kind.h"

#include "runtime/error.h"

namespace tessera::autotune {

const char* record_kind_name(RecordKind kind) {
  switch (kind) {
    case RecordKind::Tuned:
      return "tuned";
    case RecordKind::Default:
      return "default";
    case RecordKind::Custom:
      return "custom";
    case RecordKind::Transfer:
      return "transfer";
    case RecordKind::InModel:
      return "in-model";
  }
  fail("record kind ", static_cast<int>(kind), " has no name");
}

RecordKind parse_record_kind(const std::string& name) {
  for (RecordKind k : kAllRecordKinds)
    if (name == record_kind_name(k)) return k;
  fail("unknown record kind '", name, "' (expected tuned, default, custom, transfer or in-model)");
}

RecordKind kind_of_legacy_policy(const std::string& policy) {
  for (RecordKind k : kAllRecordKinds)
    if (k != RecordKind::Tuned && policy == record_kind_name(k)) return k;
  return RecordKind::Tuned;
}

}  // namespace tessera::autotune
