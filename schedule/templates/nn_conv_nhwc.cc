// The template of channels-last convolutions (tensor_ir/ops/nn_conv_nhwc.cc, tag
// "conv_nhwc_epilogue"): rows of output positions over the threads, each thread a run of
// consecutive rows, so it writes one contiguous block of the output (and, in a network whose
// kernels all split this way, reads what its own core wrote: data written by the other core
// costs more to read: benchmarks/NOTES.md, "Channels-last MobileNets").
// Inside a row, a register tile of `tile` positions along x by one or two vectors of channels
// accumulates over the whole kernel window (unrolled), then the epilogue stores it.
#include <algorithm>

#include "schedule/templates/nn.h"
#include "schedule/templates/extent_hint.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

// Where the padded input comes from (knob "conv_nhwc.pad"): read in place (the border by
// masked loads under the window's conditions) or copied per row of outputs (the window's rows).
enum NhwcPad : int64_t { kPadInPlace, kPadPerRow };

// The positions a tile holds: the largest divisor of the row width up to `most`, so no tile is
// partial; rows that no such divisor of at least 4 fits take `most` and a partial last tile.
int64_t tile_width(int64_t width, int64_t most) {
  if (width <= most) return width;
  for (int64_t t = most; t >= 4; --t)
    if (width % t == 0) return t;
  return most;
}

void schedule_conv_nhwc(Schedule& s, const Tensor& main, TemplateKnobs& knobs) {
  Tensor out = nn::epilogue_target(s, main);
  Tensor depthwise = nn::find_tagged(out, "depthwise_nhwc");
  Tensor product = depthwise.defined() ? depthwise : nn::find_tagged(out, "conv_nhwc");
  Tensor padded = nn::find_tagged(out, "conv_nhwc_pad");
  nn::inline_injective_except(s, out, {product, padded});
  const auto* oc = out.as<ComputeOp>();
  const auto* pc = product.as<ComputeOp>();
  int lanes = s.hardware().lanes(product.dtype());
  int64_t width = dim_hint(out, 2), channels = dim_hint(out, 3);

  // A depthwise tile reuses each weight vector across its positions only, so one vector of
  // channels; a dense one also reuses each broadcast input across its vectors.
  int64_t vectors =
      knobs.choose("conv_nhwc.vectors", depthwise.defined() || channels < 2 * lanes ? std::vector<int64_t>{1, 2}
                                                                                    : std::vector<int64_t>{2, 1});
  int64_t block = std::min<int64_t>(vectors * lanes, channels);
  int64_t most = 24 / vectors;  // accumulators, leaving registers for the weights and inputs
  int64_t own = tile_width(width, most > 8 ? 8 : most);
  int64_t tile = knobs.choose("conv_nhwc.tile", {own, tile_width(width, most), 4});

  Stage& y = s[out];
  Loop rows = y.fuse(y.loop(oc->axis[0]), y.loop(oc->axis[1]));
  auto [xo, xi] = y.split(y.loop(oc->axis[2]), tile);
  auto [mo, mi] = y.split(y.loop(oc->axis[3]), block);
  y.reorder({rows, xo, mo, xi, mi});
  int64_t work = nn::num_elements(out) * nn::reduction_volume(pc);
  if (knobs.choose_flag("conv_nhwc.parallel",
                        work >= (depthwise.defined() ? nn::kMinParallelWork / 8 : nn::kMinParallelWork)))
    y.parallel(rows);
  y.unroll(xi);
  nn::vectorize_in_registers(y, mi, block, lanes);

  Stage& r = s[product];
  r.compute_at(y, mo);
  std::vector<Loop> order;
  for (const auto& k : pc->reduce_axis()) order.push_back(r.loop(k));
  Loop rx = r.loop(pc->axis[2]), rm = r.loop(pc->axis[3]);
  order.insert(order.end(), {rx, rm});
  r.reorder(order);
  if (nn::reduction_volume(pc) <= 64)
    for (const auto& k : pc->reduce_axis()) r.unroll(r.loop(k));
  r.unroll(rx);
  nn::vectorize_in_registers(r, rm, block, lanes);

  if (!padded.defined()) return;
  if (knobs.choose("conv_nhwc.pad", {kPadInPlace, kPadPerRow}) == kPadInPlace) {
    s[padded].compute_inline();
    return;
  }
  Stage& p = s[padded];
  p.compute_at(y, rows);
  const auto* pp = padded.as<ComputeOp>();
  Loop pm = p.loop(pp->axis[3]);
  if (dim_hint(padded, 3) >= lanes) p.vectorize(p.split(pm, lanes).second);
  else p.vectorize(pm);
}

}  // namespace

void add_nn_conv_nhwc_templates(std::map<std::string, TunableTemplate>& t) {
  t["conv_nhwc_epilogue"] = schedule_conv_nhwc;
}

}  // namespace tessera::schedule
