#include "schedule/templates/gpu.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "runtime/error.h"
#include "schedule/templates/cpu.h"
#include "schedule/templates/extent_hint.h"
#include "schedule/templates/math.h"
#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"
#include "tensor_ir/structural.h"

namespace tessera::schedule {

namespace {

using tensor_ir::ComputeOp;
using tensor_ir::IterKind;

int64_t extent(const tensor_ir::IterVar& iv) { return extent_hint(iv->dom.extent); }

int64_t product(const std::vector<tensor_ir::IterVar>& axes) {
  int64_t n = 1;
  for (const auto& iv : axes) n *= extent(iv);
  return n;
}

int64_t longest_extent(const std::vector<tensor_ir::IterVar>& axes) {
  int64_t n = 0;
  for (const auto& iv : axes) n = std::max(n, extent(iv));
  return n;
}

// A reduction is shared by a block's threads when one of its loops is long and there are too few
// outputs to keep a GPU busy with a thread each.
constexpr int64_t kSharedReductionMinLength = 64;
constexpr int64_t kSharedReductionMaxOutputs = 8192;
constexpr int64_t kThreadsPerBlock = 256;
// Shared-memory panels (GpuScheduler::shared_panels): at most 16 x 16 threads of tiles per
// block, for reductions of at least 16 terms, in steps of at most 16.
constexpr int64_t kPanelThreadsPerAxis = 16;
constexpr int64_t kPanelMinReduction = 16;
constexpr int64_t kPanelDepth = 16;
// Tiled transposes (GpuScheduler::tiled_transpose): tiles of 32 x 32 outputs, a block of 32 x 8
// threads each computing four rows.
constexpr int64_t kTransposeTile = 32;
constexpr int64_t kTransposeRows = 8;

// The outputs along one axis that a thread of a register-tiled reduction computes: each value it
// loads serves that many of them. A divisor of the extent, so that every tile is whole and its
// accumulators, indexed by constants once unrolled, stay in registers.
int64_t tile_length(int64_t extent) {
  for (int64_t tile : {4, 2})
    if (extent % tile == 0 && extent >= 2 * tile) return tile;
  return 1;
}

// A thread's tile of a stage's outputs: `tj` along its last axis, `ti` along axis `i`, its
// longest other one (ti is 1 for a stage of one axis).
struct RegisterTile {
  size_t i = 0;
  int64_t ti = 1, tj = 1;
  bool worthwhile() const { return ti * tj > 1; }
};

// Lengths of a tile along an axis of `extent`: the template's tile_length() first, then the other
// divisors of the extent up to 8.
std::vector<int64_t> tile_options(int64_t extent) {
  std::vector<int64_t> options{tile_length(extent)};
  for (int64_t t : {1, 2, 4, 8})
    if (extent % t == 0) options.push_back(t);
  return options;
}

// The tile's axes, its lengths asked of `knobs` (as NAME.tile_i and NAME.tile_j).
RegisterTile register_tile(const ComputeOp& c, const std::string& name, TemplateKnobs& knobs) {
  RegisterTile t;
  if (c.axis.empty()) return t;
  const size_t j = c.axis.size() - 1;
  t.i = j;
  for (size_t d = 0; d < j; ++d)
    if (t.i == j || extent(c.axis[d]) > extent(c.axis[t.i])) t.i = d;
  if (t.i != j) t.ti = knobs.choose(name + ".tile_i", tile_options(extent(c.axis[t.i])));
  t.tj = knobs.choose(name + ".tile_j", tile_options(extent(c.axis[j])));
  return t;
}

int array_inputs(const Tensor& op) {
  int inputs = 0;
  for (const Tensor& t : tensor_ir::input_tensors(op))
    if (!t->shape.empty()) ++inputs;
  return inputs;
}

// A reduction over one axis of two inputs (matmul, batch matmul, dense): the block's panels are
// then its rows of one input and columns of the other, (ty * ti + tx * tj) x depth values.
bool is_matrix_product(const Tensor& op) {
  const auto* c = op.as<ComputeOp>();
  return c && c->reduce_axis().size() == 1 && array_inputs(op) == 2;
}

// A reduction whose blocks may stage their inputs in shared memory, a slice of its longest
// reduction axis at a time: one that combines two or more arrays over a long enough axis (a
// matrix product; a convolution, over a slice of its input channels and the whole window).
bool takes_panels(const Tensor& op) {
  const auto* c = op.as<ComputeOp>();
  return c && !c->reduce_axis().empty() && longest_extent(c->reduce_axis()) >= kPanelMinReduction &&
         array_inputs(op) >= 2;
}

// The longest of `axes` (not empty), the first of equals: the reduction axis panels step along
// and the one a block's threads share.
const tensor_ir::IterVar& longest_axis(const std::vector<tensor_ir::IterVar>& axes) {
  return *std::max_element(axes.begin(), axes.end(),
                           [](const auto& a, const auto& b) { return extent(a) < extent(b); });
}

const tensor_ir::IterVar& panel_axis(const ComputeOp& r) { return longest_axis(r.reduce_axis()); }

// The shared memory one step's panels take: per input, the box its reads cover while a block's
// tiles (`along[d]` outputs of axis d) and `depth` terms of the panel axis run, in bytes.
int64_t panel_bytes(const Tensor& op, const std::vector<int64_t>& along, int64_t depth) {
  const ComputeOp& r = *op.as<ComputeOp>();
  tensor_ir::arith::BoundMap vars;
  for (size_t d = 0; d < r.axis.size(); ++d) vars[r.axis[d].var().get()] = {0, along[d] - 1};
  for (const auto& k : r.reduce_axis())
    vars[k.var().get()] = {0, (k.same_as(panel_axis(r)) ? depth : extent(k)) - 1};
  int64_t bytes = 0;
  for (const Tensor& input : tensor_ir::input_tensors(op)) {
    if (input->shape.empty()) continue;
    int64_t elements = 1;
    for (size_t d = 0; d < input.ndim(); ++d) {
      int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
      for (const tensor_ir::ProducerLoad* load : tensor_ir::loads_in(r.body, input.get())) {
        const auto b = tensor_ir::arith::const_bound(load->indices[d], vars);
        if (!b.bounded()) return std::numeric_limits<int64_t>::max();
        lo = std::min(lo, b.min), hi = std::max(hi, b.max);
      }
      elements *= std::min(hi - lo + 1, dim_hint(input, d));
    }
    bytes += elements * input.dtype().element_bytes();
  }
  return bytes;
}

// Whether a consumer of `reduction` with these loops can compute it in its register tiles: loops
// of the same extents, or any of its own size when every extent is a constant. A consumer that
// reshaped the product at symbolic sizes reads it through divisions by the sizes, and the part a
// tile needs then has no constant size, which registers must have.
bool tiles_hold_reduction(const ComputeOp& consumer, const ComputeOp& reduction) {
  auto constant = [](const ComputeOp& c) {
    return std::all_of(c.axis.begin(), c.axis.end(),
                       [](const auto& a) { return tensor_ir::as_const_int(a->dom.extent); });
  };
  if (constant(consumer) && constant(reduction)) return product(consumer.axis) == product(reduction.axis);
  if (consumer.axis.size() != reduction.axis.size()) return false;
  for (size_t d = 0; d < consumer.axis.size(); ++d)
    if (!tensor_ir::structural_equal(consumer.axis[d]->dom.extent, reduction.axis[d]->dom.extent)) return false;
  return true;
}

bool shares_reduction(const ComputeOp& c) {
  return longest_extent(c.reduce_axis()) >= kSharedReductionMinLength &&
         (product(c.axis) <= kSharedReductionMaxOutputs || c.axis.empty());
}

// The knobs of a reduction computed in register tiles, asked of every reduction that may be.
struct TilePlan {
  Stage* reduction = nullptr;
  RegisterTile tile;
  bool panels = false;  // the knob: whether the block may stage inputs in shared memory
  int64_t panel_depth = kPanelDepth;
  int64_t block_x = kPanelThreadsPerAxis, block_y = kPanelThreadsPerAxis;  // the most tiles per block axis
};

// Whether `consumer` reads `producer` (through the stages inlined into it) only at its own index:
// the element its thread computes.
bool reads_own_element(Schedule& s, const ComputeOp& consumer, const Tensor& producer) {
  for (const Expr& e : leaf_loads(s, consumer.body)) {
    const auto* load = e.as<tensor_ir::ProducerLoad>();
    if (!load->tensor.same_as(producer)) continue;
    if (load->indices.size() != consumer.axis.size()) return false;
    for (size_t d = 0; d < load->indices.size(); ++d)
      if (!tensor_ir::structural_equal(load->indices[d], Expr(consumer.axis[d].var()))) return false;
  }
  return true;
}

class GpuScheduler {
 public:
  GpuScheduler(Schedule& s, const GpuParams& gpu, TemplateKnobs& knobs) : s_(s), gpu_(gpu), knobs_(knobs) {}

