#include "autotune/workload.h"

#include "autotune/sha256.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/printer.h"

namespace tessera::autotune {

namespace {

// The computation without its sizes: every digit run in the text becomes '#', so the same
// operators at other shapes (and strides, which legality checks at replay) share it.
std::string erase_sizes(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(text[i])) &&
        (i == 0 || !std::isalpha(static_cast<unsigned char>(text[i - 1])))) {
      out += '#';
      while (i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1]))) ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

}  // namespace

WorkloadEntry make_workload(const std::vector<tensor_ir::Tensor>& outputs, const std::string& description) {
  std::string definition = tensor_ir::to_string(outputs);
  return {sha256_hex(definition), sha256_hex(erase_sizes(definition)), description, definition};
}

}  // namespace tessera::autotune
