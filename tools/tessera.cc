// The `tessera` command-line program: compile, run and inspect ONNX models, export them as
// modules and run those. Everything it does is a library call (frontend, driver, runtime); this
// file only parses arguments and prints.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>

#include "autotune/database.h"
#include "tools/cli_options.h"
#include "driver/build.h"
#include "driver/evaluate.h"
#include "driver/export.h"
#include "driver/program_build.h"
#include "driver/program_executor.h"
#include "relay_ir/dot.h"
#include "relay_ir/printer.h"
#include "runtime/error.h"
#include "runtime/module_file.h"
#include "runtime/module_loader.h"
#include "runtime/npy.h"
#include "targets/build.h"
#include "tools/cli_tune.h"

using namespace tessera;
using namespace tessera::cli;

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// A model whose inputs keep symbolic dimensions (no --shape) compiles once for every size where its
// operators allow; otherwise the error says which operator needs --shape.
driver::BuildResult compile(const ModelOptions& o, double* seconds, bool jit = true) {
  auto start = std::chrono::steady_clock::now();
  relay_ir::Module m;
  if (load_dynamic(o)) {
    try {
      m = load_symbolic(o);
    } catch (const Error& e) {
      fail(o.model, ": it has symbolic dimensions, and it cannot be compiled for every size: ", e.what(),
           "; give its inputs' shapes with --shape");
    }
  } else {
    m = load(o);
  }
  driver::BuildResult r = driver::build(m, targets::Target::parse(o.target), build_options(o, jit));
  *seconds = seconds_since(start);
  return r;
}

std::string describe(const runtime::GraphPlan& plan, int id) {
  const auto& t = plan.tensors[id];
  return t.name + ": " + t.dtype.str() +
         (plan.is_symbolic() ? runtime::symbolic_shape_str(plan.symbolic_shapes[id]) : runtime::shape_str(t.shape));
}

int64_t intermediate_bytes(const runtime::GraphPlan& plan) {
  int64_t sum = 0;
  for (const auto& t : plan.tensors) {
    if (t.kind != runtime::GraphPlan::TensorInfo::Intermediate) continue;
    int64_t n = t.dtype.element_bytes();
    for (int64_t d : t.shape) n *= d;
    sum += n;
  }
  return sum;
}

void print_inputs_outputs(const runtime::GraphPlan& plan) {
  for (int id : plan.inputs) std::printf("  input  %s\n", describe(plan, id).c_str());
  for (int id : plan.outputs) std::printf("  output %s\n", describe(plan, id).c_str());
}

// The builds of --specialize sizes beside the build for every size printed before them.
void print_hot_sizes(driver::ShapeSpecializedBuild& dynamic) {
  std::printf("\nspecialized sizes (static builds; every other size runs the kernels above):\n");
  for (const auto& values : dynamic.hot_sizes()) {
    const std::vector<std::vector<int64_t>> shapes = dynamic.shapes_at(values);
    const std::shared_ptr<const driver::BuildResult> build = dynamic.specialized(shapes);
    int tuned = 0;
    for (const auto& k : build->kernels) tuned += k.record != 0;
    std::printf("  %s: %zu kernels (%d from tuning records), memory plan %.1f KiB\n", dynamic.served_by(shapes).c_str(),
                build->kernels.size(), tuned, build->plan.arena_bytes / 1024.0);
  }
}

