// The weight gradient of a convolution, dW[m, c, k] = sum_{n, o} x[n, c', o * s + k * d - p] *
// dy[n, m, o], as a register-tiled product whose every read is a contiguous vector:
//  * the input goes into a padded stage P (tag "conv_weight_grad_pad") split by stride phase in
//    every spatial dimension, P[n, c, phase.., q..] = x at q * s + phase - p (zeros outside), so
//    the input position o * s + k * d is P[phase(k), o + offset(k)] with phase(k) = k * d % s and
//    offset(k) = k * d / s;
//  * the cotangent goes into D (same tag) [n, m, q..] with the row pitches of P (zeros past the
//    output and past M), so that, with both flattened over their spatial dimensions, output
//    position f reads P at f + offset(k) and D at f: consecutive positions are consecutive
//    addresses in both;
//  * the product R (tag "conv_weight_grad_product") [m / TM, c / TC, k.., k_last / TK, TM, TC, TK,
//    lanes] sums over n and the flattened positions in vectors of `lanes`, so its template keeps
//    TM x TC x TK vector accumulators in registers over the whole reduction while each step loads
//    TM vectors of D and TC x TK vectors of P;
//  * the output (tag "conv_weight_grad") adds the lanes of each accumulator (then, for float16,
//    a cast stage takes that tag and the sum is tagged "conv_weight_grad_lanes").
#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/ops/nn_grad.h"
#include "tensor_ir/ops/nn_util.h"

