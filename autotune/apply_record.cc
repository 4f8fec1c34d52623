#include "autotune/apply_record.h"

namespace tessera::autotune {

std::unique_ptr<schedule::Schedule> schedule_from_record(const Record& record,
                                                         const std::vector<tensor_ir::Tensor>& outputs) {
  auto s = std::make_unique<schedule::Schedule>(outputs);
  schedule::Trace::from_json(record.trace).apply(*s);
  return s;
}

}  // namespace tessera::autotune
