// The attention template (tag "attention", tensor_ir/ops/nn_attention.cc): keys and values are
// packed into panels first (the matmul template's packing, in parallel); then the threads share
// out blocks of query rows (the product's tile rows), and for each block the kernel computes its
// scores a register tile at a time (a cache_write stage per panel of keys, the reduction over the
// depth unrolled by 4), the row maxima and sums of exponentials as vector partial results (as the
// softmax template does), the exponentials, and then each tile of the output: the values' product
// over the block's exponentials in registers, scaled by the sums' reciprocals. The block's scores
// and exponentials (rows x keys) stay in cache between the passes instead of going through memory
// as three kernels' results. Where a product is not packed (few rows or columns at the size hints)
// each stage is scheduled on its own, the products as the matmul template's unpacked ones.
#include <optional>

#include "schedule/templates/extent_hint.h"
#include "schedule/templates/nn.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/ops/nn.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

struct AttentionStages {
  Tensor weighted, values;  // the values' product (padded, "matmul") and its panels ("matmul_pack")
  Tensor exp, max, sum;     // "attention_exp", the "attention_stat" reductions
  Tensor scores, keys;      // the scores' product and its panels
};

const char* tag_of(const Tensor& t) {
  const auto* c = t.as<ComputeOp>();
  return c ? c->tag.c_str() : "";
}

// The input of `t` tagged `tag`, or undefined.
Tensor input_tagged(const Tensor& t, const std::string& tag) {
  for (const Tensor& in : tensor_ir::input_tensors(t))
    if (tag_of(in) == tag) return in;
  return Tensor();
}

// A packed product behind its unpadding stage `out` ("matmul_epilogue"), and its panels.
std::optional<std::pair<Tensor, Tensor>> packed_product(const Tensor& out) {
  if (!out.defined()) return std::nullopt;
  Tensor product = input_tagged(out, "matmul");
  Tensor panels = product.defined() ? input_tagged(product, "matmul_pack") : Tensor();
  if (!panels.defined()) return std::nullopt;
  return std::make_pair(product, panels);
}

std::optional<AttentionStages> find_stages(const Tensor& main) {
  AttentionStages a;
  auto weighted = packed_product(input_tagged(main, "matmul_epilogue"));
  a.sum = input_tagged(main, "attention_stat");
  if (!weighted || !a.sum.defined()) return std::nullopt;
  std::tie(a.weighted, a.values) = *weighted;
  a.exp = input_tagged(a.weighted, "attention_exp");
  if (!a.exp.defined()) return std::nullopt;
  a.max = input_tagged(a.exp, "attention_stat");
  Tensor scaled = input_tagged(a.exp, "elemwise");
  a.scores = scaled.defined() ? input_tagged(scaled, "matmul") : Tensor();
  a.keys = a.scores.defined() ? input_tagged(a.scores, "matmul_pack") : Tensor();
  if (!a.max.defined() || !a.keys.defined()) return std::nullopt;
  return a;
}

// The panels of a product's right operand, packed ahead of the row blocks in parallel.
void schedule_panels(Schedule& s, const Tensor& panels) {
  Stage& b = s[panels];
  const auto* c = panels.as<ComputeOp>();
  b.vectorize(b.loop(c->axis.back()));
  std::vector<Loop> outer;
  for (size_t d = 0; d + 2 < c->axis.size(); ++d) outer.push_back(b.loop(c->axis[d]));
  parallel_if_worth(b, nn::fuse_all(b, outer), panels, nn::num_elements(panels), nn::kMinParallelWork / 8);
}

// The register tile of a product stage computed at a tile loop: the reduction outermost (by 4,
// unrolled), then the rows (unrolled) and the panel's columns in vectors.
void schedule_tile_product(Stage& p, int64_t columns, int lanes) {
  const auto* c = p.op().as<ComputeOp>();
  const size_t nb = c->axis.size() - 2;
  Loop i = p.loop(c->axis[nb]), j = p.loop(c->axis[nb + 1]);
  auto [ko, ki] = p.split(p.loop(c->reduce_axis()[0]), 4);
  p.reorder({ko, ki, i, j});
  nn::vectorize_in_registers(p, j, columns, lanes);
  p.unroll(ki);
  p.unroll(i);
}

