#include "schedule/schedule.h"

#include <algorithm>

#include "runtime/error.h"
#include "tensor_ir/graph.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;
using tensor_ir::PlaceholderOp;

namespace {

// True if computing `consumer` reads `t`, directly or through other operations.
bool depends_on(const Tensor& consumer, const Tensor& t) {
  for (const auto& dep : tensor_ir::topological_order({consumer}))
    if (dep.same_as(t)) return true;
  return false;
}

}  // namespace

const std::vector<std::string>& thread_axis_tags() {
  static const std::vector<std::string> tags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",  "threadIdx.x",
                                                "threadIdx.y", "threadIdx.z", kVirtualThread};
  return tags;
}

void check_storage_scope(const char* primitive, const std::string& stage, const std::string& scope) {
  try {
    tensor_ir::parse_memory_scope(scope);
  } catch (const Error& e) {
    fail(primitive, " of ", stage, ": ", e.what());
  }
}

// --- Stage ---------------------------------------------------------------------------------

Stage::Stage(Schedule* schedule, Tensor op, std::string name, bool is_output)
    : schedule_(schedule), op_(op), origin_op_(op), name_(std::move(name)), is_output_(is_output) {
  init_loops();
  storage_align_.assign(op_.ndim(), {0, 0});
}

void Stage::init_loops() {
  root_loops_.clear();
  leaf_loops_.clear();
  relations_.clear();
  const auto* c = op_.as<ComputeOp>();
  if (!c) return;
  auto add = [&](const IterVar& iv) {
    auto loop = std::make_shared<LoopNode>();
    loop->var = iv.var();
    loop->name = fresh_name(iv.name());
    loop->kind = iv->iter_kind;
    root_loops_.push_back(loop);
  };
  for (const auto& iv : c->axis) add(iv);
  for (const auto& iv : c->reduce_axis()) add(iv);
  leaf_loops_ = root_loops_;
}

bool Stage::has_loop_schedule() const {
  if (!relations_.empty() || leaf_loops_ != root_loops_) return true;
  for (const auto& l : leaf_loops_)
    if (l->for_kind != ForKind::Serial || !l->pragmas.empty() || !l->thread_tag.empty()) return true;
  return false;
}

