// CPU templates of the nn family's compute definitions, by tag; each group adds its own from
// nn_*.cc. The helpers here find a template's stages by tag and shape its outer loops.
#include "schedule/templates/nn.h"

#include <unordered_set>

#include "schedule/templates/extent_hint.h"
#include "schedule/templates/math.h"
#include "tensor_ir/graph.h"
#include "tensor_ir/parallel_work.h"
#include "tensor_ir/structural.h"

namespace tessera::schedule {

namespace nn {

Tensor find_tagged(const Tensor& output, const std::string& tag) {
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    if (c && c->tag == tag) return t;
  }
  return Tensor();
}

void inline_injective_except(Schedule& s, const Tensor& output, const std::vector<Tensor>& keep) {
  std::unordered_set<const tensor_ir::Object*> kept;
  for (const auto& k : keep) kept.insert(k.get());
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    // Outputs by their stage: a primitive such as rfactor may have replaced their operation.
    if (!c || kept.count(t.get()) || s[t].is_output() || !c->reduce_axis().empty()) continue;
    s[t].compute_inline();
  }
}

std::vector<Tensor> unscheduled_stages(Schedule& s, const Tensor& output) {
  std::vector<Tensor> todo;
  for (const Tensor& t : tensor_ir::topological_order({output})) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    Stage& st = s[t];
    if (c && st.attach_kind() == AttachKind::Root && !st.has_loop_schedule()) todo.push_back(t);
  }
  return todo;
}

Tensor stored_source(Schedule& s, Tensor t) {
  while (s[t].attach_kind() == AttachKind::Inline) {
    auto inputs = tensor_ir::input_tensors(t);
    if (inputs.size() != 1) break;
    t = inputs[0];
  }
  return t;
}

Loop fuse_all(Stage& st, const std::vector<Loop>& loops) {
  if (loops.empty()) return nullptr;
  Loop fused = loops[0];
  for (size_t i = 1; i < loops.size(); ++i) fused = st.fuse(fused, loops[i]);
  return fused;
}

void vectorize_in_registers(Stage& st, const Loop& loop, int64_t extent, int lanes) {
  if (extent <= lanes) {
    st.vectorize(loop);
    return;
  }
  auto [vectors, vector] = st.split(loop, lanes);
  st.unroll(vectors);
  st.vectorize(vector);
}

Tensor vector_partials(Schedule& s, const Tensor& stat, int lanes) {
  Stage& st = s[stat];
  const auto& reduce = st.op().as<tensor_ir::ComputeOp>()->reduce_axis();
  if (extent_hint(reduce.back()->dom.extent) < lanes) return Tensor();
  auto inner = st.split(st.loop(reduce.back()), lanes).second;
  Tensor rf = s.rfactor(stat, inner, static_cast<int>(stat.ndim()));
  vectorize_combining_loop(s[stat]);  // a row's statistics are a chain of such combining steps
  Stage& rs = s[rf];
  const auto* rc = rs.op().as<tensor_ir::ComputeOp>();
  std::vector<Loop> order;
  for (const auto& r : rc->reduce_axis()) order.push_back(rs.loop(r));
  order.push_back(rs.loop(rc->axis.back()));
  rs.reorder(order);
  rs.vectorize(order.back());
  return rf;
}

Tensor epilogue_target(Schedule& s, const Tensor& main) {
  if (s.outputs().size() != 1 || s.outputs()[0].same_as(main)) return main;
  Tensor out = s.outputs()[0];
  std::unordered_set<const tensor_ir::Object*> before;
  for (const Tensor& t : tensor_ir::topological_order({main})) before.insert(t.get());
  for (const Tensor& t : tensor_ir::topological_order({out})) {
    const auto* c = t.as<tensor_ir::ComputeOp>();
    if (before.count(t.get()) || t.as<tensor_ir::PlaceholderOp>() || (c && c->tag == "literal")) continue;
    if (!c || !c->reduce_axis().empty() || (c->tag != "elemwise" && c->tag != "broadcast") || !same_shape(t, main))
      return main;
  }
  if (!main.as<tensor_ir::ComputeOp>()->reduce_axis().empty()) return main;
  s[main].compute_inline();
  return out;
}

int64_t num_elements(const Tensor& t) {
  int64_t n = 1;
  for (size_t d = 0; d < t.ndim(); ++d) n *= dim_hint(t, d);
  return n;
}

}  // namespace nn

bool has_symbolic_extent(const tensor_ir::Tensor& t) {
  for (const Expr& d : t->shape)
    if (!tensor_ir::as_const_int(d)) return true;
  if (const auto* c = t.as<tensor_ir::ComputeOp>())
    for (const auto& iv : c->reduce_axis())
      if (!tensor_ir::as_const_int(iv->dom.extent)) return true;
  return false;
}

void parallel_above(Stage& st, const Loop& loop, const tensor_ir::Tensor& t, int64_t threshold) {
  st.parallel(loop);
  if (has_symbolic_extent(t)) st.pragma(loop, tensor_ir::kParallelMinWork, threshold);
}

bool same_extent(const tensor_ir::Expr& a, const tensor_ir::Expr& b) {
  const int64_t *ca = tensor_ir::as_const_int(a), *cb = tensor_ir::as_const_int(b);
  if (ca || cb) return ca && cb && *ca == *cb;
  return tensor_ir::structural_equal(a, b);
}

void add_nn_templates(std::map<std::string, TunableTemplate>& t) {
  add_nn_matmul_templates(t);
  add_nn_conv_templates(t);
  add_nn_conv_nhwc_templates(t);
  add_nn_pool_templates(t);
  add_nn_norm_templates(t);
  add_nn_grad_templates(t);
  add_nn_attention_templates(t);
}

}  // namespace tessera::schedule
