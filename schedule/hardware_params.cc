#include "schedule/hardware_params.h"

#include "runtime/error.h"

namespace tessera::schedule {

int HardwareParams::lanes(runtime::DataType dtype) const {
  if (!defined())
    fail("the default CPU schedules need the target's vector registers; this schedule was made without them");
  // float16 computes in float32 registers; bool is stored as bytes.
  const bool half = dtype.bits == 16 && dtype.is_float();
  return static_cast<int>(registers.lanes(half ? runtime::kFloat32 : dtype));
}

}  // namespace tessera::schedule
