#include "runtime/program_builtins.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "runtime/axis_ops.h"
#include "runtime/data_dependent_ops.h"
#include "runtime/element.h"
#include "runtime/host_slice.h"
#include "runtime/signal_ops.h"
#include "runtime/view_shapes.h"

namespace tessera::runtime {

int64_t normalized_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) fail(what, ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

int64_t single_value(const NDArray& a, const std::string& what) {
  if (a.numel() != 1) fail(what, " must hold one value, got shape ", a.shape_str());
  if (a.dtype() == kInt64) return a.data_as<int64_t>()[0];
  return static_cast<int64_t>(element_as_double(a, 0));
}

namespace {

// The products of the dimensions before `axis` and (in bytes) after it.
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

std::vector<int64_t> with_new_axis(std::vector<int64_t> shape, int64_t axis) {
  shape.insert(shape.begin() + axis, 1);
  return shape;
}

}  // namespace

NDArray slice_along(const NDArray& x, int64_t axis, int64_t begin, int64_t end) {
  std::vector<int64_t> shape = x.shape();
  const int64_t n = shape.at(axis);
  const AxisSplit s = split_at(shape, axis, x.dtype().element_bytes());
  shape[axis] = end - begin;
  NDArray out = NDArray::empty(shape, x.dtype());
  const char* src = static_cast<const char*>(x.data());
  char* dst = static_cast<char*>(out.data());
  const int64_t bytes = (end - begin) * s.inner;
  for (int64_t o = 0; o < s.outer; ++o) std::memcpy(dst + o * bytes, src + (o * n + begin) * s.inner, bytes);
  return out;
}

NDArray take(const NDArray& x, int64_t axis, int64_t i) {
  std::vector<int64_t> shape = x.shape();
  shape.erase(shape.begin() + axis);
  const AxisSplit s = split_at(x.shape(), axis, x.dtype().element_bytes());
  if (s.outer == 1 && x.device().type == DeviceType::CPU) {
    if (i < 0 || i >= x.shape().at(axis))
      fail("entry ", i, " is out of range for ", x.shape_str(), " along axis ", axis);
    return x.view_as(shape, x.dtype(), static_cast<size_t>(i * s.inner));
  }
  return slice_along(x, axis, i, i + 1).view_as(shape, x.dtype());
}

NDArray concat(const std::vector<NDArray>& pieces, int64_t axis, const std::string& what) {
  if (pieces.empty()) fail(what, ": nothing to join");
  std::vector<int64_t> shape = pieces[0].shape();
  axis = normalized_axis(axis, static_cast<int64_t>(shape.size()), what);
  int64_t total = 0;
  for (const NDArray& p : pieces) {
    std::vector<int64_t> other = p.shape();
    if (p.dtype() != pieces[0].dtype() || other.size() != shape.size() ||
        !std::equal(other.begin(), other.begin() + axis, shape.begin()) ||
        !std::equal(other.begin() + axis + 1, other.end(), shape.begin() + axis + 1))
      fail(what, ": cannot join ", pieces[0].dtype().str(), pieces[0].shape_str(), " and ", p.dtype().str(),
           p.shape_str(), " along axis ", axis);
    total += other[axis];
  }
  shape[axis] = total;
  NDArray out = NDArray::empty(shape, pieces[0].dtype());
  const AxisSplit s = split_at(shape, axis, pieces[0].dtype().element_bytes());
  char* dst = static_cast<char*>(out.data());
  int64_t offset = 0;  // in bytes, within one outer row
  for (const NDArray& p : pieces) {
    const int64_t bytes = p.shape()[axis] * s.inner;
    const char* src = static_cast<const char*>(p.data());
    for (int64_t o = 0; o < s.outer; ++o) std::memcpy(dst + o * total * s.inner + offset, src + o * bytes, bytes);
    offset += bytes;
  }
  return out;
}

NDArray stack(const std::vector<NDArray>& pieces, int64_t axis, const std::string& what) {
  std::vector<NDArray> expanded;
  for (const NDArray& p : pieces) {
    if (p.shape() != pieces[0].shape() || p.dtype() != pieces[0].dtype())
      fail(what, ": the values to stack differ, ", pieces[0].dtype().str(), pieces[0].shape_str(), " and ",
           p.dtype().str(), p.shape_str());
    expanded.push_back(p.view_as(with_new_axis(p.shape(), axis), p.dtype()));
  }
  return concat(expanded, axis, what);
}

namespace {

// ONNX's sequence operators: positions count from the back when negative.
int64_t position_in(const std::vector<NDArray>& seq, const ProgramValue& given, int64_t fallback, bool may_be_end) {
  if (given.is_none()) return fallback;
  const int64_t n = static_cast<int64_t>(seq.size());
  const int64_t p = single_value(given.as_tensor("the position"), "the position");
  const int64_t last = may_be_end ? n : n - 1;
  if (p < -n || p > last) fail("position ", p, " is out of range for a sequence of ", n, " tensors");
  return p < 0 ? p + n : p;
}

void check_element_type(const std::vector<NDArray>& seq, const NDArray& t) {
  if (!seq.empty() && seq[0].dtype() != t.dtype())
    fail("a sequence of ", seq[0].dtype().str(), " tensors cannot hold a ", t.dtype().str(), " tensor");
}

std::vector<NDArray> split_to_sequence(const NDArray& x, const ProgramValue& split, int64_t axis, bool keepdims,
                                       const std::string& what) {
  axis = normalized_axis(axis, x.ndim(), what);
  const int64_t n = x.shape()[axis];
  std::vector<int64_t> lengths;
  if (split.is_none()) {
    lengths.assign(n, 1);
  } else {
    const NDArray& s = split.as_tensor(what + ": split");
    if (s.ndim() == 0) {
      const int64_t size = single_value(s, what + ": split");
      if (size <= 0) fail(what, ": split must be positive, got ", size);
      for (int64_t begin = 0; begin < n; begin += size) lengths.push_back(std::min(size, n - begin));
    } else {
      int64_t sum = 0;
      for (int64_t i = 0; i < s.numel(); ++i) {
        lengths.push_back(static_cast<int64_t>(element_as_double(s, i)));
        if (lengths.back() < 0) fail(what, ": split has a negative length ", lengths.back());
        sum += lengths.back();
      }
      if (sum != n) fail(what, ": split's lengths add up to ", sum, ", the axis has ", n);
    }
  }
  std::vector<NDArray> out;
  int64_t begin = 0;
  for (int64_t length : lengths) {
    NDArray piece = slice_along(x, axis, begin, begin + length);
    if (split.is_none() && !keepdims) piece = take(piece, axis, 0);
    out.push_back(piece);
    begin += length;
  }
  return out;
}

// Split given its lengths as a 1-D input (ONNX's, from opset 13): a copy for each length.
std::vector<ProgramValue> split_by_lengths(const ProgramStep& step, const std::vector<ProgramValue>& in) {
  const NDArray& x = in.at(0).as_tensor("the data");
  const NDArray& lengths = in.at(1).as_tensor("split");
  if (lengths.ndim() != 1) fail("split must be 1-D, got ", lengths.dtype().str(), lengths.shape_str());
  std::vector<ProgramValue> out;
  for (NDArray& piece : split_to_sequence(x, in[1], step.attrs.get_int("axis"), true, "split"))
    out.push_back(std::move(piece));
  if (out.size() != step.outputs.size())
    fail("split has ", out.size(), " lengths for ", step.outputs.size(), " outputs");
  return out;
}

std::vector<ProgramValue> data_dependent(const ProgramStep& step, const std::vector<ProgramValue>& in) {
  auto tensor = [&](size_t i) -> const NDArray& {
    if (i >= in.size() || in[i].is_none()) fail("input ", i, " is missing");
    return in[i].as_tensor("input " + std::to_string(i));
  };
  auto given = [&](size_t i) { return i < in.size() && in[i].is_tensor() && in[i].tensor.numel() > 0; };
  std::optional<int64_t> axis;
  if (step.attrs.has("axis")) axis = step.attrs.get_int("axis");
  const std::string& op = step.builtin;
  if (op == "nonzero") return {nonzero(tensor(0))};
  if (op == "range") return {range(tensor(0), tensor(1), tensor(2))};
  auto scalar = [&](size_t i, const char* what) {
    const NDArray& t = tensor(i);
    if (t.numel() != 1) fail(what, " must be a scalar, got shape ", t.shape_str());
    return t;
  };
  if (op == "mel_weight_matrix")
    return {mel_weight_matrix(integer_value(scalar(0, "num_mel_bins"), 0), integer_value(scalar(1, "dft_length"), 0),
                              integer_value(scalar(2, "sample_rate"), 0),
                              element_as_double(scalar(3, "lower_edge_hertz"), 0),
                              element_as_double(scalar(4, "upper_edge_hertz"), 0), step.attrs.get_dtype("dtype"))};
  if (op == "stft")
    return {stft(tensor(0), integer_value(scalar(1, "frame_step"), 0),
                 given(2) ? std::optional<NDArray>(tensor(2)) : std::nullopt,
                 integer_value(scalar(3, "frame_length"), 0), step.attrs.get_int("onesided") != 0)};
  if (op == "resize_output_size")
    return {resized_shape(tensor(0).shape(), tensor(1),
                          step.attrs.has("axes") ? step.attrs.get_ints("axes") : std::vector<int64_t>{})};
  if (op == "cumsum" || op == "cumprod")
    return {running_along(tensor(0), tensor(1), step.attrs.get_int("exclusive") != 0,
                          step.attrs.get_int("reverse") != 0, op == "cumprod")};
  if (op == "compress") return {compress(tensor(0), tensor(1), axis)};
  if (op == "unique") {
    std::vector<ProgramValue> out;
    for (NDArray& a : unique(tensor(0), axis, step.attrs.get_int("sorted") != 0)) out.emplace_back(a);
    return out;
  }
  if (op == "topk") {
    std::vector<ProgramValue> out;
    for (NDArray& a :
         topk(tensor(0), single_value(tensor(1), "k"), step.attrs.get_int("axis"), step.attrs.get_int("largest") != 0))
      out.emplace_back(a);
    return out;
  }
  if (op == "non_max_suppression") {
    const int64_t max_boxes = given(2) ? single_value(in[2].tensor, "max_output_boxes_per_class") : 0;
    const float iou = given(3) ? static_cast<float>(element_as_double(in[3].tensor, 0)) : 0.0f;
    std::optional<float> score;
    if (given(4)) score = static_cast<float>(element_as_double(in[4].tensor, 0));
    return {
        non_max_suppression(tensor(0), tensor(1), max_boxes, iou, score, step.attrs.get_int("center_point_box") != 0)};
  }
  fail("no builtin '", op, "'");
}

std::vector<ProgramValue> sequence_or_optional(const ProgramStep& step, const std::vector<ProgramValue>& in) {
  const std::string& op = step.builtin;
  auto input = [&](size_t i) -> const ProgramValue& {
    static const ProgramValue kNone;
    return i < in.size() ? in[i] : kNone;
  };
  auto sequence = [&](size_t i) { return input(i).as_sequence("input " + std::to_string(i)); };
  auto tensor = [&](size_t i) -> const NDArray& { return input(i).as_tensor("input " + std::to_string(i)); };
  if (op == "optional_get_element" && input(0).is_none()) fail("the optional holds no value");
  if (op == "identity" || op == "optional" || op == "optional_get_element") return {input(0)};
  if (op == "optional_has_element") {
    NDArray has = NDArray::empty({}, kBool);
    store_element(has, 0, input(0).is_none() ? 0 : 1);
    return {has};
  }
  if (op == "sequence_empty") return {ProgramValue::of_sequence({})};
  if (op == "sequence_construct") {
    std::vector<NDArray> elements;
    for (size_t i = 0; i < in.size(); ++i) {
      check_element_type(elements, tensor(i));
      elements.push_back(tensor(i));
    }
    return {ProgramValue::of_sequence(std::move(elements))};
  }
  if (op == "sequence_length") {
    NDArray n = NDArray::empty({}, kInt64);
    n.data_as<int64_t>()[0] = static_cast<int64_t>(sequence(0).size());
    return {n};
  }
  if (op == "sequence_at") {
    const std::vector<NDArray> seq = sequence(0);
    return {seq[position_in(seq, input(1), 0, false)]};
  }
  if (op == "sequence_insert") {
    std::vector<NDArray> seq = sequence(0);
    check_element_type(seq, tensor(1));
    seq.insert(seq.begin() + position_in(seq, input(2), static_cast<int64_t>(seq.size()), true), tensor(1));
    return {ProgramValue::of_sequence(std::move(seq))};
  }
  if (op == "sequence_erase") {
    std::vector<NDArray> seq = sequence(0);
    if (seq.empty()) fail("the sequence is empty");
    seq.erase(seq.begin() + position_in(seq, input(1), static_cast<int64_t>(seq.size()) - 1, false));
    return {ProgramValue::of_sequence(std::move(seq))};
  }
  if (op == "split_to_sequence")
    return {ProgramValue::of_sequence(split_to_sequence(tensor(0), input(1), step.attrs.get_int("axis"),
                                                        step.attrs.get_int("keepdims") != 0, "the input"))};
  if (op == "concat_from_sequence") {
    const std::vector<NDArray> seq = sequence(0);
    if (seq.empty()) fail("the sequence is empty");
    const int64_t axis = step.attrs.get_int("axis");
    const std::string what = "the sequence's tensors";
    if (step.attrs.get_int("new_axis") == 0) return {concat(seq, axis, what)};
    return {stack(seq, normalized_axis(axis, seq[0].ndim() + 1, what), what)};
  }
  fail("no builtin '", op, "'");
}

// An integer scalar or list as the shape (its values..., 0) of an empty uint8 tensor, for a stage
// built for every size that takes those values as sizes (relay_ir's StageSource::specialize_symbolic).
// `fixed`: the value each element must have, where the stage was built for a constant (-1: any).
NDArray values_as_shape(const NDArray& values, const std::string& name, const std::vector<int64_t>& fixed) {
  if (!values.dtype().is_integer() || values.ndim() > 1)
    fail(name, ", ", values.dtype().str(), values.shape_str(), ", is not an integer scalar or list");
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < values.numel(); ++i) {
    const double v = element_as_double(values, i);
    if (v < 0 || v > static_cast<double>(int64_t{1} << 53))
      throw ValueNotASize(name + " holds " + std::to_string(static_cast<int64_t>(v)) + " (element " +
                          std::to_string(i) +
                          "), which the part of the model built for every size takes as a size: it must " +
                          (v < 0 ? "not be negative" : "be at most 2^53"));
    shape.push_back(static_cast<int64_t>(v));
    if (i < static_cast<int64_t>(fixed.size()) && fixed[i] >= 0 && shape.back() != fixed[i])
      fail(name, " holds ", shape.back(), " (element ", i, "), where the part of the model after it was built for ",
           fixed[i], ": an operator there needs it constant");
  }
  shape.push_back(0);
  return NDArray::empty(shape, DataType::UInt(8));
}

}  // namespace

