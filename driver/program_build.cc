#include "driver/program_build.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>

#include "relay_ir/expr.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "tensor_ir/shape_expr.h"

namespace tessera::driver {

using runtime::ProgramPlan;
using runtime::ProgramStep;
using runtime::ShapeExpr;
using runtime::SymbolicShape;

namespace {

// What a value is known to be before the program runs: a tensor (or a sequence of tensors) of
// a dtype and a shape, either possibly unknown; nothing (an omitted optional); or unknown.
struct ValueType {
  enum class Kind { Tensor, Sequence, None, Unknown };
  Kind kind = Kind::Unknown;
  std::optional<runtime::DataType> dtype;  // a tensor's or a sequence's elements'
  std::optional<SymbolicShape> shape;      // none: its rank is not known
  bool empty = false;                      // a sequence known to be empty (its elements any type)
  // An integer value's elements, where known: a constant's (a Slice's axes), or expressions of the
  // dimension variables that a stage computes from the sizes (a causal mask's length L, the shape
  // (N, 1, L, L) it is expanded to).
  std::optional<SymbolicShape> ints;

  static ValueType tensor(runtime::DataType dtype, SymbolicShape shape) {
    return {Kind::Tensor, dtype, std::move(shape)};
  }
};

bool same_type(const ValueType& a, const ValueType& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.shape == b.shape && a.empty == b.empty && a.ints == b.ints;
}

class ProgramBuilder {
 public:
  ProgramBuilder(const relay_ir::Program& program, targets::Target target, BuildOptions options)
      : program_(program), target_(std::move(target)), options_(std::move(options)) {
    builds_.resize(program.stages.size());
  }

  ProgramBuild run() {
    const ProgramPlan& p = *program_.plan;
    Frame frame;
    for (size_t i = 0; i < p.inputs.size(); ++i) {
      const runtime::ProgramInputType& t = p.input_types.at(i);
      ValueType v;
      if (t.kind == runtime::ProgramInputType::Tensor) v = ValueType::tensor(t.tensor.dtype, t.tensor.shape);
      if (t.kind == runtime::ProgramInputType::Sequence) {
        v.kind = ValueType::Kind::Sequence;
        if (t.element_dtype) v.dtype = t.tensor.dtype;
        if (t.element_shape) v.shape = t.tensor.shape;
      }
      frame.values[p.inputs[i]] = v;  // an optional: unknown
    }
    type_program(p, frame);
    ProgramBuild out{by_shape_.empty() ? program_.plan : with_carriers(*program_.plan), {}, target_};
    for (size_t s = 0; s < builds_.size(); ++s) {
      if (!builds_[s].result) fail("export: internal error: stage ", s, " was never typed");
      out.stages.push_back(builds_[s].result);
    }
    return out;
  }

 private:
  struct Frame {
    const Frame* outer = nullptr;
    std::unordered_map<std::string, ValueType> values;
    ValueType get(const std::string& name) const {
      for (const Frame* f = this; f; f = f->outer)
        if (auto it = f->values.find(name); it != f->values.end()) return it->second;
      return {};
    }
  };

  // A dimension of its own (unique in the whole program, so no two values share it by accident).
  ShapeExpr fresh() { return ShapeExpr::var("?" + std::to_string(fresh_++)); }
  SymbolicShape fresh_shape(size_t rank) {
    SymbolicShape s;
    for (size_t d = 0; d < rank; ++d) s.push_back(fresh());
    return s;
  }

  // `a` and `b` as one type: a dimension they disagree on a variable of its own.
  ValueType join(const ValueType& a, const ValueType& b) {
    if (a.kind != b.kind) return {};
    if (a.empty || b.empty) return a.empty ? b : a;  // an empty sequence adds no element type
    ValueType j = a;
    if (a.dtype != b.dtype) j.dtype.reset();
    if (a.ints != b.ints) j.ints.reset();
    if (!a.shape || !b.shape || a.shape->size() != b.shape->size()) {
      j.shape.reset();
      return j;
    }
    for (size_t d = 0; d < a.shape->size(); ++d)
      if ((*a.shape)[d] != (*b.shape)[d]) (*j.shape)[d] = fresh();
    return j;
  }