  void run() {
    for (const Tensor& out : s_.outputs()) inline_injective_producers(s_, out);
    ask_thread_knobs();
    plan_register_tiles();
    // Outputs first, then the reductions left at the root, from the last stage to the first: a
    // reduction may then compute inside its consumer's thread.
    const auto& stages = s_.stages();
    std::vector<Stage*> order;
    for (const auto& st : stages)
      if (st->is_output()) order.push_back(st.get());
    for (auto it = stages.rbegin(); it != stages.rend(); ++it)
      if (!(*it)->is_output()) order.push_back(it->get());
    for (Stage* st : order) schedule_stage(*st);
  }

 private:
  // Threads per block of every stage that may get a thread per element or register tiles, and
  // of every reduction its block's threads may share: asked whether used or not, so that every
  // answer asks the same knobs.
  void ask_thread_knobs() {
    const int64_t most = gpu_.max_threads_per_block;
    for (const auto& st : s_.stages()) {
      const auto* c = st->op().as<ComputeOp>();
      if (!c || st->attach_kind() == AttachKind::Inline) continue;
      if (!c->axis.empty()) {
        std::vector<int64_t> options{std::min(kThreadsPerBlock, most)};
        for (int64_t t : {64, 128, 512, 1024})
          if (t <= most) options.push_back(t);
        threads_[st.get()] = knobs_.choose(st->name() + ".threads", options);
      }
      if (shares_reduction(*c) || (c->axis.empty() && !c->reduce_axis().empty())) {
        const int64_t own = reduction_threads(longest_extent(c->reduce_axis()));
        std::vector<int64_t> options{own};
        for (int64_t t = std::max(gpu_.warp_size, 32); t <= std::min(kThreadsPerBlock * 2, most); t *= 2)
          options.push_back(t);
        reduce_threads_[st.get()] = knobs_.choose(st->name() + ".reduce_threads", options);
      }
    }
  }

