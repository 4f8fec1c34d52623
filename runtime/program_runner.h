// Runs a program (runtime/program_plan.h): branches, loops, the data-dependent operators and the
// sequence operators (runtime/program_builtins.h) run here, on the host; stages run by the
// function the runner is given (graph plans of a loaded module, or builds the compiler makes in
// this process: driver/program_executor.h). Values cross between stages as host arrays.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/program_plan.h"
#include "runtime/program_value.h"

namespace tessera::runtime {

class ProgramRunner {
 public:
  // Runs stage `step` on `inputs` (host arrays). `outputs` comes with one entry per output of the
  // step: an array the runner gives for the output to be written into, or none; the stage writes
  // each output into the given array where it fits (GraphExecutor::run_into) and sets each entry
  // to the host array holding that output, which the runner keeps: it must not be overwritten by
  // a later call (GraphExecutor::run_handing_over does all of this).
  using RunStage =
      std::function<void(const ProgramStep& step, const std::vector<NDArray>& inputs, std::vector<NDArray>& outputs)>;

  ProgramRunner(std::shared_ptr<const ProgramPlan> program, RunStage run_stage);

  // Runs the program on `inputs` (in the program's input order); the outputs are host values.
  // Throws naming the input that does not fit its declared type, or the step that fails.
  std::vector<ProgramValue> run(const std::vector<ProgramValue>& inputs) const;

  const ProgramPlan& program() const { return *program_; }

 private:
  struct Frame;
  using Values = std::vector<ProgramValue>;
  Values run_program(const ProgramPlan& p, const Values& inputs, const Frame* outer) const;
  void run_step(const ProgramStep& step, Frame& frame) const;
  Values run_stage(const ProgramStep& step, const Values& in) const;
  Values run_loop(const ProgramStep& step, const Values& in, const Frame& frame) const;
  Values run_scan(const ProgramStep& step, const Values& in, const Frame& frame) const;
  Values run_sequence_map(const ProgramStep& step, const Values& in, const Frame& frame) const;

  std::shared_ptr<const ProgramPlan> program_;
  RunStage run_stage_;
};

// A host array of its own holding `a`'s elements.
NDArray owned_copy(const NDArray& a);

}  // namespace tessera::runtime
