// The convolution template (tag "conv_epilogue", the output of every convolution; the product's
// tag picks the form):
//  * blocked ("conv"): the output is tiled as `tile` positions of the last spatial dimension x
//    ocv channels; the product is computed at the tile with the tile positions unrolled and the
//    channel vector innermost, so its tile x ocv / 16 accumulators stay in registers over the
//    whole reduction (input channels x kernel) while each step broadcasts one input and loads a
//    packed weight vector. Tiles are spread over the threads.
//  * depthwise ("depthwise_conv"): per (n, channel) plane, the padded input is computed at the
//    plane and the product a block of rows at a time, vectorized along the rows: for each
//    vector of columns, the block's accumulators take every kernel tap, so an input row loaded
//    once feeds each output row of the block it touches.
//  * pointwise (1x1, "matmul"): the matrix-product tiling over channels x flattened positions
//    (or positions x channels);
//  * strip ("conv_strip"): per row of positions and block of channels, each vector of positions
//    accumulates the block over the whole reduction (vector of inputs x broadcast weights);
//  * Winograd ("winograd_output"): each stage at the root, over the threads: the padded input
//    copied with channels innermost; the input transform per tile, a vector of channels at a
//    time with the 36 positions unrolled (so each one's expression is selected at compile time);
//    the 36 products by the matrix-product tiling; the output transform like the input one; the
//    epilogue by the generic schedule;
//  * direct ("conv_direct"): the generic schedule of each stage.
#include <algorithm>

#include "schedule/templates/nn.h"
#include "schedule/templates/extent_hint.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

int64_t reduction_volume(const Tensor& t) {
  int64_t v = 1;
  for (const auto& r : t.as<ComputeOp>()->reduce_axis()) v *= extent_hint(r->dom.extent);
  return v;
}

// A copy stage (the padded input, the packed weights): rows in parallel, each vectorized along
// the last dimension with its own tail, so every vector has a constant extent.
void schedule_copy(Schedule& s, const Tensor& t) {
  Stage& st = s[t];
  const auto* c = t.as<ComputeOp>();
  std::vector<Loop> rows;
  for (size_t d = 0; d + 1 < c->axis.size(); ++d) rows.push_back(st.loop(c->axis[d]));
  Loop last = st.loop(c->axis.back());
  int lanes = s.hardware().lanes(t.dtype());
  if (dim_hint(t, t.ndim() - 1) >= lanes) st.vectorize(st.split(last, lanes).second);
  else if (dim_hint(t, t.ndim() - 1) > 1) st.vectorize(last);
  Loop fused = nn::fuse_all(st, rows);
  if (fused && nn::num_elements(t) >= nn::kMinParallelWork / 8) st.parallel(fused);
}

// Whether the threads share out a convolution's output rows rather than its blocks of output
// channels (knob "conv.rows_outer"): each thread then reads half the input and all the weights
// instead of all the input and half the weights, so the larger of the two decides. The first
// layers (3 input channels, kilobytes of weights) read their padded input once instead of twice.
// `inputs`: the product's, the input then the weights.
bool rows_outer(const std::vector<Tensor>& inputs, TemplateKnobs& knobs) {
  return knobs.choose_flag("conv.rows_outer", nn::num_elements(inputs.front()) > nn::num_elements(inputs.back()));
}

