#include "tensor_ir/ops/transform_shape.h"

#include <algorithm>
#include <set>

#include "runtime/error.h"
#include "runtime/ndarray.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/index_util.h"
#include "tensor_ir/arith/polynomial.h"
#include "tensor_ir/arith/simplify.h"
#include "tensor_ir/dimension_must_equal.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/substitute.h"

namespace tessera::tensor_ir::ops {

using runtime::shape_str;

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank)
    fail(what, " ", axis, " is out of range for rank ", rank, " (valid: ", -rank, " to ", rank - 1, ")");
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const std::string& what) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, rank, what);
    if (!seen.insert(n).second) fail(what, " repeat axis ", n, " (given ", runtime::shape_str(axes), ")");
    out.push_back(n);
  }
  return out;
}

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Shape reshape_shape(const Shape& in, const Shape& out) {
  for (int64_t d : out)
    if (d < 0)
      fail("reshape: the target shape ", shape_str(out), " has a negative dimension (give the full static shape)");
  if (numel(in) != numel(out))
    fail("reshape: cannot reshape ", shape_str(in), " (", numel(in), " elements) to ", shape_str(out), " (", numel(out),
         " elements)");
  return out;
}

std::vector<int64_t> transpose_perm(const std::vector<int64_t>& perm, int64_t rank) {
  if (perm.empty()) {
    std::vector<int64_t> reversed;
    for (int64_t d = rank - 1; d >= 0; --d) reversed.push_back(d);
    return reversed;
  }
  if (static_cast<int64_t>(perm.size()) != rank)
    fail("transpose: perm ", shape_str(perm), " has ", perm.size(), " entries for an input of rank ", rank);
  return normalize_axes(perm, rank, "transpose: perm");
}

Shape transpose_shape(const Shape& in, const std::vector<int64_t>& perm) {
  Shape out;
  for (int64_t p : transpose_perm(perm, static_cast<int64_t>(in.size()))) out.push_back(in[p]);
  return out;
}

std::vector<Expr> concat_dims(const std::vector<std::vector<Expr>>& ins, int64_t axis) {
  if (ins.empty()) fail("concat: no inputs");
  int64_t rank = static_cast<int64_t>(ins[0].size());
  if (rank == 0) fail("concat: inputs must have rank >= 1, input 0 is a scalar");
  int64_t a = normalize_axis(axis, rank, "concat: axis");
  std::vector<Expr> out = ins[0];
  for (size_t i = 1; i < ins.size(); ++i) {
    if (static_cast<int64_t>(ins[i].size()) != rank)
      fail("concat: input ", i, " has shape ", shape_str(ins[i]), ", input 0 has ", shape_str(ins[0]),
           " (ranks differ)");
    for (int64_t d = 0; d < rank; ++d) {
      if (d == a || same_dimension(ins[i][d], ins[0][d])) continue;
      const std::string message = "concat: input " + std::to_string(i) + " has shape " + shape_str(ins[i]) +
                                  ", input 0 has " + shape_str(ins[0]) + "; they must " +
                                  (as_const_int(ins[i][d]) && as_const_int(ins[0][d]) ? "" : "provably ") +
                                  "agree in every dimension but axis " + std::to_string(a);
      require_same_dimension(ins[i][d], ins[0][d], message);
      fail(message);
    }
    out[a] = arith::simplify(out[a] + ins[i][a]);
  }
  return out;
}

Shape concat_shape(const std::vector<Shape>& ins, int64_t axis) {
  std::vector<std::vector<Expr>> dims;
  for (const Shape& s : ins) dims.push_back(std::vector<Expr>(s.begin(), s.end()));
  Shape out;
  for (const Expr& d : concat_dims(dims, axis)) out.push_back(*as_const_int(d));
  return out;
}

std::vector<std::vector<Expr>> split_dims(const std::vector<Expr>& in, int64_t axis,
                                          const std::vector<int64_t>& sizes) {
  int64_t a = normalize_axis(axis, static_cast<int64_t>(in.size()), "split: axis");
  if (sizes.empty()) fail("split: no sizes");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail("split: negative size in ", shape_str(sizes));
    total += s;
  }
  if (!is_const_int(in[a], total))
    fail("split: sizes ", shape_str(sizes), " add up to ", total, ", but dimension ", a, " of ", shape_str(in), " is ",
         to_string(in[a]));
  std::vector<std::vector<Expr>> out;
  for (int64_t s : sizes) {
    std::vector<Expr> o = in;
    o[a] = Expr(s);
    out.push_back(o);
  }
  return out;
}