// A row statistic of the block (maximum, sum) as vector partial results combined at the end.
void schedule_row_stat(Schedule& s, const Tensor& stat, Stage& at, const Loop& block, int lanes) {
  if (Tensor rf = nn::vector_partials(s, stat, lanes); rf.defined()) s[rf].compute_at(at, block);
  s[stat].compute_at(at, block);
}

void schedule_attention(Schedule& s, const Tensor& main, TemplateKnobs&) {
  const Tensor out = nn::epilogue_target(s, main);
  const std::optional<AttentionStages> a = find_stages(main);
  if (!a) {  // a version for few rows (a decoding step's one): each stage on its own
    nn::inline_injective_except(s, out, {out, nn::find_tagged(main, "attention_exp")});
    for (const Tensor& t : tensor_ir::topological_order({main}))
      if (tag_of(t) == std::string("matmul")) nn::schedule_unpacked_product(s, t);
    return;
  }
  nn::inline_injective_except(s, out, {out, a->exp, a->keys, a->values});
  const int lanes = s.hardware().lanes(out.dtype());
  schedule_panels(s, a->keys);
  schedule_panels(s, a->values);

  // Blocks of query rows, each one task; the output's tiles within them.
  Stage& y = s[out];
  const auto* oc = out.as<ComputeOp>();
  const size_t last = oc->axis.size() - 1;
  const int64_t rows = dim_hint(a->weighted, a->weighted.ndim() - 2);  // padded to whole tiles
  const int64_t mr = tensor_ir::ops::matmul_tile_rows(rows, s.hardware().registers);
  const int64_t nr = dim_hint(a->values, a->values.ndim() - 1), nrs = dim_hint(a->keys, a->keys.ndim() - 1);
  std::vector<Loop> batch;
  for (size_t d = 0; d + 1 < last; ++d) batch.push_back(y.loop(oc->axis[d]));
  auto tiles = y.tile(y.loop(oc->axis[last - 1]), y.loop(oc->axis[last]), mr, nr);  // io, co, ii, ci
  batch.push_back(tiles[0]);
  const Loop block = nn::fuse_all(y, batch);
  // Per score: the depth's multiply-adds, the value columns', and about 16 for its exponential.
  const int64_t work =
      nn::num_elements(a->scores) * (nn::reduction_volume(a->scores.as<ComputeOp>()) + dim_hint(out, last) + 16);
  parallel_if_worth(y, block, out, work, nn::kMinParallelWork);
  y.unroll(tiles[2]);
  nn::vectorize_in_registers(y, tiles[3], nr, lanes);

  // The block's scores, a register tile per panel of keys.
  const Tensor tile = s.cache_write(a->scores, "local");
  Stage& scores = s[a->scores];
  scores.compute_at(y, block);
  const auto* sc = scores.op().as<ComputeOp>();
  const size_t nb = sc->axis.size() - 2;
  auto [panel, column] = scores.split(scores.loop(sc->axis[nb + 1]), nrs);
  const Loop row = scores.loop(sc->axis[nb]);
  scores.reorder({panel, row, column});
  scores.unroll(row);
  nn::vectorize_in_registers(scores, column, nrs, lanes);
  s[tile].compute_at(scores, panel);
  schedule_tile_product(s[tile], nrs, lanes);

  schedule_row_stat(s, a->max, y, block, lanes);
  Stage& e = s[a->exp];
  e.vectorize(e.split(e.loop(e.op().as<ComputeOp>()->axis.back()), lanes).second);
  e.compute_at(y, block);
  schedule_row_stat(s, a->sum, y, block, lanes);

  Stage& w = s[a->weighted];
  w.compute_at(y, tiles[1]);
  schedule_tile_product(w, nr, lanes);
}

}  // namespace

void add_nn_attention_templates(std::map<std::string, TunableTemplate>& t) { t["attention"] = schedule_attention; }

}  // namespace tessera::schedule