void schedule_blocked(Schedule& s, const Tensor& out, const Tensor& product, TemplateKnobs& knobs) {
  const auto* oc = out.as<ComputeOp>();
  const auto* pc = product.as<ComputeOp>();
  size_t rank = oc->axis.size() - 2;
  int64_t ocv = dim_hint(product, product.ndim() - 1);
  int64_t tile = tensor_ir::ops::conv_tile_width(dim_hint(out, out.ndim() - 1),
                                                 ocv / s.hardware().lanes(product.dtype()), s.hardware().registers);

  Stage& y = s[out];
  auto [mo, mi] = y.split(y.loop(oc->axis[1]), ocv);
  auto [wo, wi] = y.split(y.loop(oc->axis.back()), tile);
  std::vector<Loop> outer{y.loop(oc->axis[0])};
  for (size_t d = 0; d + 1 < rank; ++d) outer.push_back(y.loop(oc->axis[2 + d]));
  outer.push_back(wo);
  auto inputs = tensor_ir::input_tensors(product);  // the input, then the weights
  bool by_rows = rows_outer(inputs, knobs);
  outer.insert(by_rows ? outer.end() : outer.begin() + 1, mo);
  std::vector<Loop> order = outer;
  order.push_back(mi);
  order.push_back(wi);
  y.reorder(order);
  Loop fused = nn::fuse_all(y, outer);
  if (knobs.choose_flag("conv.parallel", nn::num_elements(out) * reduction_volume(product) >= nn::kMinParallelWork))
    y.parallel(fused);
  // The epilogue stores contiguous runs of the output row (reading the tile across channels).
  if (tile > 1) y.vectorize(wi);

  Stage& r = s[product];
  r.compute_at(y, fused);
  std::vector<Loop> inner;
  const auto& reduce = pc->reduce_axis();
  for (size_t i = 0; i < reduce.size(); ++i) inner.push_back(r.loop(reduce[i]));
  bool pointwise = reduction_volume(product) == extent_hint(reduce[0]->dom.extent);
  Loop channel_unroll;
  if (pointwise) {
    // A 1x1 kernel leaves one step per input channel: unroll channels by 4 instead.
    auto [co, ci] = r.split(inner[0], knobs.choose("conv.channel_unroll", {4, 2, 8}));
    inner[0] = co;
    inner.insert(inner.begin() + 1, ci);
    channel_unroll = ci;
  }
  Loop w = r.loop(pc->axis[2 + rank - 1]), m = r.loop(pc->axis.back());
  inner.push_back(w);
  inner.push_back(m);
  r.reorder(inner);
  if (channel_unroll) r.unroll(channel_unroll);
  r.unroll(w);
  r.vectorize(m);
  // The tiles of one block of output channels fetch the next block's weights, a share per
  // input channel: in a model they come from memory (ResNet's 3x3 layers at 7x7 and 14x14 read
  // 2.4 to 9.4 MB of them per call), and the first tile of a block would wait on them. The next
  // block is one step of the block loop `mo` fused into the tiles': the tile after this one with
  // rows outermost, a block's tiles ahead (however many a symbolic image has) otherwise.
  if (knobs.choose_flag("conv.prefetch", true)) r.prefetch(nn::stored_source(s, inputs.back()), inner[0], y, mo, 1);
}

// Where the padded input comes from (knob "depthwise.pad"). The copy costs as much as the
// product for small planes and stride-2 rows (each vector a masked strided load under a
// select); read in place (the border by masked loads), most of MobileNet-v2's depthwise layers
// were faster, but not its 14x14 stride-1 ones. Copied per block of rows instead of per plane keeps
// the copy in L1 (benchmarks/NOTES.md, "Depthwise convolutions").
enum DepthwisePad : int64_t { kPadInPlace, kPadPerPlane, kPadPerBlock };

// The default place of the padded input: copied per block where rows of 9 to 15 outputs (one
// vector each, mostly used) are read at stride 1 (each row of the copy then three plain loads),
// in place elsewhere (the 7x7 planes were slower copied).
int64_t default_pad(const Tensor& product, const Tensor& padded, int lanes) {
  const auto* pc = product.as<ComputeOp>();
  int64_t width = dim_hint(product, product.ndim() - 1);
  int64_t kernel = extent_hint(pc->reduce_axis().back()->dom.extent);
  bool unit_stride = padded.ndim() == product.ndim() && dim_hint(padded, padded.ndim() - 1) == width + kernel - 1;
  return unit_stride && 2 * width > lanes && width < lanes ? kPadPerBlock : kPadInPlace;
}