// With -o the kernels are compiled once, for the file (no JIT), so any target can be exported.
// With --specialize, the build for every size and the static builds of those sizes, in one file.
int cmd_compile(const ModelOptions& o, const std::string& output) {
  if (auto program = load_program(o)) {
    if (!o.specialize.empty())
      fail(o.model, ": --specialize: the model runs as a program, whose stages have no hot sizes");
    auto start = std::chrono::steady_clock::now();
    const driver::ProgramBuild built =
        driver::build_for_every_size(*program, targets::Target::parse(o.target), build_options(o, /*jit=*/false));
    std::printf("compiled %s for %s in %.2f s for every size: a program of %zu stages\n", o.model.c_str(),
                o.target.c_str(), seconds_since(start), built.stages.size());
    if (output.empty()) return 0;
    start = std::chrono::steady_clock::now();
    driver::export_module(built, output);
    std::printf("wrote %s (%.1f MiB) in %.2f s\n", output.c_str(), std::filesystem::file_size(output) / 1048576.0,
                seconds_since(start));
    return 0;
  }
  double seconds = 0;
  const bool jit = output.empty();
  std::shared_ptr<driver::ShapeSpecializedBuild> dynamic;
  driver::BuildResult r;
  if (o.specialize.empty()) {
    r = compile(o, &seconds, jit);
  } else {
    auto start = std::chrono::steady_clock::now();
    dynamic = load_dynamic(o, jit);
    std::shared_ptr<const driver::BuildResult> every_size = dynamic->symbolic_now();
    if (!every_size)
      fail(o.model, ": --specialize: the model cannot be compiled for every size (", dynamic->symbolic_reason(), ")");
    r = *every_size;
    seconds = seconds_since(start);
  }
  const auto& plan = r.plan;
  if (plan.is_symbolic())
    std::printf("compiled %s for %s in %.2f s for every size: %zu kernels, %zu steps, memory planned at each size\n",
                o.model.c_str(), o.target.c_str(), seconds, r.kernels.size(), plan.steps.size());
  else
    std::printf("compiled %s for %s in %.2f s: %zu kernels, %zu steps, memory plan %.1f KiB\n", o.model.c_str(),
                o.target.c_str(), seconds, r.kernels.size(), plan.steps.size(), plan.arena_bytes / 1024.0);
  print_inputs_outputs(plan);
  if (dynamic) print_hot_sizes(*dynamic);
  if (!output.empty()) {
    auto start = std::chrono::steady_clock::now();
    if (dynamic) driver::export_module(*dynamic, output);
    else driver::export_module(r, output);
    std::printf("wrote %s (%.1f MiB) in %.2f s\n", output.c_str(), std::filesystem::file_size(output) / 1048576.0,
                seconds_since(start));
  }
  return 0;
}

// Writes output `i`: a tensor as output<i>.npy, a sequence as output<i>/<k>.npy (one file per
// element), nothing for an empty optional.
void write_output(const std::string& dir, size_t i, const runtime::ProgramValue& v) {
  const std::string path = dir + "/output" + std::to_string(i);
  if (v.is_tensor()) runtime::save_npy(path + ".npy", v.tensor);
  if (!v.is_sequence()) return;
  std::filesystem::remove_all(path);
  std::filesystem::create_directories(path);
  for (size_t k = 0; k < v.sequence.size(); ++k)
    runtime::save_npy(path + "/" + std::to_string(k) + ".npy", v.sequence[k]);
}

// "float32(2, 3)", "a sequence of 2 tensors: float32(2,), float32(3,)", "no value (an empty optional)".
std::string describe(const runtime::ProgramValue& v) {
  if (v.is_tensor()) return v.tensor.dtype().str() + v.tensor.shape_str();
  std::string s = v.describe();
  for (size_t k = 0; k < v.sequence.size(); ++k)
    s += (k ? ", " : ": ") + v.sequence[k].dtype().str() + v.sequence[k].shape_str();
  return s;
}

// Runs `run` once, printing its outputs' types and writing them to `output_dir` (if given), then
// `bench` more times, timed.
int report_runs(const std::function<std::vector<runtime::ProgramValue>()>& run, const std::string& output_dir,
                int bench) {
  const std::vector<runtime::ProgramValue> outputs = run();
  if (!output_dir.empty()) std::filesystem::create_directories(output_dir);
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::printf("output %zu: %s\n", i, describe(outputs[i]).c_str());
    if (!output_dir.empty()) write_output(output_dir, i, outputs[i]);
  }
  if (bench > 0) {
    std::vector<double> ms;
    for (int i = 0; i < bench; ++i) {
      auto start = std::chrono::steady_clock::now();
      run();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("latency over %d runs: min %.3f ms, median %.3f ms, p90 %.3f ms\n", bench, ms.front(),
                ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 9 / 10)]);
  }
  return 0;
}