  void schedule_stage(Stage& st) {
    const auto* c = st.op().as<ComputeOp>();
    if (!c || st.attach_kind() != AttachKind::Root || st.has_loop_schedule()) return;
    const int64_t outputs = product(c->axis);
    if (shares_reduction(*c)) {
      share_reduction(st.op());
      return;
    }
    if (auto it = tiled_.find(&st); it != tiled_.end()) {
      register_tiles(st, it->second);
      return;
    }
    if (!c->reduce_axis().empty() && compute_in_consumer(st)) return;
    if (gpu_.dedicated_shared_memory && tiled_transpose(st)) return;
    if (c->axis.empty()) {  // a scalar: lowering runs one that reduces nothing on a thread of its own
      if (!c->reduce_axis().empty()) share_reduction(st.op());
      return;
    }
    thread_per_element(st, outputs);
  }

  // An injective stage that reads an array with its last index along another of the stage's axes
  // than the last, and with the stage's last axis in another index, transposes it: neighbouring
  // threads of a thread per element would read elements far apart. Instead each block stages a
  // tile of it in shared memory, read row by row (neighbouring threads reading neighbours), and
  // its threads write the tile of outputs from there, row by row too. The tile's rows are padded
  // by one element, so that the threads of a warp reading down a column meet different banks.
  bool tiled_transpose(Stage& st) {
    const auto* c = st.op().as<ComputeOp>();
    if (!c->reduce_axis().empty() || c->axis.size() < 2) return false;
    const size_t j = c->axis.size() - 1;
    auto is_axis = [&](const Expr& index, size_t d) { return index.get() == c->axis[d].var().get(); };
    for (const tensor_ir::ProducerLoad* load : tensor_ir::loads_in(c->body)) {
      const Tensor& input = load->tensor;
      // Read once, so that the tile is all of it the block reads.
      if (input->shape.size() < 2 || (input.as<ComputeOp>() && s_[input].attach_kind() == AttachKind::Inline) ||
          tensor_ir::loads_in(c->body, input.get()).size() != 1)
        continue;
      const Expr& last = load->indices.back();
      const auto a = std::find_if(c->axis.begin(), c->axis.end() - 1, [&](const auto& iv) { return last.get() == iv.var().get(); });
      if (a == c->axis.end() - 1 || std::none_of(load->indices.begin(), load->indices.end() - 1,
                                                 [&](const Expr& e) { return is_axis(e, j); }))
        continue;
      const size_t i = static_cast<size_t>(a - c->axis.begin());
      if (extent(c->axis[i]) < kTransposeTile || extent(c->axis[j]) < kTransposeTile) return false;
      stage_transpose(st, i, input);
      return true;
    }
    return false;
  }