// Knobs: threads, the block of rows (a divisor of the one the product is padded to), where the
// padded input comes from; the tuner decides per layer.
void schedule_depthwise(Schedule& s, const Tensor& out, const Tensor& product, const Tensor& padded,
                        TemplateKnobs& knobs) {
  const auto* oc = out.as<ComputeOp>();
  const auto* pc = product.as<ComputeOp>();
  size_t rank = oc->axis.size() - 2;
  int lanes = s.hardware().lanes(product.dtype());
  Stage& y = s[out];
  Loop plane = y.fuse(y.loop(oc->axis[0]), y.loop(oc->axis[1]));
  // A multiply-add here costs several of a dense product's (each input loaded feeds a few), so
  // an eighth of the work pays for the threads.
  if (knobs.choose_flag("depthwise.parallel",
                        nn::num_elements(out) * reduction_volume(product) >= nn::kMinParallelWork / 8))
    y.parallel(plane);
  // Rows narrower than a vector are one vector each (planes of 7x7 and 14x14 positions).
  Loop x = y.loop(oc->axis.back());
  if (dim_hint(out, out.ndim() - 1) >= lanes) y.vectorize(y.split(x, lanes).second);
  else if (dim_hint(out, out.ndim() - 1) > 1) y.vectorize(x);
  // A block of rows per product stage: each input row loaded feeds every output row it touches.
  Loop at = plane;
  Loop rows;
  if (rank >= 2) {
    int64_t most = tensor_ir::ops::depthwise_row_block(dim_hint(out, out.ndim() - 2));
    std::vector<int64_t> blocks;
    for (int64_t b : {most, int64_t{2}, int64_t{1}})
      if (most % b == 0) blocks.push_back(b);
    at = y.split(y.loop(oc->axis[oc->axis.size() - 2]), knobs.choose("depthwise.rows", blocks)).first;
    rows = s[product].loop(pc->axis[pc->axis.size() - 2]);
  }
  int64_t pad = kPadInPlace;
  if (padded.defined()) {
    std::vector<int64_t> options{kPadInPlace, kPadPerPlane};
    if (rows) options.push_back(kPadPerBlock);
    auto first = std::find(options.begin(), options.end(), default_pad(product, padded, lanes));
    if (first != options.end()) std::rotate(options.begin(), first, first + 1);
    pad = knobs.choose("depthwise.pad", options);
  }

  Stage& r = s[product];
  r.compute_at(y, at);
  Loop w = r.loop(pc->axis.back());
  std::vector<Loop> order;
  Loop wi = w;
  if (dim_hint(product, product.ndim() - 1) >= lanes) {
    auto split = r.split(w, lanes);
    order.push_back(split.first);
    wi = split.second;
  }
  for (const auto& k : pc->reduce_axis()) order.push_back(r.loop(k));
  if (rows) order.push_back(rows);
  order.push_back(wi);
  r.reorder(order);
  if (reduction_volume(product) <= 49) {
    for (const auto& k : pc->reduce_axis()) r.unroll(r.loop(k));
    if (rows) r.unroll(rows);
  }
  r.vectorize(wi);

  if (padded.defined() && pad == kPadInPlace) {
    s[padded].compute_inline();
  } else if (padded.defined()) {
    Stage& p = s[padded];
    p.compute_at(y, pad == kPadPerBlock ? at : plane);
    const auto* pp = padded.as<ComputeOp>();
    Loop pl = p.loop(pp->axis.back());
    // A row narrower than a vector is one vector (split by phase, one load of every stride-th
    // element per phase).
    if (dim_hint(padded, padded.ndim() - 1) >= lanes) p.vectorize(p.split(pl, lanes).second);
    else if (dim_hint(padded, padded.ndim() - 1) > 1) p.vectorize(pl);
  }
}

