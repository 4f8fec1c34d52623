#include "driver/program_executor.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "runtime/data_dependent_ops.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "runtime/shape_expr.h"

namespace tessera::driver {

using relay_ir::Program;
using relay_ir::ProgramStep;
using runtime::NDArray;

namespace {

// A host array of its own holding `a`'s elements (a graph executor's outputs are its buffers,
// overwritten by its next run).
NDArray owned(const NDArray& a) {
  NDArray copy = NDArray::empty(a.shape(), a.dtype());
  copy.copy_from(a);
  return copy;
}

NDArray scalar_of(runtime::DataType dtype, double value) {
  NDArray a = NDArray::empty({}, dtype);
  runtime::store_element(a, 0, value);
  return a;
}

// The one element of `a` (a condition, a trip count), read as an integer.
int64_t single_value(const NDArray& a, const std::string& what) {
  if (a.numel() != 1) fail(what, " must hold one value, got shape ", a.shape_str());
  if (a.dtype() == runtime::kInt64) return a.data_as<int64_t>()[0];
  return static_cast<int64_t>(runtime::element_as_double(a, 0));
}

int64_t normalized_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) fail(what, ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

// Bytes of one element, and the products of the dimensions before and after `axis`.
struct AxisSplit {
  int64_t outer = 1, inner = 1;
};
AxisSplit split_at(const std::vector<int64_t>& shape, int64_t axis, size_t element_bytes) {
  AxisSplit s;
  for (int64_t d = 0; d < axis; ++d) s.outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) s.inner *= shape[d];
  s.inner *= static_cast<int64_t>(element_bytes);
  return s;
}

// Entry `i` of `x` along `axis`, that dimension dropped.
NDArray take(const NDArray& x, int64_t axis, int64_t i) {
  std::vector<int64_t> shape = x.shape();
  const int64_t n = shape[axis];
  const AxisSplit s = split_at(shape, axis, x.dtype().element_bytes());
  shape.erase(shape.begin() + axis);
  NDArray out = NDArray::empty(shape, x.dtype());
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(out.data());
  for (int64_t o = 0; o < s.outer; ++o) std::memcpy(dst + o * s.inner, src + (o * n + i) * s.inner, s.inner);
  return out;
}

// `pieces` (of one shape and dtype) stacked along a new dimension `axis`.
NDArray stack(const std::vector<NDArray>& pieces, int64_t axis, const std::string& what) {
  const NDArray& first = pieces.at(0);
  for (const NDArray& p : pieces)
    if (p.shape() != first.shape() || p.dtype() != first.dtype())
      fail(what, ": the iterations' values differ, ", first.dtype().str(), first.shape_str(), " and ", p.dtype().str(),
           p.shape_str(), " (a scan output is stacked, so every iteration must give one shape)");
  std::vector<int64_t> shape = first.shape();
  shape.insert(shape.begin() + axis, static_cast<int64_t>(pieces.size()));
  NDArray out = NDArray::empty(shape, first.dtype());
  const AxisSplit s = split_at(shape, axis, first.dtype().element_bytes());
  const int64_t n = static_cast<int64_t>(pieces.size());
  char* dst = static_cast<char*>(out.data());
  for (int64_t i = 0; i < n; ++i) {
    const char* src = static_cast<const char*>(pieces[i].data());
    for (int64_t o = 0; o < s.outer; ++o) std::memcpy(dst + (o * n + i) * s.inner, src + o * s.inner, s.inner);
  }
  return out;
}

std::string signature_of(const std::vector<NDArray>& inputs, const std::vector<bool>& bound) {
  std::string s;
  for (size_t i = 0; i < inputs.size(); ++i) {
    s += (i ? ", " : "") + inputs[i].dtype().str() + inputs[i].shape_str();
    if (i < bound.size() && bound[i] && inputs[i].numel() <= 8) {
      s += " =";
      for (int64_t e = 0; e < inputs[i].numel(); ++e) {
        std::ostringstream v;
        v << runtime::element_as_double(inputs[i], e);
        s += " " + v.str();
      }
    } else if (i < bound.size() && bound[i]) {
      s += " = (" + std::to_string(inputs[i].numel()) + " values)";
    }
  }
  return s;
}

// The cache key of a stage's inputs: their dtypes and shapes, and the bytes of the bound ones.
std::string key_of(const std::vector<NDArray>& inputs, const std::vector<bool>& bound) {
  std::string key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    key += inputs[i].dtype().str() + inputs[i].shape_str();
    if (i < bound.size() && bound[i]) {
      key += "=";
      key.append(static_cast<const char*>(inputs[i].data()), inputs[i].nbytes());
    }
    key += ";";
  }
  return key;
}

