#include "frontend/onnx/dim_values.h"

#include <algorithm>

#include "frontend/onnx/converter.h"
#include "frontend/onnx/ops_transform.h"
#include "frontend/onnx/tensor_proto.h"
#include "runtime/element.h"
#include "runtime/error.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/transform_shape.h"
#include "tensor_ir/printer.h"

namespace tessera::frontend::onnx {

using tensor_ir::Expr;
using tensor_ir::arith::BoundMap;

DimValue DimValue::vector(std::vector<Expr> elements, runtime::DataType dtype) {
  const auto n = static_cast<int64_t>(elements.size());
  return {std::move(elements), {n}, dtype};
}

DimValue DimValue::scalar_of(Expr element, runtime::DataType dtype) { return {{std::move(element)}, {}, dtype}; }

bool DimValue::is_constant() const {
  return std::all_of(elements.begin(), elements.end(), [](const Expr& e) { return tensor_ir::as_const_int(e); });
}

runtime::NDArray DimValue::constant() const {
  runtime::NDArray a = runtime::NDArray::empty(shape, dtype);
  for (size_t i = 0; i < elements.size(); ++i) {
    const int64_t* v = tensor_ir::as_const_int(elements[i]);
    if (!v) fail("internal error: the shape value ", str(), " is not constant");
    runtime::store_element(a, static_cast<int64_t>(i), static_cast<double>(*v));
  }
  return a;
}

std::string DimValue::str() const {
  if (scalar()) return tensor_ir::to_string(elements.at(0));
  const int64_t inner = static_cast<int64_t>(elements.size()) / std::max<int64_t>(shape[0], 1);
  std::string s = "[";
  for (int64_t i = 0; i < shape[0]; ++i) {
    std::vector<Expr> part(elements.begin() + i * inner, elements.begin() + (i + 1) * inner);
    DimValue row{part, std::vector<int64_t>(shape.begin() + 1, shape.end()), dtype};
    s += (i ? ", " : "") + row.str();
  }
  return s + "]";
}

relay_ir::Attrs shape_values_attrs(const DimValue& value, const std::string& name) {
  if (!value.dtype.is_integer() || value.shape.size() > 1)
    fail("'", name, "' is the ", value.dtype.str(), " value ", value.str(),
         " of symbolic sizes, which is only known at run time; an operator computes with it as a tensor");
  return {{"dims", relay_ir::Shape(value.elements)}, {"dtype", value.dtype.str()}, {"scalar", int64_t{value.scalar()}}};
}

DimValue shape_value(const relay_ir::Shape& shape, int64_t start, int64_t end) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  auto clamp = [&](int64_t d) { return std::clamp<int64_t>(d < 0 ? d + rank : d, 0, rank); };
  std::vector<Expr> dims;
  for (int64_t d = clamp(start); d < clamp(end); ++d) dims.push_back(shape.dim(d));
  return DimValue::vector(dims);
}

namespace {

// One node's evaluation: its operands as DimValues, its errors naming it.
class DimEvaluator {
 public:
  DimEvaluator(const ::onnx::NodeProto& node, int opset, const std::vector<DimOperand>& operands,
               const BoundMap& bounds)
      : node_(node), opset_(opset), operands_(operands), bounds_(bounds) {}

  std::optional<std::vector<DimValue>> run() {
    const std::string& op = node_.op_type();
    if (op == "Identity") return one(operand(0));
    if (op == "Cast") return cast();
    if (op == "Gather") return gather();
    if (op == "Unsqueeze") return unsqueeze();
    if (op == "Squeeze") return squeeze();
    if (op == "Concat") return concat();
    if (op == "Slice") return slice();
    if (op == "Reshape") return reshape();
    if (op == "Transpose") return transpose();
    if (op == "Shape") return shape();
    if (op == "Size") return one(DimValue::scalar_of(Expr(int64_t(operand(0).elements.size()))));
    if (op == "Neg") return unary([](const Expr& a) { return -a; });
    if (op == "Abs") return unary([this](const Expr& a) { return provably(a >= Expr(int64_t{0})) ? a : undecided(a); });
    if (op == "Add") return binary([](const Expr& a, const Expr& b) { return a + b; });
    if (op == "Sub") return binary([](const Expr& a, const Expr& b) { return a - b; });
    if (op == "Mul") return binary([](const Expr& a, const Expr& b) { return a * b; });
    if (op == "Div") return binary([this](const Expr& a, const Expr& b) { return divide(a, b, false); });
    if (op == "Mod") return binary([this](const Expr& a, const Expr& b) { return divide(a, b, true); });
    if (op == "Min") return binary([](const Expr& a, const Expr& b) { return tensor_ir::min(a, b); });
    if (op == "Max") return binary([](const Expr& a, const Expr& b) { return tensor_ir::max(a, b); });
    if (op == "Equal") return compare([](const Expr& a, const Expr& b) { return a == b; });
    if (op == "Less") return compare([](const Expr& a, const Expr& b) { return a < b; });
    if (op == "Greater") return compare([](const Expr& a, const Expr& b) { return a > b; });
    if (op == "Where") return where();
    return std::nullopt;
  }

