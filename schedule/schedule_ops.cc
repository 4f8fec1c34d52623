#include "schedule/schedule_ops.h"

#include "runtime/error.h"
#include "tensor_ir/op.h"
#include "tensor_ir/printer.h"
#include "tensor_ir/size_hint.h"

namespace tessera::schedule {

using namespace tensor_ir;

namespace {

class NestBuilder {
 public:
  NestBuilder(const Schedule& s, const LoweringPlan& plan, const DeviceNest* device)
      : schedule_(s), plan_(plan), device_(device) {}

  Stmt build() {
    std::vector<Stmt> roots;
    std::vector<const StagePlan*> realized;
    for (const auto& p : plan_.stages) {
      if (p.stage->attach_kind() != AttachKind::Root) continue;
      roots.push_back(device_ && p.stage->leaf_loops().empty() ? single_thread(p.stage->name(), stage_nest(p))
                                                               : stage_nest(p));
      if (!p.stage->is_output()) realized.push_back(&p);
    }
    Stmt body = Block::make(roots);
    for (auto it = realized.rbegin(); it != realized.rend(); ++it) body = realize(**it, body);
    return body;
  }

 private:
  Stmt realize(const StagePlan& p, Stmt body) {
    std::vector<Range> bounds;
    for (size_t d = 0; d < p.region.size(); ++d) bounds.push_back(Range(p.region[d].min, p.buffer_extent[d]));
    return Realize::make(p.stage->op(), bounds, body);
  }

  // Stages computed at `loop` of `stage`, each realized around its nest and what follows it.
  Stmt with_attached(const Stage* stage, const Loop& loop, Stmt body) {
    std::vector<const StagePlan*> attached;
    for (const auto& p : plan_.stages)
      if (p.stage->attach_kind() == AttachKind::At && p.stage->attach_stage() == stage &&
          p.stage->attach_loop() == loop)
        attached.push_back(&p);
    // Producers first: the last attached stage wraps the body first.
    for (auto it = attached.rbegin(); it != attached.rend(); ++it)
      body = realize(**it, Block::make({stage_nest(**it), body}));
    return body;
  }

  // The prefetches at `loop`, ahead of its body: this iteration's share of the region's cache
  // lines. The region is a run of contiguous lines per position of its outer dimensions (the
  // dimensions it covers whole from the last one on, with the one before them, lie together in
  // memory); its lines are numbered run after run.
  Stmt with_prefetches(const StagePlan& p, const Loop& loop, Stmt body) {
    constexpr int64_t kLineBytes = 64;
    std::vector<Stmt> fetches;
    for (const auto& f : p.prefetches) {
      if (f.at != loop) continue;
      const Tensor& t = f.tensor;
      size_t k = t.ndim() - 1;
      while (k > 0 && is_zero(f.min[k]) && f.extent[k] == t->dim(k)) --k;
      int64_t run = f.extent[k];
      for (size_t d = k + 1; d < t.ndim(); ++d) run *= t->dim(d);
      int64_t bytes = t.dtype().element_bytes(), per_line = std::max<int64_t>(1, kLineBytes / bytes);
      int64_t run_lines = (run * bytes + kLineBytes - 1) / kLineBytes, total = run_lines;
      for (size_t d = 0; d < k; ++d) total *= f.extent[d];
      if (total == 0 || is_zero(f.parts)) continue;  // an empty tensor, or loops that never run
      // The share: `count` lines from the part's first one, a constant count so the loop
      // unrolls. Constant parts share the lines evenly (neighbouring shares may overlap by a
      // line: a line already on its way costs little). Symbolic parts take shares of the count
      // at the size hints in order, skipping lines past the region: where there are fewer parts
      // than at the hints, the last lines go unfetched. What does not change along `at` (the
      // region's first indices, with their divisions by sizes) is bound ahead of the guarded
      // lines, where LLVM hoists it out of `at`. (A count computed at run time makes a loop of
      // unknown extent per share, which costs more than its fetches save.)
      Var line("prefetch_line");
      std::vector<Expr> region_min = f.min;
      std::vector<std::pair<Var, Expr>> lets;
      int64_t count;
      Expr first;
      const int64_t* parts = as_const_int(f.parts);
      if (parts) {
        count = (total + *parts - 1) / *parts;
        first = floordiv(f.part * Expr(total), Expr(*parts));
      } else {
        const int64_t parts_hint = std::max<int64_t>(1, tile_size_hint(f.parts));
        count = (total + parts_hint - 1) / parts_hint;
        for (size_t d = 0; d <= k; ++d) {
          if (as_const_int(region_min[d])) continue;
          lets.emplace_back(Var("prefetch_min"), region_min[d]);
          region_min[d] = lets.back().first;
        }
        lets.emplace_back(Var("prefetch_first"), f.part * Expr(count));
        first = lets.back().first;
      }
      Expr g = first + line;
      std::vector<Expr> index(t.ndim(), Expr(0));
      Expr rest = floordiv(g, Expr(run_lines));
      for (size_t d = k; d-- > 0;) {
        index[d] = region_min[d] + floormod(rest, Expr(f.extent[d]));
        rest = floordiv(rest, Expr(f.extent[d]));
      }
      index[k] = region_min[k];
      // Lines run on past the last dimension (over the whole ones after k); with no outer
      // dimensions, the last share's overlap may run past the region too.
      index.back() = index.back() + (k == 0 ? g : floormod(g, Expr(run_lines))) * Expr(per_line);
      Stmt fetch = Evaluate::make(call(Intrinsic::prefetch, {ProducerLoad::make(t, index)}));
      if (!parts) fetch = IfThenElse::make(g < Expr(total), fetch, Stmt());
      Stmt lines = For::make(line, Expr(0), Expr(count), ForKind::Unrolled, fetch, {});
      for (auto it = lets.rbegin(); it != lets.rend(); ++it) lines = LetStmt::make(it->first, it->second, lines);
      fetches.push_back(lines);
    }
    if (fetches.empty()) return body;
    fetches.push_back(body);
    return Block::make(fetches);
  }

