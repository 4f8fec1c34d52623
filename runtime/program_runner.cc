#include "runtime/program_runner.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "runtime/element.h"
#include "runtime/error.h"
#include "runtime/program_builtins.h"
#include "runtime/shape_expr.h"

namespace tessera::runtime {

NDArray owned_copy(const NDArray& a) {
  NDArray copy = NDArray::empty(a.shape(), a.dtype());
  copy.copy_from(a);
  return copy;
}

namespace {

NDArray scalar_of(DataType dtype, double value) {
  NDArray a = NDArray::empty({}, dtype);
  store_element(a, 0, value);
  return a;
}

// The scan output of no iteration: the declared shape of one with a dimension 0 at `axis`; none
// where the shape is not declared.
std::optional<NDArray> empty_scan(const ProgramOutputType& type, int64_t axis) {
  if (!type.shape) return std::nullopt;
  std::vector<int64_t> shape = *type.shape;
  shape.insert(shape.begin() + axis, 0);
  return NDArray::empty(shape, type.dtype);
}

// Throws naming the first input whose dtype or shape does not fit its declared type (a dimension
// variable must have one value across the inputs).
void check_inputs(const ProgramPlan& p, const std::vector<ProgramValue>& inputs) {
  std::vector<SymbolicShape> shapes;
  std::vector<std::vector<int64_t>> given;
  std::vector<std::string> names;
  for (size_t i = 0; i < p.input_types.size(); ++i) {
    const std::string what = "input '" + p.inputs[i] + "' (#" + std::to_string(i) + ")";
    const ProgramInputType& t = p.input_types[i];
    if (t.kind == ProgramInputType::Sequence) inputs[i].as_sequence(what);
    if (t.kind == ProgramInputType::Optional || t.kind == ProgramInputType::Sequence) continue;
    const NDArray& a = inputs[i].as_tensor(what);
    if (a.dtype() != t.tensor.dtype)
      fail(what, ": expected ", t.tensor.dtype.str(), " elements, got ", a.dtype().str());
    shapes.push_back(t.tensor.shape);
    given.push_back(a.shape());
    names.push_back("input '" + p.inputs[i] + "'");
  }
  bind_shape_vars(shapes, given, names, "model:");
}

// A Scan's body that is one stage giving each of the body's outputs (a recurrent node's step):
// where each input of the stage comes from, and which output of the stage each body output is,
// so that the scan runs the stage itself, step after step, without the body's frame of names.
struct StageBody {
  struct Source {
    int body_input = -1;  // the body input the stage input reads, or -1 for...
    NDArray fixed;        // ...a value fixed for the whole scan (a constant, an outer value)
  };
  const ProgramStep* step = nullptr;
  std::vector<Source> inputs;  // per stage input
  std::vector<size_t> output;  // per body output: the stage output that gives it
};

// `body` as a StageBody, where it is one; `outer` gives the values of the programs around it.
std::optional<StageBody> stage_body(const ProgramPlan& body,
                                    const std::function<const ProgramValue&(const std::string&)>& outer) {
  if (body.steps.size() != 1 || body.steps[0].kind != ProgramStep::Kind::Stage) return std::nullopt;
  StageBody b;
  b.step = &body.steps[0];
  for (const std::string& name : b.step->inputs) {
    if (name.empty()) return std::nullopt;
    const auto in = std::find(body.inputs.begin(), body.inputs.end(), name);
    const auto constant =
        std::find_if(body.constants.begin(), body.constants.end(), [&](const auto& c) { return c.first == name; });
    StageBody::Source& source = b.inputs.emplace_back();
    if (in != body.inputs.end()) source.body_input = static_cast<int>(in - body.inputs.begin());
    else if (constant != body.constants.end()) source.fixed = constant->second;
    else source.fixed = outer(name).as_tensor(b.step->origin + ": its input '" + name + "'");
  }
  std::vector<bool> taken(b.step->outputs.size());
  for (const std::string& name : body.outputs) {
    const auto out = std::find(b.step->outputs.begin(), b.step->outputs.end(), name);
    if (name.empty() || out == b.step->outputs.end() || taken[out - b.step->outputs.begin()]) return std::nullopt;
    taken[out - b.step->outputs.begin()] = true;
    b.output.push_back(static_cast<size_t>(out - b.step->outputs.begin()));
  }
  return b;
}

}  // namespace

// The values a program sees: its own, then those of the programs around it, by name.
struct ProgramRunner::Frame {
  const Frame* outer = nullptr;
  std::unordered_map<std::string, ProgramValue> values;