  void stage_transpose(Stage& st, size_t i, const Tensor& input) {
    const std::vector<Loop> axes = st.leaf_loops();
    const size_t j = axes.size() - 1;
    auto [jo, ji] = st.split(axes[j], kTransposeTile);
    auto [io, ii] = st.split(axes[i], kTransposeTile);
    auto [rows, row] = st.split(ii, kTransposeRows);  // ii = rows * kTransposeRows + row
    std::vector<Loop> order;
    for (size_t d = 0; d < j; ++d)
      if (d != i) order.push_back(axes[d]);
    for (const Loop& l : {io, jo, row, ji, rows}) order.push_back(l);
    st.reorder(order);
    Loop block = order[0];
    for (size_t k = 1; order[k] != row; ++k) block = st.fuse(block, order[k]);
    st.bind(block, "blockIdx.x");
    st.bind(row, "threadIdx.y");
    st.bind(ji, "threadIdx.x");
    Stage& tile = s_[s_.cache_read(input, "shared", {st.op()})];
    tile.compute_at(st, block);
    tile.set_storage_align(static_cast<int>(input->shape.size()) - 2, kTransposeTile, 1);
    // Its rows and columns split apart, not fused: the tile is clipped at the tensor's edges, and
    // a fused loop of clipped extents would divide by them to find each element.
    const std::vector<Loop> dims = tile.leaf_loops();
    auto [rounds, y] = tile.split(dims[dims.size() - 2], kTransposeRows);
    auto [one, x] = tile.split(dims.back(), kTransposeTile);
    std::vector<Loop> tile_order(dims.begin(), dims.end() - 2);
    for (const Loop& l : {one, rounds, y, x}) tile_order.push_back(l);
    tile.reorder(tile_order);
    tile.bind(y, "threadIdx.y");
    tile.bind(x, "threadIdx.x");
  }

  // Fuses the stage's data-parallel loops (which come first) into one.
  static Loop fuse_data_loops(Stage& st) {
    Loop fused;
    for (const Loop& l : std::vector<Loop>(st.leaf_loops()))
      if (l->kind == IterKind::DataPar) fused = fused ? st.fuse(fused, l) : l;
    return fused;
  }

  void thread_per_element(Stage& st, int64_t elements) {
    const int64_t threads = std::min(threads_.at(&st), std::max<int64_t>(elements, 1));
    auto [block, thread] = st.split(fuse_data_loops(st), threads);
    st.bind(block, "blockIdx.x");
    st.bind(thread, "threadIdx.x");
    thread_loop_[&st] = thread;
  }

