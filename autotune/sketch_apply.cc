// Applying a sketch: each stage's rule becomes schedule primitives whose parameters come from the
// decision tape. The tape is asked for the same decisions in the same order whatever their values
// (a decision a rule does not need is asked for and ignored), so every candidate of a sketch has
// the same decision layout and mutation and crossover work slot by slot.
#include <limits>
#include <map>

#include "autotune/sketch_rules.h"
#include "runtime/error.h"
#include "schedule/bound_inference.h"
#include "schedule/schedule.h"
#include "schedule/templates/cpu.h"
#include "tensor_ir/arith/const_bound.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"

namespace tessera::autotune {

using schedule::Loop;
using schedule::Schedule;
using schedule::Stage;
using tensor_ir::ComputeOp;
using tensor_ir::IterKind;

namespace {

// Unroll budgets (Ansor's auto_unroll_max_step): iterations unrolled from the innermost loop out,
// a vector counting once.
const std::vector<int64_t> kUnrollBudgets = {0, 16, 64, 512};
// Threads per block a GPU rule samples from (those the device allows).
const std::vector<int64_t> kThreadsPerBlock = {32, 64, 128, 256, 512, 1024};

DecisionSpec tile_spec(const std::string& name, int64_t extent, int levels, int64_t lanes) {
  DecisionSpec s;
  s.kind = DecisionSpec::Kind::Tile;
  s.name = name;
  s.extent = extent;
  s.levels = levels;
  s.vector_lanes = lanes;
  return s;
}

DecisionSpec choice_spec(const std::string& name, std::vector<int64_t> options, std::vector<double> weights = {}) {
  DecisionSpec s;
  s.name = name;
  s.options = std::move(options);
  s.weights = std::move(weights);
  return s;
}

// 0 .. n loops fused for threads; no threads at all is sampled rarely.
DecisionSpec parallel_spec(const std::string& name, size_t n) {
  std::vector<int64_t> options;
  std::vector<double> weights;
  for (size_t k = 0; k <= n; ++k) {
    options.push_back(static_cast<int64_t>(k));
    weights.push_back(k == 0 && n > 0 ? 0.2 : 1.0);
  }
  return choice_spec(name, options, weights);
}

std::vector<Loop> loops_of(const Stage& st, IterKind kind) {
  std::vector<Loop> out;
  for (const auto& l : st.leaf_loops())
    if (l->kind == kind) out.push_back(l);
  return out;
}

int64_t static_extent(const ComputeOp* c, const Loop& l) {
  for (size_t d = 0; d < c->axis.size(); ++d)
    if (c->axis[d].var().same_as(l->var)) return c->dim(d);
  for (const auto& r : c->reduce_axis())
    if (r.var().same_as(l->var)) {
      const int64_t* e = tensor_ir::as_const_int(r->dom.extent);
      return e ? *e : 1;
    }
  return 1;
}

// Fuses the first k loops of `loops` (k >= 2) in place.
void fuse_prefix(Stage& st, std::vector<Loop>& loops, size_t k) {
  if (k < 2) return;
  Loop fused = loops[0];
  for (size_t i = 1; i < k; ++i) fused = st.fuse(fused, loops[i]);
  loops.erase(loops.begin(), loops.begin() + static_cast<long>(k));
  loops.insert(loops.begin(), fused);
}

class Applier {
 public:
  Applier(Schedule& s, DecisionTape& tape) : s_(s), tape_(tape), gpu_(s.hardware().is_gpu()) {}

  void run(const Sketch& sketch) {
    for (const auto& st : sketch.stages) apply(st);
    unroll_pass();
  }

 private:
  struct Unroll {
    std::string stage;
    std::vector<Loop> inner_to_outer;  // candidates, innermost first
    Loop vector;                       // the vectorized loop inside them, if any
    int64_t lanes = 1;
  };

  void apply(const StageSketch& st) {
    if (st.placement == Placement::Inline) return s_.stage(st.stage).compute_inline();
    if (st.placement == Placement::InConsumer) return;
    switch (st.loops) {
      case LoopRule::Rows:
      case LoopRule::ReduceRows: {
        Stage& x = s_.stage(st.stage);
        bool root = place(st, x);
        rows(x, root, x.attach_kind() != schedule::AttachKind::Inline);
        return;
      }
      case LoopRule::Rfactor:
        return rfactor(st);
      case LoopRule::Tile:
        return tile(st);
      case LoopRule::TileFused:
        return tile_fused(st);
      case LoopRule::None:
        return;
    }
  }