namespace tessera::tensor_ir::ops {

using namespace nn_detail;

namespace {

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// A flat position over dimensions of sizes `extent` (row-major) as one index per dimension;
// the first dimension is not wrapped.
std::vector<Expr> unflatten(const Expr& f, const std::vector<int64_t>& extent) {
  std::vector<Expr> idx(extent.size());
  int64_t pitch = 1;
  for (size_t d = extent.size(); d-- > 0;) {
    Expr q = pitch == 1 ? f : floordiv(f, Expr(pitch));
    idx[d] = d == 0 ? q : floormod(q, Expr(extent[d]));
    pitch *= extent[d];
  }
  return idx;
}

}  // namespace

ConvWeightGradTile conv_weight_grad_tile(int64_t out_channels, int64_t group_channels, int64_t last_kernel,
                                         const Registers& regs) {
  const int64_t kAccumulators = regs.count * 3 / 4;  // the rest hold the loaded vectors
  ConvWeightGradTile best;
  best.k = 1;
  for (int64_t k = std::min<int64_t>(last_kernel, 8); k >= 1; --k)
    if (last_kernel % k == 0) {
      best.k = k;
      break;
    }
  double best_score = -1;
  for (int64_t tm = 1; tm <= std::min<int64_t>(out_channels, kAccumulators); ++tm)
    for (int64_t tc = 1; tc <= std::min<int64_t>(group_channels, 8); ++tc) {
      int64_t acc = tm * tc * best.k;
      if (acc > kAccumulators) continue;
      // Multiply-adds per vector loaded, discounted by the work the padding to whole tiles wastes.
      double score = static_cast<double>(acc) / static_cast<double>(tm + tc * best.k);
      score *= static_cast<double>(out_channels) / static_cast<double>(round_up(out_channels, tm));
      score *= static_cast<double>(group_channels) / static_cast<double>(round_up(group_channels, tc));
      if (score > best_score + 1e-9) best_score = score, best.m = tm, best.c = tc;
    }
  return best;
}

std::vector<int64_t> conv_weight_grad_shape(const std::vector<int64_t>& x, const std::vector<int64_t>& dy,
                                            const std::vector<int64_t>& kernel, const ConvGeometry& g) {
  if (x.size() < 3) fail("conv_weight_grad: x must be [N, C, spatial...], got ", runtime::shape_str(x));
  if (dy.size() != x.size() || kernel.size() != x.size() - 2)
    fail("conv_weight_grad: dy ", runtime::shape_str(dy), " and kernel ", runtime::shape_str(kernel),
         " do not match x ", runtime::shape_str(x));
  if (dy[0] != x[0]) fail("conv_weight_grad: dy has batch ", dy[0], ", x has ", x[0]);
  if (g.groups < 1 || x[1] % g.groups != 0 || dy[1] % g.groups != 0)
    fail("conv_weight_grad: channels (", x[1], " in, ", dy[1], " out) must be divisible by groups ", g.groups);
  std::vector<int64_t> w{dy[1], x[1] / g.groups};
  w.insert(w.end(), kernel.begin(), kernel.end());
  std::vector<int64_t> out = conv_shape(x, w, g);
  if (out != dy)
    fail("conv_weight_grad: dy ", runtime::shape_str(dy), " is not the shape ", runtime::shape_str(out),
         " of the convolution's output");
  return w;
}

Tensor conv_weight_grad(const Tensor& x, const Tensor& dy, const std::vector<int64_t>& kernel, const ConvGeometry& g,
                        const Registers& regs) {
  if (x.dtype() != dy.dtype())
    fail("conv_weight_grad: x and dy dtypes differ: ", x.dtype().str(), " vs ", dy.dtype().str());
  std::vector<int64_t> xs = x->dims(), ys = dy->dims();
  std::vector<int64_t> ws = conv_weight_grad_shape(xs, ys, kernel, g);
  size_t rank = kernel.size();
  DataType acc = accumulation_type(x.dtype());
  int64_t lanes = regs.lanes(acc);
  int64_t n = xs[0], c = xs[1], m = ys[1], cg = c / g.groups, mg = m / g.groups;
  ConvWeightGradTile tile = conv_weight_grad_tile(m, cg, kernel.back(), regs);
  std::vector<int64_t> kp = kernel;  // the kernel padded to whole tiles along the last dimension
  kp.back() = round_up(kp.back(), tile.k);

  // Pitches: dimension d >= 1 of P and D holds the outputs plus the furthest kernel offset.
  std::vector<int64_t> offset_max(rank), extent(rank);
  for (size_t d = 0; d < rank; ++d) {
    offset_max[d] = (kp[d] - 1) * g.dilations[d] / g.strides[d];
    extent[d] = ys[2 + d] + offset_max[d];
  }
  std::vector<int64_t> pitch(rank, 1);
  for (size_t d = rank - 1; d-- > 0;) pitch[d] = pitch[d + 1] * extent[d + 1];
  // The flattened output positions, in whole vectors; P also covers the furthest offset past them.
  int64_t flat = round_up(ys[2] * pitch[0], lanes), furthest = 0;
  for (size_t d = 0; d < rank; ++d) furthest += offset_max[d] * pitch[d];
  std::vector<int64_t> p_extent = extent, d_extent = extent;
  p_extent[0] = (flat + furthest + pitch[0] - 1) / pitch[0];
  d_extent[0] = (flat + pitch[0] - 1) / pitch[0];

  std::vector<Expr> pshape{Expr(n), Expr(c)};
  std::vector<std::string> pnames{"n", "c"};
  for (size_t d = 0; d < rank; ++d) pshape.push_back(Expr(g.strides[d])), pnames.push_back("s" + std::to_string(d));
  for (size_t d = 0; d < rank; ++d) pshape.push_back(Expr(p_extent[d])), pnames.push_back("q" + std::to_string(d));
  Tensor p = compute(
      pshape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx{v[0], v[1]};
        Expr inside = const_true();
        for (size_t d = 0; d < rank; ++d) {
          Expr i = v[2 + rank + d] * Expr(g.strides[d]) + v[2 + d] - Expr(g.pads[d]);
          inside = logical_and(inside, logical_and(i >= Expr(0), i < Expr(xs[2 + d])));
          idx.push_back(i);
        }
        return select(inside, read_as(x, idx, acc), make_zero(acc));  // lazy: nothing is read outside
      },
      "conv_weight_grad_input", "conv_weight_grad_pad", pnames);