std::vector<int64_t> squeeze_axes(const std::vector<Expr>& in, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> out = axes.empty() ? std::vector<int64_t>{} : normalize_axes(axes, rank, "squeeze: axes");
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) {
      if (!as_const_int(in[d]))
        fail("squeeze: dimension ", d, " of ", shape_str(in),
             " is symbolic, so which are 1 is not known: name the axes");
      if (is_const_int(in[d], 1)) out.push_back(d);
    }
  for (int64_t a : out)
    if (!is_const_int(in[a], 1))
      fail("squeeze: dimension ", a, " of ", shape_str(in), " is ", to_string(in[a]), ", not 1");
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Expr> squeeze_dims(const std::vector<Expr>& in, const std::vector<int64_t>& axes) {
  std::vector<int64_t> drop = squeeze_axes(in, axes);
  std::vector<Expr> out;
  for (int64_t d = 0; d < static_cast<int64_t>(in.size()); ++d)
    if (!std::binary_search(drop.begin(), drop.end(), d)) out.push_back(in[d]);
  return out;
}

std::vector<Expr> expand_dims_dims(const std::vector<Expr>& in, const std::vector<int64_t>& axes) {
  const int64_t rank = static_cast<int64_t>(in.size() + axes.size());
  std::vector<int64_t> inserted = normalize_axes(axes, rank, "expand_dims: axes");
  std::vector<Expr> out;
  size_t next = 0;
  for (int64_t d = 0; d < rank; ++d)
    out.push_back(std::count(inserted.begin(), inserted.end(), d) ? Expr(1) : in[next++]);
  return out;
}

void check_broadcast_to(const Shape& in, const Shape& to) {
  bool ok = in.size() <= to.size();
  for (size_t i = 0; ok && i < in.size(); ++i) {
    int64_t x = in[in.size() - 1 - i], y = to[to.size() - 1 - i];
    ok = x == y || x == 1;
  }
  if (!ok) fail("broadcast_to: shape ", shape_str(in), " does not broadcast to ", shape_str(to));
}

Shape tile_shape(const Shape& in, const std::vector<int64_t>& repeats) {
  Shape out;
  for (const Expr& d : tile_dims(shape_exprs(in), shape_exprs(repeats))) out.push_back(*as_const_int(d));
  return out;
}

std::vector<Expr> tile_dims(const std::vector<Expr>& in, const std::vector<Expr>& repeats) {
  if (repeats.size() != in.size())
    fail("tile: repeats ", shape_str(repeats), " has ", repeats.size(), " entries for an input of rank ", in.size());
  std::vector<Expr> out;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t* r = as_const_int(repeats[d]);
    if (r && *r < 0) fail("tile: negative repeat count in ", shape_str(repeats));
    out.push_back(arith::simplify(in[d] * repeats[d]));
  }
  return out;
}

std::vector<SliceDim> slice_dims(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                                 const std::vector<int64_t>& axes, const std::vector<int64_t>& steps) {
  int64_t rank = static_cast<int64_t>(in.size());
  if (starts.size() != ends.size()) fail("slice: ", starts.size(), " starts but ", ends.size(), " ends");
  if (!axes.empty() && axes.size() != starts.size())
    fail("slice: ", starts.size(), " starts but ", axes.size(), " axes");
  if (!steps.empty() && steps.size() != starts.size())
    fail("slice: ", starts.size(), " starts but ", steps.size(), " steps");
  if (axes.empty() && static_cast<int64_t>(starts.size()) > rank)
    fail("slice: ", starts.size(), " starts for an input of rank ", rank);
  std::vector<int64_t> ax = axes;
  if (ax.empty())
    for (size_t i = 0; i < starts.size(); ++i) ax.push_back(static_cast<int64_t>(i));
  ax = normalize_axes(ax, rank, "slice: axes");
  std::vector<SliceDim> out(in.size());
  for (int64_t d = 0; d < rank; ++d) out[d] = {0, 1, in[d]};
  for (size_t i = 0; i < ax.size(); ++i) {
    int64_t dim = in[ax[i]], step = steps.empty() ? 1 : steps[i];
    if (step == 0) fail("slice: step 0 on axis ", ax[i]);
    int64_t start = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + dim : ends[i];
    int64_t length;
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      length = end > start ? (end - start - 1) / step + 1 : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      length = dim > 0 && start > end ? (start - end - 1) / -step + 1 : 0;
    }
    out[ax[i]] = {length > 0 ? start : 0, step, length};
  }
  return out;
}

PadMode parse_pad_mode(const std::string& mode) {
  if (mode == "constant") return PadMode::Constant;
  if (mode == "reflect") return PadMode::Reflect;
  if (mode == "edge") return PadMode::Edge;
  if (mode == "wrap") return PadMode::Wrap;
  fail("pad: mode '", mode, "' is not one of constant, reflect, edge, wrap");
}

namespace {

// Each variable of `e` a size: not negative.
arith::BoundMap sizes_bounds(const Expr& e) {
  arith::BoundMap bounds;
  for (const Var& v : vars_of(e)) bounds[v.get()] = {0, arith::ConstBound::kPosInf};
  return bounds;
}

}  // namespace