  // The reductions to compute in register tiles, each with the stage of its own size that reads
  // it: its only consumer, or (for an output) the copy a cache_write makes. Each one's tile knobs
  // are asked whatever they answer; a tile of one element leaves it to a thread per element.
  void plan_register_tiles() {
    std::vector<Stage*> stages;
    for (const auto& st : s_.stages()) stages.push_back(st.get());
    for (Stage* st : stages) {
      const auto* c = st->op().as<ComputeOp>();
      if (!c || c->reduce_axis().empty() || c->axis.empty() || shares_reduction(*c) ||
          st->attach_kind() != AttachKind::Root || st->has_loop_schedule())
        continue;
      if (st->is_output()) {
        TilePlan plan = ask_tile_knobs(*st, *st);
        if (!plan.tile.worthwhile()) continue;
        plan.reduction = &s_[s_.cache_write(st->op(), "local")];
        tiled_[st] = plan;
        continue;
      }
      // Of its own size: the same elements, maybe reshaped (a matrix product whose batch the
      // graph flattened); an injective stage, its loops not yet scheduled.
      const std::vector<Stage*> consumers = computed_consumers(*st);
      const auto* reader = consumers.size() == 1 ? consumers[0]->op().as<ComputeOp>() : nullptr;
      if (reader && reader->reduce_axis().empty() && consumers[0]->attach_kind() == AttachKind::Root &&
          !consumers[0]->has_loop_schedule() && tiles_hold_reduction(*reader, *c) &&
          asked_.insert(consumers[0]).second) {
        TilePlan plan = ask_tile_knobs(*consumers[0], *st);
        plan.reduction = st;
        if (plan.tile.worthwhile()) tiled_[consumers[0]] = plan;
      }
    }
  }

  // The tile of `consumer` and, where `reduction` is a long matrix product on a device whose
  // shared memory is on the chip, the shape of its shared-memory panels.
  TilePlan ask_tile_knobs(const Stage& consumer, const Stage& reduction) {
    TilePlan plan;
    plan.tile = register_tile(*consumer.op().as<ComputeOp>(), consumer.name(), knobs_);
    if (!gpu_.dedicated_shared_memory || !takes_panels(reduction.op())) return plan;
    const std::string& name = reduction.name();
    plan.panels = knobs_.choose_flag(name + ".panels", true);
    plan.panel_depth = knobs_.choose(name + ".panel_depth", {kPanelDepth, 8, 32});
    plan.block_x = knobs_.choose(name + ".block_x", {kPanelThreadsPerAxis, 8, 32});
    plan.block_y = knobs_.choose(name + ".block_y", {kPanelThreadsPerAxis, 8, 32});
    return plan;
  }

  // Each thread computes a register tile of the consumer's outputs, with the reduction computed
  // in registers for that tile: every value of an input that does not vary along a tile axis is
  // loaded once for the tile (a matrix product's rows of A for a tile's columns, a convolution's
  // weights for its pixels). Where the tile grid gives a block of at least two warps, the
  // reduction takes panels (a long matrix product or convolution), they fit and the device's
  // shared memory is on the chip, the block's threads also share its inputs: shared_panels().
  void register_tiles(Stage& consumer, const TilePlan& plan) {
    Stage& reduction = *plan.reduction;
    const auto* c = consumer.op().as<ComputeOp>();
    const auto [i, ti, tj] = plan.tile;
    const std::vector<Loop> axes = consumer.leaf_loops();
    const size_t j = axes.size() - 1;
    auto [jo, jj] = consumer.split(axes[j], tj);
    Loop io, ii;
    if (i != j) std::tie(io, ii) = consumer.split(axes[i], ti);
    // Tiles per block: tx along j by ty along i, where they divide the tile grid.
    const int64_t tx = i == j ? 1 : largest_divisor(extent(c->axis[j]) / tj, plan.block_x);
    const int64_t ty = i == j ? 1 : largest_divisor(extent(c->axis[i]) / ti, plan.block_y);
    const int64_t depth = plan.panels && tx * ty >= 2 * std::max(gpu_.warp_size, 32) &&
                                  tx * ty <= gpu_.max_threads_per_block
                              ? panel_depth(*c, reduction, plan, tx, ty)
                              : 0;
    const bool panels = depth > 0;
    std::vector<Loop> order;
    for (size_t d = 0; d < j; ++d)
      if (d != i) order.push_back(axes[d]);
    Loop thread, thread_y;
    if (panels) {
      auto [jb, jt] = consumer.split(jo, tx);
      auto [ib, it] = consumer.split(io, ty);
      for (const Loop& l : {ib, jb, it, jt, ii, jj}) order.push_back(l);
      thread = jt;
      thread_y = it;
    } else {
      for (const Loop& l : {io, jo, ii, jj})
        if (l) order.push_back(l);
    }
    consumer.reorder(order);
    const Loop first_inner = panels ? thread_y : ii ? ii : jj;
    Loop outer = order[0];
    for (size_t k = 1; order[k] != first_inner; ++k) outer = consumer.fuse(outer, order[k]);
    if (panels) {
      consumer.bind(outer, "blockIdx.x");
      consumer.bind(thread_y, "threadIdx.y");
      consumer.bind(thread, "threadIdx.x");
    } else {
      auto [block, t] = consumer.split(outer, threads_dividing(product(c->axis) / (ti * tj), threads_.at(&consumer)));
      consumer.bind(block, "blockIdx.x");
      consumer.bind(t, "threadIdx.x");
      thread = t;
    }
    for (const Loop& l : {ii, jj})
      if (l) consumer.unroll(l);
    reduction.compute_at(consumer, thread);
    reduction.set_scope("local");
    // The reduction outermost, the tile's outputs inside it, unrolled: they stay in registers.
    Loop panel_step;
    if (panels) {
      const auto& k = panel_axis(*reduction.op().as<ComputeOp>());
      panel_step = reduction.split(reduction.loop(k), depth).first;
    }
    std::vector<Loop> data, reduce;
    if (panel_step) reduce.push_back(panel_step);
    for (const Loop& l : reduction.leaf_loops())
      if (l != panel_step) (l->kind == IterKind::DataPar ? data : reduce).push_back(l);
    std::vector<Loop> reordered = reduce;
    reordered.insert(reordered.end(), data.begin(), data.end());
    reduction.reorder(reordered);
    for (const Loop& l : data) reduction.unroll(l);
    if (panels) shared_panels(reduction, panel_step, tx, ty);
  }

