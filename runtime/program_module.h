// A program (runtime/program_plan.h) loaded from a module: the program runner with each stage a
// graph executor of its plan, all sharing the module's code; it runs on the device the code is
// for, and its values cross between stages as host arrays.
#pragma once
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/graph_executor.h"
#include "runtime/program_runner.h"

namespace tessera::runtime {

class ProgramModule {
 public:
  ProgramModule(std::shared_ptr<const ProgramPlan> plan, std::vector<std::shared_ptr<GraphExecutor>> stages);

  // The outputs on `inputs` (in the program's input order) as host values; one run at a time.
  // Throws naming the input that does not fit its declared type, or the step that fails.
  std::vector<ProgramValue> run(const std::vector<ProgramValue>& inputs);

  const ProgramPlan& plan() const { return runner_.program(); }
  const std::vector<std::shared_ptr<GraphExecutor>>& stages() const { return stages_; }

 private:
  std::vector<std::shared_ptr<GraphExecutor>> stages_;
  ProgramRunner runner_;
  std::mutex mutex_;
};

}  // namespace tessera::runtime
