#include "tools/cli_options.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "autotune/database.h"
#include "driver/evaluate.h"
#include "frontend/onnx/importer.h"
#include "frontend/onnx/program.h"
#include "runtime/error.h"
#include "runtime/module_file.h"
#include "runtime/npy.h"

namespace tessera::cli {

namespace {

// `text` as a whole integer; throws saying what it is (`what`: "--shape x=1,a").
int64_t parse_integer(const std::string& text, const std::string& what) {
  try {
    size_t used = 0;
    const int64_t value = std::stoll(text, &used);
    if (used == text.size()) return value;
  } catch (const std::logic_error&) {
  }
  fail(what, ": '", text, "' is not an integer");
}

// "x=1,3,224,224" -> {"x", {1, 3, 224, 224}}
std::pair<std::string, std::vector<int64_t>> parse_shape(const std::string& s) {
  auto eq = s.find('=');
  if (eq == std::string::npos) fail("--shape ", s, ": expected NAME=D0,D1,...");
  std::vector<int64_t> dims;
  std::stringstream rest(s.substr(eq + 1));
  for (std::string d; std::getline(rest, d, ',');)
    if (!d.empty()) dims.push_back(parse_integer(d, "--shape " + s));
  return {s.substr(0, eq), dims};
}

// --specialize "N=1,L=128" -> {N: 1, L: 128}, for each option.
std::vector<std::map<std::string, int64_t>> hot_sizes(const std::vector<std::string>& options) {
  std::vector<std::map<std::string, int64_t>> sizes;
  for (const std::string& option : options) {
    std::map<std::string, int64_t> values;
    std::stringstream items(option);
    for (std::string item; std::getline(items, item, ',');) {
      auto eq = item.find('=');
      if (eq == std::string::npos) fail("--specialize ", option, ": expected DIM=VALUE,DIM=VALUE,...");
      values[item.substr(0, eq)] = parse_integer(item.substr(eq + 1), "--specialize " + option);
    }
    sizes.push_back(std::move(values));
  }
  return sizes;
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

void add_specialize_option(CLI::App* cmd, ModelOptions& o) {
  cmd->add_option("--specialize", o.specialize,
                  "for a model of symbolic sizes: build these sizes as static models (the fastest code), the others "
                  "once for every size: DIM=VALUE,DIM=VALUE (every dimension; repeat for more sizes)");
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
  // Every command but `run` reads an ONNX model; a module would fail as a protobuf that does not parse.
  if (runtime::is_module_file(o.model))
    fail(o.model, " is a compiled module, not an ONNX model: `tessera run` runs it (this command takes the model)");
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

std::shared_ptr<driver::ShapeSpecializedBuild> load_dynamic(const ModelOptions& o, bool jit) {
  const auto fixed = single_shapes(o);
  std::vector<runtime::BufferSpec> inputs = frontend::onnx::model_inputs(o.model, import_options(o, fixed));
  if (std::all_of(inputs.begin(), inputs.end(), [](const auto& in) { return runtime::is_static(in.shape); })) {
    if (!o.specialize.empty())
      fail("--specialize applies to models of symbolic sizes; every input of ", o.model, " has a fixed shape");
    return nullptr;
  }
  auto specialize = [o, fixed](const std::map<std::string, std::vector<int64_t>>& shapes) {
    auto all = shapes;
    all.insert(fixed.begin(), fixed.end());
    return import_at(o, all);
  };
  auto symbolic = [o] { return load_symbolic(o); };
  auto build = std::make_shared<driver::ShapeSpecializedBuild>(
      std::move(inputs), specialize, targets::Target::parse(o.target), build_options(o, jit), symbolic);
  build->specialize_sizes(hot_sizes(o.specialize));
  return build;
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
