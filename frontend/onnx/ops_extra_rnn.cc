// Converters of the ONNX recurrent operators RNN, GRU and LSTM (opsets 1-17), unrolled over the
// static sequence length into matmul / add / activation / slice / concat ops. The input
// projection of every step is one matmul over the whole sequence; each step then adds one
// (GRU: two) matmul with the recurrent weights. Sequence lengths shorter than the sequence hold
// the state and zero the output past each batch entry's end; the reverse direction of such a
// batch reads and writes its steps through reverse_sequence.
#include <algorithm>
#include <cctype>
#include <optional>

#include "frontend/onnx/ops_extra.h"
#include "frontend/onnx/recurrence_scan.h"
#include "frontend/onnx/tensor_proto.h"
#include "relay_ir/transforms/infer_type.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/printer.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;
using runtime::NDArray;
using Ints = std::vector<int64_t>;

namespace {

enum class Cell { Rnn, Gru, Lstm };

// One activation function with its alpha and beta (used by some).
struct Activation {
  std::string name;  // lower case
  double alpha = 0, beta = 0;
};

struct Spec {
  Cell cell;
  int64_t gates, hidden, directions, steps;
  tensor_ir::Expr batch;  // symbolic in a model of symbolic sizes
  bool layout_batch_first, linear_before_reset, input_forget;
  std::optional<double> clip;
  std::vector<Activation> activations;  // per direction: f (RNN), f g (GRU), f g h (LSTM)
  runtime::DataType dtype;
};

// How many of alpha and beta an activation takes, and their defaults (those of the ONNX
// operators of the same names). Values come from activation_alpha / activation_beta in order,
// each list consumed only by the activations that take it, as ONNX Runtime does.
struct ActivationInfo {
  const char* name;
  int takes;  // 0: none, 1: alpha, 2: alpha and beta
  double alpha, beta;
  bool needs_values;
};
const ActivationInfo kActivations[] = {
    {"relu", 0, 0, 0, false},
    {"tanh", 0, 0, 0, false},
    {"sigmoid", 0, 0, 0, false},
    {"softsign", 0, 0, 0, false},
    {"softplus", 0, 0, 0, false},
    {"leakyrelu", 1, 0.01, 0, false},
    {"thresholdedrelu", 1, 1, 0, false},
    {"elu", 1, 1, 0, false},
    {"hardsigmoid", 2, 0.2, 0.5, false},
    {"affine", 2, 1, 0, false},
    {"scaledtanh", 2, 0, 0, true},
};

std::vector<Activation> activations(const ConvertContext& c, Cell cell, int64_t directions) {
  std::vector<std::string> defaults = cell == Cell::Rnn   ? std::vector<std::string>{"tanh"}
                                      : cell == Cell::Gru ? std::vector<std::string>{"sigmoid", "tanh"}
                                                          : std::vector<std::string>{"sigmoid", "tanh", "tanh"};
  std::vector<std::string> names;
  for (const auto& a : c.node().attribute())
    if (a.name() == "activations") names.assign(a.strings().begin(), a.strings().end());
  size_t per = defaults.size();
  if (names.empty()) names = defaults;
  if (names.size() == per && directions == 2) {
    std::vector<std::string> once = names;  // both directions use the functions given once
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != per * directions)
    c.error("activations must name " + std::to_string(per) + " function(s) per direction (" +
            std::to_string(per * directions) + " in all), got " + std::to_string(names.size()));
  std::vector<float> alphas = c.attr_floats("activation_alpha", {}), betas = c.attr_floats("activation_beta", {});
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& given : names) {
    std::string n = given;
    std::transform(n.begin(), n.end(), n.begin(), [](unsigned char ch) { return std::tolower(ch); });
    const ActivationInfo* info = nullptr;
    for (const auto& a : kActivations)
      if (n == a.name) info = &a;
    if (!info)
      c.error("activation '" + given +
              "' is not one of Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, "
              "HardSigmoid, Elu, Softsign, Softplus");
    Activation a{n, info->alpha, info->beta};
    if (info->takes >= 1) {
      if (next_alpha < alphas.size()) a.alpha = alphas[next_alpha++];
      else if (info->needs_values) c.error("activation " + given + " needs a value in activation_alpha");
    }
    if (info->takes >= 2) {
      if (next_beta < betas.size()) a.beta = betas[next_beta++];
      else if (info->needs_values) c.error("activation " + given + " needs a value in activation_beta");
    }
    out.push_back(a);
  }
  return out;
}

