// Runs a relay_ir::Program (relay_ir/program.h): the executor of models with control flow and
// data-dependent shapes. Each stage is built with build() the first time it meets a signature
// (its inputs' shapes and dtypes, and the values of the inputs its graph needs as constants) and
// reused after that, so a loop whose state keeps its shape compiles its body once. Branches,
// loops, the data-dependent operators and the sequence operators (driver/program_builtins.h) run
// here, on the host, between stages; values cross between stages as host arrays.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/build.h"
#include "driver/program_value.h"
#include "relay_ir/program.h"

namespace tessera::driver {

class ProgramExecutor {
 public:
  // The builds a stage keeps, past which its least recently used is dropped (a stage after a
  // data-dependent operator meets a new shape for each new count).
  static constexpr size_t kMaxBuildsPerStage = 64;

  ProgramExecutor(std::shared_ptr<const relay_ir::Program> program, targets::Target target, BuildOptions options);

  // Runs the program on `inputs` (in the program's input order); the outputs are new host arrays.
  // Throws naming the input that does not fit its declared type, or the step (and a stage's input
  // shapes) that fails. One run at a time.
  std::vector<ProgramValue> run(const std::vector<ProgramValue>& inputs);

  const relay_ir::Program& program() const { return *program_; }
  const targets::Target& target() const { return target_; }

  // What is built: per stage (by origin), the signatures of the builds it keeps.
  std::vector<std::pair<std::string, std::vector<std::string>>> builds() const;

 private:
  struct Frame;
  struct StageBuild {
    std::shared_ptr<const BuildResult> result;
    std::string signature;  // for builds(): "float32(2, 3), int64() = 4"
    uint64_t last_use = 0;
  };
  struct StageCache {
    std::vector<bool> bound;                   // the inputs its graph needed as constants (grows, never shrinks)
    std::map<std::string, StageBuild> builds;  // by key(): shapes, dtypes, bound values
  };

  using Values = std::vector<ProgramValue>;
  Values run_program(const relay_ir::Program& p, const Values& inputs, const Frame* outer);
  void run_step(const relay_ir::ProgramStep& step, Frame& frame);
  Values run_stage(const relay_ir::ProgramStep& step, const Values& in);
  Values run_loop(const relay_ir::ProgramStep& step, const Values& in, const Frame& frame);
  Values run_scan(const relay_ir::ProgramStep& step, const Values& in, const Frame& frame);
  Values run_sequence_map(const relay_ir::ProgramStep& step, const Values& in, const Frame& frame);

  std::shared_ptr<const relay_ir::Program> program_;
  targets::Target target_;
  BuildOptions options_;
  mutable std::mutex mutex_;
  std::map<const relay_ir::ProgramStep*, StageCache> stages_;
  uint64_t uses_ = 0;
};

}  // namespace tessera::driver