Expr wrapped_length(const Expr& in, const Expr& begin, const Expr& end) {
  auto crop = [](const Expr& p) {
    const int64_t* c = as_const_int(p);
    return c ? std::max<int64_t>(0, -*c) : 0;  // a symbolic pad is not negative (pad_dims)
  };
  return arith::simplify(in - Expr(crop(begin) + crop(end)));
}

std::vector<Expr> pad_dims(const std::vector<Expr>& in, const std::vector<Expr>& pads, PadMode mode) {
  size_t rank = in.size();
  if (pads.size() != 2 * rank)
    fail("pad: pads ", shape_str(pads), " has ", pads.size(), " entries; an input of rank ", rank, " needs ", 2 * rank);
  for (const Expr& p : pads)
    if (!as_const_int(p) && !arith::can_prove(p >= Expr(int64_t{0}), sizes_bounds(p)))
      fail("pad: the pad ", to_string(p), " of pads ", shape_str(pads),
           " may be negative (a crop) depending on the sizes; a build for every size needs it provably not negative");
  std::vector<Expr> out;
  for (size_t d = 0; d < rank; ++d) {
    out.push_back(arith::simplify(in[d] + pads[d] + pads[d + rank]));
    const int64_t *n = as_const_int(out.back()), *length = as_const_int(in[d]);
    if (n && *n < 0) fail("pad: pads ", shape_str(pads), " crop dimension ", d, " of ", shape_str(in), " below zero");
    const int64_t* kept = as_const_int(wrapped_length(in[d], pads[d], pads[d + rank]));
    if (mode == PadMode::Wrap && kept && *kept <= 0 && n && *n > 0)
      fail("pad: wrap padding of dimension ", d, " of ", shape_str(in), " with nothing left of it after cropping");
    if (mode != PadMode::Constant && length && *length == 0 && !is_const_int(out.back(), 0))
      fail("pad: ",
           mode == PadMode::Edge   ? "edge"
           : mode == PadMode::Wrap ? "wrap"
                                   : "reflect",
           " padding of the empty dimension ", d, " of ", shape_str(in));
  }
  return out;
}

std::vector<Expr> depth_to_space_shape(const std::vector<Expr>& in, int64_t b) {
  if (in.size() != 4) fail("depth_to_space: the input must be 4-D (N, C, H, W), got ", shape_str(in));
  if (b <= 0) fail("depth_to_space: blocksize ", b, " must be positive");
  const int64_t* c = as_const_int(in[1]);
  if (!c) fail("depth_to_space: the channels of ", shape_str(in), " must be a constant");
  if (*c % (b * b)) fail("depth_to_space: channels ", *c, " are not divisible by blocksize^2 = ", b * b);
  return {in[0], Expr(*c / (b * b)), arith::simplify(in[2] * Expr(b)), arith::simplify(in[3] * Expr(b))};
}

std::vector<Expr> space_to_depth_shape(const std::vector<Expr>& in, int64_t b) {
  if (in.size() != 4) fail("space_to_depth: the input must be 4-D (N, C, H, W), got ", shape_str(in));
  if (b <= 0) fail("space_to_depth: blocksize ", b, " must be positive");
  const int64_t* c = as_const_int(in[1]);
  if (!c) fail("space_to_depth: the channels of ", shape_str(in), " must be a constant");
  // A symbolic height or width is checked at each call (the op's nonempty_dims) to divide.
  for (size_t d = 2; d < 4; ++d)
    if (const int64_t* n = as_const_int(in[d]); n && *n % b)
      fail("space_to_depth: height and width of ", shape_str(in), " are not divisible by blocksize ", b);
  return {in[0], Expr(*c * b * b), arith::simplify(floordiv(in[2], Expr(b))),
          arith::simplify(floordiv(in[3], Expr(b)))};
}

Shape take_shape(const Shape& data, const Shape& indices, int64_t axis) {
  if (data.empty()) fail("take: data must have rank >= 1");
  int64_t a = normalize_axis(axis, static_cast<int64_t>(data.size()), "take: axis");
  Shape out(data.begin(), data.begin() + a);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + a + 1, data.end());
  if (data[a] == 0 && numel(out) > 0) fail("take: cannot gather from the empty axis ", a, " of ", shape_str(data));
  return out;
}

