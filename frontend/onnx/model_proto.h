// What the importer and the program builder (frontend/onnx/program.cc) share: reading a model
// file, importing a parsed model, telling whether it needs a program.
#pragma once
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <onnx/onnx_pb.h>

#include "frontend/onnx/importer.h"
#include "frontend/onnx/recurrence_scan.h"

namespace tessera::frontend::onnx {

::onnx::ModelProto parse_model(const std::string& bytes);

relay_ir::Module import_model_proto(const ::onnx::ModelProto& model, const std::string& base_dir,
                                    const ImportOptions& options);

// Whether the model needs a program (frontend/onnx/program.h): it has a Loop, a Scan, an operator
// whose output size depends on the data, or an If whose condition depends on the data (not only
// on constants and shapes) in any graph.
bool needs_program(const ::onnx::ModelProto& model, const ImportOptions& options);
// The recurrent nodes of the model's main graph whose sequence length is symbolic where the model
// is imported for every size (frontend/onnx/recurrence_scan.h), up to the first operator that needs
// constant sizes there.
std::vector<SymbolicRecurrence> symbolic_recurrences(const ::onnx::ModelProto& model, const std::string& base_dir,
                                                     const ImportOptions& options);
// The nodes that make a program of `graph` ("Loop (node 'l'), NonZero (node 'n')"), for messages.
std::string program_steps(const ::onnx::GraphProto& graph);

// `f(model, base_dir)` on the model in the file at `path`, its errors prefixed with the path
// (BindingRequired passes as it is, for the caller to bind what it names).
template <typename F>
auto with_model_file(const std::string& path, F f) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot open ONNX model '", path, "'");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string dir = std::filesystem::path(path).parent_path().string();
  try {
    return f(parse_model(bytes), dir.empty() ? "." : dir);
  } catch (const BindingRequired&) {
    throw;
  } catch (const Error& e) {
    fail(path, ": ", e.what());
  }
}

}  // namespace tessera::frontend::onnx
