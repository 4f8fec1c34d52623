// A program (relay_ir/program.h) built ahead of time for every size: each stage compiled once,
// for inputs of symbolic shapes, so a module can hold it and run it with the runtime alone
// (runtime/program_module.h), at any size and through any branch or loop.
//
// The stages' input types come from the program's own: its inputs' declared shapes, each stage's
// output types, and for the steps between them what they are known to give (NonZero: int64
// [rank, count], a Loop's states: their initial types, a dimension the body changes a variable
// of its own, ...). A dimension nothing fixes is a variable of its own: the stage binds it from
// the shapes it is given and checks every relation its graph needs there, so the types only
// decide what is compiled, never what is accepted unchecked. A stage whose operators need the
// values of integer inputs (pads, counts, a shape from the data) takes them by shape: a
// values_as_shape step before it (runtime/program_builtins.h) makes each an empty tensor whose
// shape holds them, and the stage binds them as dimension variables.
#pragma once
#include <memory>
#include <vector>

#include "driver/build.h"
#include "relay_ir/program.h"

namespace tessera::driver {

struct ProgramBuild {
  std::shared_ptr<const runtime::ProgramPlan> plan;
  std::vector<std::shared_ptr<const BuildResult>> stages;  // by ProgramStep::stage
  targets::Target target;
};

// Stages are compiled for this process where options.jit is on (a program run here, whose module
// export writes the same build) and only lowered where it is off (a module written for another
// machine). Throws naming the step whose stage cannot be built for every size (an operator that needs a
// value computed at run time, a size it needs constant) or whose input types are not known before
// the program runs.
ProgramBuild build_for_every_size(const relay_ir::Program& program, const targets::Target& target,
                                  BuildOptions options);

}  // namespace tessera::driver
