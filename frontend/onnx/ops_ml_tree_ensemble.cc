// The converter of ai.onnx.ml TreeEnsemble (opset 5): every tree of the ensemble walks down one
// level per step for all samples at once, the node tables gathered by the current node index
// ([samples, trees]), for as many steps as the deepest tree has levels; then each tree's leaf
// adds (or averages, or takes the minimum or maximum of) its weight into its target.
#include <algorithm>
#include <cmath>
#include <limits>

#include "frontend/onnx/ops_math.h"
#include "runtime/element.h"

namespace tessera::frontend::onnx {

using relay_ir::Attrs;
using relay_ir::Expr;
using runtime::NDArray;
using Ints = std::vector<int64_t>;

namespace {

enum Mode : int64_t { kLeq, kLt, kGte, kGt, kEq, kNeq, kMember };

NDArray int_table(const Ints& values) {
  NDArray a = NDArray::empty({static_cast<int64_t>(values.size())}, runtime::kInt64);
  std::copy(values.begin(), values.end(), a.data_as<int64_t>());
  return a;
}

// The attributes as checked tables.
struct Forest {
  Ints roots, features, modes, true_ids, false_ids, true_leafs, false_leafs, tracks_true, leaf_targets;
  NDArray splits, leaf_weights;
  std::vector<std::vector<double>> members;  // per node, its set (MEMBER nodes only)
  int64_t targets = 0, depth = 0;
};

Ints ints_of(const NDArray& a) {
  Ints out(a.numel());
  for (int64_t i = 0; i < a.numel(); ++i) out[i] = static_cast<int64_t>(runtime::element_as_double(a, i));
  return out;
}

// The levels below `node` (1 for a node both of whose branches are leaves); refuses cycles.
int64_t levels(const Forest& f, int64_t node, int64_t budget, const ConvertContext& c) {
  if (budget == 0) c.error("the trees' branches form a cycle");
  int64_t below = 0;
  if (!f.true_leafs[node]) below = std::max(below, levels(f, f.true_ids[node], budget - 1, c));
  if (!f.false_leafs[node]) below = std::max(below, levels(f, f.false_ids[node], budget - 1, c));
  return below + 1;
}

Forest read_forest(ConvertContext& c) {
  Forest f;
  f.roots = c.attr_ints("tree_roots", {});
  f.features = c.attr_ints("nodes_featureids", {});
  f.modes = ints_of(c.attr_tensor("nodes_modes"));
  f.true_ids = c.attr_ints("nodes_truenodeids", {});
  f.false_ids = c.attr_ints("nodes_falsenodeids", {});
  f.true_leafs = c.attr_ints("nodes_trueleafs", {});
  f.false_leafs = c.attr_ints("nodes_falseleafs", {});
  f.splits = c.attr_tensor("nodes_splits");
  f.leaf_targets = c.attr_ints("leaf_targetids", {});
  f.leaf_weights = c.attr_tensor("leaf_weights");
  f.targets = c.attr_int("n_targets", 1);
  const auto nodes = static_cast<int64_t>(f.features.size()), leaves = static_cast<int64_t>(f.leaf_targets.size());
  f.tracks_true = c.attr_ints("nodes_missing_value_tracks_true", Ints(nodes, 0));
  for (const Ints* v : {&f.modes, &f.true_ids, &f.false_ids, &f.true_leafs, &f.false_leafs, &f.tracks_true})
    if (static_cast<int64_t>(v->size()) != nodes) c.error("the nodes_* attributes must all have one length");
  if (f.splits.numel() != nodes) c.error("nodes_splits must have one value per node");
  if (f.leaf_weights.numel() != leaves) c.error("leaf_weights and leaf_targetids must have one length");
  if (f.roots.empty() || f.targets < 1) c.error("the ensemble needs trees (tree_roots) and n_targets >= 1");
  for (int64_t i = 0; i < nodes; ++i) {
    if (f.modes[i] < kLeq || f.modes[i] > kMember)
      c.error("nodes_modes holds an unknown mode " + std::to_string(f.modes[i]));
    for (auto [id, leaf] : {std::pair{f.true_ids[i], f.true_leafs[i]}, {f.false_ids[i], f.false_leafs[i]}})
      if (id < 0 || id >= (leaf ? leaves : nodes)) c.error("node " + std::to_string(i) + " branches out of range");
  }
  for (int64_t t : f.leaf_targets)
    if (t < 0 || t >= f.targets) c.error("leaf_targetids must lie in [0, n_targets)");
  for (int64_t r : f.roots)
    if (r < 0 || r >= nodes) c.error("tree_roots must index nodes");
  // Set membership: the sets in MEMBER nodes' order, each ended by a NaN.
  f.members.resize(nodes);
  if (c.has_attr("membership_values")) {
    const NDArray m = c.attr_tensor("membership_values");
    int64_t next = 0;
    for (int64_t i = 0; i < nodes; ++i) {
      if (f.modes[i] != kMember) continue;
      for (; next < m.numel() && !std::isnan(runtime::element_as_double(m, next)); ++next)
        f.members[i].push_back(runtime::element_as_double(m, next));
      if (next++ >= m.numel()) c.error("membership_values holds fewer sets than there are MEMBER nodes");
    }
  } else if (std::count(f.modes.begin(), f.modes.end(), kMember)) {
    c.error("MEMBER nodes need membership_values");
  }
  for (int64_t r : f.roots) f.depth = std::max(f.depth, levels(f, r, nodes + 1, c));
  return f;
}

std::vector<Expr> convert_tree_ensemble(ConvertContext& c) {
  c.check_attrs({"aggregate_function", "leaf_targetids", "leaf_weights", "membership_values", "n_targets",
                 "nodes_falseleafs", "nodes_falsenodeids", "nodes_featureids", "nodes_hitrates",
                 "nodes_missing_value_tracks_true", "nodes_modes", "nodes_splits", "nodes_trueleafs",
                 "nodes_truenodeids", "post_transform", "tree_roots"});
  const auto& xt = c.input_type(0);
  if (xt.ndim() != 2 || !xt.dtype.is_float()) c.error("X must be a float [N, F] tensor");
  const runtime::DataType dtype = xt.dtype;
  const Forest f = read_forest(c);
  const int64_t post = c.attr_int("post_transform", 0), aggregate = c.attr_int("aggregate_function", 1);
  if (post != 0 && post != 1 && post != 2)
    c.error("post_transform " + std::to_string(post) + " is not supported (NONE, SOFTMAX and LOGISTIC are)");
  if (aggregate < 0 || aggregate > 3) c.error("aggregate_function must be 0 to 3");
  for (int64_t feature : f.features)
    if (feature < 0 || feature >= xt.shape[1]) c.error("nodes_featureids must index X's columns");

  const int64_t samples = xt.shape[0], trees = static_cast<int64_t>(f.roots.size());
  auto table = [&](const Ints& v) { return relay_ir::constant(int_table(v)); };
  auto at = [&](const Expr& t, const Expr& index) { return c.call("take", {t, index}, {{"axis", int64_t{0}}}); };
  auto where = [&](const Expr& cond, const Expr& a, const Expr& b) { return c.call("where", {cond, a, b}); };
  auto broadcast_rows = [&](const Ints& per_tree) {  // [trees] -> [samples, trees]
    return c.call("broadcast_to", {table(per_tree)}, {{"shape", Ints{samples, trees}}});
  };
  // A root that is a leaf (both branches the same leaf) starts done, at that leaf.
  Ints start(trees), start_done(trees);
  for (int64_t t = 0; t < trees; ++t) {
    const int64_t r = f.roots[t];
    start_done[t] = f.true_leafs[r] && f.false_leafs[r] && f.true_ids[r] == f.false_ids[r];
    start[t] = start_done[t] ? f.true_ids[r] : r;
  }
  Expr node = broadcast_rows(start);
  Expr done = c.call("cast", {broadcast_rows(start_done)}, {{"dtype", std::string("bool")}});
  const Expr splits = relay_ir::constant(runtime::converted(f.splits, dtype)), features = table(f.features),
             modes = table(f.modes);
  size_t widest = 0;  // the members table: a row per node, its set NaN-padded
  for (const auto& m : f.members) widest = std::max(widest, m.size());
  Expr members;
  if (widest) {
    NDArray m = NDArray::empty({static_cast<int64_t>(f.members.size()), static_cast<int64_t>(widest)}, dtype);
    for (size_t i = 0; i < f.members.size(); ++i)
      for (size_t j = 0; j < widest; ++j)
        runtime::store_element(m, static_cast<int64_t>(i * widest + j),
                               j < f.members[i].size() ? f.members[i][j] : NAN);
    members = relay_ir::constant(m);
  }
  const bool any_tracks = std::count(f.tracks_true.begin(), f.tracks_true.end(), 1) > 0;
  const Expr tracks_true = table(f.tracks_true), true_ids = table(f.true_ids), false_ids = table(f.false_ids),
             true_leafs = table(f.true_leafs), false_leafs = table(f.false_leafs);
  // Only the modes the ensemble uses are tested, the last without a comparison of its own.
  Ints used = f.modes;
  std::sort(used.begin(), used.end());
  used.erase(std::unique(used.begin(), used.end()), used.end());
  for (int64_t level = 0; level < f.depth; ++level) {
    const Expr x = c.call("gather_elements", {c.input(0), at(features, node)}, {{"axis", int64_t{1}}});
    const Expr split = at(splits, node), mode = at(modes, node);
    auto test = [&](int64_t m) -> Expr {
      switch (m) {
        case kLeq:
          return c.call("less_equal", {x, split});
        case kLt:
          return c.call("less", {x, split});
        case kGte:
          return c.call("greater_equal", {x, split});
        case kGt:
          return c.call("greater", {x, split});
        case kEq:
          return c.call("equal", {x, split});
        case kNeq:
          return c.call("logical_not", {c.call("equal", {x, split})});
        default: {  // x in the node's set
          const Expr wide = c.call("reshape", {x}, {{"shape", Ints{samples, trees, 1}}});
          const Expr hits =
              c.call("cast", {c.call("equal", {at(members, node), wide})}, {{"dtype", std::string("uint8")}});
          const Expr any = c.call("reduce_max", {hits}, {{"axes", Ints{2}}, {"keepdims", int64_t{0}}});
          return c.call("cast", {any}, {{"dtype", std::string("bool")}});
        }
      }
    };
    Expr cond = test(used.back());
    for (auto m = used.rbegin() + 1; m != used.rend(); ++m)
      cond = where(c.call("equal", {mode, scalar_constant(static_cast<double>(*m), runtime::kInt64)}), test(*m), cond);
    if (any_tracks) {
      const Expr tracks = c.call("cast", {at(tracks_true, node)}, {{"dtype", std::string("bool")}});
      cond = c.call("logical_or", {cond, c.call("logical_and", {c.call("isnan", {x}), tracks})});
    }
    const Expr next = where(cond, at(true_ids, node), at(false_ids, node));
    const Expr next_leaf =
        c.call("cast", {where(cond, at(true_leafs, node), at(false_leafs, node))}, {{"dtype", std::string("bool")}});
    node = where(done, node, next);
    done = c.call("logical_or", {done, next_leaf});
  }
  // Each tree's leaf (node now indexes leaf_*) contributes its weight to its target.
  const Expr weight = c.call("reshape", {at(relay_ir::constant(runtime::converted(f.leaf_weights, dtype)), node)},
                             {{"shape", Ints{samples, trees, 1}}});
  const Expr target = c.call("reshape", {at(table(f.leaf_targets), node)}, {{"shape", Ints{samples, trees, 1}}});
  Ints target_ids(f.targets);
  for (int64_t i = 0; i < f.targets; ++i) target_ids[i] = i;
  const Expr hit = c.call("equal", {target, table(target_ids)});  // [samples, trees, targets]
  const Attrs over_trees{{"axes", Ints{1}}, {"keepdims", int64_t{0}}};
  Expr y;
  if (aggregate == 0 || aggregate == 1) {
    y = c.call("reduce_sum", {where(hit, weight, scalar_constant(0, dtype))}, over_trees);
    if (aggregate == 0) y = c.call("div", {y, scalar_constant(static_cast<double>(trees), dtype)});
  } else {
    const bool min = aggregate == 2;
    y = c.call(min ? "reduce_min" : "reduce_max",
               {where(hit, weight, scalar_constant(min ? dtype.max_value() : dtype.min_value(), dtype))}, over_trees);
  }
  if (post == 1) y = c.call("softmax", {y}, {{"axis", int64_t{-1}}, {"trailing", int64_t{0}}});
  if (post == 2) y = c.call("sigmoid", {y});
  return {y};
}

}  // namespace

void register_ml_tree_ensemble_converter(ConverterTable& t) { t.add("ai.onnx.ml.TreeEnsemble", convert_tree_ensemble); }

}  // namespace tessera::frontend::onnx