 private:
  [[noreturn]] void error(const std::string& message) const { fail(node_description(node_, opset_), ": ", message); }

  static std::vector<DimValue> one(DimValue v) { return {std::move(v)}; }

  Expr simplified(const Expr& e) const { return tensor_ir::arith::simplify(e, bounds_); }
  bool provably(const Expr& condition) const { return tensor_ir::arith::can_prove(condition, bounds_); }
  [[noreturn]] Expr undecided(const Expr& e) const {
    error("the sign of " + tensor_ir::to_string(e) + " depends on the sizes");
  }

  const ::onnx::AttributeProto* attr(const std::string& name) const {
    for (const auto& a : node_.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int64_t attr_int(const std::string& name, int64_t fallback) const {
    const auto* a = attr(name);
    return a ? a->i() : fallback;
  }

  bool has_operand(size_t i) const { return i < operands_.size() && (operands_[i].dims || operands_[i].constant); }

  // Operand i as a DimValue; a constant must be an integer or bool array.
  DimValue operand(size_t i) const {
    if (!has_operand(i)) error("missing input " + std::to_string(i));
    if (operands_[i].dims) return *operands_[i].dims;
    const runtime::NDArray& a = *operands_[i].constant;
    if (!(a.dtype().is_integer() || a.dtype() == runtime::kBool))
      error("computes with a shape value of symbolic sizes and a " + a.dtype().str() + " tensor of shape " +
            a.shape_str() + ", which only integer tensors can join");
    DimValue v{{}, a.shape(), a.dtype()};
    for (int64_t k = 0; k < a.numel(); ++k)
      v.elements.push_back(Expr(runtime::integer_value(a, k)));  // exactly: INT64_MAX ends a slice
    return v;
  }

  // Operand i's elements as integers (indices, axes): they must not depend on the sizes.
  std::vector<int64_t> ints(size_t i, const std::string& what) const {
    std::vector<int64_t> out;
    for (const Expr& e : operand(i).elements) {
      const int64_t* v = tensor_ir::as_const_int(e);
      if (!v) error(what + " " + operand(i).str() + " depends on symbolic sizes");
      out.push_back(*v);
    }
    return out;
  }

  std::optional<std::vector<DimValue>> cast() {
    DimValue v = operand(0);
    const auto* to = attr("to");
    if (!to) error("missing attribute 'to'");
    runtime::DataType t = dtype_from_onnx(static_cast<int>(to->i()), node_description(node_, opset_) + " to");
    if (!t.is_integer()) return std::nullopt;  // a size computed with as a float: refused by the caller
    v.dtype = t;
    return one(v);
  }

  // Operand i, which must be a scalar or a vector for `what`.
  DimValue at_most_1d(size_t i, const std::string& what) const {
    DimValue v = operand(i);
    if (v.shape.size() > 1) error(what + " the shape value " + v.str() + " of rank " + std::to_string(v.shape.size()));
    return v;
  }

  // The shape of a shape value.
  std::optional<std::vector<DimValue>> shape() {
    const relay_ir::Shape shape(operand(0).shape);
    return one(shape_value(shape, attr_int("start", 0), attr_int("end", static_cast<int64_t>(shape.size()))));
  }

  std::optional<std::vector<DimValue>> gather() {
    DimValue data = at_most_1d(0, "gathers from");
    if (data.scalar()) error("gathers from a scalar");
    if (attr_int("axis", 0) != 0 && attr_int("axis", 0) != -1) error("axis must be 0 for a 1-D shape value");
    const int64_t n = static_cast<int64_t>(data.elements.size());
    DimValue out{{}, operand(1).shape, data.dtype};
    for (int64_t i : ints(1, "the indices")) {
      if (i < -n || i >= n) error("index " + std::to_string(i) + " is out of range for " + data.str());
      out.elements.push_back(data.elements[i < 0 ? i + n : i]);
    }
    return one(out);
  }

  std::vector<int64_t> axes_operand(size_t input) const {
    if (opset_ < 13) {
      const auto* a = attr("axes");
      return a ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : std::vector<int64_t>{};
    }
    return has_operand(input) ? ints(input, "the axes") : std::vector<int64_t>{};
  }

  std::optional<std::vector<DimValue>> unsqueeze() {
    DimValue v = operand(0);
    const std::vector<int64_t> axes = axes_operand(1);
    if (!v.scalar() || axes.size() != 1 || (axes[0] != 0 && axes[0] != -1))
      error("only a scalar shape value unsqueezes (to one element) when sizes are symbolic");
    v.shape = {1};
    return one(v);
  }

  std::optional<std::vector<DimValue>> squeeze() {
    DimValue v = operand(0);
    const std::vector<int64_t> axes = axes_operand(1);
    if (v.shape != std::vector<int64_t>{1} || axes.size() > 1 || (axes.size() == 1 && axes[0] != 0 && axes[0] != -1))
      error("only a one-element shape value squeezes (to a scalar) when sizes are symbolic");
    v.shape = {};
    return one(v);
  }

  std::optional<std::vector<DimValue>> concat() {
    std::vector<Expr> elements;
    for (size_t i = 0; i < operands_.size(); ++i) {
      DimValue v = at_most_1d(i, "concatenates");
      if (v.scalar()) error("concatenates a scalar");
      elements.insert(elements.end(), v.elements.begin(), v.elements.end());
    }
    return one(DimValue::vector(elements, operand(0).dtype));
  }

  std::optional<std::vector<DimValue>> slice() {
    if (opset_ < 10) return std::nullopt;
    DimValue data = operand(0);
    if (data.scalar()) error("slices a scalar");
    const std::vector<int64_t> starts = ints(1, "starts"), ends = ints(2, "ends");
    const std::vector<int64_t> axes = has_operand(3) ? ints(3, "axes") : std::vector<int64_t>{};
    const std::vector<int64_t> steps = has_operand(4) ? ints(4, "steps") : std::vector<int64_t>{};
    // ONNX Slice's clamping, as tensors slice.
    std::vector<tensor_ir::ops::SliceDim> dims;
    try {
      dims = tensor_ir::ops::slice_dims(data.shape, starts, ends, axes, steps);
    } catch (const Error& e) {
      error(e.what());
    }
    DimValue out{{}, {}, data.dtype};
    for (const auto& d : dims) out.shape.push_back(d.length);
    for_each_index(out.shape, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> in(o.size());
      for (size_t d = 0; d < o.size(); ++d) in[d] = dims[d].start + o[d] * dims[d].step;
      out.elements.push_back(data.elements[flat(data.shape, in)]);
    });
    return one(out);
  }

  // Reshape to a constant target, as tensors reshape.
  std::optional<std::vector<DimValue>> reshape() {
    DimValue v = operand(0);
    const ConvertContext c(node_, opset_, {}, {}, "", {});
    std::vector<int64_t> target =
        reshape_target(c, v.shape, ints(1, "the target shape"), attr_int("allowzero", 0) != 0);
    if (tensor_ir::ops::numel(target) != static_cast<int64_t>(v.elements.size()))
      error("cannot reshape the shape value " + v.str() + " to " + runtime::shape_str(target));
    v.shape = target;
    return one(v);
  }

  std::optional<std::vector<DimValue>> transpose() {
    DimValue v = operand(0);
    std::vector<int64_t> perm;
    if (const auto* a = attr("perm")) perm.assign(a->ints().begin(), a->ints().end());
    try {
      perm = tensor_ir::ops::transpose_perm(perm, static_cast<int64_t>(v.shape.size()));
    } catch (const Error& e) {
      error(e.what());
    }
    DimValue out{{}, {}, v.dtype};
    for (int64_t p : perm) out.shape.push_back(v.shape[p]);
    for_each_index(out.shape, [&](const std::vector<int64_t>& o) {
      std::vector<int64_t> in(o.size());
      for (size_t d = 0; d < o.size(); ++d) in[perm[d]] = o[d];
      out.elements.push_back(v.elements[flat(v.shape, in)]);
    });
    return one(out);
  }

  static int64_t flat(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
    int64_t f = 0;
    for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + index[d];
    return f;
  }

  // Calls f with every index of `shape`, in row-major order.
  template <typename F>
  static void for_each_index(const std::vector<int64_t>& shape, F f) {
    for (int64_t d : shape)
      if (d == 0) return;
    std::vector<int64_t> index(shape.size(), 0);
    for (;;) {
      f(index);
      size_t d = shape.size();
      while (d > 0 && ++index[d - 1] == shape[d - 1]) index[--d] = 0;
      if (d == 0) return;
    }
  }

  // Elementwise with ONNX broadcasting of rank-0 and rank-1 operands.
  template <typename F>
  DimValue elementwise(const DimValue& a, const DimValue& b, F f, runtime::DataType dtype) const {
    const size_t n = std::max(a.elements.size(), b.elements.size());
    for (const DimValue* v : {&a, &b})
      if ((v->elements.size() != n && v->elements.size() != 1) || v->shape.size() > 1)
        error("the shape values " + a.str() + " and " + b.str() + " do not broadcast");
    DimValue out{{}, a.scalar() && b.scalar() ? std::vector<int64_t>{} : std::vector<int64_t>{int64_t(n)}, dtype};
    for (size_t i = 0; i < n; ++i)
      out.elements.push_back(
          simplified(f(a.elements[a.elements.size() == 1 ? 0 : i], b.elements[b.elements.size() == 1 ? 0 : i])));
    return out;
  }

  template <typename F>
  std::optional<std::vector<DimValue>> unary(F f) {
    DimValue v = operand(0);
    for (Expr& e : v.elements) e = simplified(f(e));
    return one(v);
  }

  template <typename F>
  std::optional<std::vector<DimValue>> binary(F f) {
    return one(elementwise(operand(0), operand(1), f, operand(0).dtype));
  }

  // A comparison's result must be decided by what is known of the sizes.
  template <typename F>
  std::optional<std::vector<DimValue>> compare(F f) {
    DimValue out = elementwise(operand(0), operand(1), f, runtime::kBool);
    for (Expr& e : out.elements) {
      if (provably(e)) e = Expr(int64_t{1});
      else if (provably(tensor_ir::logical_not(e))) e = Expr(int64_t{0});
      else error("the comparison " + tensor_ir::to_string(e) + " depends on the sizes");
    }
    return one(out);
  }

  // Integer division and remainder truncate towards zero (ONNX, as C); on non-negative operands
  // that is floor division, which the simplifier knows.
  Expr divide(const Expr& a, const Expr& b, bool remainder) const {
    const int64_t *x = tensor_ir::as_const_int(a), *y = tensor_ir::as_const_int(b);
    if (y && *y == 0) error("divides by zero");
    if (x && y) return Expr(remainder ? *x % *y : *x / *y);
    if (!provably(a >= Expr(int64_t{0})) || !provably(b > Expr(int64_t{0})))
      error("divides " + tensor_ir::to_string(a) + " by " + tensor_ir::to_string(b) +
            ", whose signs the sizes do not decide");
    return remainder ? tensor_ir::floormod(a, b) : tensor_ir::floordiv(a, b);
  }

  std::optional<std::vector<DimValue>> where() {
    DimValue cond = operand(0), a = operand(1), b = operand(2);
    for (const Expr& e : cond.elements)
      if (!tensor_ir::as_const_int(e)) error("the condition " + cond.str() + " depends on the sizes");
    DimValue picked = elementwise(
        a, b, [](const Expr& x, const Expr&) { return x; }, a.dtype);
    DimValue other = elementwise(
        a, b, [](const Expr&, const Expr& y) { return y; }, a.dtype);
    if (cond.elements.size() != picked.elements.size() && cond.elements.size() != 1)
      error("the condition " + cond.str() + " does not broadcast against " + picked.str());
    for (size_t i = 0; i < picked.elements.size(); ++i)
      if (*tensor_ir::as_const_int(cond.elements[cond.elements.size() == 1 ? 0 : i]) == 0)
        picked.elements[i] = other.elements[i];
    if (cond.shape.size() > 1) error("the condition " + cond.str() + " is not a scalar or a vector");
    if (!cond.scalar()) picked.shape = {static_cast<int64_t>(picked.elements.size())};
    return one(picked);
  }

  const ::onnx::NodeProto& node_;
  int opset_;
  const std::vector<DimOperand>& operands_;
  const BoundMap& bounds_;
};

}  // namespace

std::optional<std::vector<DimValue>> evaluate_dim_node(const ::onnx::NodeProto& node, int opset,
                                                       const std::vector<DimOperand>& operands,
                                                       const BoundMap& dim_bounds) {
  if (!node.domain().empty() && node.domain() != "ai.onnx") return std::nullopt;
  return DimEvaluator(node, opset, operands, dim_bounds).run();
}

}  // namespace tessera::frontend::onnx