// Whether both directions of a bidirectional node apply the same activation functions.
bool same_activations(const Spec& s) {
  const size_t per = s.activations.size() / 2;
  for (size_t i = 0; i < per; ++i) {
    const Activation &f = s.activations[i], &r = s.activations[per + i];
    if (f.name != r.name || f.alpha != r.alpha || f.beta != r.beta) return false;
  }
  return true;
}

// The graph ops of one unrolled recurrent layer.
class Unroller {
 public:
  Unroller(const ConvertContext& c, Spec spec)
      : c_(c), s_(std::move(spec)), origin_(c.node().name().empty() ? c.node().output(0) : c.node().name()) {}

  // A call typed later, all at once (finish): typing each call as it is made would walk the
  // whole unrolled graph below it every time, quadratic in the sequence length.
  Expr op(const std::string& name, std::vector<Expr> args, Attrs attrs = {}) const {
    return relay_ir::call(name, std::move(args), std::move(attrs), origin_);
  }
  Expr finish(const Expr& e) const {
    try {
      relay_ir::infer_type(e);
    } catch (const Error& err) {
      c_.error(err.what());
    }
    return e;
  }
  Expr slice(const Expr& e, int64_t axis, int64_t begin, int64_t end) const {
    return op("slice", {e}, {{"starts", Ints{begin}}, {"ends", Ints{end}}, {"axes", Ints{axis}}});
  }
  // Entry `i` of axis `axis`, that axis removed.
  Expr pick(const Expr& e, int64_t axis, int64_t i) const {
    return op("squeeze", {slice(e, axis, i, i + 1)}, {{"axes", Ints{axis}}});
  }
  Expr transpose(const Expr& e, Ints perm) const { return op("transpose", {e}, {{"perm", perm}}); }
  Expr scalar(double v) const { return relay_ir::scalar(v, s_.dtype); }
  Expr zeros(const relay_ir::Shape& shape) const {
    if (shape.is_static()) return relay_ir::constant(NDArray::empty(shape.ints(), s_.dtype));
    return op("broadcast_to", {scalar(0)}, {{"shape", shape}});
  }
  Expr stack(const std::vector<Expr>& parts, int64_t axis) const {
    std::vector<Expr> expanded;
    for (const Expr& p : parts) expanded.push_back(op("expand_dims", {p}, {{"axes", Ints{axis}}}));
    return expanded.size() == 1 ? expanded[0] : op("concat", expanded, {{"axis", axis}});
  }

  Expr activate(const Expr& x, const Activation& a, bool clipped) const {
    Expr v = clipped && s_.clip ? op("clip", {x}, {{"a_min", -*s_.clip}, {"a_max", *s_.clip}}) : x;
    const std::string& n = a.name;
    if (n == "relu" || n == "tanh" || n == "sigmoid" || n == "softsign" || n == "softplus") return op(n, {v});
    if (n == "leakyrelu") return op("leaky_relu", {v}, {{"alpha", a.alpha}});
    if (n == "thresholdedrelu") return op("thresholded_relu", {v}, {{"alpha", a.alpha}});
    if (n == "elu") return op("elu", {v}, {{"alpha", a.alpha}});
    if (n == "hardsigmoid") return op("hard_sigmoid", {v}, {{"alpha", a.alpha}, {"beta", a.beta}});
    if (n == "affine") return op("add", {op("mul", {v, scalar(a.alpha)}), scalar(a.beta)});
    return op("mul", {op("tanh", {op("mul", {v, scalar(a.beta)})}), scalar(a.alpha)});  // scaledtanh
  }

  // The activation functions of direction d.
  const Activation* activations_of(int64_t d) const {
    return &s_.activations[static_cast<size_t>(d) * s_.activations.size() / static_cast<size_t>(s_.directions)];
  }

