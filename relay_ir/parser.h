// Reads the text form printer.h writes (TVM's Relay text format, simplified) back into graph IR,
// so tests, bug reports and hand-written graphs can be given as text. Op calls go through
// call(), so they are checked against the op registry like calls built in C++. Bad text throws
// tessera::Error starting with line:column and saying what was expected there.
#pragma once
#include <string>

#include "relay_ir/module.h"

namespace tessera::relay_ir {

// Zero or more `def @name(%p: type, ...) [-> type] { ... }`. A `-> type` (here or on a `fn`)
// is checked by running InferType over the body, which leaves its types filled in; text without
// it is read as written, types unchecked. Comments (origins, show_types) are skipped.
Module parse_module(const std::string& text);
// Bindings and a result, as to_text(Expr) prints them: `%0 = add(%x: float32[2], %y: float32[2]);
// relu(%0)`. A variable followed by `: type` where it first appears is a free variable.
Expr parse_expr(const std::string& text);

}  // namespace tessera::relay_ir