  // The terms of the panel axis a step of the block's panels takes: the most, up to the plan's
  // depth and dividing the axis, whose panels fill at most half the shared memory of a block (a
  // multiprocessor then holds two blocks or more, one computing while another loads); 0 when not
  // even two fit. A reduction whose loops are not its consumer's (a matrix product the graph
  // reshaped) is only ever a matrix product, whose panels always fit.
  int64_t panel_depth(const ComputeOp& consumer, const Stage& reduction, const TilePlan& plan, int64_t tx,
                      int64_t ty) const {
    const auto* r = reduction.op().as<ComputeOp>();
    const int64_t length = extent(panel_axis(*r));
    int64_t depth = largest_divisor(length, plan.panel_depth);
    std::vector<int64_t> along(consumer.axis.size(), 1);
    along.back() = tx * plan.tile.tj;
    along[plan.tile.i] *= ty * plan.tile.ti;
    bool same_axes = r->axis.size() == consumer.axis.size();
    for (size_t d = 0; same_axes && d < r->axis.size(); ++d) same_axes = extent(r->axis[d]) == extent(consumer.axis[d]);
    if (!same_axes) return is_matrix_product(reduction.op()) ? depth : 0;
    for (; depth >= 2; depth = largest_divisor(length, depth - 1))
      if (panel_bytes(reduction.op(), along, depth) <= gpu_.max_shared_memory_bytes / 2) return depth;
    return 0;
  }

  // Each step of the reduction's outer loop, the block's threads copy the part of every input the
  // block reads in that step into shared memory together (each a strided share), and the tiles are
  // computed from there: a block of tx x ty threads loads each value once instead of once per
  // thread that reads it. Lowering puts the barriers around the copies.
  void shared_panels(Stage& reduction, const Loop& step, int64_t tx, int64_t ty) {
    for (const Tensor& input : tensor_ir::input_tensors(reduction.op())) {
      if (input->shape.empty()) continue;
      const Tensor panel = s_.cache_read(input, "shared", {reduction.op()});
      Stage& copy = s_[panel];
      copy.compute_at(reduction, step);
      auto [rounds, in_block] = copy.split(fuse_data_loops(copy), tx * ty);
      auto [y, x] = copy.split(in_block, tx);
      copy.bind(y, "threadIdx.y");
      copy.bind(x, "threadIdx.x");
    }
  }

  static int64_t largest_divisor(int64_t n, int64_t at_most) {
    for (int64_t d = std::min(n, at_most); d > 1; --d)
      if (n % d == 0) return d;
    return 1;
  }

