// C has no let expressions, and substituting a let's value for its variable can grow an expression
// exponentially (integer pow's square-and-multiply chain reads each square twice). So before a
// store is printed, its let-bound values become const locals computed once ahead of it.
#pragma once
#include "tensor_ir/stmt.h"

namespace tessera::targets::source {

// `store` (a scalar Store) as statements computing its let-bound values first (LetStmt). A select
// whose sides hold lets becomes an if storing the chosen side into a one-element local buffer,
// so values are computed only where the select would read them (its guarded loads stay
// guarded); a && or || whose right side holds lets becomes such a select. Other statements, and
// stores without lets, are returned as they are.
tensor_ir::Stmt lift_let_expressions(const tensor_ir::Stmt& store);

}  // namespace tessera::targets::source