  // Splits `loop` into spec.levels + 1 loops (outermost first), one factor per split.
  std::vector<Loop> split_levels(Stage& st, const Loop& loop, const DecisionSpec& spec, std::vector<int64_t>& factors) {
    std::vector<Loop> levels(spec.levels + 1);
    Loop current = loop;
    for (int slot = 0; slot < spec.levels; ++slot) {
      int64_t f = tape_.take(spec, slot);
      factors.push_back(f);
      auto [outer, inner] = st.split(current, f);
      levels[spec.levels - slot] = inner;
      current = outer;
    }
    levels[0] = current;
    return levels;
  }

  // A Decided stage's place: returns true when it stays at the root (with threads of its own).
  bool place(const StageSketch& st, Stage& x) {
    if (st.placement != Placement::Decided) return true;
    std::vector<int64_t> options{0};
    if (st.injective) options.push_back(1);
    if (!st.target.empty()) options.insert(options.end(), {2, 3});
    int64_t where = tape_.choose(choice_spec(st.stage + ".place", options));
    if (where == 1) {
      x.compute_inline();
      return false;
    }
    if (where >= 2) {
      int level = static_cast<int>(where - 2);
      auto it = attach_.find(st.target);
      // A place the stage's consumers are not inside of falls back to the root.
      if (it != attach_.end() && static_cast<int>(it->second.size()) > level && consumers_inside(x, st.target, level)) {
        x.compute_at(s_.stage(st.target), it->second[level]);
        level_[x.name()] = level;
        return false;
      }
    }
    return true;
  }

  bool consumers_inside(const Stage& x, const std::string& target, int level) {
    for (Stage* y : s_.consumers(x)) {
      bool inside = y->attach_kind() == schedule::AttachKind::Inline ? consumers_inside(*y, target, level)
                                                                     : depth_in(*y, target) >= level;
      if (!inside) return false;
    }
    return true;
  }

  // The level of `target` whose loop a stage runs inside, directly or through the stage it is
  // computed at (an rfactor stage inside its reduction); the target runs inside all, a root
  // stage inside none.
  int depth_in(const Stage& y, const std::string& target) {
    if (y.name() == target) return std::numeric_limits<int>::max();
    if (y.attach_kind() != schedule::AttachKind::At) return -1;
    if (y.attach_stage()->name() != target) return depth_in(*y.attach_stage(), target);
    auto lv = level_.find(y.name());
    return lv == level_.end() ? -1 : lv->second;
  }

  // A choice of threads per block the device allows.
  int64_t choose_threads(const std::string& name) {
    std::vector<int64_t> options;
    for (int64_t t : kThreadsPerBlock)
      if (t <= s_.hardware().gpu.max_threads_per_block) options.push_back(t);
    return tape_.choose(choice_spec(name, options));
  }

  // Fuses `loops` into one (none: an empty Loop).
  static Loop fuse_all(Stage& st, const std::vector<Loop>& loops) {
    Loop fused;
    for (const Loop& l : loops) fused = fused ? st.fuse(fused, l) : l;
    return fused;
  }

  // A GPU's rows: a thread per element of the data-parallel loops, its reductions inside.
  void gpu_rows(Stage& x, bool apply) {
    int64_t threads = choose_threads(x.name() + ".threads");
    std::vector<Loop> spatial = loops_of(x, IterKind::DataPar);
    if (!apply || spatial.empty()) return;
    auto [block, thread] = x.split(fuse_all(x, spatial), threads);
    x.bind(block, "blockIdx.x");
    x.bind(thread, "threadIdx.x");
  }