// The strip form: each work item a row of output positions for a block of channels; per vector
// of positions, the block's accumulators (one register each) take the whole reduction, the
// channels unrolled inside it, and the epilogue stores them as rows.
void schedule_strip(Schedule& s, const Tensor& out, const Tensor& product, TemplateKnobs& knobs) {
  const auto* oc = out.as<ComputeOp>();
  const auto* pc = product.as<ComputeOp>();
  int lanes = s.hardware().lanes(product.dtype());
  auto inputs = tensor_ir::input_tensors(product);  // the input, then the weights packed in blocks
  const Tensor& packed = inputs.back();
  Stage& y = s[out];
  auto [mo, mi] = y.split(y.loop(oc->axis[1]), dim_hint(packed, packed.ndim() - 1));
  auto [xo, xi] = y.split(y.loop(oc->axis.back()), lanes);
  std::vector<Loop> rows{y.loop(oc->axis[0])};
  for (size_t d = 2; d + 1 < oc->axis.size(); ++d) rows.push_back(y.loop(oc->axis[d]));
  rows.insert(rows_outer(inputs, knobs) ? rows.end() : rows.begin() + 1, mo);
  std::vector<Loop> order = rows;
  order.insert(order.end(), {xo, mi, xi});
  y.reorder(order);
  Loop row = nn::fuse_all(y, rows);
  if (knobs.choose_flag("conv.parallel", nn::num_elements(out) * reduction_volume(product) >= nn::kMinParallelWork))
    y.parallel(row);
  y.unroll(mi);
  y.vectorize(xi);

  Stage& r = s[product];
  r.compute_at(y, xo);
  std::vector<Loop> inner;
  for (const auto& k : pc->reduce_axis()) inner.push_back(r.loop(k));
  Loop channels = r.loop(pc->axis[1]), positions = r.loop(pc->axis.back());
  inner.insert(inner.end(), {channels, positions});
  r.reorder(inner);
  if (extent_hint(pc->reduce_axis().back()->dom.extent) <= 8)
    r.unroll(inner[inner.size() - 3]);  // the last kernel axis (its loads only shift by a lane)
  r.unroll(channels);
  r.vectorize(positions);
}

// A pointwise convolution is a matrix product per image: rows are output channels, columns the
// flattened spatial positions; or, with positions as rows (weight panels "conv_weight_panels"),
// the other way round, each channel's positions stored together.
void schedule_pointwise(Schedule& s, const Tensor& out, const Tensor& product, const Tensor& packed,
                        TemplateKnobs& knobs) {
  const auto* oc = out.as<ComputeOp>();
  Stage& y = s[out];
  std::vector<Loop> spatial;
  int64_t num_positions = 1;
  for (size_t d = 2; d < oc->axis.size(); ++d) {
    spatial.push_back(y.loop(oc->axis[d]));
    num_positions *= dim_hint(out, d);
  }
  Loop positions = nn::fuse_all(y, spatial), channels = y.loop(oc->axis[1]);
  if (nn::find_tagged(out, "conv_weight_panels").defined())
    nn::schedule_matmul_tiles(s, out, product, packed, {y.loop(oc->axis[0])}, positions, channels, dim_hint(out, 1),
                              knobs, true);
  else
    nn::schedule_matmul_tiles(s, out, product, packed, {y.loop(oc->axis[0])}, channels, positions, num_positions,
                              knobs);
}

// A transform stage [tiles, positions.., channels]: tiles over the threads, then each vector of
// channels with the positions unrolled inside it.
void schedule_transform(Schedule& s, const Tensor& t, size_t tile_axis, const std::vector<size_t>& position_axes) {
  Stage& st = s[t];
  const auto* c = t.as<ComputeOp>();
  Loop tiles = st.loop(c->axis[tile_axis]);
  Loop channels = st.loop(c->axis.back());
  int lanes = s.hardware().lanes(t.dtype());
  std::vector<Loop> order{tiles};
  Loop vector = channels;
  if (dim_hint(t, t.ndim() - 1) > lanes) {
    auto [co, ci] = st.split(channels, lanes);
    order.push_back(co);
    vector = ci;
  }
  for (size_t a : position_axes) order.push_back(st.loop(c->axis[a]));
  order.push_back(vector);
  st.reorder(order);
  for (size_t a : position_axes) st.unroll(st.loop(c->axis[a]));
  st.vectorize(vector);
  if (nn::num_elements(t) * 16 >= nn::kMinParallelWork) st.parallel(tiles);
}