  Stmt loop_nest(const StagePlan& p, size_t begin, size_t end, Stmt body, bool attach) {
    const auto& leaves = p.stage->leaf_loops();
    for (size_t i = end; i-- > begin;) {
      const Loop& l = leaves[i];
      body = with_prefetches(p, l, body);
      if (attach) body = with_attached(p.stage, l, body);
      body = loop(l, p.extent.at(l.get()), body);
    }
    return body;
  }

  // A loop bound to a block or thread axis runs once per block or thread: a ThreadExtent. A
  // virtual thread is a loop unrolled in one thread.
  static Stmt loop(const Loop& l, Expr extent, Stmt body) {
    if (is_thread_tag(l->thread_tag)) return ThreadExtent::make(l->var, l->thread_tag, extent, body);
    ForKind kind = l->thread_tag == kVirtualThread ? ForKind::Unrolled : l->for_kind;
    return For::make(l->var, Expr(0), extent, kind, body, l->pragmas);
  }

  int warp_size() const { return device_ ? device_->warp_size : 1; }

  static Stmt single_thread(const std::string& name, Stmt body) {
    body = ThreadExtent::make(Var(name + ".thread"), "threadIdx.x", Expr(1), body);
    return ThreadExtent::make(Var(name + ".block"), "blockIdx.x", Expr(1), body);
  }

  Stmt guarded(const std::vector<Expr>& conditions, Stmt body) {
    for (auto it = conditions.rbegin(); it != conditions.rend(); ++it) body = IfThenElse::make(*it, body);
    return body;
  }

