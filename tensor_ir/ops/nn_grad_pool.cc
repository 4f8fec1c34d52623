// Backward passes of pooling as gathers (each input position visits the few windows covering
// it), never scatters. Along a dimension, position i is covered by the windows
// o = (i + pad) / stride - r for r < ceil(window / stride) whose kernel position
// (i + pad - o * stride) / dilation is whole and inside the kernel. With a stride along the last
// dimension, consecutive positions would read windows at a stride (gathers), so the gather runs
// per stride phase (tag "pool_grad_phases"): positions j * stride + phase - pad, for a fixed
// phase, read consecutive windows j - r, whose kernel positions phase + r * stride are constants;
// the output (tag "pool_grad") interleaves the phases. Max pooling first finds each window's
// first maximum (tag "pool_grad_argmax", its kernel position row-major) in a copy of the input
// padded with NaN (never equal to a maximum) and split by phase along the last dimension (tag
// "pool_grad_pad"), so a window's positions are contiguous there too.
#include <algorithm>
#include <cmath>
#include <limits>

#include "runtime/error.h"
#include "tensor_ir/ops/nn_grad.h"
#include "tensor_ir/ops/nn_util.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The candidate windows covering a position, accumulated over the spatial dimensions.
struct Cover {
  std::vector<IterVar> axes;  // one loop over the candidates per spatial dimension
  std::vector<Expr> window;   // the candidate window, per dimension
  Expr kernel_pos = Expr(0);  // the kernel position holding the input, row-major over the kernel
  Expr valid = const_true();  // whether the candidate covers the position
};

// Adds dimension d: `e` is (position + pad) / stride, or the window the last candidate can be;
// `phase` (position + pad) % stride. With `clamp`, candidates start at the last window (few
// windows: global pooling) and are clamped into the output.
void cover_dim(Cover& c, size_t d, const Expr& e, const Expr& phase, const std::vector<int64_t>& out,
               const PoolGeometry& g, bool clamp) {
  int64_t s = g.strides[d], dil = g.dilations[d], o_n = out[2 + d];
  int64_t span = (g.kernel[d] - 1) * dil + 1;
  int64_t candidates = clamp ? std::min(o_n, ceil_div(span, s)) : ceil_div(span, s);
  IterVar r = reduce_axis(Range(Expr(0), Expr(candidates)), "r" + std::to_string(d));
  Expr o = (clamp ? min(e, Expr(o_n - 1)) : e) - r;
  Expr at = clamp ? (e * Expr(s) + phase) - o * Expr(s) : phase + r * Expr(s);  // the position within the window's span
  Expr k = dil == 1 ? at : floordiv(at, Expr(dil));
  Expr ok = logical_and(logical_and(o >= Expr(0), o < Expr(o_n)), at < Expr(span));
  if (dil > 1) ok = logical_and(ok, floormod(at, Expr(dil)) == Expr(0));
  c.valid = logical_and(c.valid, ok);
  c.axes.push_back(r);
  c.window.push_back(clamp ? max(o, Expr(0)) : o);  // unclamped reads are masked by `valid` (lazy select)
  c.kernel_pos = c.kernel_pos * Expr(g.kernel[d]) + k;
}

// The gradient of a pooling over an input of shape `in` with output shape `out`: at each
// position the sum over the covering windows of value(window index, kernel position), in the
// accumulation type, cast to `dtype`.
using WindowValue = std::function<Expr(const std::vector<Expr>& window, const Expr& kernel_pos)>;