  // Runs the recurrence over x_steps (input projections, in processing order) from the states h
  // and cell, with r_t the recurrent weights transposed and `act` the activation functions: of one
  // direction (x_steps [batch, gates * hidden], r_t [hidden, gates * hidden], `axis` 1) or of both
  // at once (x_steps [2, batch, gates * hidden], r_t [2, hidden, gates * hidden], `axis` 2), the
  // gates along `axis`; rb_h and the peephole weights have that rank too. Returns the hidden state
  // of every step in that order and the final states.
  struct Run {
    std::vector<Expr> outputs;
    Expr h, cell;
  };
  Run run(const Activation* act, int64_t axis, const std::vector<Expr>& x_steps, const Expr& r_t,
          const std::optional<Expr>& rb_h, Expr h, Expr cell, const std::optional<Expr>& peephole,
          const std::optional<Expr>& lengths) const {
    int64_t H = s_.hidden;
    Run out;
    for (size_t t = 0; t < x_steps.size(); ++t) {
      Expr h_new, c_new;
      if (s_.cell == Cell::Rnn) {
        h_new = activate(op("add", {x_steps[t], op("matmul", {h, r_t})}), act[0], true);
      } else if (s_.cell == Cell::Gru) {
        Expr zr = op("add", {slice(x_steps[t], axis, 0, 2 * H), op("matmul", {h, slice(r_t, axis, 0, 2 * H)})});
        Expr z = activate(slice(zr, axis, 0, H), act[0], true), r = activate(slice(zr, axis, H, 2 * H), act[0], true);
        Expr r_h = slice(r_t, axis, 2 * H, 3 * H), x_h = slice(x_steps[t], axis, 2 * H, 3 * H), pre;
        if (s_.linear_before_reset) {
          Expr rec = op("matmul", {h, r_h});
          if (rb_h) rec = op("add", {rec, *rb_h});
          pre = op("add", {x_h, op("mul", {r, rec})});
        } else {
          pre = op("add", {x_h, op("matmul", {op("mul", {r, h}), r_h})});
        }
        Expr candidate = activate(pre, act[1], true);
        // (1 - z) candidate + z h, as candidate + z (h - candidate).
        h_new = op("add", {candidate, op("mul", {z, op("sub", {h, candidate})})});
      } else {
        Expr g = op("add", {x_steps[t], op("matmul", {h, r_t})});
        Expr i = slice(g, axis, 0, H), o = slice(g, axis, H, 2 * H), f = slice(g, axis, 2 * H, 3 * H),
             cc = slice(g, axis, 3 * H, 4 * H);
        if (peephole) {
          i = op("add", {i, op("mul", {slice(*peephole, axis, 0, H), cell})});
          f = op("add", {f, op("mul", {slice(*peephole, axis, 2 * H, 3 * H), cell})});
        }
        i = activate(i, act[0], true);
        f = s_.input_forget ? op("sub", {scalar(1), i}) : activate(f, act[0], true);
        c_new = op("add", {op("mul", {f, cell}), op("mul", {i, activate(cc, act[1], true)})});
        if (peephole) o = op("add", {o, op("mul", {slice(*peephole, axis, H, 2 * H), c_new})});
        h_new = op("mul", {activate(o, act[0], true), activate(c_new, act[2], false)});
      }
      if (lengths) {
        // Batch entries whose sequence has ended keep their state and output zeros.
        Expr live =
            op("expand_dims", {op("less", {relay_ir::scalar(static_cast<double>(t), lengths_dtype_), *lengths})},
               {{"axes", Ints{1}}});
        out.outputs.push_back(op("where", {live, h_new, scalar(0)}));
        h_new = op("where", {live, h_new, h});
        if (c_new.defined()) c_new = op("where", {live, c_new, cell});
      } else {
        out.outputs.push_back(h_new);
      }
      h = h_new;
      if (c_new.defined()) cell = c_new;
    }
    out.h = h;
    out.cell = cell;
    return out;
  }

  void set_lengths_dtype(runtime::DataType t) { lengths_dtype_ = t; }

 private:
  const ConvertContext& c_;
  Spec s_;
  std::string origin_;
  runtime::DataType lengths_dtype_ = runtime::kInt32;
};

// A shape of expressions, constant ones as integers.
relay_ir::Shape dims(const std::vector<tensor_ir::Expr>& d) { return relay_ir::Shape(d); }

const relay_ir::TensorTypeNode& typed(const ConvertContext& c, size_t i, const std::string& what,
                                      const relay_ir::Shape& shape, runtime::DataType dtype) {
  const auto& t = c.input_type(i);
  if (t.shape != shape || t.dtype != dtype)
    c.error(what + " must be " + dtype.str() + shape.str() + ", got " + t.dtype.str() + t.shape.str());
  return t;
}