// Throws naming the first input whose dtype or shape does not fit its declared type (a dimension
// variable must have one value across the inputs).
void check_inputs(const std::vector<runtime::BufferSpec>& declared, const std::vector<NDArray>& inputs) {
  if (declared.empty()) return;
  std::vector<runtime::SymbolicShape> shapes;
  std::vector<std::vector<int64_t>> given;
  std::vector<std::string> names;
  for (size_t i = 0; i < declared.size(); ++i) {
    if (inputs[i].dtype() != declared[i].dtype)
      fail("input '", declared[i].name, "' (#", i, "): expected ", declared[i].dtype.str(), " elements, got ",
           inputs[i].dtype().str());
    shapes.push_back(declared[i].shape);
    given.push_back(inputs[i].shape());
    names.push_back("input '" + declared[i].name + "'");
  }
  runtime::bind_shape_vars(shapes, given, names, "model:");
}

}  // namespace

// The values a program sees: its own, then those of the programs around it, by name.
struct ProgramExecutor::Frame {
  const Frame* outer = nullptr;
  std::unordered_map<std::string, NDArray> values;

  const NDArray& get(const std::string& name, const std::string& reader) const {
    for (const Frame* f = this; f; f = f->outer) {
      auto it = f->values.find(name);
      if (it != f->values.end()) return it->second;
    }
    fail(reader, " reads '", name, "', which nothing before it computes");
  }
};

ProgramExecutor::ProgramExecutor(std::shared_ptr<const Program> program, targets::Target target, BuildOptions options)
    : program_(std::move(program)), target_(std::move(target)), options_(options) {
  validate(options_);
  if (!options_.jit) fail("a program of stages is built while it runs: build it with jit on");
}

std::vector<NDArray> ProgramExecutor::run(const std::vector<NDArray>& inputs) {
  if (inputs.size() != program_->inputs.size())
    fail("the model takes ", program_->inputs.size(), " inputs, got ", inputs.size());
  check_inputs(program_->input_types, inputs);
  std::lock_guard<std::mutex> lock(mutex_);
  return run_program(*program_, inputs, nullptr);
}

std::vector<NDArray> ProgramExecutor::run_program(const Program& p, const std::vector<NDArray>& inputs,
                                                  const Frame* outer) {
  Frame frame{outer, {}};
  for (const auto& [name, value] : p.constants) frame.values[name] = value;
  for (size_t i = 0; i < inputs.size() && i < p.inputs.size(); ++i)
    if (!p.inputs[i].empty()) frame.values[p.inputs[i]] = inputs[i];
  for (const ProgramStep& step : p.steps) run_step(step, frame);
  std::vector<NDArray> outputs;
  for (const std::string& name : p.outputs) outputs.push_back(frame.get(name, "the output list"));
  return outputs;
}

