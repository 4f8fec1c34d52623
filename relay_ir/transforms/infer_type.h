// Type inference: fills every expression's checked_type from the parameters' annotations,
// the constants' data and each op's type relation. Errors name the op and, where the graph
// came from a model, the node (CallNode::origin).
#pragma once
#include "relay_ir/module.h"

namespace tessera::relay_ir {

// Types `e` and everything below it; returns its type.
Type infer_type(const Expr& e);
// Types every function of the module (in place: checked_type is a cache) and returns it.
Module infer_type(const Module& m);

}  // namespace tessera::relay_ir