  // The elements of an integer scalar or list on the CPU; none for other arrays.
  static std::optional<SymbolicShape> integers(const runtime::NDArray& value) {
    if (!value.dtype().is_integer() || value.ndim() > 1 || value.device().type != runtime::DeviceType::CPU) return {};
    SymbolicShape elements;
    for (int64_t i = 0; i < value.numel(); ++i) elements.push_back(runtime::integer_value(value, i));
    return elements;
  }

  std::vector<ValueType> type_program(const ProgramPlan& p, Frame& frame) {
    for (const auto& [name, value] : p.constants)
      (frame.values[name] = ValueType::tensor(value.dtype(), runtime::symbolic_shape(value.shape()))).ints =
          integers(value);
    for (const ProgramStep& step : p.steps) {
      std::vector<ValueType> in;
      for (const std::string& name : step.inputs)
        in.push_back(name.empty() ? ValueType{ValueType::Kind::None} : frame.get(name));
      std::vector<ValueType> out = type_step(step, in, frame);
      out.resize(std::max(out.size(), step.outputs.size()));
      for (size_t i = 0; i < step.outputs.size(); ++i)
        if (!step.outputs[i].empty()) frame.values[step.outputs[i]] = out[i];
    }
    std::vector<ValueType> outputs;
    for (const std::string& name : p.outputs) outputs.push_back(frame.get(name));
    return outputs;
  }

  std::vector<ValueType> type_body(const ProgramPlan& body, const std::vector<ValueType>& in, const Frame& outer) {
    Frame frame{&outer, {}};
    for (size_t i = 0; i < body.inputs.size() && i < in.size(); ++i)
      if (!body.inputs[i].empty()) frame.values[body.inputs[i]] = in[i];
    return type_program(body, frame);
  }

  std::vector<ValueType> type_step(const ProgramStep& step, const std::vector<ValueType>& in, const Frame& frame) {
    switch (step.kind) {
      case ProgramStep::Kind::Stage:
        return build_stage(step, in);
      case ProgramStep::Kind::Builtin:
        return type_builtin(step, in);
      case ProgramStep::Kind::If: {
        std::vector<ValueType> then = type_body(*step.bodies.at(0), {}, frame);
        std::vector<ValueType> other = type_body(*step.bodies.at(1), {}, frame);
        for (size_t i = 0; i < then.size() && i < other.size(); ++i) then[i] = join(then[i], other[i]);
        return then;
      }
      case ProgramStep::Kind::Loop:
        return type_loop(step, in, frame);
      case ProgramStep::Kind::Scan:
        return type_scan(step, in, frame);
      case ProgramStep::Kind::SequenceMap: {
        std::vector<ValueType> elements;
        for (const ValueType& v : in) {
          ValueType e = v;
          if (v.kind == ValueType::Kind::Sequence) e.kind = ValueType::Kind::Tensor;
          elements.push_back(e);
        }
        std::vector<ValueType> out = type_body(*step.bodies.at(0), elements, frame);
        for (ValueType& o : out)
          o.kind = o.kind == ValueType::Kind::Tensor ? ValueType::Kind::Sequence : ValueType::Kind::Unknown;
        return out;
      }
    }
    return {};
  }