Tensor gather_windows(const std::vector<int64_t>& in, const std::vector<int64_t>& out, const PoolGeometry& g,
                      DataType dtype, const WindowValue& value, const std::string& name, const Registers& regs) {
  DataType acc = accumulation_type(dtype);
  size_t rank = g.kernel.size(), last = rank - 1;
  int64_t s = g.strides[last], pad = g.pads[last];
  int64_t span = (g.kernel[last] - 1) * g.dilations[last] + 1;
  bool few = out.back() < ceil_div(span, s);  // few windows along the last dimension: clamp, no phases
  bool phased = s > 1 && !few;
  std::vector<int64_t> shape(in.begin(), in.end() - 1);
  std::vector<std::string> names = nc_axis_names(in.size());
  names.pop_back();
  if (phased) shape.push_back(s), names.push_back("phase");
  // The phases' rows are padded to whole vectors: a scalar tail of this gather costs more than
  // the lanes it wastes.
  int64_t lanes = regs.lanes(acc), rows = ceil_div(in.back() + pad, s);
  shape.push_back(phased ? (rows > lanes ? ceil_div(rows, lanes) * lanes : rows) : in.back());
  names.push_back(phased ? "j" : "w");
  bool direct = !phased && acc == dtype;
  Tensor total = compute(
      shape_exprs(shape),
      [&](const std::vector<Var>& v) {
        Cover c;
        for (size_t d = 0; d < last; ++d) {
          Expr shifted = v[2 + d] + Expr(g.pads[d]);
          cover_dim(c, d, floordiv(shifted, Expr(g.strides[d])), floormod(shifted, Expr(g.strides[d])), out, g, true);
        }
        if (phased) {
          cover_dim(c, last, v.back(), v[v.size() - 2], out, g, false);
        } else {
          Expr shifted = v.back() + Expr(pad);
          cover_dim(c, last, s == 1 ? shifted : floordiv(shifted, Expr(s)),
                    s == 1 ? Expr(0) : floormod(shifted, Expr(s)), out, g, few);
        }
        std::vector<Expr> w{v[0], v[1]};
        w.insert(w.end(), c.window.begin(), c.window.end());
        return sum(select(c.valid, cast(acc, value(w, c.kernel_pos)), make_zero(acc)), c.axes);
      },
      direct ? name : name + "_phases", direct ? "pool_grad" : "pool_grad_phases", names);
  if (direct) return total;
  return compute(
      shape_exprs(in),
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx(i.begin(), i.end() - 1);
        if (phased) {
          Expr shifted = i.back() + Expr(pad);
          idx.push_back(floormod(shifted, Expr(s)));
          idx.push_back(floordiv(shifted, Expr(s)));
        } else {
          idx.push_back(i.back());
        }
        return cast(dtype, total(idx));
      },
      name, "pool_grad", nc_axis_names(in.size()));
}

void check_pooled(const std::string& op, const char* what, const std::vector<int64_t>& shape,
                  const std::vector<int64_t>& pooled) {
  if (shape != pooled)
    fail(op, ": ", what, " ", runtime::shape_str(shape), " must have the pooled shape ", runtime::shape_str(pooled));
}

}  // namespace

