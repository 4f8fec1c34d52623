// The graph-IR text parser: what it accepts prints as text that reads back to the same text.
#include "fuzz_input.h"
#include "relay_ir/parser.h"
#include "relay_ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tessera;
  fuzz::expect_only_errors([&] {
    const std::string text = relay_ir::to_text(relay_ir::parse_module(fuzz::as_string(data, size)));
    std::string again;
    try {
      again = relay_ir::to_text(relay_ir::parse_module(text));
    } catch (const Error& e) {
      fuzz::finding(std::string("printed text does not parse: ") + e.what() + "\n" + text);
    }
    if (again != text) fuzz::finding("printed text reads back differently:\n" + text + "\nvs\n" + again);
  });
  return 0;
}
