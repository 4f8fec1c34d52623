// The pass manager. A pass is {name, opt level, passes it requires, function}; a sequence runs
// the passes enabled at the context's opt level (or required, and not disabled), times each,
// dumps the module after every pass that changed it when TESSERA_DUMP_IR names a folder, and in
// debug builds re-checks types after each pass.
#pragma once
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "relay_ir/attrs.h"
#include "relay_ir/module.h"

namespace tessera::relay_ir {

struct PassContext {
  int opt_level = 2;
  std::set<std::string> required;  // run even above the opt level
  std::set<std::string> disabled;  // never run (unless another pass requires them)
  Attrs options;                   // typed options passes read, e.g. "fuse.max_depth"
  std::string dump_dir;            // defaults to $TESSERA_DUMP_IR
  // Evaluates a closed expression with compiled kernels (the driver supplies it); passes that
  // fold constants need it. One array per tensor of the expression's type.
  std::function<std::vector<runtime::NDArray>(const Expr&)> evaluate;
  // Filled as passes run: (name, milliseconds, changed).
  struct Record {
    std::string pass;
    double ms;
    bool changed;
  };
  std::vector<Record> log;

  PassContext();
};

struct Pass {
  std::string name;
  int opt_level = 0;
  std::vector<std::string> requires_passes;  // run before this one (by name, from the same list or built in)
  std::function<Module(const Module&, PassContext&)> run;
};

// The built-in pass "InferType" and any pass given here can be required by name.
Pass infer_type_pass();

// A pass (requiring InferType) that rewrites each function of the module on its own: `rewrite`
// returns the function's new form (a mutator's result on it), as TVM's FunctionPass.
Pass function_pass(std::string name, int opt_level, std::function<Expr(const Function&, PassContext&)> rewrite);

// Runs `passes` in order under `ctx`; returns the resulting module (typed).
Module run_passes(const Module& m, const std::vector<Pass>& passes, PassContext& ctx);

}  // namespace tessera::relay_ir
