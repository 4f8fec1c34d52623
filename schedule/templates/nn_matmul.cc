// The matmul template (tags "matmul", "matmul_epilogue"), the schedule of BLIS and OpenBLAS in
// schedule primitives: the packed B panel (Bp[jo, k, ji], from the compute definition) is
// written by a vectorized parallel loop; the result is computed tile by tile, mr x nr
// accumulators (8 rows x two vectors: 16 of the 32 AVX-512 registers; three vectors where that
// makes whole panels) held in registers over the whole reduction (the product stage computed at
// the tile, rows unrolled, columns vectorized, k unrolled by 4), and the epilogue (copy, cast,
// alpha/beta/bias) stores the tile.
// Panels packed ahead of time ("matmul_prepacked", a copy of an input, inlined) are read as
// they are. Products left unpacked (few rows) accumulate output vectors in place, or, where an
// operand is read along k only (trans_b), take the reduction template's dot products along k.
#include "schedule/templates/extent_hint.h"
#include "schedule/templates/math.h"
#include "schedule/templates/nn.h"
#include "tensor_ir/ops/nn.h"
#include "tensor_ir/substitute.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace nn {

// A panel packed inside the parallel loop lives on the worker's stack up to this size.
constexpr int64_t kMaxLocalPanel = 128 * 1024;

// Fewer panels than this leave each thread so few that one partial panel unbalances them.
constexpr int64_t kFewPanels = 16;

// The largest B that row tiles outermost stream through whole, each tile reading all of it: half
// of a 2 MB L2, so it stays there beside A's tiles (a small transformer's 1 MB feed-forward
// weights: benchmarks/NOTES.md, "Matrix-product templates").
constexpr int64_t kMaxStreamedB = 1024 * 1024;

// The tile's rows (knob "matmul.tile_rows"): the product pads its rows to whole multiples of
// matmul_tile_rows (8, or 7 where that pads none; 6 or 5 with 16 registers, 4 for 7 or 8 rows),
// and a tile may take two of them where the accumulators fit. Rows of 7 (the positions of a 14x14
// plane, as a 1x1 convolution with few positions has them) leave half the registers idle and read 7 of the 16 positions
// each cache line of an input channel holds, then the next tile the other 9: tiles of 14 read whole rows of the plane
// (benchmarks/NOTES.md, "Matrix-product templates"). `accumulators`: how many the registers hold beside B's vectors and
// A's broadcast (28 of 32).
int64_t tile_rows(int64_t m, int64_t mr, int64_t vectors, int64_t accumulators, TemplateKnobs& knobs) {
  if (m % (2 * mr) != 0 || 2 * mr * vectors > accumulators) return mr;
  return knobs.choose_flag("matmul.tile_rows", mr == 7) ? 2 * mr : mr;
}

// The rows whose multiply-adds take as long as reading B once (see `work` below).
constexpr int64_t kStreamedRows = 3;

// Independent sums a tile keeps in flight: two FMA units, each taking 4 cycles from its inputs
// to its result.
constexpr int64_t kMinChains = 8;

// Panels side by side in one tile (knob "matmul.tile_panels"). A tile of few rows (a
// matrix-vector product: 1 x 2 vectors) holds few accumulators, each a chain of dependent FMAs
// whose latency, not the FMA units, then bounds the product; it takes the fewest panels that
// keep kMinChains sums in flight (or come closest) and that the registers hold beside A's
// broadcast and one vector of B, a divisor of the panel count so that no tile is partial.
int64_t tile_panels(int64_t accumulators, int64_t panels, int64_t registers, TemplateKnobs& knobs) {
  int64_t q = 1;
  for (int64_t d = 2; accumulators * q < kMinChains && accumulators * d + 2 <= registers; ++d)
    if (panels % d == 0) q = d;
  return knobs.choose("matmul.tile_panels", {q, 1});
}

// How many runs of row tiles to share out: the largest divisor of `row_tiles` up to 8, so every
// run is whole; 1 when that is under 4 (too few to balance anything).
int64_t row_chunks(int64_t row_tiles) {
  for (int64_t c = 8; c >= 4; --c)
    if (row_tiles % c == 0) return c;
  return 1;
}