  // The body typed with the states' initial types and, where it changes a dimension of a state,
  // typed again with that dimension a variable of its own (which any value binds); the stages of
  // the last typing are kept. Its outputs from `first_state_out` on, the states as the loop ends.
  std::vector<ValueType> iterate(std::vector<ValueType> states,
                                 const std::function<std::vector<ValueType>(const std::vector<ValueType>&)>& body,
                                 size_t first_state_out) {
    auto state_out = [&](const std::vector<ValueType>& out, size_t k) {
      return first_state_out + k < out.size() ? out[first_state_out + k] : ValueType{};
    };
    std::vector<ValueType> out = body(states);
    bool changed = false;
    for (size_t k = 0; k < states.size(); ++k) {
      if (same_type(state_out(out, k), states[k])) continue;
      states[k] = join(states[k], state_out(out, k));
      changed = true;
    }
    if (changed) out = body(states);
    std::vector<ValueType> result(out.begin() + std::min(first_state_out, out.size()), out.end());
    for (size_t k = 0; k < states.size() && k < result.size(); ++k) result[k] = join(states[k], result[k]);
    return result;
  }

  std::vector<ValueType> type_loop(const ProgramStep& step, const std::vector<ValueType>& in, const Frame& frame) {
    const ProgramPlan& body = *step.bodies.at(0);
    const std::vector<ValueType> initial(in.begin() + 2, in.end());
    const size_t n_states = initial.size();
    std::vector<ValueType> result = iterate(
        initial,
        [&](const std::vector<ValueType>& states) {
          std::vector<ValueType> body_in = {ValueType::tensor(runtime::kInt64, {}),
                                            ValueType::tensor(runtime::kBool, {})};
          body_in.insert(body_in.end(), states.begin(), states.end());
          return type_body(body, body_in, frame);
        },
        1);
    for (size_t k = n_states; k < result.size(); ++k) result[k] = stacked(result[k], 0);
    return result;
  }

  // Opset 8's Scan takes sequence lengths first and a batch dimension first on every other input:
  // each batch entry is a Scan of its own, and every output stacks the entries.
  std::vector<ValueType> type_scan(const ProgramStep& step, const std::vector<ValueType>& in, const Frame& frame) {
    if (step.attrs.get_int("batched") == 0) return type_scan_one(step, in, frame);
    if (in.size() < 2) fail("export: ", step.origin, ": has no input besides its sequence lengths");
    std::vector<ValueType> entry;
    for (size_t i = 1; i < in.size(); ++i) entry.push_back(sliced(in[i], 0));
    std::optional<ShapeExpr> batch;
    if (in[1].kind == ValueType::Kind::Tensor && in[1].shape && !in[1].shape->empty()) batch = in[1].shape->front();
    std::vector<ValueType> result = type_scan_one(step, entry, frame);
    for (ValueType& r : result) r = stacked(r, 0, batch);
    return result;
  }

  std::vector<ValueType> type_scan_one(const ProgramStep& step, const std::vector<ValueType>& in, const Frame& frame) {
    const ProgramPlan& body = *step.bodies.at(0);
    const size_t n_scan_in = static_cast<size_t>(step.attrs.get_int("num_scan_inputs"));
    if (n_scan_in > in.size()) fail("export: ", step.origin, ": num_scan_inputs is larger than its inputs");
    const size_t n_states = in.size() - n_scan_in;
    auto axes = [&](const char* name, size_t n) {
      return step.attrs.has(name) ? step.attrs.get_ints(name) : std::vector<int64_t>(n, 0);
    };
    const std::vector<int64_t> in_axes = axes("scan_input_axes", n_scan_in);
    std::vector<ValueType> slices;
    for (size_t j = 0; j < n_scan_in && j < in_axes.size(); ++j) slices.push_back(sliced(in[n_states + j], in_axes[j]));
    std::vector<ValueType> result = iterate(
        {in.begin(), in.begin() + n_states},
        [&](const std::vector<ValueType>& states) {
          std::vector<ValueType> body_in = states;
          body_in.insert(body_in.end(), slices.begin(), slices.end());
          return type_body(body, body_in, frame);
        },
        0);
    // As many steps as the scanned axis is long (the runner checks that the scan inputs agree).
    std::optional<ShapeExpr> steps;
    if (n_scan_in > 0 && !in_axes.empty()) {
      const ValueType& first = in[n_states];
      const int64_t rank = first.shape ? static_cast<int64_t>(first.shape->size()) : 0;
      const int64_t axis = in_axes[0] < 0 ? in_axes[0] + rank : in_axes[0];
      if (first.kind == ValueType::Kind::Tensor && axis >= 0 && axis < rank) steps = (*first.shape)[axis];
    }
    const std::vector<int64_t> out_axes = axes("scan_output_axes", result.size() - std::min(n_states, result.size()));
    for (size_t k = n_states; k < result.size(); ++k)
      result[k] = stacked(result[k], k - n_states < out_axes.size() ? out_axes[k - n_states] : 0, steps);
    return result;
  }