void ProgramExecutor::run_step(const ProgramStep& step, Frame& frame) {
  std::vector<NDArray> in;
  for (const std::string& name : step.inputs) in.push_back(name.empty() ? NDArray() : frame.get(name, step.origin));
  std::vector<NDArray> out;
  switch (step.kind) {
    case ProgramStep::Kind::Stage:
      out = run_stage(step, in);
      break;
    case ProgramStep::Kind::Builtin:
      out = run_builtin(step, in);
      break;
    case ProgramStep::Kind::If: {
      const bool then = single_value(in.at(0), step.origin + ": the condition") != 0;
      out = run_program(*step.bodies.at(then ? 0 : 1), {}, &frame);
      break;
    }
    case ProgramStep::Kind::Loop:
      out = run_loop(step, in, frame);
      break;
    case ProgramStep::Kind::Scan:
      out = run_scan(step, in, frame);
      break;
  }
  if (out.size() < step.outputs.size())
    fail(step.origin, ": gives ", out.size(), " values for its ", step.outputs.size(), " outputs");
  for (size_t i = 0; i < step.outputs.size(); ++i)
    if (!step.outputs[i].empty()) frame.values[step.outputs[i]] = out[i];
}

std::vector<NDArray> ProgramExecutor::run_stage(const ProgramStep& step, const std::vector<NDArray>& in) {
  StageCache& cache = stages_[&step];
  if (cache.bound.empty()) cache.bound.assign(in.size(), false);
  auto it = cache.builds.find(key_of(in, cache.bound));
  if (it == cache.builds.end()) {
    StageBuild b;
    try {
      relay_ir::StageSpecialization spec = step.stage->specialize(in, cache.bound);
      for (size_t i = 0; i < in.size(); ++i) cache.bound[i] = cache.bound[i] || spec.bound.at(i);
      b.signature = signature_of(in, cache.bound);
      b.result = std::make_shared<const BuildResult>(build(spec.module, target_, options_));
    } catch (const Error& e) {
      fail(step.origin, " at inputs ", signature_of(in, cache.bound), ": ", e.what());
    }
    it = cache.builds.emplace(key_of(in, cache.bound), std::move(b)).first;
  }
  std::vector<NDArray> args;
  for (size_t i = 0; i < in.size(); ++i)
    if (!cache.bound[i]) args.push_back(in[i]);
  std::vector<NDArray> out;
  for (const NDArray& o : it->second.result->executor->run(args)) out.push_back(owned(o));
  return out;
}

std::vector<NDArray> ProgramExecutor::run_builtin(const ProgramStep& step, const std::vector<NDArray>& in) {
  auto input = [&](size_t i) -> const NDArray& {
    if (i >= in.size() || !in[i].defined()) fail(step.origin, ": input ", i, " is missing");
    return in[i];
  };
  auto optional_axis = [&]() -> std::optional<int64_t> {
    if (!step.attrs.has("axis")) return std::nullopt;
    return step.attrs.get_int("axis");
  };
  try {
    if (step.builtin == "nonzero") return {runtime::nonzero(input(0))};
    if (step.builtin == "compress") return {runtime::compress(input(0), input(1), optional_axis())};
    if (step.builtin == "unique") return runtime::unique(input(0), optional_axis(), step.attrs.get_int("sorted") != 0);
    if (step.builtin == "non_max_suppression") {
      auto given = [&](size_t i) { return i < in.size() && in[i].defined() && in[i].numel() > 0; };
      const int64_t max_boxes = given(2) ? single_value(in[2], "max_output_boxes_per_class") : 0;
      const float iou = given(3) ? static_cast<float>(runtime::element_as_double(in[3], 0)) : 0.0f;
      std::optional<float> score;
      if (given(4)) score = static_cast<float>(runtime::element_as_double(in[4], 0));
      return {runtime::non_max_suppression(input(0), input(1), max_boxes, iou, score,
                                           step.attrs.get_int("center_point_box") != 0)};
    }
  } catch (const Error& e) {
    fail(step.origin, ": ", e.what());
  }
  fail(step.origin, ": no builtin '", step.builtin, "'");
}