void schedule_matmul_tiles(Schedule& s, const Tensor& out, const Tensor& product, const Tensor& packed,
                           std::vector<Loop> batch, const Loop& rows, const Loop& cols, int64_t columns,
                           TemplateKnobs& knobs, bool rows_contiguous) {
  const auto* pc = product.as<ComputeOp>();
  size_t nb = pc->axis.size() - 2;
  int64_t m = dim_hint(product, nb);  // padded to whole tiles
  int64_t nr = dim_hint(packed, packed.ndim() - 1);
  const int64_t vectors = nr / s.hardware().lanes(product.dtype());
  int64_t mr = tile_rows(m, tensor_ir::ops::matmul_tile_rows(m, s.hardware().registers), vectors,
                         s.hardware().registers.count - 4, knobs);
  int64_t k = dim_hint(packed, packed.ndim() - 2);
  Stage& b = s[packed];
  bool copied = b.attach_kind() != AttachKind::Inline;  // not when they come packed
  // Panels packed in the kernel are packed one per tile.
  const int64_t tile_cols =
      copied ? nr
             : nr * tile_panels(mr * vectors, dim_hint(packed, packed.ndim() - 3), s.hardware().registers.count, knobs);
  // A panel packed inside the tile loops lives in a buffer of its own size (on the heap when its
  // depth is symbolic, allocated once per panel: a small cost beside the panel's k x nr x m work).
  const bool local_panel = k * nr * packed.dtype().element_bytes() <= kMaxLocalPanel;

  Stage& o = s[out];
  auto tiles = o.tile(rows, cols, mr, tile_cols);  // io, jo, ii, ji
  Stage& p = s[product];
  // Few rows are bound by reading B, not by the multiply-adds: an element of B costs about three
  // of them (a matrix-vector product runs at a third of the FMA units' rate), so B counts as 3 rows.
  const int64_t work =
      std::max(num_elements(product), kStreamedRows * num_elements(product) / std::max<int64_t>(m, 1)) * k;
  bool parallel = knobs.choose_flag("matmul.parallel", worth_parallel(product, work, kMinParallelWork));
  // Panels outermost when there are enough of them for the threads: each is packed right before
  // its row tiles use it (so it is read from cache, not memory) and stays there across them; A
  // is re-read once per panel, 4x less traffic than B once per row tile (nr = 4 mr). But then
  // the threads split the columns, and each writes a share of every row of the result: the
  // kernel after it, splitting by rows, reads half its input from the other core's writes, which
  // costs a third to a half more on two cores. So rows go outermost where B stays in a core's
  // cache while every row tile streams through it (kMaxStreamedB), there are enough row tiles to
  // share out (8) and B does not outweigh A by more than 4 times (the weights of a layer with few
  // positions, read once per thread otherwise). Neither order wins everywhere, so it is a knob
  // (benchmarks/NOTES.md, "Matrix-product templates").
  int64_t panels = 1;  // of the tiles' width
  for (size_t d = 0; d + 2 < packed.ndim(); ++d) panels *= dim_hint(packed, d);
  panels /= tile_cols / nr;
  // Rows of symbolic count are judged at their hint, as a static product of that many rows is:
  // the version of a kernel for 8 to 127 rows (driver/row_count_versions.h, hinted at 64) keeps
  // its panels outermost where B is wider than 4 x 64, so at 16 rows each thread reads half of B,
  // not all of it.
  const bool many_rows = m / mr >= 8 && columns <= 4 * m;
  bool rows_first = many_rows && k * columns * packed.dtype().element_bytes() <= kMaxStreamedB;
  bool panel_outer = knobs.choose_flag("matmul.panel_outer", panels >= 4 && !rows_first);
  int64_t k_unroll = knobs.choose("matmul.k_unroll", {4, 2, 8});
  Loop tile;
  if (panel_outer) {
    o.reorder({tiles[1], tiles[0]});
    batch.push_back(tiles[1]);
    int64_t chunks = row_chunks(m / mr);
    if (copied && panels < kFewPanels && columns % nr != 0 && chunks > 1) {
      // Few panels, packed as they go, the last one partial: the loop partitioner runs that one
      // apart, on one thread while the others wait. Instead each thread takes a run of row
      // tiles through every panel (packing its own copy of each), the partial one included.
      batch.pop_back();
      auto [chunk, rest] = o.split_nparts(tiles[0], chunks);
      o.reorder({chunk, tiles[1], rest});
      batch.push_back(chunk);
      Loop outer = fuse_all(o, batch);
      if (parallel) parallel_above(o, outer, product, kMinParallelWork);
      tile = rest;
      if (local_panel) b.compute_at(o, tiles[1]);
    } else if (copied) {
      Loop panel = fuse_all(o, batch);
      if (parallel) parallel_above(o, panel, product, kMinParallelWork);
      tile = tiles[0];
      if (local_panel) b.compute_at(o, panel);
    } else {
      // Panels packed ahead of time: the threads share out (panel, row tile) pairs, each a run
      // of consecutive ones, so 3 or 5 panels do not leave a thread idle for a third or a
      // fifth of the time.
      batch.push_back(tiles[0]);
      tile = fuse_all(o, batch);
      if (parallel) parallel_above(o, tile, product, kMinParallelWork);
    }
  } else {
    batch.push_back(tiles[0]);
    batch.push_back(tiles[1]);
    tile = fuse_all(o, batch);
    if (parallel) parallel_above(o, tile, product, kMinParallelWork);
  }
  int lanes = s.hardware().lanes(out.dtype());
  if (rows_contiguous) {  // each column's rows are a vector (read from the tile by a gather)
    o.reorder({tiles[3], tiles[2]});
    o.unroll(tiles[3]);
    o.vectorize(tiles[2]);
  } else {
    o.unroll(tiles[2]);
    vectorize_in_registers(o, tiles[3], tile_cols, lanes);
  }

  p.compute_at(o, tile);
  Loop i = p.loop(pc->axis[nb]), j = p.loop(pc->axis[nb + 1]);
  auto [ko, ki] = p.split(p.loop(pc->reduce_axis()[0]), k_unroll);
  p.reorder({ko, ki, i, j});
  vectorize_in_registers(p, j, tile_cols, s.hardware().lanes(product.dtype()));
  p.unroll(ki);
  p.unroll(i);
  // Panels packed ahead of time are read from memory (a model's weights outgrow the caches):
  // the tiles of one panel fetch the next panel a share per reduction step, so its first tile
  // does not wait on memory. The next panel is one step of the panel loop fused into the tiles':
  // with panels outer a panel's row tiles ahead (however many symbolic rows make), otherwise the
  // next tile.
  bool prefetch = knobs.choose_flag("matmul.prefetch", true);
  if (!copied && prefetch) p.prefetch(stored_source(s, packed), ko, o, tiles[1], 1);

  if (!copied) return;
  const auto* bc = packed.as<ComputeOp>();
  b.vectorize(b.loop(bc->axis.back()));
  if (b.attach_kind() == AttachKind::Root) {
    std::vector<Loop> outer;
    for (size_t d = 0; d + 2 < bc->axis.size(); ++d) outer.push_back(b.loop(bc->axis[d]));
    Loop fused = fuse_all(b, outer);
    parallel_if_worth(b, fused, packed, num_elements(packed), kMinParallelWork / 8);
  }
}

