// The template of row statistics ("softmax", "softmax_stat", "softmax_exp", "norm", "norm_stat",
// "global_pool", "nll_loss"). When every statistic reduces over the trailing dimensions of the
// output (softmax along the last axis, layer_norm, instance_norm), the kernel runs row by row in
// parallel: each statistic of the row is computed right before the output row needs it (the
// row stays in cache across the passes), as vector partial results (the innermost reduction
// split by the vector width and factored out, rfactor) combined at the end; row intermediates
// (softmax's exponentials) live in a row buffer (on the heap for a row of symbolic length); the
// output row is vectorized. Other layouts get the math family's
// reduction and elementwise schedules stage by stage. Stages another output of the same kernel already scheduled are
// left alone.
#include <functional>
#include <unordered_set>

#include "schedule/templates/extent_hint.h"
#include "schedule/templates/math.h"
#include "schedule/templates/nn.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/op.h"

namespace tessera::schedule {

using tensor_ir::ComputeOp;

namespace {

// The first reduced dimension when every stage but `out` is a statistic of out's shape with the
// dimensions from there on reduced to 1 (a reduction, or arithmetic on statistics: layer_norm's
// mean and inverse deviation, outputs of the kernel too), or a row intermediate of out's own
// shape (softmax's exponentials), and out is elementwise; else -1.
int row_split(const std::vector<Tensor>& stages, const Tensor& out) {
  const auto* oc = out.as<ComputeOp>();
  if (!oc || oc->body.as<tensor_ir::Reduce>() || out.ndim() == 0) return -1;
  int first = -1;
  for (const Tensor& t : stages) {
    if (t.same_as(out)) continue;
    const auto* c = t.as<ComputeOp>();
    if (t.ndim() != out.ndim()) return -1;
    size_t d = 0;
    while (d < t.ndim() && same_extent(t->shape[d], out->shape[d])) ++d;
    if (!c->body.as<tensor_ir::Reduce>() && d == t.ndim()) continue;  // a row intermediate
    for (size_t e = d; e < t.ndim(); ++e)
      if (dim_hint(t, e) != 1) return -1;
    if (d == t.ndim()) return -1;
    if (first >= 0 && first != static_cast<int>(d)) return -1;
    first = static_cast<int>(d);
  }
  return first;
}

void schedule_by_rows(Schedule& s, const Tensor& out, const std::vector<Tensor>& stats, size_t split) {
  const auto* oc = out.as<ComputeOp>();
  int lanes = s.hardware().lanes(out.dtype());
  Stage& y = s[out];
  // A statistic runs inside the row loop when only the output (or statistics that do) read it;
  // one that is an output of the kernel too (layer_norm's mean, when returned) or that another
  // output reads stays a stage of its own.
  // (A stage inlined into its readers, such as exponentials recomputed where read, reads inside when
  // they all do.)
  std::unordered_set<const Stage*> inside{&y};
  std::function<bool(const Stage&)> read_inside = [&](const Stage& st) {
    for (const Stage* reader : s.consumers(st))
      if (!inside.count(reader) && !(reader->attach_kind() == AttachKind::Inline && read_inside(*reader))) return false;
    return true;
  };
  std::vector<Tensor> attached;
  for (auto it = stats.rbegin(); it != stats.rend(); ++it) {
    if (s[*it].is_output() || !read_inside(s[*it])) continue;
    inside.insert(&s[*it]);
    attached.insert(attached.begin(), *it);
  }
  for (const Tensor& t : stats) {
    if (inside.count(&s[t])) continue;
    if (s[t].op().as<ComputeOp>()->body.as<tensor_ir::Reduce>()) schedule_reduction_stage(s, t);
    else schedule_elementwise_stage(s, t);
  }
  // Vector partial results first: rfactor rewrites the stages that read a statistic.
  std::vector<Tensor> partials;
  for (const Tensor& t : attached) {
    Stage& st = s[t];
    if (!st.op().as<ComputeOp>()->body.as<tensor_ir::Reduce>()) {  // a row intermediate
      const auto* c = st.op().as<ComputeOp>();
      if (dim_hint(t, t.ndim() - 1) >= lanes) st.vectorize(st.split(st.loop(c->axis.back()), lanes).second);
      continue;
    }
    if (Tensor rf = nn::vector_partials(s, t, lanes); rf.defined()) partials.push_back(rf);
  }
  std::vector<Loop> rows, row;
  for (size_t d = 0; d < oc->axis.size(); ++d) (d < split ? rows : row).push_back(y.loop(oc->axis[d]));
  Loop last = row.back();
  if (dim_hint(out, out.ndim() - 1) >= lanes) y.vectorize(y.split(last, lanes).second);
  Loop outer = nn::fuse_all(y, rows);
  int64_t count = 1;
  for (size_t d = 0; d < split; ++d) count *= dim_hint(out, d);
  int64_t work = nn::num_elements(out) * static_cast<int64_t>(stats.size() + 1);
  if (count > 1) parallel_if_worth(y, outer, out, work, nn::kMinParallelWork / 4);
  for (const Tensor& t : partials) s[t].compute_at(y, outer);
  for (const Tensor& t : attached) s[t].compute_at(y, outer);
}

void schedule_rows(Schedule& s, const Tensor& out) {
  // Softmax's exponentials, and statistics computed from statistics (a mean from its sum, an
  // inverse deviation): once per row, not inlined into every element (a square root and a
  // division each).
  std::vector<Tensor> keep{nn::find_tagged(out, "softmax_exp")};
  for (const Tensor& t : tensor_ir::topological_order({out})) {
    const auto* c = t.as<ComputeOp>();
    if (c && c->tag == "norm_stat" && !c->body.as<tensor_ir::Reduce>()) keep.push_back(t);
  }
  nn::inline_injective_except(s, out, keep);
  std::vector<Tensor> todo = nn::unscheduled_stages(s, out);
  int split = row_split(todo, out);
  if (split > 0) {
    std::vector<Tensor> stats;
    for (const Tensor& t : todo)
      if (!t.same_as(out)) stats.push_back(t);
    schedule_by_rows(s, out, stats, static_cast<size_t>(split));
    return;
  }
  for (const Tensor& t : todo) {
    const auto* c = s[t].op().as<ComputeOp>();
    if (c->axis.empty()) continue;  // a scalar result: one loop nest, nothing to spread
    if (c->body.as<tensor_ir::Reduce>()) schedule_reduction_stage(s, t);
    else schedule_elementwise_stage(s, t);
  }
}

}  // namespace

void add_nn_norm_templates(std::map<std::string, TunableTemplate>& t) {
  for (const char* tag : {"global_pool", "norm", "norm_stat", "softmax", "softmax_stat", "softmax_exp", "nll_loss"})
    t[tag] = without_knobs(schedule_rows);
}

}  // namespace tessera::schedule
