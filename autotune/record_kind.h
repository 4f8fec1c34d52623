// What kind of schedule a tuning record holds, which decides how lookups treat it: the database
// stores it in its own column (as the name below) and no other code spells these names.
#pragma once
#include <string>

namespace tessera::autotune {

enum class RecordKind {
  Tuned,     // proposed by a search (Record::policy names which)
  Default,   // the default template's schedule, the baseline every tuned schedule must beat
  Custom,    // a schedule registered for the workload or op (schedule/custom.h)
  Transfer,  // a schedule of a similar workload replayed on this one (autotune/transfer.h)
  // Timed inside a built model by the model check (driver/model_check.h): not comparable with
  // times taken alone, so lookups of the fastest record skip it.
  InModel,
};

// "tuned", "default", "custom", "transfer", "in-model".
const char* record_kind_name(RecordKind kind);
// The kind of that name; throws tessera::Error naming an unknown one.
RecordKind parse_record_kind(const std::string& name);
// The kind of a record written before kinds had their own column (database schema 1, or an
// export of that version), when its policy string was the kind's name; other policies were
// searches.
RecordKind kind_of_legacy_policy(const std::string& policy);
// Every kind, for the database's CHECK constraint.
const RecordKind kAllRecordKinds[] = {RecordKind::Tuned, RecordKind::Default, RecordKind::Custom, RecordKind::Transfer,
                                      RecordKind::InModel};

}  // namespace tessera::autotune