  Stmt stage_nest(const StagePlan& p) {
    const Tensor& t = p.stage->op();
    const auto* c = t.as<ComputeOp>();
    std::vector<Expr> index;
    for (const auto& iv : c->axis) index.push_back(p.root_value.at(iv.var().get()));
    const auto* reduce = p.body.as<Reduce>();
    const auto& leaves = p.stage->leaf_loops();
    if (!reduce) {
      Stmt store = ProducerStore::make(t, substitute(p.body, p.root_value), index);
      return loop_nest(p, 0, leaves.size(), guarded(p.predicates, store), true);
    }
    // Reduction: the init runs where the first reduction loop begins, over the data-parallel
    // loops that come after it; the update runs in the full nest.
    size_t first = 0;
    while (first < leaves.size() && leaves[first]->kind != IterKind::Reduce) ++first;
    std::vector<const VarNode*> reduce_vars;
    for (size_t i = first; i < leaves.size(); ++i)
      if (leaves[i]->kind == IterKind::Reduce) reduce_vars.push_back(leaves[i]->var.get());
    std::vector<Expr> init_guards;
    for (const auto& pred : p.predicates) {
      bool uses_reduce = false;
      for (const auto* v : reduce_vars) uses_reduce |= uses_var(pred, v);
      if (!uses_reduce) init_guards.push_back(pred);
    }
    // The reduction's own condition selects the identity rather than branching, so the update
    // stays vectorizable (selects read memory only where they pick it).
    Expr source = substitute(reduce->source, p.root_value);
    Expr condition = substitute(reduce->condition, p.root_value);
    if (!is_one(condition)) source = select(condition, source, reduce_identity(reduce->combiner, reduce->type));
    for (size_t i = first; i < leaves.size(); ++i)
      if (is_thread_tag(leaves[i]->thread_tag))
        return loop_nest(p, 0, first, cross_thread_reduction(p, first, *reduce, source, init_guards, index), true);
    Stmt init = guarded(init_guards, ProducerStore::make(t, reduce_identity(reduce->combiner, reduce->type), index));
    for (size_t i = leaves.size(); i-- > first;) {
      const Loop& l = leaves[i];
      if (l->kind == IterKind::DataPar) init = loop(l, p.extent.at(l.get()), init);
    }
    Expr update_value = reduce_combine(reduce->combiner, ProducerLoad::make(t, index), source);
    Stmt update =
        loop_nest(p, first, leaves.size(), guarded(p.predicates, ProducerStore::make(t, update_value, index)), true);
    return loop_nest(p, 0, first, Block::make({init, update}), true);
  }

  // A reduction whose outermost reduction loop is bound to threadIdx (TVM's cross-thread
  // reduction, after rfactor as a rule): each thread reduces its share over the loops inside into
  // a local partial, the block's threads combine their partials, and thread 0 stores the result.
  // Warps combine theirs with shuffles where the device has warps and the loop is threadIdx.x over
  // whole warps (at most a warp of them); otherwise the partials go through shared memory in a tree.
  Stmt cross_thread_reduction(const StagePlan& p, size_t first, const Reduce& reduce, const Expr& source,
                              const std::vector<Expr>& init_guards, const std::vector<Expr>& index) {
    const auto& leaves = p.stage->leaf_loops();
    const Loop& bound = leaves[first];
    const std::string& name = p.stage->name();
    if (!is_thread_tag(bound->thread_tag))
      fail("cross-thread reduction of stage ", name,
           ": its reduction loop bound to a thread axis must be the outermost of its reduction loops, not ",
           bound->name);
    for (size_t i = first + 1; i < leaves.size(); ++i) {
      if (leaves[i]->kind == IterKind::DataPar)
        fail("cross-thread reduction of stage ", name, ": data-parallel loop ", leaves[i]->name,
             " must come before its reduction loops");
      if (!leaves[i]->thread_tag.empty())
        fail("cross-thread reduction of stage ", name, ": it reduces across ", bound->thread_tag, " (loop ",
             bound->name, "); loop ", leaves[i]->name, " cannot be bound to ", leaves[i]->thread_tag, " too");
    }
    Expr extent = p.extent.at(bound.get());
    const int64_t* threads = as_const_int(extent);
    if (!threads)
      fail("cross-thread reduction of stage ", name, ": loop ", bound->name, " bound to ", bound->thread_tag,
           " needs a constant extent, not ", to_string(extent));
    Buffer partial = BufferNode::make(name + ".partial", reduce.type, {Expr(1)}, MemoryScope::Local);
    const Expr zero = make_zero(kIndexType);
    Stmt accumulate =
        Store::make(partial, reduce_combine(reduce.combiner, Load::make(partial, zero), source), zero);
    std::vector<Stmt> steps = {Store::make(partial, reduce_identity(reduce.combiner, reduce.type), zero),
                               loop_nest(p, first + 1, leaves.size(), guarded(p.predicates, accumulate), true)};
    const bool in_warps = warp_size() > 1 && bound->thread_tag == "threadIdx.x" && *threads % warp_size() == 0 &&
                          *threads / warp_size() <= warp_size();
    Buffer shared = in_warps ? combine_in_warps(name, reduce, partial, bound->var, *threads, steps)
                             : combine_in_tree(name, reduce, partial, bound->var, *threads, steps);
    std::vector<Expr> write_guards = init_guards;
    write_guards.push_back(bound->var == Expr(0));
    steps.push_back(guarded(write_guards, ProducerStore::make(p.stage->op(), Load::make(partial, zero), index)));
    Stmt body = Block::make(steps);
    if (shared) body = Allocate::make(shared, body);
    return loop(bound, extent, with_attached(p.stage, bound, Allocate::make(partial, body)));
  }