  // Threads per block for `tiles` tiles: the most that divide them, so that no thread of the last
  // block is left without a tile (its registers would then be sized at run time and spill to
  // memory), unless that is under a warp's worth; then the most a block has.
  static int64_t threads_dividing(int64_t tiles, int64_t threads) {
    const int64_t most = std::min(threads, tiles);
    const int64_t divisor = largest_divisor(tiles, most);
    return divisor >= 32 ? divisor : most;
  }

  // The template's threads for a reduction of `length` terms shared by a block: a warp, doubled
  // while each thread would still sum more than four terms.
  int64_t reduction_threads(int64_t length) const {
    int64_t threads = gpu_.warp_size > 1 ? gpu_.warp_size : 32;
    while (threads * 4 < length && threads * 2 <= std::min(kThreadsPerBlock, gpu_.max_threads_per_block)) threads *= 2;
    return threads;
  }

  // A block per output element; rfactor gives each thread a strided share of the longest
  // reduction loop (the others run in each thread), and the threads combine their partials.
  void share_reduction(const Tensor& t) {
    Stage& st = s_[t];
    const auto& longest = longest_axis(st.op().as<ComputeOp>()->reduce_axis());
    const int64_t threads = std::min(reduce_threads_.at(&st), gpu_.max_threads_per_block);
    Tensor partials = s_.rfactor(t, st.split(st.loop(longest), threads).second);
    Stage& combined = s_[t];
    if (Loop block = fuse_data_loops(combined)) combined.bind(block, "blockIdx.x");
    const Loop thread = combined.loop(combined.op().as<ComputeOp>()->reduce_axis()[0]);
    combined.bind(thread, "threadIdx.x");
    s_[partials].compute_at(combined, thread);
  }

  // A reduction whose one consumer is a stage of its own shape with a thread per element, reading
  // it at its own index: each thread computes the element it reads. (Read elsewhere, by a resize's
  // next axis, each thread would compute a region that its indices, maybe data, only bound.)
  bool compute_in_consumer(Stage& st) {
    const std::vector<Stage*> consumers = computed_consumers(st);
    if (consumers.size() != 1) return false;
    auto it = thread_loop_.find(consumers[0]);
    if (it == thread_loop_.end() || !same_shape(consumers[0]->op(), st.op())) return false;
    const auto* consumer = consumers[0]->op().as<ComputeOp>();
    if (!consumer || !reads_own_element(s_, *consumer, st.op())) return false;
    st.compute_at(*consumers[0], it->second);
    return true;
  }

  // The stages that read `st`, where a reader inlined into others stands for those.
  std::vector<Stage*> computed_consumers(const Stage& st) const {
    std::vector<Stage*> found;
    for (Stage* c : s_.consumers(st)) {
      if (c->attach_kind() != AttachKind::Inline) {
        if (std::find(found.begin(), found.end(), c) == found.end()) found.push_back(c);
        continue;
      }
      for (Stage* r : computed_consumers(*c))
        if (std::find(found.begin(), found.end(), r) == found.end()) found.push_back(r);
    }
    return found;
  }

  Schedule& s_;
  const GpuParams& gpu_;
  TemplateKnobs& knobs_;
  std::map<const Stage*, int64_t> threads_, reduce_threads_;  // ask_thread_knobs()
  std::map<const Stage*, Loop> thread_loop_;  // the thread loop of each stage with a thread per element
  std::map<const Stage*, TilePlan> tiled_;    // plan_register_tiles(): consumer -> its reduction's tiles
  std::set<const Stage*> asked_;              // the consumers whose tile knobs were asked
};

}  // namespace

std::unique_ptr<Schedule> default_gpu_schedule(const std::vector<Tensor>& outputs, const HardwareParams& hardware) {
  if (!hardware.is_gpu()) fail("default_gpu_schedule: the hardware is not a GPU's (build for opencl or cuda)");
  auto s = std::make_unique<Schedule>(outputs, hardware);
  DefaultKnobs knobs;
  apply_gpu_templates(*s, knobs);
  return s;
}

void apply_gpu_templates(Schedule& s, TemplateKnobs& knobs) {
  if (!s.hardware().is_gpu()) fail("apply_gpu_templates: the hardware is not a GPU's (build for opencl or cuda)");
  GpuScheduler(s, s.hardware().gpu, knobs).run();
}

}  // namespace tessera::schedule