// --input NAME=FILE: the files by input name, in the order of `names`; fails naming an input
// that the model lacks or that is not given (unless `optional` says it may be absent: "").
std::vector<std::string> input_files(const std::vector<std::string>& inputs, const std::vector<std::string>& names,
                                     const std::function<bool(size_t)>& optional = nullptr) {
  std::map<std::string, std::string> given;
  for (const auto& in : inputs) {
    auto [name, file] = parse_assignment(in, "--input");
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string list;
      for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
      fail("the model has no input '", name, "' (its inputs are: ", list, ")");
    }
    given[name] = file;
  }
  std::vector<std::string> files;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!given.count(names[i]) && !(optional && optional(i)))
      fail("input '", names[i], "' is not given (--input ", names[i], "=FILE.npy)");
    files.push_back(given[names[i]]);
  }
  return files;
}

// A program input from its file: a tensor from FILE.npy, a sequence from a folder of 0.npy,
// 1.npy, ... (as run writes them); an optional input not given has no value.
runtime::ProgramValue read_program_input(const std::string& name, const std::string& file,
                                         const runtime::ProgramInputType& type) {
  if (file.empty()) return {};
  if (!std::filesystem::is_directory(file)) {
    if (type.kind == runtime::ProgramInputType::Sequence)
      fail("input '", name, "' is a sequence: give a folder of 0.npy, 1.npy, ... (--input ", name, "=FOLDER), not ",
           file);
    return runtime::load_npy(file);
  }
  std::vector<runtime::NDArray> elements;
  while (std::filesystem::exists(file + "/" + std::to_string(elements.size()) + ".npy"))
    elements.push_back(runtime::load_npy(file + "/" + std::to_string(elements.size()) + ".npy"));
  const size_t files = std::distance(std::filesystem::directory_iterator(file), {});
  if (files != elements.size())
    fail("input '", name, "': the folder ", file, " must hold only 0.npy, 1.npy, ... (a sequence's elements in order)");
  return runtime::ProgramValue::of_sequence(std::move(elements));
}

// The values of a program's inputs from --input NAME=FILE (an optional one may be left out).
std::vector<runtime::ProgramValue> read_program_inputs(const std::vector<std::string>& inputs,
                                                       const runtime::ProgramPlan& plan) {
  const std::vector<std::string> files = input_files(
      inputs, plan.inputs, [&](size_t i) { return plan.input_types[i].kind == runtime::ProgramInputType::Optional; });
  std::vector<runtime::ProgramValue> values;
  for (size_t i = 0; i < files.size(); ++i)
    values.push_back(read_program_input(plan.inputs[i], files[i], plan.input_types[i]));
  return values;
}

// The arrays of --input NAME=FILE.npy, in the order of `names`.
std::vector<runtime::NDArray> read_arrays(const std::vector<std::string>& inputs,
                                          const std::vector<std::string>& names) {
  std::vector<runtime::NDArray> arrays;
  for (const std::string& file : input_files(inputs, names)) arrays.push_back(runtime::load_npy(file));
  return arrays;
}

// Runs `ex` on `values` (one per input) as report_runs says.
int run_graph(runtime::GraphExecutor& ex, const std::vector<runtime::NDArray>& values, const std::string& output_dir,
              int bench) {
  for (size_t i = 0; i < values.size(); ++i) ex.set_input(i, values[i]);
  return report_runs(
      [&] {
        ex.run();
        std::vector<runtime::ProgramValue> out;
        for (size_t i = 0; i < ex.num_outputs(); ++i) out.push_back(ex.output(i));
        return out;
      },
      output_dir, bench);
}

std::vector<std::string> input_names(const runtime::GraphExecutor& ex) {
  std::vector<std::string> names;
  for (size_t i = 0; i < ex.num_inputs(); ++i) names.push_back(ex.input_info(i).name);
  return names;
}