std::string Stage::fresh_name(const std::string& base) const {
  auto taken = [&](const std::string& n) {
    auto same = [&](const Loop& l) { return l->name == n; };
    return std::any_of(root_loops_.begin(), root_loops_.end(), same) ||
           std::any_of(leaf_loops_.begin(), leaf_loops_.end(), same) ||
           std::any_of(relations_.begin(), relations_.end(), [&](const Relation& r) {
             return r.kind == Relation::Split ? same(r.split.outer) || same(r.split.inner) : same(r.fuse.fused);
           });
  };
  std::string name = base;
  for (int i = 1; taken(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

Loop Stage::make_loop(const std::string& name, IterKind kind) {
  auto loop = std::make_shared<LoopNode>();
  loop->name = fresh_name(name);
  loop->var = Var(loop->name);
  loop->kind = kind;
  return loop;
}

Loop Stage::loop(const std::string& name) const {
  for (const auto& l : leaf_loops_)
    if (l->name == name) return l;
  std::string names;
  for (const auto& l : leaf_loops_) names += (names.empty() ? "" : ", ") + l->name;
  fail("stage ", name_, " has no loop '", name, "' (its loops are: ", names.empty() ? "none" : names, ")");
}

Loop Stage::loop_or_fused(const std::string& name) const {
  for (const auto& r : relations_)
    if (r.kind == Relation::Fuse)
      for (const Loop& l : {r.fuse.outer, r.fuse.inner})
        if (l->name == name) return l;
  return loop(name);
}

std::pair<Loop, std::vector<Loop>> Stage::leaf_of_fused(const Loop& loop) const {
  Loop at = loop;
  std::vector<Loop> inside;
  while (std::find(leaf_loops_.begin(), leaf_loops_.end(), at) == leaf_loops_.end()) {
    auto r = std::find_if(relations_.begin(), relations_.end(), [&](const Relation& r) {
      return r.kind == Relation::Fuse && (r.fuse.outer == at || r.fuse.inner == at);
    });
    if (r == relations_.end())
      fail("stage ", name_, ": loop ", loop->name, " is neither a current loop nor fused into one");
    if (r->fuse.outer == at) inside.push_back(r->fuse.inner);
    at = r->fuse.fused;
  }
  return {at, inside};
}

Loop Stage::loop(const Var& var) const {
  for (const auto& l : leaf_loops_)
    if (l->var.same_as(var)) return l;
  for (const auto& l : root_loops_)
    if (l->var.same_as(var))
      fail("stage ", name_, ": axis ", l->name, " has been split or fused; use the loops that replaced it");
  fail("stage ", name_, " has no axis '", var.name(), "' (it belongs to another operation)");
}

Loop Stage::loop(const IterVar& axis) const { return loop(axis.var()); }

size_t Stage::leaf_position(const Loop& loop, const char* primitive) const {
  if (!loop) fail(primitive, " on stage ", name_, ": undefined loop");
  auto it = std::find(leaf_loops_.begin(), leaf_loops_.end(), loop);
  if (it == leaf_loops_.end())
    fail(primitive, " on stage ", name_, ": loop ", loop->name, " is not a current loop of this stage");
  return static_cast<size_t>(it - leaf_loops_.begin());
}

void Stage::check_not_bound(const Loop& loop, const char* primitive) const {
  if (!loop->thread_tag.empty())
    fail(primitive, " on stage ", name_, ": loop ", loop->name, " is bound to ", loop->thread_tag,
         " (bind a loop after splitting, fusing and annotating the others)");
}

void Stage::replace_leaf(size_t position, std::vector<Loop> with) {
  leaf_loops_.erase(leaf_loops_.begin() + position);
  leaf_loops_.insert(leaf_loops_.begin() + position, with.begin(), with.end());
}

void Stage::record(Instruction inst) {
  inst.stage = name_;
  schedule_->trace_.append(std::move(inst));
}

std::pair<Loop, Loop> Stage::split(const Loop& parent, int64_t factor) {
  size_t pos = leaf_position(parent, "split");
  check_not_bound(parent, "split");
  if (factor < 1) fail("split of ", name_, ".", parent->name, ": factor must be positive, got ", factor);
  Loop outer = make_loop(parent->name + ".outer", parent->kind);
  Loop inner = make_loop(parent->name + ".inner", parent->kind);
  relations_.push_back({Relation::Split, {parent, outer, inner, factor, 0}, {}});
  replace_leaf(pos, {outer, inner});
  record({"split", "", {parent->name}, {{"factor", factor}}, {outer->name, inner->name}});
  return {outer, inner};
}

std::pair<Loop, Loop> Stage::split_nparts(const Loop& parent, int64_t nparts) {
  size_t pos = leaf_position(parent, "split");
  check_not_bound(parent, "split");
  if (nparts < 1) fail("split of ", name_, ".", parent->name, ": nparts must be positive, got ", nparts);
  Loop outer = make_loop(parent->name + ".outer", parent->kind);
  Loop inner = make_loop(parent->name + ".inner", parent->kind);
  relations_.push_back({Relation::Split, {parent, outer, inner, 0, nparts}, {}});
  replace_leaf(pos, {outer, inner});
  record({"split", "", {parent->name}, {{"nparts", nparts}}, {outer->name, inner->name}});
  return {outer, inner};
}

std::vector<Loop> Stage::tile(const Loop& x, const Loop& y, int64_t x_factor, int64_t y_factor) {
  if (x == y) fail("tile of ", name_, ": x and y are the same loop ", x->name);
  // Recorded as its three parts, so replay and search see only the basic primitives.
  auto [xo, xi] = split(x, x_factor);
  auto [yo, yi] = split(y, y_factor);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

Loop Stage::fuse(const Loop& outer, const Loop& inner) {
  size_t po = leaf_position(outer, "fuse");
  size_t pi = leaf_position(inner, "fuse");
  check_not_bound(outer, "fuse");
  check_not_bound(inner, "fuse");
  if (pi != po + 1)
    fail("fuse on stage ", name_, ": ", inner->name, " must come right after ", outer->name, " in the loop order");
  if (outer->kind != inner->kind)
    fail("fuse on stage ", name_, ": cannot fuse reduction and data-parallel loops (", outer->name, ", ", inner->name,
         ")");
  Loop fused = make_loop(outer->name + "." + inner->name + ".fused", outer->kind);
  relations_.push_back({Relation::Fuse, {}, {outer, inner, fused}});
  leaf_loops_.erase(leaf_loops_.begin() + pi);
  leaf_loops_[po] = fused;
  record({"fuse", "", {outer->name, inner->name}, {}, {fused->name}});
  return fused;
}

void Stage::reorder(const std::vector<Loop>& order) {
  std::vector<size_t> positions;
  std::vector<std::string> names;
  for (const auto& l : order) {
    positions.push_back(leaf_position(l, "reorder"));
    names.push_back(l->name);
  }
  std::vector<size_t> sorted = positions;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end())
    fail("reorder on stage ", name_, ": a loop is listed twice");
  for (size_t i = 0; i < order.size(); ++i) leaf_loops_[sorted[i]] = order[i];
  record({"reorder", "", names, {}, {}});
}

void Stage::vectorize(const Loop& loop) {
  leaf_position(loop, "vectorize");
  check_not_bound(loop, "vectorize");
  loop->for_kind = ForKind::Vectorized;
  record({"vectorize", "", {loop->name}, {}, {}});
}

void Stage::unroll(const Loop& loop) {
  leaf_position(loop, "unroll");
  check_not_bound(loop, "unroll");
  loop->for_kind = ForKind::Unrolled;
  record({"unroll", "", {loop->name}, {}, {}});
}

void Stage::parallel(const Loop& loop) {
  leaf_position(loop, "parallel");
  check_not_bound(loop, "parallel");
  if (loop->kind == IterKind::Reduce)
    fail("parallel on stage ", name_, ": ", loop->name,
         " is a reduction loop; iterations would race on the result (rfactor it first)");
  loop->for_kind = ForKind::Parallel;
  record({"parallel", "", {loop->name}, {}, {}});
}

void Stage::pragma(const Loop& loop, const std::string& key, int64_t value) {
  leaf_position(loop, "pragma");
  if (key.empty()) fail("pragma on stage ", name_, ".", loop->name, ": empty key");
  loop->pragmas.emplace_back(key, value);
  record({"pragma", "", {loop->name}, {{"key", key}, {"value", value}}, {}});
}

void Stage::bind(const Loop& loop, const std::string& thread_tag) {
  leaf_position(loop, "bind");
  const auto& tags = thread_axis_tags();
  if (std::find(tags.begin(), tags.end(), thread_tag) == tags.end())
    fail("bind of ", name_, ".", loop->name, ": unknown thread axis '", thread_tag,
         "' (expected blockIdx.x/y/z, threadIdx.x/y/z or vthread)");
  if (!loop->thread_tag.empty())
    fail("bind of ", name_, ".", loop->name, ": the loop is already bound to ", loop->thread_tag);
  if (loop->for_kind != ForKind::Serial)
    fail("bind of ", name_, ".", loop->name, ": the loop is ", tensor_ir::for_kind_name(loop->for_kind),
         "; a bound loop runs one iteration per thread and takes no other annotation");
  // The threads of a block can reduce together (schedule_ops' cross-thread reduction); blocks and
  // virtual threads cannot.
  if (loop->kind == IterKind::Reduce && thread_tag.rfind("threadIdx", 0) != 0)
    fail("bind of ", name_, ".", loop->name,
         ": it is a reduction loop, which only threadIdx axes can share "
         "(rfactor it and bind the factored stage's loop to a block)");
  if (thread_tag != kVirtualThread)
    for (const auto& other : leaf_loops_)
      if (other->thread_tag == thread_tag)
        fail("bind of ", name_, ".", loop->name, ": ", thread_tag, " is already bound to loop ", other->name,
             " of this stage");
  loop->thread_tag = thread_tag;
  record({"bind", "", {loop->name}, {{"tag", thread_tag}}, {}});
}

void Stage::prefetch(const Tensor& tensor, const Loop& at, Stage& from_stage, const Loop& from, int64_t offset) {
  if (!tensor) fail("prefetch on stage ", name_, ": undefined tensor");
  Stage& source = (*schedule_)[tensor];
  leaf_position(at, "prefetch");
  if (!from) fail("prefetch on stage ", name_, ": undefined loop");
  from_stage.leaf_of_fused(from);
  if (at->for_kind == ForKind::Vectorized) fail("prefetch on stage ", name_, ": loop ", at->name, " is vectorized");
  if (offset < 1) fail("prefetch on stage ", name_, ": offset must be at least 1, got ", offset);
  if (!depends_on(op_, source.op())) fail("prefetch: stage ", name_, " does not read ", source.name_);
  prefetches_.push_back({source.op(), at, from, &from_stage, offset});
  record({"prefetch",
          "",
          {at->name},
          {{"tensor", source.name_}, {"from_stage", from_stage.name_}, {"from", from->name}, {"offset", offset}},
          {}});
}

void Stage::compute_at(Stage& consumer, const Loop& loop) {
  if (!op_.as<ComputeOp>()) fail("compute_at: ", name_, " is an input (placeholder) and is not computed");
  if (is_output_) fail("compute_at: ", name_, " is an output of the schedule; outputs are computed at the root");
  if (&consumer == this) fail("compute_at: stage ", name_, " cannot be computed inside itself");
  consumer.leaf_position(loop, "compute_at");
  // The consumer must read this stage, directly or through other stages.
  if (!depends_on(consumer.op_, op_))
    fail("compute_at: stage ", consumer.name_, " does not consume ", name_, ", so ", name_,
         " cannot be computed at its loop ", loop->name);
  attach_kind_ = AttachKind::At;
  attach_stage_ = &consumer;
  attach_loop_ = loop;
  record({"compute_at", "", {loop->name}, {{"target", consumer.name_}}, {}});
}

void Stage::compute_inline() {
  const auto* c = op_.as<ComputeOp>();
  if (!c) fail("compute_inline: ", name_, " is an input (placeholder)");
  if (is_output_) fail("compute_inline: ", name_, " is an output of the schedule and must be stored");
  if (!c->reduce_axis().empty()) fail("compute_inline: ", name_, " is a reduction and cannot be inlined");
  attach_kind_ = AttachKind::Inline;
  attach_stage_ = nullptr;
  attach_loop_.reset();
  record({"compute_inline", "", {}, {}, {}});
}

void Stage::compute_root() {
  if (!op_.as<ComputeOp>()) fail("compute_root: ", name_, " is an input (placeholder)");
  attach_kind_ = AttachKind::Root;
  attach_stage_ = nullptr;
  attach_loop_.reset();
  record({"compute_root", "", {}, {}, {}});
}

void Stage::set_storage_align(int dim, int64_t factor, int64_t offset) {
  if (dim < 0 || dim >= static_cast<int>(op_.ndim()))
    fail("storage_align on stage ", name_, ": dimension ", dim, " out of range (", op_.ndim(), " dimensions)");
  if (factor < 1 || offset < 0 || offset >= factor)
    fail("storage_align on stage ", name_, ": need factor > 0 and 0 <= offset < factor, got ", factor, ", ", offset);
  storage_align_[dim] = {factor, offset};
  record({"storage_align", "", {}, {{"dim", int64_t(dim)}, {"factor", factor}, {"offset", offset}}, {}});
}

void Stage::set_scope(const std::string& scope) {
  if (!op_.as<ComputeOp>()) fail("set_scope: ", name_, " is an input (placeholder); its buffer is an argument");
  check_storage_scope("set_scope", name_, scope);
  if (is_output_ && scope != "global")
    fail("set_scope of ", name_, ": it is an output of the schedule, stored in its argument's global memory");
  scope_ = scope;
  record({"set_scope", "", {}, {{"scope", scope}}, {}});
}

// --- Schedule ------------------------------------------------------------------------------

Schedule::Schedule(std::vector<Tensor> outputs, HardwareParams hardware)
    : outputs_(std::move(outputs)), hardware_(hardware) {
  if (outputs_.empty()) fail("create_schedule: no output tensors");
  for (const auto& t : outputs_)
    if (!t) fail("create_schedule: undefined output tensor");
  for (const Tensor& t : tensor_ir::topological_order(outputs_)) {
    bool is_output = std::any_of(outputs_.begin(), outputs_.end(), [&](const Tensor& o) { return o.same_as(t); });
    if (is_output && !t.as<ComputeOp>())
      fail("create_schedule: output ", t.name(), " is a placeholder, not a computation");
    add_stage(t, is_output, stages_.size());
  }
}

std::string Schedule::unique_stage_name(const std::string& base) const {
  auto taken = [&](const std::string& n) {
    return std::any_of(stages_.begin(), stages_.end(), [&](const auto& s) { return s->name_ == n; });
  };
  std::string name = base;
  for (int i = 1; taken(name); ++i) name = base + "_" + std::to_string(i);
  return name;
}

Stage& Schedule::add_stage(Tensor op, bool is_output, size_t position) {
  std::string name = unique_stage_name(op.name());
  auto stage = std::unique_ptr<Stage>(new Stage(this, op, name, is_output));
  Stage& ref = *stage;
  stages_.insert(stages_.begin() + position, std::move(stage));
  return ref;
}

size_t Schedule::position_of(const Stage& s) const {
  for (size_t i = 0; i < stages_.size(); ++i)
    if (stages_[i].get() == &s) return i;
  fail("internal error: stage ", s.name_, " is not in its schedule");
}

Stage& Schedule::operator[](const Tensor& t) {
  for (auto& s : stages_)
    if (s->op_.same_as(t) || s->origin_op_.same_as(t)) return *s;
  fail("tensor ", t ? t.name() : "<undefined>", " is not part of this schedule");
}

Stage& Schedule::stage(const std::string& name) {
  for (auto& s : stages_)
    if (s->name_ == name) return *s;
  fail("the schedule has no stage '", name, "'");
}

std::vector<Stage*> Schedule::consumers(const Stage& stage) const {
  std::vector<Stage*> result;
  for (const auto& s : stages_) {
    for (const auto& in : tensor_ir::input_tensors(s->op_))
      if (in.same_as(stage.op_)) {
        result.push_back(s.get());
        break;
      }
  }
  return result;
}

}  // namespace tessera::schedule