// What the converter throws for a sequence of symbolic length `steps`, which it cannot unroll.
SymbolicRecurrence symbolic_recurrence(const ConvertContext& c, const Spec& s, const tensor_ir::Expr& steps) {
  SymbolicRecurrence r(c.where() + ": the sequence length (" + tensor_ir::to_string(steps) +
                       ") is symbolic: a recurrence unrolls over a constant length only, so the model must be built "
                       "per length unless it runs the node as a loop (a model of opset 9 or newer loaded for every "
                       "size, where this node is outside control flow)");
  r.output = c.node().output(0);
  r.elem_type = onnx_type_of(s.dtype);
  r.hidden = s.hidden;
  const size_t per = s.activations.size() / static_cast<size_t>(s.directions);
  for (int64_t d = 0; d < s.directions; ++d) {
    SymbolicRecurrence::Direction dir;
    for (size_t i = 0; i < per; ++i) {
      const Activation& a = s.activations[static_cast<size_t>(d) * per + i];
      dir.activations.push_back(a.name);
      for (const auto& info : kActivations) {
        if (a.name != info.name) continue;
        if (info.takes >= 1) dir.alpha.push_back(static_cast<float>(a.alpha));
        if (info.takes >= 2) dir.beta.push_back(static_cast<float>(a.beta));
      }
    }
    r.directions.push_back(std::move(dir));
  }
  const tensor_ir::Expr D(s.directions), H(s.hidden);
  auto type = [&](std::vector<tensor_ir::Expr> shape) {
    return relay_ir::tensor_type(relay_ir::Shape(shape), s.dtype);
  };
  r.output_types.push_back(s.layout_batch_first ? type({s.batch, steps, D, H}) : type({steps, D, s.batch, H}));
  for (int i = 0; i < (s.cell == Cell::Lstm ? 2 : 1); ++i)
    r.output_types.push_back(s.layout_batch_first ? type({s.batch, D, H}) : type({D, s.batch, H}));
  return r;
}