// Runs a model of symbolic input dimensions at the sizes of the inputs given.
int run_dynamic(driver::ShapeSpecializedBuild& dynamic, const ModelOptions& o, const std::vector<std::string>& inputs,
                const std::string& output_dir, int bench) {
  std::vector<std::string> names;
  for (const auto& in : dynamic.inputs()) names.push_back(in.name);
  const std::vector<runtime::NDArray> arrays = read_arrays(inputs, names);
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& a : arrays) shapes.push_back(a.shape());
  auto start = std::chrono::steady_clock::now();
  const std::shared_ptr<const driver::BuildResult> build = dynamic.get(shapes);
  const std::string reason = dynamic.symbolic_reason();
  const std::string why = reason.empty() ? "" : " (one build per size: " + reason + ")";
  std::printf("%s for %s at these sizes: %s (%.2f s)%s\n", o.model.c_str(), o.target.c_str(),
              dynamic.served_by(shapes).c_str(), seconds_since(start), why.c_str());
  return run_graph(*build->executor, arrays, output_dir, bench);
}

// Runs an exported module (loaded by the runtime alone) or an ONNX model (compiled here: one with
// control flow or data-dependent shapes as a program, one of symbolic sizes at the inputs' sizes).
// `device` ("opencl:1"; empty: the module's default) applies to modules only: an ONNX model runs
// where its -t puts it.
int cmd_run(const ModelOptions& o, const std::string& device, const std::vector<std::string>& inputs,
            const std::string& output_dir, int bench) {
  if (runtime::is_module_file(o.model)) {
    if (!o.shapes.empty() || !o.binds.empty())
      fail("--shape and --bind apply to ONNX models, not to the module ", o.model);
    auto start = std::chrono::steady_clock::now();
    std::optional<runtime::Device> on;
    if (!device.empty()) on = runtime::Device::parse(device);
    runtime::LoadedModule m = runtime::load_module(o.model, on);
    if (m.program) {
      std::printf("loaded %s (target %s, a program of %zu stages) on %s in %.1f ms\n", o.model.c_str(),
                  m.target.c_str(), m.program->stages().size(),
                  m.program->stages().empty() ? "the CPU" : m.program->stages()[0]->device().str().c_str(),
                  seconds_since(start) * 1e3);
      const std::vector<runtime::ProgramValue> values = read_program_inputs(inputs, m.program->plan());
      return report_runs([&] { return m.program->run(values); }, output_dir, bench);
    }
    std::printf("loaded %s (target %s) on %s in %.1f ms\n", o.model.c_str(), m.target.c_str(),
                m.executor->device().str().c_str(), seconds_since(start) * 1e3);
    const std::vector<runtime::NDArray> arrays = read_arrays(inputs, input_names(*m.executor));
    if (!m.executor->hot_sizes().empty()) {
      std::vector<std::vector<int64_t>> shapes;
      for (const auto& a : arrays) shapes.push_back(a.shape());
      const std::string hot = m.executor->specialized_sizes(shapes);
      const std::string served = hot.empty() ? "the build for every size" : "specialized for " + hot;
      std::printf("at these sizes: %s\n", served.c_str());
    }
    return run_graph(*m.executor, arrays, output_dir, bench);
  }
  if (!device.empty()) fail("--device applies to modules; for an ONNX model give the target with -t");
  if (auto program = load_program(o)) {
    auto ex = std::make_shared<driver::ProgramExecutor>(*program, targets::Target::parse(o.target),
                                                        build_options(o, /*jit=*/true));
    const std::vector<runtime::ProgramValue> values = read_program_inputs(inputs, *program->plan);
    return report_runs([&] { return ex->run(values); }, output_dir, bench);
  }
  if (auto dynamic = load_dynamic(o)) return run_dynamic(*dynamic, o, inputs, output_dir, bench);
  double seconds = 0;
  const std::shared_ptr<runtime::GraphExecutor> executor = compile(o, &seconds).executor;
  return run_graph(*executor, read_arrays(inputs, input_names(*executor)), output_dir, bench);
}

// Each kernel's source for the target (for opencl and cuda, with the default GPU schedules or the
// database's records for that device).
void write_kernel_sources(const ModelOptions& o, const std::string& dir) {
  const targets::Target target = targets::Target::parse(o.target);
  double seconds = 0;
  const driver::BuildResult r = compile(o, &seconds, /*jit=*/false);
  const std::vector<std::string> paths = targets::write_sources(r.lowered, target, dir);
  std::printf("wrote %zu files of %zu kernels' %s source to %s\n", paths.size(), r.lowered.size(), target.kind.c_str(),
              dir.c_str());
}

