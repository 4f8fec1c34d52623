#include "schedule/hardware_params.h"

#include <algorithm>

#include "runtime/error.h"

namespace tessera::schedule {

int HardwareParams::lanes(runtime::DataType dtype) const {
  if (!defined()) fail("the default CPU schedules need the target's vector registers; this schedule was made without them");
  // float16 computes in float32 registers; bool is stored as bytes.
  int64_t bytes = dtype.bits == 16 && dtype.is_float() ? 4 : dtype.element_bytes();
  return static_cast<int>(std::max<int64_t>(1, registers.vector_bytes / bytes));
}

}  // namespace tessera::schedule