  // Rows: outer data-parallel axes, then reduction loops, then the innermost axis's vector.
  // Returns the loops other stages may be computed at (outermost, innermost row loop).
  std::vector<Loop> rows(Stage& x, bool threads, bool apply) {
    if (gpu_) {
      gpu_rows(x, apply && threads);
      return {};
    }
    const auto* c = x.op().as<ComputeOp>();
    std::vector<Loop> spatial = loops_of(x, IterKind::DataPar), reduce = loops_of(x, IterKind::Reduce);
    if (spatial.empty()) return {};
    int64_t lanes = s_.hardware().lanes(c->dtype);
    int64_t extent = static_extent(c, spatial.back());
    std::vector<int64_t> widths;
    for (int64_t w = lanes; w <= 4 * lanes && w <= extent; w *= 2) widths.push_back(w);
    if (widths.empty()) widths.push_back(extent);
    int64_t v = tape_.choose(choice_spec(x.name() + ".vector", widths));
    size_t k = static_cast<size_t>(tape_.choose(parallel_spec(x.name() + ".parallel", spatial.size())));
    if (!apply) return {};
    Loop last = spatial.back(), inner;
    std::vector<Loop> outer(spatial.begin(), spatial.end() - 1);
    if (v > 1 && v < extent) {
      auto [o, i] = x.split(last, v);
      outer.push_back(o);
      inner = i;
    } else if (v > 1) {
      inner = last;
    } else {
      outer.push_back(last);
    }
    std::vector<Loop> order = outer;
    order.insert(order.end(), reduce.begin(), reduce.end());
    if (inner) order.push_back(inner);
    if (order.size() > 1) x.reorder(order);
    if (inner) x.vectorize(inner);
    if (outer.empty()) return {};
    k = std::min(k, outer.size());
    fuse_prefix(x, outer, k);
    if (threads && k >= 1) x.parallel(outer[0]);
    std::vector<Loop> attach{outer.front(), outer.back()};
    attach_[x.name()] = attach;
    return attach;
  }

  // A block per output element, its threads each summing a strided share of the longest
  // reduction loop, then combining their partial results.
  void cross_thread(const StageSketch& st) {
    Stage& x = s_.stage(st.stage);
    int64_t threads = choose_threads(x.name() + ".reduce_threads");
    const auto* c = x.op().as<ComputeOp>();
    Loop longest;
    int64_t length = 0;
    for (const Loop& r : loops_of(x, IterKind::Reduce))
      if (static_extent(c, r) > length) longest = r, length = static_extent(c, r);
    tensor_ir::Tensor partials = s_.rfactor(x.op(), x.split(longest, threads).second);
    Stage& combined = s_.stage(st.stage);
    place(st, combined);
    if (Loop block = fuse_all(combined, loops_of(combined, IterKind::DataPar))) combined.bind(block, "blockIdx.x");
    const Loop thread = loops_of(combined, IterKind::Reduce).front();
    combined.bind(thread, "threadIdx.x");
    s_[partials].compute_at(combined, thread);
  }

  // The innermost reduction split into vectors whose partial results a factored stage keeps.
  void rfactor(const StageSketch& st) {
    if (gpu_) return cross_thread(st);
    Stage& x = s_.stage(st.stage);
    const auto* c = x.op().as<ComputeOp>();
    Loop r = loops_of(x, IterKind::Reduce).back();
    int64_t lanes = s_.hardware().lanes(c->dtype), extent = static_extent(c, r);
    std::vector<int64_t> widths;
    for (int64_t w = lanes; w <= 4 * lanes && w <= extent; w *= 2) widths.push_back(w);
    int64_t v = tape_.choose(choice_spec(x.name() + ".rfactor", widths));
    Loop inner = x.split(r, v).second;
    Stage& rf = s_[s_.rfactor(x.op(), inner, static_cast<int>(c->axis.size()))];
    bool root = place(st, x);
    std::vector<Loop> attach = rows(x, root, true);
    std::vector<Loop> spatial = loops_of(rf, IterKind::DataPar), reduce = loops_of(rf, IterKind::Reduce);
    std::vector<Loop> order(spatial.begin(), spatial.end() - 1);
    order.insert(order.end(), reduce.begin(), reduce.end());
    order.push_back(spatial.back());
    rf.reorder(order);
    rf.vectorize(spatial.back());
    if (!attach.empty()) rf.compute_at(x, attach.back());
  }

  // S0 S1 R0 S2 R1 S3 on the stage's own loops.
  void tile(const StageSketch& st) {
    Stage& a = s_.stage(st.stage);
    const auto* c = a.op().as<ComputeOp>();
    int64_t lanes = s_.hardware().lanes(c->dtype);
    std::vector<Loop> spatial = loops_of(a, IterKind::DataPar), reduce = loops_of(a, IterKind::Reduce);
    std::vector<std::vector<Loop>> s(4), r(2);
    int64_t innermost = 1;
    for (size_t d = 0; d < spatial.size(); ++d) {
      bool last = d + 1 == spatial.size();
      std::vector<int64_t> f;
      auto levels = split_levels(
          a, spatial[d],
          tile_spec(a.name() + "." + spatial[d]->name, static_extent(c, spatial[d]), 3, last ? lanes : 0), f);
      for (int l = 0; l < 4; ++l) s[l].push_back(levels[l]);
      if (last) innermost = f[0];
    }
    split_reductions(a, c, reduce, r);
    std::vector<Loop> order;
    for (auto* level : {&s[0], &s[1], &r[0], &s[2], &r[1], &s[3]})
      order.insert(order.end(), level->begin(), level->end());
    if (order.size() > 1) a.reorder(order);
    if (gpu_) {
      bind_tile(a, s);
      defer_unroll(a, s[3], r[1], s[2], Loop(), 1);
      return;
    }
    size_t k = static_cast<size_t>(tape_.choose(parallel_spec(a.name() + ".parallel", s[0].size())));
    fuse_prefix(a, s[0], k);
    if (k >= 1) a.parallel(s[0][0]);
    Loop vec = innermost > 1 && !s[3].empty() ? s[3].back() : Loop();
    if (vec) a.vectorize(vec);
    if (!s[0].empty()) attach_[a.name()] = {s[0].back(), s[1].back()};
    defer_unroll(a, s[3], r[1], s[2], vec, lanes);
  }