int cmd_inspect(const ModelOptions& o, const std::string& dot, const std::string& source_dir) {
  if (auto program = load_program(o)) {
    if (!dot.empty() || !source_dir.empty())
      fail("the model runs as a program of stages: --dot and --source need one static graph");
    std::printf("%s", runtime::to_text(*program->plan).c_str());
    return 0;
  }
  if (!source_dir.empty()) {
    write_kernel_sources(o, source_dir);
    return 0;
  }
  double seconds = 0;
  driver::BuildResult r = compile(o, &seconds);
  std::printf("%s", relay_ir::to_text(r.optimized).c_str());
  if (!dot.empty()) {
    std::ofstream out(dot);
    out << relay_ir::to_dot(r.optimized);
    if (!out) fail("cannot write ", dot);
    std::printf("wrote the graph to %s (render: dot -Tsvg %s -o graph.svg)\n", dot.c_str(), dot.c_str());
  }
  std::printf("\n%zu kernels:\n", r.kernels.size());
  for (const auto& k : r.kernels)
    std::printf("  %-28s %-22s x%-3d %s\n      (%s)\n", k.name.c_str(), k.op.c_str(), k.calls, k.schedule.c_str(),
                k.signature.c_str());
  const auto& plan = r.executor->plan();
  std::printf("memory plan: peak %lld bytes for intermediates, %lld bytes if each had its own buffer\n",
              static_cast<long long>(plan.arena_bytes), static_cast<long long>(intermediate_bytes(plan)));
  if (!o.specialize.empty()) print_hot_sizes(*load_dynamic(o));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tessera: compile, tune, run and inspect ONNX models"};
  app.require_subcommand(1);

  ModelOptions compile_opts, run_opts, inspect_opts;
  std::string output, output_dir;
  std::vector<std::string> inputs;
  int bench = 0;

  auto* compile_cmd = app.add_subcommand("compile", "compile a model and report what was built");
  add_model_options(compile_cmd, compile_opts);
  add_specialize_option(compile_cmd, compile_opts);
  compile_cmd->add_option("-o,--output", output,
                          "write the model as one file (model.so) the runtime loads alone: a shared library for a CPU, "
                          "the device code for opencl and cuda");
  auto* run_cmd = app.add_subcommand("run", "run a module (model.so) or compile and run an ONNX model, on .npy inputs");
  add_model_options(run_cmd, run_opts);
  add_specialize_option(run_cmd, run_opts);
  run_cmd->add_option("--input", inputs, "an input: NAME=FILE.npy (a sequence: NAME=FOLDER of 0.npy, 1.npy, ...)");
  run_cmd->add_option("--output-dir", output_dir,
                      "write outputs as output<N>.npy here (a sequence as output<N>/0.npy, 1.npy, ...)");
  run_cmd->add_option("--bench", bench, "time this many runs and print latency statistics");
  std::string device;
  run_cmd->add_option("-d,--device", device,
                      "for a module built for opencl or cuda: the device to run it on (opencl, cuda:1; default: the "
                      "first of its kind)");
  auto* inspect_cmd = app.add_subcommand("inspect", "print the optimized graph, its kernels and memory plan");
  add_model_options(inspect_cmd, inspect_opts);
  add_specialize_option(inspect_cmd, inspect_opts);
  std::string dot;
  inspect_cmd->add_option("--dot", dot, "write the optimized graph with its fused groups as Graphviz");
  std::string source_dir;
  inspect_cmd->add_option("--source", source_dir,
                          "write each kernel's generated source for -t to this folder (.ll, .c, .cl, .cu and .ptx)");

  add_tuning_commands(app);

  CLI11_PARSE(app, argc, argv);
  try {
    if (int status = run_tuning_commands(); status >= 0) return status;
    if (*compile_cmd) return cmd_compile(compile_opts, output);
    if (*run_cmd) return cmd_run(run_opts, device, inputs, output_dir, bench);
    if (*inspect_cmd) return cmd_inspect(inspect_opts, dot, source_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tessera: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