Tensor max_pool_grad(const Tensor& x, const Tensor& y, const Tensor& dy, const PoolGeometry& g, const Registers& regs) {
  std::vector<int64_t> in = x->dims(), out = pool_shape(in, g);
  check_pooled("max_pool_grad", "y", y->dims(), out);
  check_pooled("max_pool_grad", "dy", dy->dims(), out);
  size_t rank = g.kernel.size(), last = rank - 1;
  // The padded input: every window position in range, the last dimension split by phase.
  int64_t s = g.strides[last];
  std::vector<int64_t> pshape{in[0], in[1]};
  for (size_t d = 0; d < last; ++d)
    pshape.push_back((out[2 + d] - 1) * g.strides[d] + (g.kernel[d] - 1) * g.dilations[d] + 1);
  pshape.push_back(s);
  pshape.push_back(out.back() + (g.kernel[last] - 1) * g.dilations[last] / s);
  std::vector<std::string> pnames = nc_axis_names(rank + 2);
  pnames.push_back("q");
  Expr nan = make_const(x.dtype(), std::numeric_limits<double>::quiet_NaN());
  Tensor padded = compute(
      shape_exprs(pshape),
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx{v[0], v[1]};
        Expr inside = const_true();
        for (size_t d = 0; d < rank; ++d) {
          Expr at = d < last ? v[2 + d] - Expr(g.pads[d]) : v.back() * Expr(s) + v[2 + last] - Expr(g.pads[d]);
          inside = logical_and(inside, logical_and(at >= Expr(0), at < Expr(in[2 + d])));
          idx.push_back(at);
        }
        return select(inside, x(idx), nan);  // lazy: nothing is read outside
      },
      "max_pool_grad_input", "pool_grad_pad", pnames);
  Tensor first = compute(
      shape_exprs(out),
      [&](const std::vector<Var>& o) {
        std::vector<IterVar> axes;
        std::vector<Expr> idx{o[0], o[1]};
        Expr pos = Expr(0);
        for (size_t d = 0; d < rank; ++d) {
          IterVar k = reduce_axis(Range(Expr(0), Expr(g.kernel[d])), "k" + std::to_string(d));
          Expr at = k * Expr(g.dilations[d]);
          if (d < last) {
            idx.push_back(o[2 + d] * Expr(g.strides[d]) + at);
          } else {
            idx.push_back(s == 1 ? Expr(0) : floormod(at, Expr(s)));
            idx.push_back(o[2 + d] + (s == 1 ? at : floordiv(at, Expr(s))));
          }
          axes.push_back(k);
          pos = pos * Expr(g.kernel[d]) + k;
        }
        Expr none = make_const(runtime::kInt32, std::numeric_limits<int32_t>::max());
        return min_reduce(select(padded(idx) == y(as_exprs(o)), cast(runtime::kInt32, pos), none), axes);
      },
      "max_pool_grad_argmax", "pool_grad_argmax", nc_axis_names(out.size()));
  return gather_windows(
      in, out, g, dy.dtype(),
      [&](const std::vector<Expr>& w, const Expr& kernel_pos) {
        return select(first(w) == cast(runtime::kInt32, kernel_pos), dy(w), make_zero(dy.dtype()));
      },
      "max_pool_grad", regs);
}

Tensor window_sum_grad(const Tensor& v, const std::vector<int64_t>& input_shape, const PoolGeometry& g,
                       const Registers& regs) {
  std::vector<int64_t> out = pool_shape(input_shape, g);
  check_pooled("window_sum_grad", "v", v->dims(), out);
  return gather_windows(
      input_shape, out, g, v.dtype(), [&](const std::vector<Expr>& w, const Expr&) { return v(w); }, "window_sum_grad",
      regs);
}

std::vector<double> pool_window_counts(const std::vector<int64_t>& input_shape, const PoolGeometry& g,
                                       bool count_include_pad) {
  std::vector<int64_t> out = pool_shape(input_shape, g);
  size_t rank = g.kernel.size();
  std::vector<int64_t> spatial(out.begin() + 2, out.end());
  int64_t total = 1;
  for (int64_t o : spatial) total *= o;
  std::vector<double> counts(total, 1.0);
  for (int64_t flat = 0; flat < total; ++flat) {
    int64_t rest = flat;
    for (size_t d = rank; d-- > 0;) {
      int64_t o = rest % spatial[d];
      rest /= spatial[d];
      int64_t lo = count_include_pad ? -g.pads[d] : 0;
      int64_t hi = input_shape[2 + d] + (count_include_pad ? g.pads[d + rank] : 0);
      int64_t inside = 0;
      for (int64_t k = 0; k < g.kernel[d]; ++k) {
        int64_t at = o * g.strides[d] - g.pads[d] + k * g.dilations[d];
        inside += at >= lo && at < hi;
      }
      counts[flat] *= static_cast<double>(inside);
    }
  }
  return counts;
}

}  // namespace tessera::tensor_ir::ops
