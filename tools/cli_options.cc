#include "tools/cli_options.h"

#include <algorithm>
#include <map>

#include "autotune/database.h"
#include "driver/evaluate.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/program.h"
#include "runtime/error.h"
#include "runtime/npy.h"

namespace tessera::cli {

namespace {

// "x=1,3,224,224" -> {"x", {1, 3, 224, 224}}
std::pair<std::string, std::vector<int64_t>> parse_shape(const std::string& s) {
  auto eq = s.find('=');
  if (eq == std::string::npos) fail("--shape ", s, ": expected NAME=D0,D1,...");
  std::vector<int64_t> dims;
  std::string rest = s.substr(eq + 1);
  for (size_t i = 0; i <= rest.size();) {
    size_t j = rest.find(',', i);
    if (j == std::string::npos) j = rest.size();
    std::string d = rest.substr(i, j - i);
    if (!d.empty()) {
      try {
        dims.push_back(std::stoll(d));
      } catch (...) {
        fail("--shape ", s, ": '", d, "' is not a number");
      }
    }
    i = j + 1;
  }
  return {s.substr(0, eq), dims};
}

}  // namespace

std::pair<std::string, std::string> parse_assignment(const std::string& s, const char* option) {
  auto eq = s.find('=');
  if (eq == std::string::npos) fail(option, " ", s, ": expected NAME=FILE.npy");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

void add_model_options(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("model", o.model, "ONNX model (run: or a module written by compile -o)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("-t,--target", o.target,
                  "target, e.g. llvm, \"llvm -mcpu=skylake-avx512\", opencl [-device=NAME] or \"cuda -arch=sm_90\"");
  cmd->add_option("--shape", o.shapes, "static shape of an input: NAME=D0,D1,...");
  cmd->add_option("--bind", o.binds, "bind an input to a value: NAME=FILE.npy");
  cmd->add_option("-O,--opt-level", o.opt_level,
                  "graph optimization level: 0 none; 1-2 fold constants and batch norms, fuse; 3 (default, the "
                  "fastest) also packed weight layouts, Winograd 3x3 convolutions, channels-last depthwise networks. "
                  "Batch-norm folding (1+) and Winograd (3) change rounding (~1e-6 of the output's scale)")
      ->check(CLI::Range(0, 3))
      ->capture_default_str();
  cmd->add_option("--db", o.db, "tuning database (default: $TESSERA_DB or ~/.cache/tessera/tuning.db)");
  cmd->add_flag("!--no-transfer", o.transfer, "no schedule transfer from similar workloads' records");
}

namespace {

// Each input's --shape values, in the order given.
std::map<std::string, std::vector<std::vector<int64_t>>> shapes_by_input(const ModelOptions& o) {
  std::map<std::string, std::vector<std::vector<int64_t>>> shapes;
  for (const auto& s : o.shapes) {
    auto [name, dims] = parse_shape(s);
    shapes[name].push_back(dims);
  }
  return shapes;
}

frontend::onnx::ImportOptions import_options(const ModelOptions& o,
                                             const std::map<std::string, std::vector<int64_t>>& shapes) {
  frontend::onnx::ImportOptions options;
  options.shapes = shapes;
  for (const auto& b : o.binds) {
    auto [name, file] = parse_assignment(b, "--bind");
    options.bind[name] = runtime::load_npy(file);
  }
  options.evaluate = [](const relay_ir::Expr& e) { return driver::evaluate(e); };
  return options;
}

relay_ir::Module import_at(const ModelOptions& o, const std::map<std::string, std::vector<int64_t>>& shapes) {
  return frontend::onnx::import_model(o.model, import_options(o, shapes));
}

// Each input's --shape; fails for an input given several (only `tessera tune` takes several).
std::map<std::string, std::vector<int64_t>> single_shapes(const ModelOptions& o) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto& [name, sizes] : shapes_by_input(o)) {
    if (sizes.size() > 1)
      fail("--shape is given ", sizes.size(), " times for input '", name,
           "' (several sizes are for `tessera tune`, which tunes each)");
    shapes[name] = sizes[0];
  }
  return shapes;
}

}  // namespace

std::shared_ptr<const relay_ir::Program> load_program(const ModelOptions& o) {
  return frontend::onnx::import_program(o.model, import_options(o, {}));
}

driver::BuildOptions build_options(const ModelOptions& o, bool jit) {
  driver::BuildOptions options;
  options.opt_level = o.opt_level;
  options.jit = jit;
  options.db_path = db_path(o.db);
  options.transfer = o.transfer;
  return options;
}

relay_ir::Module load(const ModelOptions& o) { return import_at(o, single_shapes(o)); }

relay_ir::Module load_symbolic(const ModelOptions& o) {
  frontend::onnx::ImportOptions options = import_options(o, single_shapes(o));
  options.symbolic = true;
  return frontend::onnx::import_model(o.model, options);
}

std::shared_ptr<driver::ShapeSpecializedBuild> load_dynamic(const ModelOptions& o) {
  const auto fixed = single_shapes(o);
  std::vector<runtime::BufferSpec> inputs = frontend::onnx::model_inputs(o.model, import_options(o, fixed));
  if (std::all_of(inputs.begin(), inputs.end(), [](const auto& in) { return runtime::is_static(in.shape); }))
    return nullptr;
  auto specialize = [o, fixed](const std::map<std::string, std::vector<int64_t>>& shapes) {
    auto all = shapes;
    all.insert(fixed.begin(), fixed.end());
    return import_at(o, all);
  };
  auto symbolic = [o] { return load_symbolic(o); };
  return std::make_shared<driver::ShapeSpecializedBuild>(
      std::move(inputs), specialize, targets::Target::parse(o.target), build_options(o, /*jit=*/true), symbolic);
}

std::vector<std::pair<std::string, relay_ir::Module>> load_sizes(const ModelOptions& o) {
  const auto given = shapes_by_input(o);
  size_t count = 1;
  for (const auto& [name, sizes] : given) {
    if (sizes.size() > 1 && count > 1 && sizes.size() != count)
      fail("--shape: inputs given several sizes must be given the same number of them ('", name, "' has ", sizes.size(),
           ", another ", count, ")");
    count = std::max(count, sizes.size());
  }
  std::vector<std::pair<std::string, relay_ir::Module>> modules;
  for (size_t k = 0; k < count; ++k) {
    std::map<std::string, std::vector<int64_t>> shapes;
    std::string label;
    for (const auto& [name, sizes] : given) {
      shapes[name] = sizes[sizes.size() > 1 ? k : 0];
      std::string dims;
      for (int64_t d : shapes[name]) dims += (dims.empty() ? "" : ",") + std::to_string(d);
      label += (label.empty() ? "" : " ") + name + "=" + dims;
    }
    modules.emplace_back(label, import_at(o, shapes));
  }
  return modules;
}

std::string db_path(const std::string& db) { return db.empty() ? autotune::TuningDatabase::default_path() : db; }

}  // namespace tessera::cli