// ONNX Loop: while the condition holds and fewer than the trip count iterations ran, the body
// maps (iteration, condition, states...) to (condition, states..., scan values...); the states
// carry over, the scan values of every iteration are stacked.
std::vector<NDArray> ProgramExecutor::run_loop(const ProgramStep& step, const std::vector<NDArray>& in,
                                               const Frame& frame) {
  const Program& body = *step.bodies.at(0);
  const size_t n_states = in.size() - 2;
  if (body.inputs.size() != n_states + 2 || body.outputs.size() < n_states + 1)
    fail(step.origin, ": the body takes ", body.inputs.size(), " inputs and gives ", body.outputs.size(),
         " outputs; with ", n_states, " loop-carried values it must take ", n_states + 2, " and give at least ",
         n_states + 1);
  const bool has_trip_count = in[0].defined() && in[0].numel() > 0;
  const bool has_condition = in[1].defined() && in[1].numel() > 0;
  if (!has_trip_count && !has_condition)
    fail(step.origin, ": has neither a trip count nor a condition, so it would never end");
  const int64_t trip_count =
      has_trip_count ? single_value(in[0], step.origin + ": the trip count") : std::numeric_limits<int64_t>::max();
  bool keep_going = !has_condition || single_value(in[1], step.origin + ": the condition") != 0;
  std::vector<NDArray> states(in.begin() + 2, in.end());
  std::vector<std::vector<NDArray>> scans(body.outputs.size() - 1 - n_states);
  int64_t i = 0;
  for (; i < trip_count && keep_going; ++i) {
    std::vector<NDArray> body_in = {scalar_of(runtime::kInt64, static_cast<double>(i)),
                                    scalar_of(runtime::kBool, keep_going ? 1 : 0)};
    body_in.insert(body_in.end(), states.begin(), states.end());
    std::vector<NDArray> out = run_program(body, body_in, &frame);
    keep_going = single_value(out[0], step.origin + ": the body's condition") != 0;
    std::copy(out.begin() + 1, out.begin() + 1 + n_states, states.begin());
    for (size_t k = 0; k < scans.size(); ++k) scans[k].push_back(out[1 + n_states + k]);
  }
  std::vector<NDArray> result = states;
  for (size_t k = 0; k < scans.size(); ++k) {
    if (!scans[k].empty()) {
      result.push_back(stack(scans[k], 0, step.origin + " scan output " + std::to_string(k)));
      continue;
    }
    const size_t o = 1 + n_states + k;
    if (o >= body.output_dtypes.size())
      fail(step.origin, ": ran no iteration, and the type of its scan output ", k, " is not declared");
    result.push_back(NDArray::empty({0}, body.output_dtypes[o]));
  }
  return result;
}