  // An output tiled S0 S1 S2 S3 with the reduction computed at its S0 or S1 level, R0 S2 R1 S3
  // there: the tile is stored once, straight from the accumulators.
  void tile_fused(const StageSketch& st) {
    Stage& out = s_.stage(st.stage);
    Stage& a = st.cache_write ? s_[s_.cache_write(out.op(), "local")] : s_.stage(st.anchor);
    const auto* c = out.op().as<ComputeOp>();
    const auto* ac = a.op().as<ComputeOp>();
    int64_t lanes = s_.hardware().lanes(c->dtype);
    int anchor_last = static_cast<int>(ac->axis.size()) - 1;
    std::vector<Loop> spatial = loops_of(out, IterKind::DataPar);
    std::vector<std::vector<Loop>> s(4);
    std::map<int, int64_t> anchor_inner;  // anchor axis -> its innermost tile factor
    int64_t innermost = 1, threads = 1;
    for (size_t d = 0; d < spatial.size(); ++d) {
      bool last = d + 1 == spatial.size();
      int m = d < st.matched.size() ? st.matched[d] : -1;
      bool hint = last && (m < 0 || m == anchor_last);
      std::vector<int64_t> f;
      auto levels = split_levels(
          out, spatial[d],
          tile_spec(out.name() + "." + spatial[d]->name, static_extent(c, spatial[d]), 3, hint ? lanes : 0), f);
      for (int l = 0; l < 4; ++l) s[l].push_back(levels[l]);
      if (m >= 0) anchor_inner[m] = f[0];
      if (last) innermost = f[0];
      threads *= f[2];
    }
    std::vector<Loop> order;
    for (const auto& level : s) order.insert(order.end(), level.begin(), level.end());
    if (order.size() > 1) out.reorder(order);
    if (gpu_) {
      // The reduction runs in each thread, for the thread's tile, in registers.
      a.compute_at(out, bind_tile(out, s));
      a.set_scope("local");
    } else {
      size_t k = static_cast<size_t>(tape_.choose(parallel_spec(out.name() + ".parallel", s[0].size())));
      fuse_prefix(out, s[0], k);
      if (k >= 1) out.parallel(s[0][0]);
      if (innermost > 1) out.vectorize(s[3].back());
      std::vector<Loop> attach{s[0].back(), s[1].back()};
      attach_[out.name()] = attach;
      int level = static_cast<int>(tape_.choose(choice_spec(a.name() + ".at", {0, 1})));
      a.compute_at(out, attach[level]);
      level_[a.name()] = level;
    }

    // The anchor over its region: matched axes split like the output's innermost level, the
    // others whole (their region is what the output's tile reads).
    std::vector<Loop> aspatial = loops_of(a, IterKind::DataPar), areduce = loops_of(a, IterKind::Reduce);
    std::vector<Loop> s2, s3;
    std::vector<std::vector<Loop>> r(2);
    for (size_t d = 0; d < aspatial.size(); ++d) {
      auto it = anchor_inner.find(static_cast<int>(d));
      if (it == anchor_inner.end()) {
        s3.push_back(aspatial[d]);
        continue;
      }
      auto [o, i] = a.split(aspatial[d], it->second);
      s2.push_back(o);
      s3.push_back(i);
    }
    split_reductions(a, ac, areduce, r);
    std::vector<Loop> aorder = r[0];
    aorder.insert(aorder.end(), s2.begin(), s2.end());
    aorder.insert(aorder.end(), r[1].begin(), r[1].end());
    aorder.insert(aorder.end(), s3.begin(), s3.end());
    if (aorder.size() > 1) a.reorder(aorder);
    if (gpu_) {
      if (st.shared && !r[0].empty()) stage_in_shared(a, r[0].back(), threads);
      defer_unroll(a, s3, r[1], s2, Loop(), 1);
      return;
    }
    auto last_inner = anchor_inner.find(anchor_last);
    Loop vec = !s3.empty() && (last_inner == anchor_inner.end() || last_inner->second > 1) ? s3.back() : Loop();
    if (vec) a.vectorize(vec);
    defer_unroll(a, s3, r[1], s2, vec, s_.hardware().lanes(ac->dtype));
  }