  // The partials of `threads` threads, one per `thread`, through a shared buffer (returned): each
  // step halves the active threads and leaves the result in thread 0's `partial`;
  // insert_barriers separates the steps. It works in OpenCL and CUDA alike.
  Buffer combine_in_tree(const std::string& name, const Reduce& reduce, const Buffer& partial, const Expr& thread, int64_t threads,
                         std::vector<Stmt>& steps) {
    if (threads == 1) return Buffer();
    const Expr zero = make_zero(kIndexType);
    Buffer tree = BufferNode::make(name + ".red", reduce.type, {Expr(threads)}, MemoryScope::Shared);
    steps.push_back(Store::make(tree, Load::make(partial, zero), thread));
    int64_t offset = 1;
    while (offset * 2 < threads) offset *= 2;
    for (; offset >= 1; offset /= 2) {
      Expr active = thread < Expr(offset);
      if (offset * 2 > threads) active = logical_and(active, thread + Expr(offset) < Expr(threads));
      Expr combined =
          reduce_combine(reduce.combiner, Load::make(tree, thread), Load::make(tree, thread + Expr(offset)));
      steps.push_back(IfThenElse::make(active, Store::make(tree, combined, thread)));
    }
    steps.push_back(Store::make(partial, Load::make(tree, zero), zero));
    return tree;
  }

  // The partials of `threads` threads (whole warps, threadIdx.x, so a warp's lanes are consecutive
  // threads) by warp shuffles, TVM's two-level warp reduction: each warp combines its lanes into
  // its first lane; with several warps, those lanes leave their results in a shared slot each
  // (returned), and every warp combines the slots by shuffles again, its lanes past the last slot
  // holding the identity. Every lane runs every shuffle: none is under a condition.
  Buffer combine_in_warps(const std::string& name, const Reduce& reduce, const Buffer& partial, const Expr& thread, int64_t threads,
                          std::vector<Stmt>& steps) {
    const int64_t warps = threads / warp_size();
    shuffle_down(reduce, partial, warp_size(), steps);
    if (warps == 1) return Buffer();
    const Expr zero = make_zero(kIndexType), lane = floormod(thread, Expr(warp_size()));
    Buffer slots = BufferNode::make(name + ".warps", reduce.type, {Expr(warps)}, MemoryScope::Shared);
    steps.push_back(IfThenElse::make(lane == Expr(0),
                                     Store::make(slots, Load::make(partial, zero), floordiv(thread, Expr(warp_size())))));
    steps.push_back(Store::make(partial, reduce_identity(reduce.combiner, reduce.type), zero));
    steps.push_back(IfThenElse::make(lane < Expr(warps), Store::make(partial, Load::make(slots, lane), zero)));
    shuffle_down(reduce, partial, warps, steps);
    return slots;
  }

  // Each lane's `partial` combined with those of the lanes above it, at halving offsets, until the
  // first lane holds the combination of the first `lanes` (a power of two at least as large).
  void shuffle_down(const Reduce& reduce, const Buffer& partial, int64_t lanes, std::vector<Stmt>& steps) {
    const Expr zero = make_zero(kIndexType);
    int64_t offset = 1;
    while (offset < lanes) offset *= 2;
    for (offset /= 2; offset >= 1; offset /= 2) {
      Expr value = Load::make(partial, zero);
      Expr other = Call::make(value.type(), Intrinsic::warp_shuffle_down, {value, make_const(runtime::kInt32, offset)});
      steps.push_back(Store::make(partial, reduce_combine(reduce.combiner, value, other), zero));
    }
  }

  const Schedule& schedule_;
  const LoweringPlan& plan_;
  const DeviceNest* device_;  // null on a CPU
};

}  // namespace

Stmt schedule_ops(const Schedule& schedule, const LoweringPlan& plan, const DeviceNest* device) {
  return NestBuilder(schedule, plan, device).build();
}

}  // namespace tessera::schedule