  int64_t mp = round_up(m, tile.m);
  std::vector<Expr> dshape{Expr(n), Expr(mp)};
  std::vector<std::string> dnames{"n", "m"};
  for (size_t d = 0; d < rank; ++d) dshape.push_back(Expr(d_extent[d])), dnames.push_back("q" + std::to_string(d));
  Tensor dpad = compute(
      dshape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx{v[0], min(v[1], Expr(m - 1))};
        Expr inside = v[1] < Expr(m);
        for (size_t d = 0; d < rank; ++d) {
          inside = logical_and(inside, v[2 + d] < Expr(ys[2 + d]));
          idx.push_back(v[2 + d]);
        }
        return select(inside, read_as(dy, idx, acc), make_zero(acc));
      },
      "conv_weight_grad_cotangent", "conv_weight_grad_pad", dnames);

  // R[mo, co, k_0 .. k_{rank-2}, ko, mi, ci, ki, lane]
  std::vector<Expr> rshape{Expr(mp / tile.m), Expr(round_up(cg, tile.c) / tile.c)};
  std::vector<std::string> rnames{"mo", "co"};
  for (size_t d = 0; d + 1 < rank; ++d) rshape.push_back(Expr(kernel[d])), rnames.push_back("k" + std::to_string(d));
  for (int64_t e : {kp.back() / tile.k, tile.m, tile.c, tile.k, lanes}) rshape.push_back(Expr(e));
  for (const char* s : {"ko", "mi", "ci", "ki", "lane"}) rnames.push_back(s);
  IterVar rn = reduce_axis(Range(Expr(0), Expr(n)), "rn");
  IterVar rf = reduce_axis(Range(Expr(0), Expr(flat / lanes)), "rf");
  Tensor r = compute(
      rshape,
      [&](const std::vector<Var>& v) {
        size_t t = rank + 1;  // v[t]: ko, then mi, ci, ki, lane
        Expr mm = v[0] * Expr(tile.m) + v[t + 1];
        Expr cc = v[1] * Expr(tile.c) + v[t + 2];
        Expr ch = floordiv(min(mm, Expr(m - 1)), Expr(mg)) * Expr(cg) + min(cc, Expr(cg - 1));
        std::vector<Expr> k(v.begin() + 2, v.begin() + 2 + (rank - 1));
        k.push_back(v[t] * Expr(tile.k) + v[t + 3]);
        Expr f = rf * Expr(lanes) + v[t + 4];
        Expr off = Expr(0);
        std::vector<Expr> pidx{rn, ch};
        for (size_t d = 0; d < rank; ++d) {
          Expr kd = k[d] * Expr(g.dilations[d]);
          pidx.push_back(g.strides[d] == 1 ? Expr(0) : floormod(kd, Expr(g.strides[d])));
          off = off + (g.strides[d] == 1 ? kd : floordiv(kd, Expr(g.strides[d]))) * Expr(pitch[d]);
        }
        for (const Expr& q : unflatten(f + off, p_extent)) pidx.push_back(q);
        std::vector<Expr> didx{rn, mm};
        for (const Expr& q : unflatten(f, d_extent)) didx.push_back(q);
        return sum(p(pidx) * dpad(didx), {rn, rf});
      },
      "conv_weight_grad_product", "conv_weight_grad_product", rnames);

  std::vector<std::string> wnames{"m", "c"};
  for (size_t d = 0; d < rank; ++d) wnames.push_back("k" + std::to_string(d));
  IterVar rl = reduce_axis(Range(Expr(0), Expr(lanes)), "rl");
  bool cast_after = acc != x.dtype();
  Tensor w = compute(
      shape_exprs(ws),
      [&](const std::vector<Var>& v) {
        std::vector<Expr> idx{floordiv(v[0], Expr(tile.m)), floordiv(v[1], Expr(tile.c))};
        for (size_t d = 0; d + 1 < rank; ++d) idx.push_back(v[2 + d]);
        Expr kl = v[1 + rank];
        idx.push_back(floordiv(kl, Expr(tile.k)));
        idx.push_back(floormod(v[0], Expr(tile.m)));
        idx.push_back(floormod(v[1], Expr(tile.c)));
        idx.push_back(floormod(kl, Expr(tile.k)));
        idx.push_back(rl);
        return sum(r(idx), {rl});
      },
      "conv_weight_grad", cast_after ? "conv_weight_grad_lanes" : "conv_weight_grad", wnames);
  if (!cast_after) return w;
  return compute(
      shape_exprs(ws), [&](const std::vector<Var>& v) { return cast(x.dtype(), w(as_exprs(v))); },
      "conv_weight_grad_cast", "conv_weight_grad", wnames);
}

}  // namespace tessera::tensor_ir::ops