// ONNX Scan (opset 9 and later): the body maps (states..., one slice of each scanned input) to
// (states..., one slice of each scan output), along each input's axis and direction; opset 8's
// Scan has a batch dimension first (each batch entry scanned on its own) and sequence lengths.
std::vector<NDArray> ProgramExecutor::run_scan(const ProgramStep& step, const std::vector<NDArray>& given,
                                               const Frame& frame) {
  const Program& body = *step.bodies.at(0);
  const relay_ir::Attrs& a = step.attrs;
  const bool batched = a.get_int("batched") != 0;  // opset 8
  std::vector<NDArray> in = given;
  if (batched) {
    if (in[0].defined() && in[0].numel() > 0) {  // sequence_lens: only whole sequences are supported
      const NDArray& lens = in[0];
      for (int64_t b = 0; b < lens.numel(); ++b)
        if (static_cast<int64_t>(runtime::element_as_double(lens, b)) != in.back().shape().at(1))
          fail(step.origin, ": sequence_lens[", b,
               "] is shorter than the sequence; only whole sequences are supported");
    }
    in.erase(in.begin());
  }
  const size_t n_scan_in = static_cast<size_t>(a.get_int("num_scan_inputs"));
  if (n_scan_in > in.size()) fail(step.origin, ": num_scan_inputs is ", n_scan_in, ", it has ", in.size(), " inputs");
  const size_t n_states = in.size() - n_scan_in;
  if (body.inputs.size() != in.size() || body.outputs.size() < n_states)
    fail(step.origin, ": the body takes ", body.inputs.size(), " inputs and gives ", body.outputs.size(),
         " outputs; the node has ", n_states, " states and ", n_scan_in, " scanned inputs");
  const size_t n_scan_out = body.outputs.size() - n_states;
  auto list = [&](const char* name, size_t n) {
    std::vector<int64_t> v = a.has(name) ? a.get_ints(name) : std::vector<int64_t>(n, 0);
    if (v.size() != n) fail(step.origin, ": ", name, " has ", v.size(), " entries for ", n, " values");
    return v;
  };
  const std::vector<int64_t> in_axes = list("scan_input_axes", n_scan_in);
  const std::vector<int64_t> in_dirs = list(batched ? "directions" : "scan_input_directions", n_scan_in);
  const std::vector<int64_t> out_axes = list("scan_output_axes", n_scan_out);
  const std::vector<int64_t> out_dirs = list("scan_output_directions", n_scan_out);

  // One sequence: states and scanned inputs without a batch dimension.
  auto scan_one = [&](std::vector<NDArray> states, const std::vector<NDArray>& xs) {
    int64_t length = -1;
    std::vector<int64_t> axes(n_scan_in);
    for (size_t j = 0; j < n_scan_in; ++j) {
      axes[j] = normalized_axis(in_axes[j], xs[j].ndim(), step.origin + " scanned input " + std::to_string(j));
      const int64_t n = xs[j].shape()[axes[j]];
      if (length >= 0 && n != length)
        fail(step.origin, ": the scanned inputs have different lengths, ", length, " and ", n);
      length = n;
    }
    std::vector<std::vector<NDArray>> pieces(n_scan_out);
    for (int64_t t = 0; t < length; ++t) {
      std::vector<NDArray> body_in = states;
      for (size_t j = 0; j < n_scan_in; ++j) body_in.push_back(take(xs[j], axes[j], in_dirs[j] ? length - 1 - t : t));
      std::vector<NDArray> out = run_program(body, body_in, &frame);
      std::copy(out.begin(), out.begin() + n_states, states.begin());
      for (size_t k = 0; k < n_scan_out; ++k) pieces[k].push_back(out[n_states + k]);
    }
    for (size_t k = 0; k < n_scan_out; ++k) {
      if (pieces[k].empty()) fail(step.origin, ": scans a sequence of length 0 (its outputs' shapes are unknown)");
      if (out_dirs[k]) std::reverse(pieces[k].begin(), pieces[k].end());
      const std::string what = step.origin + " scan output " + std::to_string(k);
      states.push_back(stack(pieces[k], normalized_axis(out_axes[k], pieces[k][0].ndim() + 1, what), what));
    }
    return states;
  };

  const std::vector<NDArray> states(in.begin(), in.begin() + n_states), xs(in.begin() + n_states, in.end());
  if (!batched) return scan_one(states, xs);
  const int64_t batch = in.at(0).ndim() ? in[0].shape()[0] : 0;
  if (batch == 0) fail(step.origin, ": has a batch of 0 sequences (its outputs' shapes are unknown)");
  std::vector<std::vector<NDArray>> per_output(n_states + n_scan_out);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<NDArray> sb, xb;
    for (const NDArray& s : states) sb.push_back(take(s, 0, b));
    for (const NDArray& x : xs) xb.push_back(take(x, 0, b));
    std::vector<NDArray> out = scan_one(sb, xb);
    for (size_t k = 0; k < out.size(); ++k) per_output[k].push_back(out[k]);
  }
  std::vector<NDArray> result;
  for (const auto& pieces : per_output) result.push_back(stack(pieces, 0, step.origin + " output"));
  return result;
}

std::vector<std::pair<std::string, std::vector<std::string>>> ProgramExecutor::builds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& [step, cache] : stages_) {
    std::vector<std::string> signatures;
    for (const auto& [key, b] : cache.builds) signatures.push_back(b.signature);
    out.emplace_back(step->origin, std::move(signatures));
  }
  return out;
}

}  // namespace tessera::driver
