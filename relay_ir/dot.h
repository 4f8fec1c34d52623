// Graphviz export of a module's main function: one box per operator with its output type,
// each fused group (primitive function) drawn as a cluster of the ops it contains.
#pragma once
#include <string>

#include "relay_ir/module.h"

namespace tessera::relay_ir {

// The main function of `m` (typed) as a Graphviz digraph.
std::string to_dot(const Module& m);

}  // namespace tessera::relay_ir
