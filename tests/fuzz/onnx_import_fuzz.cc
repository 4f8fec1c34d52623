// The ONNX importer on arbitrary bytes: a serialized ModelProto, parsed and imported without a
// constant evaluator (nothing is folded, nothing runs). External data may only be read from an
// empty folder.
#include "frontend/onnx/importer.h"
#include "fuzz_input.h"
#include "temp_dir.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  fuzz::expect_only_errors(
      [&] { frontend::onnx::import_model_bytes(fuzz::as_string(data, size), testing::test_temp_dir().string(), {}); });
  return 0;
}
