// Options the `tessera` subcommands share: how a model is named, shaped, bound and compiled.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "driver/build.h"
#include "driver/shape_specialized_build.h"
#include "relay_ir/module.h"
#include "relay_ir/program.h"

namespace tessera::cli {

struct ModelOptions {
  std::string model;
  std::string target = "llvm";
  std::string db;  // empty: the default database, if it exists
  std::vector<std::string> shapes, binds;
  int opt_level = driver::BuildOptions{}.opt_level;
  bool transfer = true;  // schedule transfer for workloads without records (driver::BuildOptions)
  // Hot sizes of a model of symbolic sizes, "N=1,L=128" each: built as static models
  // (driver::ShapeSpecializedBuild::specialize_sizes).
  std::vector<std::string> specialize;
};

void add_model_options(CLI::App* cmd, ModelOptions& o);
// --specialize, for the subcommands that build a model in process (run, inspect).
void add_specialize_option(CLI::App* cmd, ModelOptions& o);
// The ONNX model with its --shape and --bind applied (one --shape per input).
relay_ir::Module load(const ModelOptions& o);
// The ONNX model as a program when one static graph cannot express it (control flow decided at
// run time, data-dependent shapes: frontend/onnx/program.h); null otherwise.
std::shared_ptr<const relay_ir::Program> load_program(const ModelOptions& o);
// The ONNX model built once for every size, or else once per size it is run at, when inputs keep
// symbolic dimensions that no --shape fixes, its --specialize sizes built now; null otherwise
// (an error when --specialize is given). Without `jit`, for export: no build runs here.
std::shared_ptr<driver::ShapeSpecializedBuild> load_dynamic(const ModelOptions& o, bool jit = true);
// The ONNX model with the symbolic dimensions no --shape fixes kept as variables (one graph for
// every size); throws naming the operator that needs a dimension as a constant.
relay_ir::Module load_symbolic(const ModelOptions& o);
// The build options the model options give.
driver::BuildOptions build_options(const ModelOptions& o, bool jit);
// The model at each size given: an input with several --shape options takes each in turn, inputs
// with one keep it (a model of symbolic sizes tuned at representative sizes). The sizes are
// described as "x=1,128,256" for progress lines.
std::vector<std::pair<std::string, relay_ir::Module>> load_sizes(const ModelOptions& o);
// "x=in.npy" -> {"x", "in.npy"}; throws naming `option` when there is no '='.
std::pair<std::string, std::string> parse_assignment(const std::string& s, const char* option);
// --db, else $TESSERA_DB, else ~/.cache/tessera/tuning.db.
std::string db_path(const std::string& db);

}  // namespace tessera::cli
