// ONNX models that one static graph cannot express: an If whose condition depends on the data, a
// Loop or Scan, an operator whose output size depends on the data (NonZero, Unique, Compress,
// NonMaxSuppression). They become a relay_ir::Program (relay_ir/program.h): those nodes are its
// steps, the nodes between them its stages, which the importer imports at the shapes the executor
// meets (and binds to values where a converter needs constants, as BindingRequired says);
// subgraphs become programs of their own, reading the values around them by name.
#pragma once
#include <memory>
#include <string>

#include "frontend/onnx/importer.h"
#include "relay_ir/program.h"

namespace tessera::frontend::onnx {

// The model at `path` as a program; null when it needs none (one static graph expresses it) unless
// `always`: a model whose inputs set shapes or counts (BindingRequired) is a program of one stage,
// built for each of their values it meets. A model of symbolic input sizes whose inputs set shapes
// or counts is always a program. Checks the operators of every graph and subgraph,
// naming every unsupported one at once.
std::shared_ptr<const relay_ir::Program> import_program(const std::string& path, const ImportOptions& options,
                                                        bool always = false);

}  // namespace tessera::frontend::onnx