std::vector<Expr> gather_elements_dims(const std::vector<Expr>& data, const std::vector<Expr>& indices, int64_t axis) {
  if (data.empty()) fail("gather_elements: data must have rank >= 1");
  if (indices.size() != data.size())
    fail("gather_elements: indices ", shape_str(indices), " and data ", shape_str(data), " differ in rank");
  int64_t a = normalize_axis(axis, static_cast<int64_t>(data.size()), "gather_elements: axis");
  for (size_t d = 0; d < data.size(); ++d) {
    const int64_t *i = as_const_int(indices[d]), *x = as_const_int(data[d]);
    if (static_cast<int64_t>(d) != a && (i && x ? *i > *x : !arith::equal_as_polynomials(indices[d], data[d])))
      fail("gather_elements: indices ", shape_str(indices), " exceed data ", shape_str(data), " in dimension ", d,
           (i && x ? "" : " (or may: they are not provably within it)"));
  }
  const bool no_indices = std::any_of(indices.begin(), indices.end(), [](const Expr& d) { return is_const_int(d, 0); });
  if (is_const_int(data[a], 0) && !no_indices)
    fail("gather_elements: cannot gather from the empty axis ", a, " of ", shape_str(data));
  return indices;
}

Shape gather_elements_shape(const Shape& data, const Shape& indices, int64_t axis) {
  gather_elements_dims(shape_exprs(data), shape_exprs(indices), axis);
  return indices;
}

std::vector<Expr> gather_nd_dims(const std::vector<Expr>& data, const std::vector<Expr>& indices, int64_t b) {
  if (data.empty() || indices.empty()) fail("gather_nd: data and indices must have rank >= 1");
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(indices.size());
  if (b < 0 || b >= std::min(r, q)) fail("gather_nd: batch_dims ", b, " must be in [0, ", std::min(r, q) - 1, "]");
  const int64_t* depth = as_const_int(indices.back());
  if (!depth)
    fail("gather_nd: the index tuples' length (the last dimension of indices ", shape_str(indices),
         ") must be a constant");
  if (b + *depth > r)
    fail("gather_nd: index tuples of length ", *depth, " after ", b, " batch dimensions exceed data rank ", r);
  for (int64_t d = 0; d < b; ++d)
    if (!arith::equal_as_polynomials(data[d], indices[d]))
      fail("gather_nd: batch dimension ", d,
           as_const_int(data[d]) && as_const_int(indices[d]) ? " differs" : " does not provably agree", ": data ",
           shape_str(data), ", indices ", shape_str(indices));
  // An empty indexed dimension is an error unless there are provably no index tuples to read it.
  const bool no_tuples = std::any_of(indices.begin(), indices.end(), [](const Expr& d) { return is_const_int(d, 0); });
  for (int64_t d = b; d < b + *depth; ++d)
    if (is_const_int(data[d], 0) && !no_tuples)
      fail("gather_nd: cannot index the empty dimension ", d, " of ", shape_str(data));
  std::vector<Expr> out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.begin() + b + *depth, data.end());
  return out;
}

void check_scatter_elements(const Shape& data, const Shape& indices, const Shape& updates, int64_t axis) {
  if (indices != updates)
    fail("scatter_elements: indices ", shape_str(indices), " and updates ", shape_str(updates), " differ in shape");
  gather_elements_shape(data, indices, axis);
}

void check_scatter_nd(const Shape& data, const Shape& indices, const Shape& updates) {
  if (data.empty() || indices.empty()) fail("scatter_nd: data and indices must have rank >= 1");
  int64_t depth = indices.back();
  if (depth > static_cast<int64_t>(data.size()))
    fail("scatter_nd: index tuples of length ", depth, " exceed data rank ", data.size());
  Shape want(indices.begin(), indices.end() - 1);
  want.insert(want.end(), data.begin() + depth, data.end());
  if (updates != want) fail("scatter_nd: updates must have shape ", shape_str(want), ", got ", shape_str(updates));
  for (int64_t d = 0; d < depth; ++d)
    if (data[d] == 0 && numel(updates) > 0)
      fail("scatter_nd: cannot index the empty dimension ", d, " of ", shape_str(data));
}

std::vector<Expr> one_hot_dims(const std::vector<Expr>& indices, const Expr& depth, int64_t axis) {
  if (const int64_t* d = as_const_int(depth); d && *d < 0) fail("one_hot: depth ", *d, " is negative");
  int64_t a = normalize_axis(axis, static_cast<int64_t>(indices.size()) + 1, "one_hot: axis");
  std::vector<Expr> out = indices;
  out.insert(out.begin() + a, depth);
  return out;
}

std::vector<Expr> topk_dims(const std::vector<Expr>& in, int64_t k, int64_t axis) {
  if (in.empty()) fail("topk: the input must have rank >= 1");
  int64_t a = normalize_axis(axis, static_cast<int64_t>(in.size()), "topk: axis");
  const int64_t* n = as_const_int(in[a]);
  if (k < 0 || (n && k > *n))
    fail("topk: k = ", k, " is not in [0, ", to_string(in[a]), "] (dimension ", a, " of ", shape_str(in), ")");
  std::vector<Expr> out = in;
  out[a] = Expr(k);
  return out;
}

}  // namespace tessera::tensor_ir::ops