namespace {

const std::vector<std::string> kDataDependent = {
    "nonzero", "compress", "unique",  "non_max_suppression", "topk",
    "range",   "cumsum",   "cumprod", "resize_output_size",  "mel_weight_matrix",
    "stft"};
// Reductions over axes the data gives (runtime/axis_ops.h), "reduce_" and the kind.
const std::vector<std::string> kReductions = {"reduce_sum",         "reduce_mean",      "reduce_max", "reduce_min",
                                              "reduce_prod",        "reduce_l1",        "reduce_l2",  "reduce_log_sum",
                                              "reduce_log_sum_exp", "reduce_sum_square"};
const std::vector<std::string> kSequenceOrOptional = {
    "identity",        "optional",           "optional_get_element", "optional_has_element",
    "sequence_empty",  "sequence_construct", "sequence_length",      "sequence_at",
    "sequence_insert", "sequence_erase",     "split_to_sequence",    "concat_from_sequence"};
// Operators whose output shape the values of inputs give (ONNX's, given them as inputs).
const std::vector<std::string> kShapedByValues = {"reshape", "squeeze", "unsqueeze", "slice", "split", "expand"};

bool listed(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The integers of a 1-D int32 or int64 host array; `what` names it in errors.
std::vector<int64_t> int_list(const ProgramValue& v, const std::string& what) {
  const NDArray& a = v.as_tensor(what);
  if ((a.dtype() != kInt64 && a.dtype() != kInt32) || a.ndim() != 1 || a.device().type != DeviceType::CPU)
    fail(what, " must be int32 or int64, 1-D and on the CPU, got ", a.dtype().str(), a.shape_str());
  std::vector<int64_t> values(a.numel());
  for (int64_t i = 0; i < a.numel(); ++i)
    values[i] = a.dtype() == kInt64 ? a.data_as<int64_t>()[i] : a.data_as<int32_t>()[i];
  return values;
}

// A builtin of kShapedByValues: a view of the data at the shape its target or axes give, or a copy
// of the entries a slice's starts, ends, axes and steps select or of the data expanded to a target.
NDArray shaped_by_values(const ProgramStep& step, const std::vector<ProgramValue>& in) {
  const std::string& op = step.builtin;
  const NDArray& x = in.at(0).as_tensor("the data");
  if (op == "slice") {
    auto optional = [&](size_t i, const char* what) {
      return i < in.size() && !in[i].is_none() ? int_list(in[i], what) : std::vector<int64_t>{};
    };
    return host_slice(x, int_list(in.at(1), "starts"), int_list(in.at(2), "ends"), optional(3, "axes"),
                      optional(4, "steps"));
  }
  const bool to_target = op == "reshape" || op == "expand";
  const std::vector<int64_t> values = int_list(in.at(1), to_target ? "the target shape" : "the axes");
  if (op == "expand") return host_expand(x, values);
  if (op == "squeeze") return x.view_as(squeezed_shape(x.shape(), values), x.dtype());
  if (op == "unsqueeze") return x.view_as(unsqueezed_shape(x.shape(), values), x.dtype());
  return x.view_as(reshape_target(x.shape(), values, step.attrs.get_int("allowzero") != 0), x.dtype());
}

// ONNX Dropout (opset 12 on) whose ratio or training_mode the data gives: the data passes through
// and the mask, where the step has one, keeps everything, as in inference. Training with a nonzero
// ratio would drop at random, which Tessera does not compute: an error rather than another result.
std::vector<ProgramValue> dropout(const ProgramStep& step, const std::vector<ProgramValue>& in) {
  const NDArray& x = in.at(0).as_tensor("the data");
  auto given = [&](size_t i) { return i < in.size() && !in[i].is_none(); };
  if (given(1) && in[1].as_tensor("ratio").numel() != 1)
    fail("ratio must be a scalar, got shape ", in[1].tensor.shape_str());
  if (given(2) && in[2].as_tensor("training_mode").numel() != 1)
    fail("training_mode must be a scalar, got shape ", in[2].tensor.shape_str());
  const double ratio = given(1) ? element_as_double(in[1].tensor, 0) : 0.5;
  const bool training = given(2) && element_as_double(in[2].tensor, 0) != 0;
  if (training && ratio != 0)
    fail("training mode with the nonzero ratio ", ratio,
         " (random dropout) is not supported; Tessera compiles inference and training without dropout");
  std::vector<ProgramValue> out{x};
  if (step.outputs.size() > 1) {
    NDArray mask = NDArray::uninitialized(x.shape(), kBool);
    std::memset(mask.data(), 1, static_cast<size_t>(mask.numel()));
    out.emplace_back(mask);
  }
  return out;
}

}  // namespace

bool is_builtin(const std::string& name) {
  return listed(kDataDependent, name) || listed(kReductions, name) || listed(kShapedByValues, name) ||
         listed(kSequenceOrOptional, name) || name == "values_as_shape" || name == "dropout";
}

std::vector<ProgramValue> run_builtin(const ProgramStep& step, const std::vector<ProgramValue>& in) {
  try {
    if (listed(kDataDependent, step.builtin)) return data_dependent(step, in);
    if (listed(kReductions, step.builtin)) {
      const bool given = in.size() > 1 && in[1].is_tensor();
      return {reduce_along(in.at(0).as_tensor("the data"), given ? &in[1].tensor : nullptr,
                           step.attrs.get_int("keepdims") != 0, step.attrs.get_int("noop_with_empty_axes") != 0,
                           step.builtin.substr(std::string("reduce_").size()))};
    }
    if (step.builtin == "split") return split_by_lengths(step, in);
    if (step.builtin == "dropout") return dropout(step, in);
    if (listed(kShapedByValues, step.builtin)) return {shaped_by_values(step, in)};
    if (step.builtin == "values_as_shape") {
      const std::string name = "'" + step.inputs.at(0) + "'";
      const std::vector<int64_t> any;
      return {values_as_shape(in.at(0).as_tensor(name), name,
                              step.attrs.has("fixed") ? step.attrs.get_ints("fixed") : any)};
    }
    return sequence_or_optional(step, in);
  } catch (const ValueNotASize& e) {
    throw ValueNotASize(step.origin + ": " + e.what());
  } catch (const Error& e) {
    fail(step.origin, ": ", e.what());
  }
}

}  // namespace tessera::runtime