namespace {

// Whether an operand of the unpacked product reads along the product's last axis other than as
// its innermost index (B read transposed, or A's rows in a matrix-vector product): vectors along
// that axis would gather.
bool reads_columns_strided(Schedule& s, const Tensor& product) {
  const auto* c = product.as<ComputeOp>();
  const auto* r = c->body.as<tensor_ir::Reduce>();
  if (!r || c->axis.empty()) return false;
  const tensor_ir::VarNode* j = c->axis.back().var().get();
  for (const Expr& e : leaf_loads(s, r->source)) {
    const auto& idx = e.as<tensor_ir::ProducerLoad>()->indices;
    for (size_t d = 0; d + 1 < idx.size(); ++d)
      if (tensor_ir::uses_var(idx[d], j)) return true;
  }
  return false;
}

}  // namespace

void schedule_unpacked_product(Schedule& s, const Tensor& product) {
  if (reads_columns_strided(s, product)) schedule_reduction_stage(s, product);
  else schedule_generic_stage(s, product);
}

}  // namespace nn

namespace {

// The output's last dimension is the product's columns and the one before its rows, or, when
// the left operand's batch dimensions were folded into the rows (a weight without batch
// dimensions), all the dimensions after the product's batch ones but the last.
void schedule_packed(Schedule& s, const Tensor& out, const Tensor& product, const Tensor& packed,
                     TemplateKnobs& knobs) {
  const auto* oc = out.as<ComputeOp>();
  size_t nb = product.as<ComputeOp>()->axis.size() - 2, last = oc->axis.size() - 1;
  int64_t rows = 1;
  for (size_t d = nb; d < last; ++d) rows *= dim_hint(out, d);
  int64_t padded = dim_hint(product, nb), mr = tensor_ir::ops::matmul_tile_rows(padded, s.hardware().registers);
  if (last < nb + 1 || (rows + mr - 1) / mr * mr != padded) nb = last - 1;  // an epilogue broadcasting the product
  Stage& o = s[out];
  std::vector<Loop> batch, row_dims;
  for (size_t d = 0; d < last; ++d) (d < nb ? batch : row_dims).push_back(o.loop(oc->axis[d]));
  nn::schedule_matmul_tiles(s, out, product, packed, batch, nn::fuse_all(o, row_dims), o.loop(oc->axis[last]),
                            dim_hint(out, last), knobs);
}

void schedule_matmul(Schedule& s, const Tensor& main, TemplateKnobs& knobs) {
  Tensor product = nn::find_tagged(main, "matmul");
  Tensor packed = nn::find_tagged(main, "matmul_pack");
  if (!packed.defined()) packed = nn::find_tagged(main, "matmul_prepacked");  // inlined below
  Tensor out = packed.defined() && !main.same_as(product) ? nn::epilogue_target(s, main) : main;
  // `out` stays even when it is not the kernel's output (an epilogue the tiles cannot take).
  nn::inline_injective_except(s, out, {out, product, nn::find_tagged(main, "matmul_pack")});
  if (packed.defined() && !out.same_as(product)) {
    schedule_packed(s, out, product, packed, knobs);
    return;
  }
  nn::schedule_unpacked_product(s, product);
  if (!out.same_as(product)) schedule_generic_stage(s, out);
}

}  // namespace

void add_nn_matmul_templates(std::map<std::string, TunableTemplate>& t) {
  t["matmul"] = schedule_matmul;
  t["matmul_epilogue"] = schedule_matmul;
}

}  // namespace tessera::schedule