std::vector<Expr> convert(ConvertContext& c, Cell cell) {
  std::vector<const char*> known = {"activation_alpha", "activation_beta", "activations", "clip",
                                    "direction",        "hidden_size",     "layout",      "output_sequence"};
  if (cell == Cell::Gru) known.push_back("linear_before_reset");
  if (cell == Cell::Lstm) known.push_back("input_forget");
  known.push_back(kProjectedInput);
  for (const auto& a : c.node().attribute())
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return a.name() == k; }))
      c.error("unsupported attribute: " + a.name());
  Spec s;
  s.cell = cell;
  s.gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  std::string direction = c.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.error("direction must be forward, reverse or bidirectional, got '" + direction + "'");
  s.directions = direction == "bidirectional" ? 2 : 1;
  s.hidden = c.attr_int("hidden_size", -1);
  int64_t layout = c.attr_int("layout", 0);
  if (layout != 0 && layout != 1) c.error("layout must be 0 or 1, got " + std::to_string(layout));
  s.layout_batch_first = layout == 1;
  s.linear_before_reset = c.attr_int("linear_before_reset", 0) != 0;
  s.input_forget = c.attr_int("input_forget", 0) != 0;
  if (c.has_attr("clip")) {
    s.clip = c.attr_float("clip", 0);
    if (!(*s.clip > 0)) c.error("clip must be positive, got " + std::to_string(*s.clip));
  }
  s.activations = activations(c, cell, s.directions);

  const auto& x = c.input_type(0);
  if (!x.dtype.is_float()) c.error("X must be float16, float32 or float64, got " + x.dtype.str());
  if (x.ndim() != 3) c.error("X must be 3-D, got shape " + x.shape.str());
  s.dtype = x.dtype;
  const size_t time_axis = layout == 0 ? 0 : 1;
  s.batch = x.shape.dim(1 - time_axis);
  // X holds the input projections already (a Scan's step: recurrence_scan.h); W is not applied.
  const bool projected = c.attr_int(kProjectedInput, 0) != 0;
  const auto& w = c.input_type(1);
  if (!projected && w.ndim() == 3 && w.shape.is_static(2))
    tensor_ir::require_constant_dim(x.shape.dim(2), w.shape[2],
                                    "the input size of X " + x.shape.str() + " must be " + std::to_string(w.shape[2]) +
                                        ", as W " + w.shape.str() + " says");
  const int64_t input_size = projected ? w.shape[2] : x.shape[2], D = s.directions;
  const tensor_ir::Expr B = s.batch;
  if (s.hidden < 0 && w.ndim() == 3) s.hidden = w.shape[1] / s.gates;  // hidden_size is optional in opset 1
  int64_t H = s.hidden, G = s.gates;
  if (H < 1) c.error("hidden_size must be positive, got " + std::to_string(H));
  typed(c, 1, "W", {D, G * H, input_size}, s.dtype);
  if (projected && (!x.shape.is_static(0) || x.shape[0] != D || x.shape[2] != G * H || layout != 0))
    c.error("X of projected inputs must be [" + std::to_string(D) + ", batch, " + std::to_string(G * H) +
            "] in layout 0, got " + x.shape.str());
  typed(c, 2, "R", {D, G * H, H}, s.dtype);
  if (c.has_input(3)) typed(c, 3, "B", {D, 2 * G * H}, s.dtype);
  const relay_ir::Shape state_shape = s.layout_batch_first ? dims({B, D, H}) : dims({D, B, H});
  if (c.has_input(5)) typed(c, 5, "initial_h", state_shape, s.dtype);
  if (cell == Cell::Lstm && c.has_input(6)) typed(c, 6, "initial_c", state_shape, s.dtype);
  if (cell == Cell::Lstm && c.has_input(7)) typed(c, 7, "P", {D, 3 * H}, s.dtype);
  if (c.has_input(4)) {
    const auto& l = c.input_type(4);
    if (!l.dtype.is_integer() || l.shape != dims({B}))
      c.error("sequence_lens must be int32" + dims({B}).str() + ", got " + l.dtype.str() + l.shape.str());
  }
  if (!x.shape.is_static(time_axis)) throw symbolic_recurrence(c, s, x.shape.dim(time_axis));
  s.steps = projected ? 1 : x.shape[time_axis];
  const int64_t S = s.steps;
  if (S < 1) c.error("the sequence must not be empty, got X of shape " + x.shape.str());

  Unroller u(c, s);
  // Sequence lengths: none, all full (ignored), or per batch entry (masking).
  std::optional<Expr> lengths;
  if (c.has_input(4)) {
    u.set_lengths_dtype(c.input_type(4).dtype);
    bool full = false;
    if (auto v = c.try_constant_input(4)) {  // else masked at run time: not a value input
      full = true;
      for (int64_t i = 0; i < v->numel(); ++i) {
        const auto n = static_cast<int64_t>(runtime::element_as_double(*v, i));
        if (n < 0 || n > S)
          c.error("sequence_lens holds " + std::to_string(n) + ", outside [0, " + std::to_string(S) + "]");
        full = full && n == S;
      }
    }
    if (!full) lengths = c.input(4);
  }

  Expr xs = s.layout_batch_first ? u.transpose(c.input(0), {1, 0, 2}) : c.input(0);  // [S, B, I]
  // The weights of direction d as the recurrence reads them: the recurrent weights transposed
  // ([H, G * H]), the biases of the input projections ([G * H]), and rb_h and the peephole weights
  // with a leading 1 ([1, H], [1, 3 * H]).
  struct DirectionWeights {
    Expr r_t;
    std::optional<Expr> bias, rb_h, peephole;
  };
  auto weights_of = [&](int64_t d) {
    DirectionWeights in;
    in.r_t = u.transpose(u.pick(c.input(2), 0, d), {1, 0});
    if (c.has_input(3)) {
      Expr b = u.pick(c.input(3), 0, d), wb = u.slice(b, 0, 0, G * H), rb = u.slice(b, 0, G * H, 2 * G * H);
      if (cell == Cell::Gru && s.linear_before_reset) {
        // The recurrent bias of the candidate gate is added before the reset gate multiplies.
        in.rb_h = u.op("expand_dims", {u.slice(rb, 0, 2 * H, 3 * H)}, {{"axes", Ints{0}}});
        in.bias =
            u.op("add", {wb, u.op("concat", {u.slice(rb, 0, 0, 2 * H), u.zeros(Ints{H})}, {{"axis", int64_t{0}}})});
      } else {
        in.bias = u.op("add", {wb, rb});
      }
    }
    if (cell == Cell::Lstm && c.has_input(7))
      in.peephole = u.op("expand_dims", {u.pick(c.input(7), 0, d)}, {{"axes", Ints{0}}});
    return in;
  };
  // Initial states of every direction, [D, B, H].
  auto initial = [&](size_t input) {
    if (!c.has_input(input)) return u.zeros(dims({D, B, H}));
    return s.layout_batch_first ? u.transpose(c.input(input), {1, 0, 2}) : c.input(input);
  };
  Expr y_all, h_all, c_all;  // [S, D, B, H], [D, B, H], [D, B, H]
  const Expr h0 = initial(5), c0 = cell == Cell::Lstm ? initial(6) : Expr();
  if (projected && D == 2) {
    // A Scan's step of both directions (recurrence_scan.h) at once: one batched product of the
    // two directions' states by their weights, one cell.
    if (!same_activations(s)) c.error("projected inputs of both directions need the same activations in both");
    const DirectionWeights f = weights_of(0), r = weights_of(1);
    auto both = [&](const std::optional<Expr>& a, const std::optional<Expr>& b) {
      return a ? std::optional<Expr>(u.stack({*a, *b}, 0)) : std::nullopt;
    };
    Expr x = xs;  // [2, B, G * H]
    if (f.bias) x = u.op("add", {x, u.op("expand_dims", {*both(f.bias, r.bias)}, {{"axes", Ints{1}}})});
    auto run = u.run(u.activations_of(0), 2, {x}, u.stack({f.r_t, r.r_t}, 0), both(f.rb_h, r.rb_h), h0, c0,
                     both(f.peephole, r.peephole), lengths);
    y_all = u.op("expand_dims", {run.outputs[0]}, {{"axes", Ints{0}}});
    h_all = run.h;
    c_all = run.cell;
  } else {
    std::vector<Expr> y_dirs, h_dirs, c_dirs;
    for (int64_t d = 0; d < D; ++d) {
      const bool reverse = direction == "reverse" || d == 1;
      const DirectionWeights in = weights_of(d);
      Expr seq = xs;
      if (reverse && lengths)
        seq = u.op("reverse_sequence", {xs, *lengths}, {{"batch_axis", int64_t{1}}, {"time_axis", int64_t{0}}});
      Expr proj =
          projected ? seq : u.op("matmul", {seq, u.transpose(u.pick(c.input(1), 0, d), {1, 0})});  // [S, B, G * H]
      if (in.bias) proj = u.op("add", {proj, *in.bias});
      Expr parts = S == 1 ? Expr() : u.op("split", {proj}, {{"axis", int64_t{0}}, {"sizes", Ints(S, 1)}});
      std::vector<Expr> steps;
      for (int64_t t = 0; t < S; ++t) {
        // Without lengths the reverse direction reads the steps backwards; with them the
        // sequence was already reversed per batch entry.
        int64_t at = reverse && !lengths ? S - 1 - t : t;
        Expr step = S == 1 ? proj : relay_ir::tuple_get(parts, at);
        steps.push_back(u.op("squeeze", {step}, {{"axes", Ints{0}}}));
      }
      auto run = u.run(u.activations_of(d), 1, steps, in.r_t, in.rb_h, u.pick(h0, 0, d),
                       c0.defined() ? u.pick(c0, 0, d) : Expr(), in.peephole, lengths);
      if (reverse && !lengths) std::reverse(run.outputs.begin(), run.outputs.end());
      Expr y = u.stack(run.outputs, 0);  // [S, B, H]
      if (reverse && lengths)
        y = u.op("reverse_sequence", {y, *lengths}, {{"batch_axis", int64_t{1}}, {"time_axis", int64_t{0}}});
      y_dirs.push_back(y);
      h_dirs.push_back(run.h);
      c_dirs.push_back(run.cell);
    }
    y_all = u.stack(y_dirs, 1);
    h_all = u.stack(h_dirs, 0);
    if (c0.defined()) c_all = u.stack(c_dirs, 0);
  }
  auto wants = [&](int i) { return c.node().output_size() > i && !c.node().output(i).empty(); };
  std::vector<Expr> out(c.node().output_size());
  if (wants(0)) out[0] = u.finish(s.layout_batch_first ? u.transpose(y_all, {2, 0, 1, 3}) : y_all);
  auto final_state = [&](const Expr& st) { return u.finish(s.layout_batch_first ? u.transpose(st, {1, 0, 2}) : st); };
  if (wants(1)) out[1] = final_state(h_all);
  if (cell == Cell::Lstm && wants(2)) out[2] = final_state(c_all);
  return out;
}

}  // namespace

void register_extra_rnn_converters(ConverterTable& t) {
  t.add("RNN", [](ConvertContext& c) { return convert(c, Cell::Rnn); });
  t.add("GRU", [](ConvertContext& c) { return convert(c, Cell::Gru); });
  t.add("LSTM", [](ConvertContext& c) { return convert(c, Cell::Lstm); });
}

}  // namespace tessera::frontend::onnx