  // A GPU's tile levels: S0 fused into blocks, S1 into threads. Returns the thread loop.
  static Loop bind_tile(Stage& st, const std::vector<std::vector<Loop>>& s) {
    Loop block = fuse_all(st, s[0]), thread = fuse_all(st, s[1]);
    st.bind(block, "blockIdx.x");
    st.bind(thread, "threadIdx.x");
    return thread;
  }

  // Each step of `step` (the anchor's outer reduction loop), the block's `threads` threads copy
  // together the slice of each input the block reads into shared memory (cooperative fetching);
  // lowering puts the barriers around the copies.
  void stage_in_shared(Stage& anchor, const Loop& step, int64_t threads) {
    for (const tensor_ir::Tensor& input : tensor_ir::input_tensors(anchor.op())) {
      if (input->shape.empty()) continue;
      Stage& copy = s_[s_.cache_read(input, "shared", {anchor.op()})];
      copy.compute_at(anchor, step);
      auto [rounds, thread] = copy.split(fuse_all(copy, loops_of(copy, IterKind::DataPar)), threads);
      copy.bind(thread, "threadIdx.x");
    }
  }

  void split_reductions(Stage& st, const ComputeOp* c, const std::vector<Loop>& reduce,
                        std::vector<std::vector<Loop>>& r) {
    for (const auto& l : reduce) {
      std::vector<int64_t> f;
      auto levels = split_levels(st, l, tile_spec(st.name() + "." + l->name, static_extent(c, l), 1, 0), f);
      r[0].push_back(levels[0]);
      r[1].push_back(levels[1]);
    }
  }

  // Unroll candidates innermost first: S3 (but the vector), R1, S2.
  void defer_unroll(Stage& st, const std::vector<Loop>& s3, const std::vector<Loop>& r1, const std::vector<Loop>& s2,
                    const Loop& vec, int64_t lanes) {
    Unroll u{st.name(), {}, vec, lanes};
    for (auto* group : {&s3, &r1, &s2})
      for (auto it = group->rbegin(); it != group->rend(); ++it)
        if (*it != vec) u.inner_to_outer.push_back(*it);
    unrolls_.push_back(std::move(u));
  }

  // Unrolling needs loop extents, known once every stage has its place: it comes last.
  void unroll_pass() {
    std::unique_ptr<schedule::LoweringPlan> plan;
    for (const auto& u : unrolls_) {
      int64_t budget = tape_.choose(choice_spec(u.stage + ".unroll", kUnrollBudgets));
      if (budget == 0) continue;
      if (!plan) plan = std::make_unique<schedule::LoweringPlan>(schedule::infer_bounds(s_));
      Stage& st = s_.stage(u.stage);
      const auto& sp = plan->of(&st);
      auto extent = [&](const Loop& l) {
        auto b = tensor_ir::arith::const_bound(sp.extent.at(l.get()), plan->var_bounds);
        return b.bounded() ? b.max : int64_t(-1);
      };
      int64_t product = u.vector ? std::max<int64_t>(1, extent(u.vector) / u.lanes) : 1;
      for (const auto& l : u.inner_to_outer) {
        int64_t e = extent(l);
        if (e < 0 || product * e > budget) break;
        product *= e;
        if (e > 1) st.unroll(l);
      }
    }
  }

  Schedule& s_;
  DecisionTape& tape_;
  const bool gpu_;  // loops are bound to blocks and threads instead of parallel and vectorized
  std::map<std::string, std::vector<Loop>> attach_;  // loops of root stages others may be computed at
  std::map<std::string, int> level_;                 // stages computed at a level of their target
  std::vector<Unroll> unrolls_;
};

}  // namespace

void apply_sketch(const Sketch& sketch, Schedule& s, DecisionTape& tape) {
  if (sketch.is_default) fail("apply_sketch: the default sketch replays the default template's trace");
  Applier(s, tape).run(sketch);
}

}  // namespace tessera::autotune
