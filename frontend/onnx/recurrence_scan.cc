#include "frontend/onnx/recurrence_scan.h"

#include <cstdint>
#include <cstring>
#include <map>

#include "frontend/onnx/program_graph.h"
#include "frontend/onnx/tensor_proto.h"
#include "runtime/element.h"
#include "runtime/ndarray.h"

namespace tessera::frontend::onnx {

namespace {

using ::onnx::AttributeProto;
using ::onnx::GraphProto;
using ::onnx::NodeProto;
using ::onnx::TensorProto;

TensorProto tensor(const std::string& name, int elem_type, std::vector<int64_t> dims, const void* data, size_t bytes) {
  TensorProto t;
  t.set_name(name);
  t.set_data_type(elem_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(std::string(static_cast<const char*>(data), bytes));
  return t;
}

// Writes the nodes of one graph, naming every value and node after the rewritten node, and its
// constants as the graph's initializers.
class GraphWriter {
 public:
  GraphWriter(GraphProto& graph, std::string prefix, int opset)
      : g_(graph), prefix_(std::move(prefix)), opset_(opset) {}

  std::string fresh(const std::string& what) { return prefix_ + what + "_" + std::to_string(count_++); }

  // One node of `op` reading `inputs` and writing `outputs`; op() gives it one fresh output.
  NodeProto& node(const std::string& op, const std::vector<std::string>& inputs, std::vector<std::string> outputs) {
    NodeProto& n = *g_.add_node();
    n.set_op_type(op);
    n.set_name(fresh(op));
    for (const auto& in : inputs) n.add_input(in);
    for (const auto& out : outputs) n.add_output(out);
    return n;
  }
  std::string op(const std::string& op, const std::vector<std::string>& inputs) {
    std::string out = fresh(op + "_out");
    node(op, inputs, {out});
    return out;
  }

  std::string ints(const std::vector<int64_t>& v) {
    std::string name = fresh("ints");
    *g_.add_initializer() =
        tensor(name, TensorProto::INT64, {static_cast<int64_t>(v.size())}, v.data(), v.size() * sizeof(int64_t));
    return name;
  }
  std::string int32_scalar(int32_t v) {
    std::string name = fresh("int32");
    *g_.add_initializer() = tensor(name, TensorProto::INT32, {}, &v, sizeof v);
    return name;
  }
  void initializer(TensorProto t) { *g_.add_initializer() = std::move(t); }

  // Squeeze or Unsqueeze of `axes`, an attribute before opset 13 and an input since.
  std::string axes_op(const std::string& op_type, const std::string& x, const std::vector<int64_t>& axes) {
    if (opset_ >= 13) return op(op_type, {x, ints(axes)});
    std::string out = fresh(op_type + "_out");
    set_ints(node(op_type, {x}, {out}), "axes", axes);
    return out;
  }
  std::string transpose(const std::string& x, const std::vector<int64_t>& perm) {
    std::string out = fresh("Transpose_out");
    set_ints(node("Transpose", {x}, {out}), "perm", perm);
    return out;
  }

  static AttributeProto& attr(NodeProto& n, const std::string& name, AttributeProto::AttributeType type) {
    AttributeProto& a = *n.add_attribute();
    a.set_name(name);
    a.set_type(type);
    return a;
  }
  static void set_int(NodeProto& n, const std::string& name, int64_t v) { attr(n, name, AttributeProto::INT).set_i(v); }
  static void set_ints(NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
    AttributeProto& a = attr(n, name, AttributeProto::INTS);
    for (int64_t e : v) a.add_ints(e);
  }

 private:
  GraphProto& g_;
  std::string prefix_;
  int opset_;
  int count_ = 0;
};

// The rewrite of one recurrent node into the main graph.
class ScanRewrite {
 public:
  ScanRewrite(const NodeProto& node, const SymbolicRecurrence& info, GraphWriter& outer,
              const std::map<std::string, const TensorProto*>& initializers, const std::string& base_dir, int opset)
      : n_(node), info_(info), outer_(outer), initializers_(initializers), base_dir_(base_dir), opset_(opset) {}

  void write() {
    const bool batch_first = int_attr("layout", 0) == 1;
    const std::string x = batch_first ? outer_.transpose(input(0), {1, 0, 2}) : input(0);  // [S, B, I]
    if (!input(4).empty()) {
      lengths_ = outer_.fresh("lengths");
      GraphWriter::set_int(outer_.node("Cast", {input(4)}, {lengths_}), "to", TensorProto::INT32);
    }
    auto state = [&](int i) {
      if (input(i).empty()) return std::string();
      return batch_first ? outer_.transpose(input(i), {1, 0, 2}) : input(i);  // [D, B, H]
    };
    const std::string h0 = state(5), c0 = lstm() ? state(6) : "";
    const bool joint = info_.directions.size() == 2 && same(info_.directions[0], info_.directions[1]) && constant_w() &&
                       opset_ >= 10;  // Slice steps
    const Outputs out = joint ? both_directions(x, h0, c0) : each_direction(x, h0, c0);
    finish(0, out.ys, 1, batch_first ? std::vector<int64_t>{2, 0, 1, 3} : std::vector<int64_t>{});
    finish(1, out.hs, 0, batch_first ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{});
    if (lstm()) finish(2, out.cs, 0, batch_first ? std::vector<int64_t>{1, 0, 2} : std::vector<int64_t>{});
  }

 private:
  struct Weights {
    std::string w, r, b, p;  // "" where not given
  };
  // The node's outputs as parts: Y's ([S, 1, B, H] or [S, D, B, H]), Y_h's and Y_c's ([1 or D, B, H]).
  struct Outputs {
    std::vector<std::string> ys, hs, cs;
  };

  bool lstm() const { return n_.op_type() == "LSTM"; }
  static bool same(const SymbolicRecurrence::Direction& a, const SymbolicRecurrence::Direction& b) {
    return a.activations == b.activations && a.alpha == b.alpha && a.beta == b.beta;
  }

  // Zeros for the initial states of `count` directions, [count, B, H].
  std::string zeros(const std::string& x, int64_t count) {
    std::string batch = outer_.op("Gather", {outer_.op("Shape", {x}), outer_.ints({1})});
    std::string shape = outer_.fresh("zeros_shape");
    GraphWriter::set_int(outer_.node("Concat", {outer_.ints({count}), batch, outer_.ints({info_.hidden})}, {shape}),
                         "axis", 0);
    std::string out = outer_.fresh("zeros");
    NodeProto& fill = outer_.node("ConstantOfShape", {shape}, {out});
    const double zero = 0;  // the zero of every float type is all zero bits
    AttributeProto& value = GraphWriter::attr(fill, "value", AttributeProto::TENSOR);
    *value.mutable_t() = tensor("", info_.elem_type, {1}, &zero, dtype_from_onnx(info_.elem_type, "X").bits / 8);
    return out;
  }

  // x ([S, B, I]) in the order a reverse direction reads it: reversed per batch entry where
  // sequence_lens is given, else reversed along the time axis.
  std::string reversed(const std::string& x) {
    if (!lengths_.empty()) return reverse_sequence(x);
    std::string out = outer_.fresh("Slice_out");
    outer_.node("Slice", {x, outer_.ints({-1}), outer_.ints({INT64_MIN}), outer_.ints({0}), outer_.ints({-1})}, {out});
    return out;
  }

  // One Scan per direction, each step the node's cell of that direction.
  Outputs each_direction(const std::string& x, const std::string& h0, const std::string& c0) {
    const std::string direction = string_attr("direction", "forward");
    const bool given = !h0.empty() && (!lstm() || !c0.empty());
    const std::string none = given ? "" : zeros(x, 1);  // [1, B, H]
    // The input projections of every step as one matrix product, where W is a constant.
    const bool projected = constant_w();
    Outputs out;
    for (int64_t d = 0; d < static_cast<int64_t>(info_.directions.size()); ++d) {
      const bool reverse = direction == "reverse" || d == 1;
      std::string xs = x;
      if (reverse && !lengths_.empty()) xs = reverse_sequence(x);
      if (projected) xs = projections(xs, d);
      std::vector<std::string> scan_in = {h0.empty() ? none : direction_of(h0, d)};
      if (lstm()) scan_in.push_back(c0.empty() ? none : direction_of(c0, d));
      // W, R, B and P of this direction, which the body reads (made before the Scan that runs it).
      const bool bias_in_body = !input(3).empty() && !(projected && folds_bias());
      const Weights weights = {direction_of(input(1), d), direction_of(input(2), d),
                               bias_in_body ? direction_of(input(3), d) : "",
                               input(7).empty() ? "" : direction_of(input(7), d)};
      std::vector<std::string> scan_out = scan(scan_in, xs, reverse && lengths_.empty(), [&](GraphProto& body) {
        write_body(body, &info_.directions[d], weights, projected);
      });
      std::string y = scan_out.back();  // [S, B, H]
      if (reverse && !lengths_.empty()) y = reverse_sequence(y);
      out.ys.push_back(outer_.axes_op("Unsqueeze", y, {1}));
      out.hs.push_back(scan_out[0]);
      if (lstm()) out.cs.push_back(scan_out[1]);
    }
    return out;
  }

  // Both directions of a bidirectional node in one Scan, each step the node's cell over both
  // directions at once (one batched product, one cell) from their input projections stacked, the
  // reverse direction's reversed before the Scan and its outputs after it.
  Outputs both_directions(const std::string& x, const std::string& h0, const std::string& c0) {
    std::string xs = outer_.fresh("Concat_out");  // [S, 2, B, G * H]
    GraphWriter::set_int(outer_.node("Concat",
                                     {outer_.axes_op("Unsqueeze", projections(x, 0), {1}),
                                      outer_.axes_op("Unsqueeze", projections(reversed(x), 1), {1})},
                                     {xs}),
                         "axis", 1);
    const bool given = !h0.empty() && (!lstm() || !c0.empty());
    const std::string none = given ? "" : zeros(x, 2);  // [2, B, H]
    std::vector<std::string> scan_in = {h0.empty() ? none : h0};
    if (lstm()) scan_in.push_back(c0.empty() ? none : c0);
    const bool bias_in_body = !input(3).empty() && !folds_bias();
    const Weights weights = {input(1), input(2), bias_in_body ? input(3) : "", input(7)};
    std::vector<std::string> scan_out =
        scan(scan_in, xs, false, [&](GraphProto& body) { write_body(body, nullptr, weights, true); });
    const std::string y = scan_out.back();  // [S, 2, B, H]
    auto direction = [&](int64_t d) {       // [S, B, H]
      return outer_.axes_op("Squeeze",
                            outer_.op("Slice", {y, outer_.ints({d}), outer_.ints({d + 1}), outer_.ints({1})}), {1});
    };
    Outputs out;
    out.ys = {outer_.axes_op("Unsqueeze", direction(0), {1}), outer_.axes_op("Unsqueeze", reversed(direction(1)), {1})};
    out.hs = {scan_out[0]};
    if (lstm()) out.cs = {scan_out[1]};
    return out;
  }

  // A Scan over the steps of `xs` (backwards where `reverse`) from the states `states` (h, and c
  // for an LSTM), counting the steps where sequence_lens is given; `body` writes its body. Returns
  // its outputs: the final states, then the stacked step outputs.
  template <typename WriteBody>
  std::vector<std::string> scan(std::vector<std::string> states, const std::string& xs, bool reverse, WriteBody body) {
    if (!lengths_.empty()) states.push_back(outer_.int32_scalar(0));
    states.push_back(xs);
    std::vector<std::string> scan_out;
    for (size_t i = 0; i < states.size(); ++i) scan_out.push_back(outer_.fresh("scan_out"));
    NodeProto& scan = outer_.node("Scan", states, scan_out);
    body(*GraphWriter::attr(scan, "body", AttributeProto::GRAPH).mutable_g());
    GraphWriter::set_int(scan, "num_scan_inputs", 1);
    if (reverse) {
      GraphWriter::set_ints(scan, "scan_input_directions", {1});
      GraphWriter::set_ints(scan, "scan_output_directions", {1});
    }
    return scan_out;
  }

  std::string input(int i) const { return i < n_.input_size() ? n_.input(i) : std::string(); }
  const AttributeProto* find(const std::string& name) const {
    for (const auto& a : n_.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t int_attr(const std::string& name, int64_t fallback) const {
    const AttributeProto* a = find(name);
    return a ? a->i() : fallback;
  }
  std::string string_attr(const std::string& name, const std::string& fallback) const {
    const AttributeProto* a = find(name);
    return a ? a->s() : fallback;
  }

  std::string reverse_sequence(const std::string& x) {
    std::string out = outer_.fresh("ReverseSequence_out");
    NodeProto& r = outer_.node("ReverseSequence", {x, lengths_}, {out});
    GraphWriter::set_int(r, "batch_axis", 1);
    GraphWriter::set_int(r, "time_axis", 0);
    return out;
  }

  // Direction d of a per-direction input ([D, ...]): an initializer's slice is an initializer too,
  // so that the body's weights stay constants (packed once, not passed every step).
  std::string direction_of(const std::string& all, int64_t d) {
    if (info_.directions.size() == 1) return all;
    auto init = initializers_.find(all);
    if (init == initializers_.end()) return outer_.op("Gather", {all, outer_.ints({d})});
    const runtime::NDArray value = tensor_from_proto(*init->second, base_dir_);
    std::vector<int64_t> dims = value.shape();
    dims[0] = 1;
    const size_t bytes = value.nbytes() / static_cast<size_t>(value.shape()[0]);
    const std::string name = outer_.fresh("direction");
    outer_.initializer(
        tensor(name, init->second->data_type(), dims, static_cast<const char*>(value.data()) + d * bytes, bytes));
    return name;
  }

  // Whether W is a constant, so that the input projections are computed before the Scan.
  bool constant_w() const { return initializers_.count(input(1)) > 0; }

  // Whether the input projections add the biases (B a constant, and not a GRU's that applies its
  // recurrent bias apart: linear_before_reset), so that the Scan's step does not.
  bool folds_bias() const {
    return initializers_.count(input(3)) && !(n_.op_type() == "GRU" && int_attr("linear_before_reset", 0) != 0);
  }

  // The input projections of direction d of x ([S, B, I]), W a constant: x W[d]^T, plus the
  // biases where folds_bias.
  std::string projections(const std::string& x, int64_t d) {
    const std::string xw = outer_.op("MatMul", {x, transposed_weight(d)});
    return folds_bias() ? outer_.op("Add", {xw, summed_bias(d)}) : xw;
  }

  // Wb[d] + Rb[d] ([G * H]) of the constant B as an initializer.
  std::string summed_bias(int64_t d) {
    const runtime::NDArray b = tensor_from_proto(*initializers_.at(input(3)), base_dir_);
    const int64_t n = b.shape()[1] / 2;
    runtime::NDArray sum = runtime::NDArray::empty({n}, b.dtype());
    for (int64_t i = 0; i < n; ++i)
      runtime::store_element(
          sum, i, runtime::element_as_double(b, d * 2 * n + i) + runtime::element_as_double(b, d * 2 * n + n + i));
    const std::string name = outer_.fresh("bias");
    outer_.initializer(tensor(name, initializers_.at(input(3))->data_type(), {n}, sum.data(), sum.nbytes()));
    return name;
  }

  // W[d] (a constant) transposed ([I, G * H]) as an initializer.
  std::string transposed_weight(int64_t d) {
    const TensorProto& init = *initializers_.at(input(1));
    const runtime::NDArray w = tensor_from_proto(init, base_dir_);
    const int64_t rows = w.shape()[1], cols = w.shape()[2];
    const size_t element = w.nbytes() / static_cast<size_t>(w.numel());
    const char* from = static_cast<const char*>(w.data()) + static_cast<size_t>(d * rows * cols) * element;
    std::string data(static_cast<size_t>(rows * cols) * element, '\0');
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        std::memcpy(&data[static_cast<size_t>(c * rows + r) * element],
                    from + static_cast<size_t>(r * cols + c) * element, element);
    const std::string name = outer_.fresh("weight_t");
    outer_.initializer(tensor(name, init.data_type(), {cols, rows}, data.data(), data.size()));
    return name;
  }

  // The body of direction `dir` (of both, where null): the node over a sequence of one step, from
  // the states and a step of X ([B, I], or its projections: [B, G * H], or [2, B, G * H] for both
  // directions) to the new states and the step's output ([B, H], or [2, B, H] for both).
  void write_body(GraphProto& body, const SymbolicRecurrence::Direction* dir, const Weights& weights, bool projected) {
    const bool lstm = this->lstm();
    body.set_name(outer_.fresh("body"));
    GraphWriter w(body, outer_.fresh("body") + "/", opset_);
    auto declare = [](::onnx::ValueInfoProto& v, const std::string& name, int elem_type) {
      v.set_name(name);
      v.mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    };
    const std::string h = w.fresh("h"), c = w.fresh("c"), t = w.fresh("t"), x = w.fresh("x");
    declare(*body.add_input(), h, info_.elem_type);
    if (lstm) declare(*body.add_input(), c, info_.elem_type);
    if (!lengths_.empty()) declare(*body.add_input(), t, TensorProto::INT32);
    declare(*body.add_input(), x, info_.elem_type);

    std::string live;  // 1 where the batch entry's sequence goes on, else 0: a length of one step or none
    std::string t_next;
    if (!lengths_.empty()) {
      live = w.fresh("live");
      GraphWriter::set_int(w.node("Cast", {w.op("Less", {t, lengths_})}, {live}), "to", TensorProto::INT32);
      t_next = w.op("Add", {t, w.int32_scalar(1)});
    }
    std::vector<std::string> in = {dir ? w.axes_op("Unsqueeze", x, {0}) : x, weights.w, weights.r, weights.b, live, h};
    if (lstm) {
      in.push_back(c);
      in.push_back(weights.p);
    }
    while (!in.empty() && in.back().empty()) in.pop_back();
    const std::string y = w.fresh("y"), h_next = w.fresh("h_next"), c_next = w.fresh("c_next");
    std::vector<std::string> out = {y, h_next};
    if (lstm) out.push_back(c_next);
    NodeProto& cell = w.node(n_.op_type(), in, out);
    cell.set_domain(n_.domain());
    for (const auto& a : n_.attribute()) {
      const bool of_direction = a.name() == "direction" || a.name() == "activations" ||
                                a.name() == "activation_alpha" || a.name() == "activation_beta";
      if (a.name() != "layout" && a.name() != "hidden_size" && !(dir && of_direction)) *cell.add_attribute() = a;
    }
    GraphWriter::set_int(cell, "hidden_size", info_.hidden);
    if (projected) GraphWriter::set_int(cell, kProjectedInput, 1);
    if (dir) {
      AttributeProto& names = GraphWriter::attr(cell, "activations", AttributeProto::STRINGS);
      for (const auto& name : dir->activations) names.add_strings(name);
      for (const auto& [name, values] :
           {std::pair{"activation_alpha", &dir->alpha}, std::pair{"activation_beta", &dir->beta}}) {
        if (values->empty()) continue;
        AttributeProto& a = GraphWriter::attr(cell, name, AttributeProto::FLOATS);
        for (float v : *values) a.add_floats(v);
      }
    }
    const std::string y_step = dir ? w.axes_op("Squeeze", y, {0, 1}) : w.axes_op("Squeeze", y, {0});

    std::vector<std::string> results = {h_next};
    if (lstm) results.push_back(c_next);
    if (!lengths_.empty()) results.push_back(t_next);
    results.push_back(y_step);
    for (const auto& r : results) body.add_output()->set_name(r);
  }

  // Output i of the node: the directions' values joined along `axis`, then transposed by `perm`.
  void finish(int i, const std::vector<std::string>& parts, int64_t axis, const std::vector<int64_t>& perm) {
    if (i >= n_.output_size() || n_.output(i).empty()) return;
    std::string v = parts[0];
    if (parts.size() > 1) {
      v = outer_.fresh("Concat_out");
      GraphWriter::set_int(outer_.node("Concat", parts, {v}), "axis", axis);
    }
    if (!perm.empty()) v = outer_.transpose(v, perm);
    outer_.node("Identity", {v}, {n_.output(i)});
  }

  const NodeProto& n_;
  const SymbolicRecurrence& info_;
  GraphWriter& outer_;
  const std::map<std::string, const TensorProto*>& initializers_;
  const std::string& base_dir_;
  int opset_;
  std::string lengths_;  // sequence_lens as int32, if given
};

}  // namespace

::onnx::ModelProto recurrences_as_scans(const ::onnx::ModelProto& model, const std::vector<SymbolicRecurrence>& nodes,
                                        const std::string& base_dir) {
  const int opset = ai_onnx_opset(model);
  ::onnx::ModelProto out = model;
  if (opset < 9) return out;
  GraphProto& graph = *out.mutable_graph();
  std::map<std::string, const TensorProto*> initializers;
  for (const auto& init : model.graph().initializer()) initializers[init.name()] = &init;
  graph.clear_node();
  for (const NodeProto& node : model.graph().node()) {
    const SymbolicRecurrence* info = nullptr;
    for (const auto& r : nodes)
      if (node.output_size() > 0 && node.output(0) == r.output) info = &r;
    std::string direction = "forward";
    for (const auto& a : node.attribute())
      if (a.name() == "direction") direction = a.s();
    const bool reverse_lengths = node.input_size() > 4 && !node.input(4).empty() && direction != "forward";
    if (!info || (reverse_lengths && opset < 10)) {
      *graph.add_node() = node;
      continue;
    }
    GraphWriter outer(graph, "tessera_scan(" + node.output(0) + ")/", opset);
    ScanRewrite(node, *info, outer, initializers, base_dir, opset).write();
  }
  return out;
}

}  // namespace tessera::frontend::onnx