// The epilogue [n, m, y, x] reads the output tiles [tiles, i, j, m] across channels: a vector
// along x gathers one element from each of 16 cache lines of channels, so the loops take 16
// channels per vector (unrolled) and those lines serve all 16 from L1.
void schedule_unblocking(Schedule& s, const Tensor& out) {
  Stage& y = s[out];
  const auto* c = out.as<ComputeOp>();
  int lanes = s.hardware().lanes(out.dtype());
  auto [mo, mi] = y.split(y.loop(c->axis[1]), lanes);
  auto [xo, xi] = y.split(y.loop(c->axis[3]), lanes);
  y.reorder({y.loop(c->axis[0]), mo, y.loop(c->axis[2]), xo, mi, xi});
  Loop rows = nn::fuse_all(y, {y.loop(c->axis[0]), mo, y.loop(c->axis[2])});
  if (nn::num_elements(out) >= nn::kMinParallelWork / 8) y.parallel(rows);
  y.unroll(mi);
  y.vectorize(xi);
}

void schedule_winograd(Schedule& s, const Tensor& out, const Tensor& output_transform, TemplateKnobs& knobs) {
  Tensor products = nn::find_tagged(out, "matmul_epilogue");
  Tensor product = nn::find_tagged(out, "matmul");
  Tensor input_transform = nn::find_tagged(out, "winograd_input");
  Tensor padded = nn::find_tagged(out, "winograd_pad");
  // The transformed weight comes packed ahead of time, through a copy ("matmul_prepacked")
  // inlined here.
  Tensor panels = nn::find_tagged(out, "matmul_prepacked");
  nn::inline_injective_except(s, out, {output_transform, products, product, input_transform, padded});
  schedule_copy(s, padded);
  schedule_transform(s, input_transform, 1, {0});
  const auto* pc = products.as<ComputeOp>();
  Stage& p = s[products];
  nn::schedule_matmul_tiles(s, products, product, panels, {p.loop(pc->axis[0])}, p.loop(pc->axis[1]),
                            p.loop(pc->axis[2]), dim_hint(products, 2), knobs);
  schedule_transform(s, output_transform, 0, {1, 2});
  schedule_unblocking(s, out);
}

void schedule_conv(Schedule& s, const Tensor& main, TemplateKnobs& knobs) {
  Tensor out = nn::epilogue_target(s, main);
  Tensor winograd = nn::find_tagged(out, "winograd_output");
  if (winograd.defined()) {
    schedule_winograd(s, out, winograd, knobs);
    return;
  }
  Tensor matmul = nn::find_tagged(out, "matmul");
  if (matmul.defined()) {
    Tensor packed = nn::find_tagged(out, "matmul_pack");
    nn::inline_injective_except(s, out, {matmul, packed});
    if (!packed.defined()) packed = nn::find_tagged(out, "matmul_prepacked");  // inlined
    schedule_pointwise(s, out, matmul, packed, knobs);
    return;
  }
  Tensor blocked = nn::find_tagged(out, "conv");
  Tensor depthwise = nn::find_tagged(out, "depthwise_conv");
  Tensor strip = nn::find_tagged(out, "conv_strip");
  Tensor direct = nn::find_tagged(out, "conv_direct");
  Tensor padded = nn::find_tagged(out, "conv_pad");
  Tensor packed = nn::find_tagged(out, "conv_pack");
  Tensor product = blocked.defined() ? blocked : depthwise.defined() ? depthwise : strip.defined() ? strip : direct;
  nn::inline_injective_except(s, out, {product, padded, packed});
  if (padded.defined() && !depthwise.defined()) schedule_copy(s, padded);
  if (packed.defined()) schedule_copy(s, packed);
  if (blocked.defined()) {
    schedule_blocked(s, out, blocked, knobs);
  } else if (depthwise.defined()) {
    schedule_depthwise(s, out, depthwise, padded, knobs);
  } else if (strip.defined()) {
    schedule_strip(s, out, strip, knobs);
  } else {
    schedule_generic_stage(s, product);
    schedule_generic_stage(s, out);
  }
}

}  // namespace

void add_nn_conv_templates(std::map<std::string, TunableTemplate>& t) { t["conv_epilogue"] = schedule_conv; }

}  // namespace tessera::schedule
