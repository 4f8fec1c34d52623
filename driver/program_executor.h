// Runs a relay_ir::Program (relay_ir/program.h) in this process: the runtime's program runner
// (runtime/program_runner.h) with the program built once for every size (driver/program_build.h)
// on its first run, tiles chosen for that run's sizes. Where a stage cannot be built so (an
// operator needs as a constant a value computed at run time), every_size_reason() says why, and
// each stage is built by build() instead the first time it meets a signature (its inputs' shapes
// and dtypes, and the values of the inputs its graph needs as constants) and reused after that,
// so a loop whose state keeps its shape compiles its body once. So is a run with a value the
// build for every size cannot take as a size (a negative pad).
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/build.h"
#include "driver/program_build.h"
#include "relay_ir/program.h"
#include "runtime/program_runner.h"

namespace tessera::driver {

class ProgramExecutor {
 public:
  // The builds a stage keeps, past which its least recently used is dropped (a stage after a
  // data-dependent operator meets a new shape for each new count).
  static constexpr size_t kMaxBuildsPerStage = 64;

  ProgramExecutor(relay_ir::Program program, targets::Target target, BuildOptions options);

  // Runs the program on `inputs` (in the program's input order); the outputs are new host arrays.
  // Throws naming the input that does not fit its declared type, or the step (and a stage's input
  // shapes) that fails. One run at a time.
  std::vector<runtime::ProgramValue> run(const std::vector<runtime::ProgramValue>& inputs);

  const relay_ir::Program& program() const { return program_; }
  const targets::Target& target() const { return target_; }
  const BuildOptions& options() const { return options_; }

  // What is built: per stage (by origin), "every size" for the build for every size, and the
  // signatures of the builds it keeps at the signatures it met.
  std::vector<std::pair<std::string, std::vector<std::string>>> builds() const;

  // The build for every size that the first run made; null before it, or when the program
  // cannot be built so (every_size_reason() says why).
  std::shared_ptr<const ProgramBuild> every_size() const;
  std::string every_size_reason() const;

 private:
  struct StageBuild {
    std::shared_ptr<const BuildResult> result;
    std::string signature;  // for builds(): "float32(2, 3), int64() = 4"
    uint64_t last_use = 0;
  };
  struct StageCache {
    std::string origin;
    std::vector<bool> bound;                   // the inputs its graph needed as constants (grows, never shrinks)
    std::map<std::string, StageBuild> builds;  // by key(): shapes, dtypes, bound values
  };
  void run_stage(const runtime::ProgramStep& step, const std::vector<runtime::NDArray>& in,
                 std::vector<runtime::NDArray>& out);
  // Builds the program for every size once, its size hints (unless given) the sizes of `inputs`.
  void try_every_size(const std::vector<runtime::ProgramValue>& inputs);

  relay_ir::Program program_;
  targets::Target target_;
  BuildOptions options_;
  runtime::ProgramRunner runner_;
  mutable std::mutex mutex_;
  std::vector<StageCache> stages_;  // by ProgramStep::stage
  uint64_t uses_ = 0;
  bool every_size_tried_ = false;
  std::shared_ptr<const ProgramBuild> every_size_;
  std::unique_ptr<runtime::ProgramRunner> every_size_runner_;  // runs every_size_
  std::string every_size_reason_;
};

}  // namespace tessera::driver