  // One entry of `v` along `axis` (that dimension dropped) / `count` (unknown: a dimension of its own)
  // entries stacked along a new `axis`.
  static ValueType sliced(ValueType v, int64_t axis) {
    if (!v.shape) return v;
    const int64_t rank = static_cast<int64_t>(v.shape->size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return {};
    v.shape->erase(v.shape->begin() + axis);
    return v;
  }
  ValueType stacked(ValueType v, int64_t axis, const std::optional<ShapeExpr>& count = std::nullopt) {
    v.ints.reset();
    if (v.kind != ValueType::Kind::Tensor || !v.shape) return v;
    const int64_t rank = static_cast<int64_t>(v.shape->size()) + 1;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return {};
    v.shape->insert(v.shape->begin() + axis, count ? *count : fresh());
    return v;
  }
  // `v` with dimension `axis` of a size only the data tells.
  ValueType resized(ValueType v, int64_t axis) {
    v.ints.reset();
    if (!v.shape) return v;
    const int64_t rank = static_cast<int64_t>(v.shape->size());
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return {};
    (*v.shape)[axis] = fresh();
    return v;
  }

  // Slice's output: the dimensions it slices (its axes where constant, else 0, 1, ... as many as
  // its starts) of sizes only the data tells, the others the data's.
  ValueType sliced(const ValueType& x, const ValueType& starts, const ValueType& axes) {
    if (!x.shape) return x;
    const int64_t rank = static_cast<int64_t>(x.shape->size());
    std::vector<int64_t> sliced_axes;
    if (axes.kind == ValueType::Kind::Tensor && axes.ints && runtime::is_static(*axes.ints)) {
      sliced_axes = runtime::static_shape(*axes.ints, "axes");
    } else if (axes.kind == ValueType::Kind::None && starts.shape && starts.shape->size() == 1 &&
               starts.shape->front().is_constant()) {
      for (int64_t a = 0; a < starts.shape->front().constant(); ++a) sliced_axes.push_back(a);
    } else {
      return ValueType{ValueType::Kind::Tensor, x.dtype, fresh_shape(rank)};
    }
    ValueType out = x;
    for (int64_t a : sliced_axes)
      if (a >= -rank && a < rank) (*out.shape)[a < 0 ? a + rank : a] = fresh();
    out.ints.reset();
    return out;
  }

  std::vector<ValueType> type_builtin(const ProgramStep& step, const std::vector<ValueType>& in) {
    const std::string& op = step.builtin;
    auto input = [&](size_t i) { return i < in.size() ? in[i] : ValueType{ValueType::Kind::None}; };
    auto of = [&](runtime::DataType dtype, SymbolicShape shape) { return ValueType::tensor(dtype, std::move(shape)); };
    auto as = [](ValueType v, ValueType::Kind kind) {
      if (v.kind == ValueType::Kind::Tensor || v.kind == ValueType::Kind::Sequence) v.kind = kind;
      return v;
    };
    const std::optional<int64_t> axis =
        step.attrs.has("axis") ? std::optional<int64_t>(step.attrs.get_int("axis")) : std::nullopt;
    const ValueType x = input(0);
    if (op == "nonzero")
      return {of(runtime::kInt64, {x.shape ? ShapeExpr(static_cast<int64_t>(x.shape->size())) : fresh(), fresh()})};
    if (op == "compress" || op == "unique") {
      ValueType y = axis ? resized(x, *axis) : ValueType{ValueType::Kind::Tensor, x.dtype, SymbolicShape{fresh()}};
      if (op == "compress") return {y};
      return {y, of(runtime::kInt64, {fresh()}), of(runtime::kInt64, {fresh()}), of(runtime::kInt64, {fresh()})};
    }
    if (op == "non_max_suppression") return {of(runtime::kInt64, {fresh(), 3})};
    if (op == "topk") {
      const ValueType values = resized(x, *axis);
      return {values, ValueType{values.kind, runtime::kInt64, values.shape}};
    }
    if (op == "slice") return {sliced(x, input(1), input(3))};
    if (op == "range") return {ValueType{ValueType::Kind::Tensor, x.dtype, SymbolicShape{fresh()}}};
    if (op == "mel_weight_matrix") return {of(step.attrs.get_dtype("dtype"), {fresh(), fresh()})};
    if (op == "stft")  // [batch, frames, bins, 2]
      return {ValueType{ValueType::Kind::Tensor, x.dtype,
                        SymbolicShape{x.shape && !x.shape->empty() ? x.shape->front() : fresh(), fresh(), fresh(), 2}}};
    if (op == "resize_output_size") {  // one size per axis of the data
      if (!x.shape) return {ValueType{ValueType::Kind::Tensor, runtime::kInt64, std::nullopt}};
      return {of(runtime::kInt64, {ShapeExpr(static_cast<int64_t>(x.shape->size()))})};
    }
    if (op == "cumsum" || op == "cumprod") return {x};
    if (op == "dropout") {  // the data, and a mask of its shape
      if (step.outputs.size() < 2) return {x};
      return {x, ValueType{ValueType::Kind::Tensor, runtime::kBool, x.shape}};
    }
    if (op.rfind("reduce_", 0) == 0) {  // each dimension the data's; kept, or fewer by the axes' count
      const ValueType axes = input(1);
      std::optional<int64_t> rank;
      if (x.shape && step.attrs.get_int("keepdims") != 0) rank = x.shape->size();
      else if (x.shape && axes.shape && axes.shape->size() == 1 && axes.shape->front().is_constant()) {
        const int64_t count = axes.shape->front().constant();  // none: every axis, or none with the no-op
        const bool all = count == 0 && step.attrs.get_int("noop_with_empty_axes") == 0;
        rank = all ? 0 : static_cast<int64_t>(x.shape->size()) - count;
      }
      if (!rank || *rank < 0) return {ValueType{ValueType::Kind::Tensor, x.dtype, std::nullopt}};
      return {ValueType{ValueType::Kind::Tensor, x.dtype, fresh_shape(*rank)}};
    }
    if (op == "split") {  // each piece's length a dimension of its own
      std::vector<ValueType> pieces;
      for (size_t i = 0; i < step.outputs.size(); ++i) pieces.push_back(resized(x, step.attrs.get_int("axis")));
      return pieces;
    }
    if ((op == "reshape" || op == "expand") && input(1).ints && x.shape) return {to_shape(op, x, *input(1).ints, step)};
    if (op == "reshape" || op == "squeeze" || op == "unsqueeze" || op == "expand") {
      // Of the target's length (expand: or the input's rank, the larger), or the input's rank less
      // or more the axes' count; each dimension the data's.
      const ValueType given = input(1);
      std::optional<int64_t> rank;
      if (given.shape && given.shape->size() == 1 && given.shape->front().is_constant()) {
        const int64_t n = given.shape->front().constant();
        const int64_t in_rank = x.shape ? static_cast<int64_t>(x.shape->size()) : -1;
        if (op == "reshape") rank = n;
        else if (op == "expand" && in_rank >= 0) rank = std::max(n, in_rank);
        else if (in_rank >= 0) rank = op == "squeeze" ? in_rank - n : in_rank + n;
      }
      if (!rank || *rank < 0) return {ValueType{ValueType::Kind::Tensor, x.dtype, std::nullopt}};
      return {ValueType{ValueType::Kind::Tensor, x.dtype, fresh_shape(*rank)}};
    }
    if (op == "identity" || op == "optional" || op == "optional_get_element") return {x};
    if (op == "optional_has_element") return {of(runtime::kBool, {})};
    if (op == "sequence_length") return {of(runtime::kInt64, {})};
    if (op == "sequence_empty") return {ValueType{ValueType::Kind::Sequence, {}, {}, true}};
    if (op == "sequence_at") return {as(x, ValueType::Kind::Tensor)};
    if (op == "sequence_erase") return {x};
    if (op == "sequence_insert") {
      ValueType elements = join(as(x, ValueType::Kind::Tensor), input(1));
      elements.empty = false;
      return {as(elements, ValueType::Kind::Sequence)};
    }
    if (op == "sequence_construct") {
      ValueType element = x;
      for (size_t i = 1; i < in.size(); ++i) element = join(element, in[i]);
      return {as(element, ValueType::Kind::Sequence)};
    }
    if (op == "split_to_sequence") {
      const int64_t a = step.attrs.get_int("axis");
      const bool keeps = step.attrs.get_int("keepdims") != 0 || input(1).kind != ValueType::Kind::None;
      return {as(keeps ? resized(x, a) : sliced(x, a), ValueType::Kind::Sequence)};
    }
    if (op == "concat_from_sequence") {
      const ValueType e = as(x, ValueType::Kind::Tensor);
      return {step.attrs.get_int("new_axis") ? stacked(e, step.attrs.get_int("axis"))
                                             : resized(e, step.attrs.get_int("axis"))};
    }
    fail("export: ", step.origin, ": no builtin '", op, "'");
  }

  // A reshape or expand of `x` to the shape `given` that an earlier stage computed from the sizes:
  // a reshape's 0 copies x's dimension (without allowzero), its -1 is known at run time only; an
  // expand broadcasts, each dimension known where one side is 1 or both are the same.
  ValueType to_shape(const std::string& op, const ValueType& x, const SymbolicShape& given, const ProgramStep& step) {
    ValueType out{ValueType::Kind::Tensor, x.dtype, SymbolicShape{}};
    const SymbolicShape& in = *x.shape;
    if (op == "reshape") {
      for (size_t d = 0; d < given.size(); ++d) {
        const ShapeExpr& g = given[d];
        const bool copies = g.is_constant() && g.constant() == 0 && step.attrs.get_int("allowzero") == 0;
        if (copies) out.shape->push_back(d < in.size() ? in[d] : fresh());
        else out.shape->push_back(g.is_constant() && g.constant() < 0 ? fresh() : g);
      }
      return out;
    }
    const size_t rank = std::max(in.size(), given.size());
    for (size_t d = 0; d < rank; ++d) {
      const ShapeExpr a = d + in.size() < rank ? ShapeExpr(1) : in[d + in.size() - rank];
      const ShapeExpr b = d + given.size() < rank ? ShapeExpr(1) : given[d + given.size() - rank];
      out.shape->push_back(b == ShapeExpr(1) ? a : a == ShapeExpr(1) || a == b ? b : fresh());
    }
    return out;
  }

  std::vector<ValueType> build_stage(const ProgramStep& step, const std::vector<ValueType>& in) {
    std::vector<runtime::BufferSpec> specs;
    std::string key;
    for (size_t i = 0; i < in.size(); ++i) {
      const ValueType& v = in[i];
      const std::string& name = step.inputs[i];
      const char* unknown = v.kind != ValueType::Kind::Tensor ? "kind"
                            : !v.dtype                        ? "element type"
                            : !v.shape                        ? "rank"
                                                              : nullptr;
      if (unknown)
        fail("export: ", step.origin, " reads '", name, "', whose ", unknown,
             " is not known before the model runs, so it cannot be built ahead of time; the model runs in this "
             "process only");
      SymbolicShape shape = *v.shape;
      for (ShapeExpr& d : shape)
        if (!d.is_constant() && !d.var_name()) d = fresh();  // the stage binds variables, not expressions
      specs.push_back({name, shape, *v.dtype});
      key += v.dtype->str() + runtime::symbolic_shape_str(*v.shape);  // as typed, before the fresh names
      if (v.ints) key += "=" + runtime::symbolic_shape_str(*v.ints);
      key += ";";
    }
    StageBuild& stage = builds_.at(step.stage);
    std::vector<size_t>& by_shape = by_shape_[&step];
    if (!stage.result || stage.key != key) {
      try {
        // Values known as sizes are taken by shape, so that the stage computes with them as sizes too.
        const std::vector<std::optional<SymbolicShape>> known = known_values(in);
        for (size_t i = 0; i < known.size(); ++i)
          if (known[i] && std::find(by_shape.begin(), by_shape.end(), i) == by_shape.end()) by_shape.push_back(i);
        const relay_ir::Module module = specialize(step, specs, by_shape, known);
        stage.output_values = output_values(module);
        stage.result = std::make_shared<const BuildResult>(build(module, target_, options_));
      } catch (const Error& e) {
        fail("export: ", step.origin, " cannot be built for every size of its inputs (", shapes_str(specs),
             "): ", e.what());
      }
      stage.key = key;
    }
    if (by_shape.empty()) by_shape_.erase(&step);
    std::vector<ValueType> out;
    const runtime::GraphPlan& plan = stage.result->plan;
    for (int t : plan.outputs) {
      const auto& info = plan.tensors.at(t);
      out.push_back(ValueType::tensor(
          info.dtype, plan.is_symbolic() ? plan.symbolic_shapes.at(t) : runtime::symbolic_shape(info.shape)));
      if (out.size() <= stage.output_values.size()) out.back().ints = stage.output_values[out.size() - 1];
    }
    return out;
  }

  // The values of `in` that a stage can take by shape as they are: integer scalars and lists of
  // constants and dimension variables (which its other inputs' shapes or the carriers bind).
  static std::vector<std::optional<SymbolicShape>> known_values(const std::vector<ValueType>& in) {
    std::vector<std::optional<SymbolicShape>> known;
    for (const ValueType& v : in) {
      const bool plain = v.ints && v.dtype && v.dtype->is_integer() && v.shape && v.shape->size() <= 1 &&
                         runtime::is_static(*v.shape) &&
                         std::all_of(v.ints->begin(), v.ints->end(),
                                     [](const ShapeExpr& e) { return e.is_constant() || e.var_name(); });
      known.push_back(plain ? v.ints : std::nullopt);
    }
    return known;
  }

  // The values of a stage's outputs that its graph computes from the sizes alone (shape_values: a
  // Shape's dimensions, their sums and products), as expressions of the dimension variables, and
  // of its integer constants.
  static std::vector<std::optional<SymbolicShape>> output_values(const relay_ir::Module& module) {
    const relay_ir::Expr& body = module.main()->body;
    std::vector<relay_ir::Expr> outputs{body};
    if (const auto* tuple = body.as<relay_ir::TupleNode>()) outputs = tuple->elements;
    std::vector<std::optional<SymbolicShape>> values;
    for (const relay_ir::Expr& e : outputs) {
      const auto* call = e.as<relay_ir::CallNode>();
      const auto* op = call ? call->op.as<relay_ir::OpNode>() : nullptr;
      const auto* constant = e.as<relay_ir::ConstantNode>();
      if (op && op->name() == "shape_values")
        values.push_back(tensor_ir::to_symbolic_shape(call->attrs.get_shape("dims").dims()));
      else if (constant) values.push_back(integers(constant->data));
      else values.emplace_back();
    }
    return values;
  }

  // The stage of `step` for inputs `specs`, taking by shape (adding to `by_shape`) the inputs whose
  // values its operators need.
  relay_ir::Module specialize(const ProgramStep& step, const std::vector<runtime::BufferSpec>& specs,
                              std::vector<size_t>& by_shape,
                              const std::vector<std::optional<SymbolicShape>>& values) const {
    for (;;) {
      try {
        return program_.stages.at(step.stage)->specialize_symbolic(specs, by_shape, values);
      } catch (const relay_ir::ValuesRequired& e) {
        for (size_t i : e.inputs)
          if (std::find(by_shape.begin(), by_shape.end(), i) != by_shape.end()) throw;
        by_shape.insert(by_shape.end(), e.inputs.begin(), e.inputs.end());
      }
    }
  }

  // The program with a values_as_shape step before each stage step that takes inputs by shape,
  // which then reads the shape instead.
  std::shared_ptr<const ProgramPlan> with_carriers(const ProgramPlan& p) const {
    auto out = std::make_shared<ProgramPlan>(p);
    out->steps.clear();
    for (const ProgramStep& step : p.steps) {
      ProgramStep rewritten = step;
      for (auto& body : rewritten.bodies) body = with_carriers(*body);
      if (auto it = by_shape_.find(&step); it != by_shape_.end())
        for (size_t i : it->second) {
          ProgramStep carrier;
          carrier.kind = ProgramStep::Kind::Builtin;
          carrier.builtin = "values_as_shape";
          carrier.origin = step.origin;
          carrier.inputs = {step.inputs.at(i)};
          carrier.outputs = {step.inputs[i] + "#shape@" + std::to_string(step.stage)};
          if (std::vector<int64_t> fixed = fixed_values(step, i); !fixed.empty()) carrier.attrs.set("fixed", fixed);
          rewritten.inputs[i] = carrier.outputs[0];
          out->steps.push_back(std::move(carrier));
        }
      out->steps.push_back(std::move(rewritten));
    }
    return out;
  }

  // The values stage input `i` of `step`, taken by shape, must have where the stage was built for a
  // constant (an operator needed one: tensor_ir/dimension_must_equal.h), -1 where any; none where
  // every value is free.
  std::vector<int64_t> fixed_values(const ProgramStep& step, size_t i) const {
    const runtime::GraphPlan& plan = builds_.at(step.stage).result->plan;
    if (!plan.is_symbolic()) return {};
    const SymbolicShape& carrier = plan.symbolic_shapes.at(plan.inputs.at(i));
    std::vector<int64_t> fixed;
    bool any = false;
    for (size_t d = 0; d + 1 < carrier.size(); ++d) {  // the last dimension is the carrier's 0
      fixed.push_back(carrier[d].is_constant() ? carrier[d].constant() : -1);
      any = any || carrier[d].is_constant();
    }
    return any ? fixed : std::vector<int64_t>{};
  }

  static std::string shapes_str(const std::vector<runtime::BufferSpec>& specs) {
    std::string s;
    for (const auto& b : specs)
      s += (s.empty() ? "" : ", ") + b.name + ": " + b.dtype.str() + runtime::symbolic_shape_str(b.shape);
    return s;
  }

  const relay_ir::Program& program_;
  targets::Target target_;
  BuildOptions options_;
  // Each stage's build, with the input types it was built for (typing a loop's body again may
  // change them).
  struct StageBuild {
    std::string key;
    std::shared_ptr<const BuildResult> result;
    std::vector<std::optional<SymbolicShape>> output_values;  // where known (output_values)
  };
  std::vector<StageBuild> builds_;
  // The inputs each stage step takes by shape (relay_ir::StageSource::specialize_symbolic).
  std::map<const ProgramStep*, std::vector<size_t>> by_shape_;
  int fresh_ = 0;
};

}  // namespace

ProgramBuild build_for_every_size(const relay_ir::Program& program, const targets::Target& target,
                                  BuildOptions options) {
  return ProgramBuilder(program, target, std::move(options)).run();
}

}  // namespace tessera::driver