  const ProgramValue& get(const std::string& name, const std::string& reader) const {
    for (const Frame* f = this; f; f = f->outer) {
      auto it = f->values.find(name);
      if (it != f->values.end()) return it->second;
    }
    fail(reader, " reads '", name, "', which nothing before it computes");
  }
};

ProgramRunner::ProgramRunner(std::shared_ptr<const ProgramPlan> program, RunStage run_stage)
    : program_(std::move(program)), run_stage_(std::move(run_stage)) {}

std::vector<ProgramValue> ProgramRunner::run(const std::vector<ProgramValue>& inputs) const {
  if (inputs.size() != program_->inputs.size())
    fail("the model takes ", program_->inputs.size(), " inputs, got ", inputs.size());
  check_inputs(*program_, inputs);
  return run_program(*program_, inputs, nullptr);
}

ProgramRunner::Values ProgramRunner::run_program(const ProgramPlan& p, const Values& inputs, const Frame* outer) const {
  Frame frame{outer, {}};
  for (const auto& [name, value] : p.constants) frame.values[name] = value;
  for (size_t i = 0; i < inputs.size() && i < p.inputs.size(); ++i)
    if (!p.inputs[i].empty()) frame.values[p.inputs[i]] = inputs[i];
  for (const ProgramStep& step : p.steps) run_step(step, frame);
  Values outputs;
  for (const std::string& name : p.outputs) outputs.push_back(frame.get(name, "the output list"));
  return outputs;
}

void ProgramRunner::run_step(const ProgramStep& step, Frame& frame) const {
  Values in;
  for (const std::string& name : step.inputs)
    in.push_back(name.empty() ? ProgramValue() : frame.get(name, step.origin));
  Values out;
  switch (step.kind) {
    case ProgramStep::Kind::Stage:
      out = run_stage(step, in);
      break;
    case ProgramStep::Kind::Builtin:
      out = run_builtin(step, in);
      break;
    case ProgramStep::Kind::If: {
      const std::string what = step.origin + ": the condition";
      const bool then = single_value(in.at(0).as_tensor(what), what) != 0;
      out = run_program(*step.bodies.at(then ? 0 : 1), {}, &frame);
      break;
    }
    case ProgramStep::Kind::Loop:
      out = run_loop(step, in, frame);
      break;
    case ProgramStep::Kind::Scan:
      out = run_scan(step, in, frame);
      break;
    case ProgramStep::Kind::SequenceMap:
      out = run_sequence_map(step, in, frame);
      break;
  }
  if (out.size() < step.outputs.size())
    fail(step.origin, ": gives ", out.size(), " values for its ", step.outputs.size(), " outputs");
  for (size_t i = 0; i < step.outputs.size(); ++i)
    if (!step.outputs[i].empty()) frame.values[step.outputs[i]] = out[i];
}

ProgramRunner::Values ProgramRunner::run_stage(const ProgramStep& step, const Values& values) const {
  std::vector<NDArray> in;
  for (size_t i = 0; i < values.size(); ++i)
    in.push_back(values[i].is_tensor() ? values[i].tensor
                                       : values[i].as_tensor(step.origin + ": its input '" + step.inputs[i] + "'"));
  std::vector<NDArray> out(step.outputs.size());
  run_stage_(step, in, out);
  return Values(out.begin(), out.end());
}

// ONNX Loop: while the condition holds and fewer than the trip count iterations ran, the body
// maps (iteration, condition, states...) to (condition, states..., scan values...); the states
// (tensors, sequences, optionals) carry over, the scan values of every iteration are stacked.
ProgramRunner::Values ProgramRunner::run_loop(const ProgramStep& step, const Values& in, const Frame& frame) const {
  const ProgramPlan& body = *step.bodies.at(0);
  const size_t n_states = in.size() - 2;
  if (body.inputs.size() != n_states + 2 || body.outputs.size() < n_states + 1)
    fail(step.origin, ": the body takes ", body.inputs.size(), " inputs and gives ", body.outputs.size(),
         " outputs; with ", n_states, " loop-carried values it must take ", n_states + 2, " and give at least ",
         n_states + 1);
  auto scalar = [&](const ProgramValue& v, const std::string& what) -> std::optional<int64_t> {
    if (v.is_none() || v.as_tensor(what).numel() == 0) return std::nullopt;
    return single_value(v.tensor, what);
  };
  const std::optional<int64_t> trip_count = scalar(in[0], step.origin + ": the trip count");
  const std::optional<int64_t> condition = scalar(in[1], step.origin + ": the condition");
  if (!trip_count && !condition) fail(step.origin, ": has neither a trip count nor a condition, so it would never end");
  bool keep_going = !condition || *condition != 0;
  Values states(in.begin() + 2, in.end());
  std::vector<std::vector<NDArray>> scans(body.outputs.size() - 1 - n_states);
  for (int64_t i = 0; (!trip_count || i < *trip_count) && keep_going; ++i) {
    Values body_in = {scalar_of(kInt64, static_cast<double>(i)), scalar_of(kBool, keep_going)};
    body_in.insert(body_in.end(), states.begin(), states.end());
    Values out = run_program(body, body_in, &frame);
    const std::string what = step.origin + ": the body's condition";
    keep_going = single_value(out[0].as_tensor(what), what) != 0;
    std::copy(out.begin() + 1, out.begin() + 1 + n_states, states.begin());
    for (size_t k = 0; k < scans.size(); ++k)
      scans[k].push_back(out[1 + n_states + k].as_tensor(step.origin + " scan output " + std::to_string(k)));
  }
  Values result = states;
  for (size_t k = 0; k < scans.size(); ++k) {
    if (!scans[k].empty()) {
      result.push_back(stack(scans[k], 0, step.origin + " scan output " + std::to_string(k)));
      continue;
    }
    const size_t o = 1 + n_states + k;
    if (o >= body.output_types.size())
      fail(step.origin, ": ran no iteration, and the type of its scan output ", k, " is not declared");
    // Without a declared shape, ONNX says nothing of an iteration's: (0,), as for scalars.
    result.push_back(empty_scan(body.output_types[o], 0).value_or(NDArray::empty({0}, body.output_types[o].dtype)));
  }
  return result;
}

// ONNX Scan (opset 9 and later): the body maps (states..., one slice of each scanned input) to
// (states..., one slice of each scan output), along each input's axis and direction; opset 8's
// Scan has a batch dimension first (each batch entry scanned on its own) and sequence lengths.
ProgramRunner::Values ProgramRunner::run_scan(const ProgramStep& step, const Values& given, const Frame& frame) const {
  const ProgramPlan& body = *step.bodies.at(0);
  const StepAttrs& a = step.attrs;
  const bool batched = a.get_int("batched") != 0;  // opset 8
  std::vector<NDArray> in;
  for (size_t i = batched ? 1 : 0; i < given.size(); ++i)
    in.push_back(given[i].as_tensor(step.origin + " input " + std::to_string(i)));
  if (batched && !given[0].is_none() && given[0].as_tensor("sequence_lens").numel() > 0) {
    const NDArray& lens = given[0].tensor;  // only whole sequences are supported
    for (int64_t b = 0; b < lens.numel(); ++b)
      if (in.empty() || static_cast<int64_t>(element_as_double(lens, b)) != in.back().shape().at(1))
        fail(step.origin, ": sequence_lens[", b, "] is shorter than the sequence; only whole sequences are supported");
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

  // One sequence: states and scanned inputs without a batch dimension. A scan output along axis 0
  // is written into its place in the result step by step; one along another axis is stacked at
  // the end. A body of one stage writes its outputs in place (RunStage): each state into the
  // buffer of the state two steps back, each scan output into its place in the result.
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
    std::optional<StageBody> stage;
    if (length > 0)
      stage = stage_body(body,
                         [&](const std::string& name) -> const ProgramValue& { return frame.get(name, step.origin); });
    std::vector<std::vector<NDArray>> pieces(n_scan_out);
    std::vector<NDArray> stacked(n_scan_out), spare(n_states);
    auto what_out = [&](size_t k) { return step.origin + " scan output " + std::to_string(k); };
    auto place = [&](size_t k, int64_t t) {  // scan output k's place for step t in stacked[k]
      const NDArray& all = stacked[k];
      const std::vector<int64_t> shape(all.shape().begin() + 1, all.shape().end());
      return all.view_as(
          shape, all.dtype(),
          static_cast<size_t>(out_dirs[k] ? length - 1 - t : t) * all.nbytes() / static_cast<size_t>(length));
    };
    for (int64_t t = 0; t < length; ++t) {
      std::vector<NDArray> body_in(states.begin(), states.end());
      for (size_t j = 0; j < n_scan_in; ++j) body_in.push_back(take(xs[j], axes[j], in_dirs[j] ? length - 1 - t : t));
      std::vector<NDArray> out, places(n_scan_out);
      for (size_t k = 0; k < n_scan_out; ++k)
        if (stacked[k].defined()) places[k] = place(k, t);
      if (stage) {
        std::vector<NDArray> stage_in, stage_out(stage->step->outputs.size());
        for (const StageBody::Source& source : stage->inputs)
          stage_in.push_back(source.body_input >= 0 ? body_in.at(source.body_input) : source.fixed);
        for (size_t k = 0; k < n_states; ++k) stage_out[stage->output[k]] = spare[k];
        for (size_t k = 0; k < n_scan_out; ++k) stage_out[stage->output[n_states + k]] = places[k];
        run_stage_(*stage->step, stage_in, stage_out);
        for (size_t o : stage->output) out.push_back(stage_out.at(o));
        // The states this step read are free now (but at step 0, where they are the caller's).
        if (t > 0) std::copy(states.begin(), states.end(), spare.begin());
      } else {
        for (const ProgramValue& v : run_program(body, Values(body_in.begin(), body_in.end()), &frame))
          out.push_back(v.is_tensor() ? v.tensor : v.as_tensor(step.origin + " output"));
      }
      if (out.size() < n_states + n_scan_out)
        fail(step.origin, ": the body gives ", out.size(), " values for ", n_states + n_scan_out, " outputs");
      std::copy(out.begin(), out.begin() + n_states, states.begin());
      for (size_t k = 0; k < n_scan_out; ++k) {
        const NDArray& piece = out[n_states + k];
        if (t == 0 && normalized_axis(out_axes[k], piece.ndim() + 1, what_out(k)) == 0) {
          std::vector<int64_t> shape = piece.shape();
          shape.insert(shape.begin(), length);
          stacked[k] = NDArray::empty(shape, piece.dtype());
          places[k] = place(k, t);
        }
        if (!stacked[k].defined()) {
          pieces[k].push_back(piece);
          continue;
        }
        const NDArray& at = places[k];
        if (piece.dtype() != at.dtype() || piece.shape() != at.shape())
          fail(what_out(k), ": the values to stack differ, ", at.dtype().str(), at.shape_str(), " and ",
               piece.dtype().str(), piece.shape_str());
        if (piece.data() != at.data()) at.copy_from(piece);
      }
    }
    for (size_t k = 0; k < n_scan_out; ++k) {
      const std::string what = what_out(k);
      if (stacked[k].defined()) {
        states.push_back(stacked[k]);
        continue;
      }
      if (pieces[k].empty()) {
        std::optional<NDArray> empty;
        if (n_states + k < body.output_types.size()) {
          const ProgramOutputType& type = body.output_types[n_states + k];
          if (type.shape)
            empty = empty_scan(type, normalized_axis(out_axes[k], static_cast<int64_t>(type.shape->size()) + 1, what));
        }
        if (!empty)
          fail(step.origin, ": scans a sequence of length 0, and the shape of its scan output ", k, " is not declared");
        states.push_back(*empty);
        continue;
      }
      if (out_dirs[k]) std::reverse(pieces[k].begin(), pieces[k].end());
      states.push_back(stack(pieces[k], normalized_axis(out_axes[k], pieces[k][0].ndim() + 1, what), what));
    }
    return states;
  };

  const std::vector<NDArray> states(in.begin(), in.begin() + n_states), xs(in.begin() + n_states, in.end());
  std::vector<NDArray> result;
  if (!batched) {
    result = scan_one(states, xs);
  } else {
    const int64_t batch = !in.empty() && in[0].ndim() ? in[0].shape()[0] : 0;
    if (batch == 0) fail(step.origin, ": has a batch of 0 sequences (its outputs' shapes are unknown)");
    std::vector<std::vector<NDArray>> per_output(n_states + n_scan_out);
    for (int64_t b = 0; b < batch; ++b) {
      std::vector<NDArray> sb, xb;
      for (const NDArray& s : states) sb.push_back(take(s, 0, b));
      for (const NDArray& x : xs) xb.push_back(take(x, 0, b));
      std::vector<NDArray> out = scan_one(sb, xb);
      for (size_t k = 0; k < out.size(); ++k) per_output[k].push_back(out[k]);
    }
    for (const auto& pieces : per_output) result.push_back(stack(pieces, 0, step.origin + " output"));
  }
  return Values(result.begin(), result.end());
}

// ONNX SequenceMap: the body runs once per element of the first input (a sequence), given that
// element of every sequence input and the whole of every tensor input; each output collects one
// element per run.
ProgramRunner::Values ProgramRunner::run_sequence_map(const ProgramStep& step, const Values& in,
                                                      const Frame& frame) const {
  const ProgramPlan& body = *step.bodies.at(0);
  if (body.inputs.size() != in.size())
    fail(step.origin, ": the body takes ", body.inputs.size(), " inputs, the node has ", in.size());
  const size_t length = in.at(0).as_sequence(step.origin + " input 0").size();
  for (size_t j = 1; j < in.size(); ++j)
    if (in[j].is_sequence() && in[j].sequence.size() != length)
      fail(step.origin, ": input ", j, " is a sequence of ", in[j].sequence.size(), " tensors, input 0 of ", length);
  std::vector<std::vector<NDArray>> outputs(body.outputs.size());
  for (size_t i = 0; i < length; ++i) {
    Values body_in;
    for (const ProgramValue& v : in) body_in.push_back(v.is_sequence() ? ProgramValue(v.sequence[i]) : v);
    Values out = run_program(body, body_in, &frame);
    for (size_t k = 0; k < out.size(); ++k)
      outputs[k].push_back(out[k].as_tensor(step.origin + " output " + std::to_string(k)));
  }
  Values result;
  for (auto& elements : outputs) result.push_back(ProgramValue::of_sequence(std::move(elements)));
  return result;
}

}  // namespace tessera::runtime
